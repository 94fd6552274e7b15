//! `POST /api/messages` (platform `api`).

use crate::app::Inbound;
use crate::core::ids::{ChatType, Origin};
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The request body of CONTRACT §2.
#[derive(Debug, Deserialize)]
pub struct MessageRequest {
    chat_id: String,
    user_id: String,
    text: String,
    #[serde(default)]
    chat_type: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    message_id: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
}

/// Handles one API message.
pub async fn post_message(
    _: ApiKey,
    State(s): State<Arc<HttpState>>,
    JsonBody(req): JsonBody<MessageRequest>,
) -> Result<Response, ApiError> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, m);
    let chat_type = ChatType::parse(req.chat_type.as_deref().unwrap_or("dm")).map_err(|e| bad(e.to_string()))?;
    let origin =
        Origin::new("api", &req.chat_id, chat_type, Some(&req.user_id), req.thread_id.as_deref()).map_err(|e| bad(e.to_string()))?;
    let msg = Inbound { origin, text: req.text, message_id: req.message_id.filter(|m| !m.is_empty()), user_name: req.user_name };
    let out = s.app.handle_inbound(msg).await?;
    if out.queue_full {
        let error = out.reply.unwrap_or_else(|| "queue full".into());
        return Ok((StatusCode::TOO_MANY_REQUESTS, Json(json!({"error": error, "queued": false}))).into_response());
    }
    if out.busy {
        return Ok(
            (StatusCode::ACCEPTED, Json(json!({"queued": true, "position": out.position, "session_id": out.session_id}))).into_response()
        );
    }
    Ok(Json(out).into_response())
}
