//! `GET/PUT /api/memory`: the agent's two memory stores for the dashboard's Memory tab
//! (docs/design.md#memory). Same API key as the rest of `/api`.

use crate::core::memory::Target;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// Body of `PUT /api/memory`: the stores to replace, each a list of entries (a store left
/// out is kept).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryPut {
    /// The agent's notes.
    pub memory: Option<Vec<String>>,
    /// The user profile.
    pub user: Option<Vec<String>>,
}

/// Both stores: entries, chars, limit, usage, enabled.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>) -> Result<Json<Value>, ApiError> {
    Ok(Json(s.app.memory().show().await?))
}

/// Replaces the stores given; a store over its limit refuses the whole change (400).
pub async fn update(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(req): JsonBody<MemoryPut>) -> Result<Json<Value>, ApiError> {
    let stores: Vec<(Target, Vec<String>)> =
        [(Target::Memory, req.memory), (Target::User, req.user)].into_iter().filter_map(|(t, e)| e.map(|e| (t, e))).collect();
    s.app.memory().set(&stores).await?;
    tracing::info!(stores = stores.len(), "memory edited from the API");
    Ok(Json(s.app.memory().show().await?))
}
