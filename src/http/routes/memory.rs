//! `GET/PUT /api/memory[?user=USER]`: the agent's memory stores for the dashboard's Memory tab
//! (docs/design.md#memory): its notes, and the shared user profile or, with `user`, that
//! user's own profile (docs/who-sees-what.md). Same API key as the rest of `/api`; the key is
//! checked before the query is read.

use crate::app::Memory;
use crate::core::memory::Target;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
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
    /// The user profile (the `user` query's, else the shared one).
    pub user: Option<Vec<String>>,
}

/// The memory view the query asks for: `user=USER` (`platform:user_id`, `id:<name>`,
/// `chat:<platform>:<chat_id>`) or none. Any other parameter, or a malformed user, is a 400.
fn view(s: &HttpState, query: Option<&str>) -> Result<Memory, ApiError> {
    let mut user = None;
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "user" if user.is_none() => user = Some(v.into_owned()),
            "user" => return Err(ApiError::new(StatusCode::BAD_REQUEST, "give `user` once")),
            other => return Err(ApiError::new(StatusCode::BAD_REQUEST, format!("unknown query parameter `{other}`; only `user` is read"))),
        }
    }
    Ok(s.app.memory().user(user.as_deref())?)
}

/// Both stores (entries, chars, limit, usage, enabled), `profiles` (every per-user profile),
/// `user_profile` (`per_user` or `shared`) and `owner` (whose profile `user` is; null: shared).
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, RawQuery(q): RawQuery) -> Result<Json<Value>, ApiError> {
    Ok(Json(view(&s, q.as_deref())?.show().await?))
}

/// Replaces the stores given; a store over its limit refuses the whole change (400).
pub async fn update(
    _: ApiKey,
    State(s): State<Arc<HttpState>>,
    RawQuery(q): RawQuery,
    JsonBody(req): JsonBody<MemoryPut>,
) -> Result<Json<Value>, ApiError> {
    let memory = view(&s, q.as_deref())?;
    let stores: Vec<(Target, Vec<String>)> =
        [(Target::Memory, req.memory), (Target::User, req.user)].into_iter().filter_map(|(t, e)| e.map(|e| (t, e))).collect();
    memory.set(&stores).await?;
    tracing::info!(stores = stores.len(), per_user = memory.owner().is_some(), "memory edited from the API");
    Ok(Json(memory.show().await?))
}
