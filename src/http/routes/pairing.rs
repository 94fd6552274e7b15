//! `/api/pairing…`: DM pairing for the dashboard's Pairing tab (docs/pairing.md). Same API
//! key as the rest of `/api`.

use crate::app::{Paired, PairingList};
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Body of `POST /api/pairing/approve`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveReq {
    /// Platform.
    pub platform: String,
    /// The code the user was given.
    pub code: String,
}

/// Body of `POST /api/pairing/revoke`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeReq {
    /// Platform.
    pub platform: String,
    /// The approved user.
    pub user_id: String,
}

/// Pending codes (hash prefixes, never the codes) and approved users.
pub async fn list(_: ApiKey, State(s): State<Arc<HttpState>>) -> Result<Json<PairingList>, ApiError> {
    Ok(Json(s.app.pairing().list().await?))
}

/// Approves a code: 404 when no pending code matches, 400 for a bad platform or a lockout.
pub async fn approve(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(req): JsonBody<ApproveReq>) -> Result<Json<Paired>, ApiError> {
    Ok(Json(s.app.pairing().approve(&req.platform, &req.code).await?))
}

/// Removes an approved user: `{"revoked": bool}`.
pub async fn revoke(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(req): JsonBody<RevokeReq>) -> Result<Json<Value>, ApiError> {
    let revoked = s.app.pairing().revoke(&req.platform, &req.user_id).await?;
    Ok(Json(json!({"revoked": revoked})))
}
