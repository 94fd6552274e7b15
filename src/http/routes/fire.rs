//! `POST /api/cron/fire`: the Chronos fire callback. Token checks first (401 `invalid fire
//! token`, no detail), then the shared fire path; sync by default, 202 in async mode.

use crate::app::FireStatus;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::JsonBody;
use crate::http::fire_auth::FireVerifier;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// The callback body.
#[derive(Debug, Deserialize)]
pub struct FireBody {
    #[serde(default)]
    job_id: Option<String>,
    #[serde(default)]
    fire_at: Option<String>,
}

fn invalid() -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "invalid fire token")
}

/// Maps a fire result to the CONTRACT §3 body.
pub fn status_body(s: &FireStatus) -> Value {
    match s {
        FireStatus::Gone => json!({"status": "gone"}),
        FireStatus::Duplicate => json!({"status": "duplicate"}),
        FireStatus::Stale { next } => json!({"status": "stale", "next_fire_at": next}),
        FireStatus::Ran { run, next } => json!({"status": "ok", "run_id": run.run_id, "run_status": run.status, "next_fire_at": next}),
    }
}

/// Handles one fire callback.
pub async fn fire(State(s): State<Arc<HttpState>>, headers: HeaderMap, JsonBody(body): JsonBody<FireBody>) -> Result<Response, ApiError> {
    let bad = |m: &str| ApiError::new(StatusCode::BAD_REQUEST, m);
    let job_id = body.job_id.filter(|j| !j.is_empty()).ok_or_else(|| bad("`job_id` is required"))?;
    let fire_at = match body.fire_at.as_deref() {
        None | Some("") => None,
        Some(t) => Some(DateTime::parse_from_rfc3339(t).map_err(|_| bad("`fire_at` must be an RFC 3339 time"))?.with_timezone(&Utc)),
    };
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(invalid)?;
    let verifier = match FireVerifier::shared(s.app.loaded()) {
        Ok(Some(v)) => v,
        Ok(None) => {
            tracing::warn!("fire callback refused: no cron.chronos.jwks_url or public_key_pem configured");
            return Err(invalid());
        }
        Err(e) => {
            tracing::error!(error = %e, "fire callback refused: bad key configuration");
            return Err(invalid());
        }
    };
    if let Err(reason) = verifier.verify(token.trim(), &job_id, s.app.now(), s.app.token_ledger()).await {
        tracing::warn!(%job_id, %reason, "fire token rejected");
        return Err(invalid());
    }
    if s.app.jobs().fires_async() {
        let app = s.app.clone();
        tokio::spawn(async move {
            if let Err(e) = app.jobs().fire(&job_id, fire_at, "chronos").await {
                tracing::error!(%job_id, error = %e, "async fire failed");
            }
        });
        return Ok((StatusCode::ACCEPTED, Json(json!({"status": "accepted"}))).into_response());
    }
    let status = s.app.jobs().fire(&job_id, fire_at, "chronos").await?;
    Ok(Json(status_body(&status)).into_response())
}
