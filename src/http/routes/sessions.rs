//! `GET /api/sessions`, `GET /api/sessions/{session_id}`.

use crate::core::ids::SessionId;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::ApiKey;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

/// Current session of every key, most recent first.
pub async fn list(_: ApiKey, State(s): State<Arc<HttpState>>) -> Result<Json<Value>, ApiError> {
    let entries = s.app.sessions().list(500).await?;
    let items: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!({
                "session_key": e.session_key, "session_id": e.session_id, "platform": e.origin.platform,
                "chat_id": e.origin.chat_id, "chat_type": e.origin.chat_type, "user_id": e.origin.user_id,
                "updated_at": e.updated_at, "created_at": e.created_at, "running": e.lease.is_some(),
                "input_tokens": e.input_tokens, "output_tokens": e.output_tokens,
            })
        })
        .collect();
    Ok(Json(json!({ "sessions": items })))
}

/// One conversation with its transcript.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, ApiError> {
    let id = SessionId::parse(&id).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
    let Some((rec, messages)) = s.app.sessions().show(&id, 10_000).await? else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "no such session"));
    };
    Ok(Json(json!({ "session": rec, "messages": messages })))
}
