//! `POST /api/cron/fire`: the Chronos fire callback. Token checks first (401 `invalid fire
//! token`, no detail), then the shared fire path; sync by default, 202 in async mode. The
//! reserved wake id runs a recovery sweep instead (docs/design.md#wakes).

use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::JsonBody;
use crate::http::fire_auth::{FireToken, FireTokenRejection};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The callback body.
#[derive(Debug, Deserialize)]
pub struct FireBody {
    #[serde(default)]
    job_id: Option<String>,
    #[serde(default)]
    fire_at: Option<String>,
}

/// Handles one fire callback. The token is verified (and its `jti` spent) before the body
/// is read: without a valid token the answer is 401 whatever the body.
pub async fn fire(
    State(s): State<Arc<HttpState>>,
    FireToken(claims): FireToken,
    JsonBody(body): JsonBody<FireBody>,
) -> Result<Response, ApiError> {
    let bad = |m: &str| ApiError::new(StatusCode::BAD_REQUEST, m);
    let job_id = body.job_id.filter(|j| !j.is_empty()).ok_or_else(|| bad("`job_id` is required"))?;
    if !claims.allows(&job_id) {
        tracing::warn!(%job_id, "fire token rejected: its job_id does not match the body");
        return Err(FireTokenRejection::response());
    }
    if job_id == crate::ports::WAKE_ID {
        // A wake for stored chat work (docs/design.md#wakes): one recovery sweep; the turns it
        // starts keep the process busy (and Lambda settling) until they finish.
        let woken = s.app.recovery().sweep(false, false).await?;
        return Ok(Json(json!({"status": "ok", "woken": woken})).into_response());
    }
    let fire_at = match body.fire_at.as_deref() {
        None | Some("") => None,
        Some(t) => Some(DateTime::parse_from_rfc3339(t).map_err(|_| bad("`fire_at` must be an RFC 3339 time"))?.with_timezone(&Utc)),
    };
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
    Ok(Json(status.to_json()).into_response())
}
