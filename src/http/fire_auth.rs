//! The fire-token extractor of `POST /api/cron/fire`: `Authorization: Bearer <JWT>` verified
//! (signature, claims, `jti` once) by the app's verifier, built at wiring time, before the body is
//! read. Every failure is the same 401 `invalid fire token`; the reason is only logged.

use crate::app::jobs::fire_token::{FireClaims, FireTokenError};
use crate::http::HttpState;
use crate::http::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// A verified fire token (its claims).
#[derive(Debug)]
pub struct FireToken(pub FireClaims);

/// Why a fire token was refused (logged, never shown).
#[derive(Debug, thiserror::Error)]
pub enum FireTokenRejection {
    /// No `Authorization: Bearer …` header.
    #[error("no bearer token")]
    Missing,
    /// The verifier refused it.
    #[error(transparent)]
    Refused(#[from] FireTokenError),
}

impl FireTokenRejection {
    /// The one answer every refusal gets.
    pub fn response() -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "invalid fire token")
    }
}

impl IntoResponse for FireTokenRejection {
    fn into_response(self) -> Response {
        match &self {
            Self::Refused(FireTokenError::Misconfigured(_)) => tracing::error!(reason = %self, "fire callback refused"),
            _ => tracing::warn!(reason = %self, "fire token rejected"),
        }
        Self::response().into_response()
    }
}

impl FromRequestParts<Arc<HttpState>> for FireToken {
    type Rejection = FireTokenRejection;

    async fn from_request_parts(parts: &mut Parts, s: &Arc<HttpState>) -> Result<Self, Self::Rejection> {
        let token = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or(FireTokenRejection::Missing)?;
        Ok(FireToken(s.app.jobs().verify_fire_token(token.trim()).await?))
    }
}
