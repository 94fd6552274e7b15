//! `GET /api/skills/{name}` and `DELETE /api/skills/{name}`: one skill for the dashboard's
//! Skills tab (its `SKILL.md`, files and where it lives) and its deletion — the store's
//! skills over `$HERMES_HOME/skills`, as the agent sees them (`app::Skills`). The list is
//! `GET /api/skills` (`routes::ui`). Same API key as the rest of `/api`.

use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::ApiKey;
use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;
use std::sync::Arc;

/// One skill: `name`, `description`, `title`, `source` (`store` | `files`), `category`,
/// `files` and `content` (its `SKILL.md`); 404 when there is none.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, Path(name): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(s.app.skills().show(&name).await?))
}

/// Deletes a skill as `skill_manage` `delete` does (a skill from `$HERMES_HOME/skills` is
/// hidden; its folder stays); 404 when there is none.
pub async fn remove(_: ApiKey, State(s): State<Arc<HttpState>>, Path(name): Path<String>) -> Result<Json<Value>, ApiError> {
    Ok(Json(s.app.skills().delete(&name).await?))
}
