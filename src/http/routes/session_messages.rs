//! `GET /api/sessions/{session_id}/messages` in Hermes' shape (`gateway/platforms/
//! api_server.py` `_handle_session_messages`, CONTRACT §15): `{"object":"list",
//! "session_id","data":[{"id","session_id","role","content","tool_call_id","tool_calls",
//! "timestamp"}…]}`, oldest first; an unknown session is 404 in Hermes' OpenAI-style error
//! shape (`session_not_found`).

use crate::core::ids::SessionId;
use crate::core::session::Message;
use crate::http::HttpState;
use crate::http::extract::ApiKey;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// Hermes' `_openai_error` envelope.
fn openai_error(status: StatusCode, message: String, code: &str) -> Response {
    (status, Json(json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}}))).into_response()
}

/// One message as Hermes' `_message_response` shows it (`id` is its position, from 1).
fn message_view(session_id: &str, n: usize, m: &Message) -> Value {
    let calls: Vec<Value> = m
        .tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    json!({
        "id": n + 1,
        "session_id": session_id,
        "role": m.role.as_str(),
        "content": m.content,
        "tool_call_id": m.tool_call_id,
        "tool_calls": if calls.is_empty() { Value::Null } else { Value::Array(calls) },
        "timestamp": m.at.timestamp_millis() as f64 / 1000.0,
    })
}

/// The session's transcript, oldest first.
pub async fn messages(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Response {
    let not_found = || openai_error(StatusCode::NOT_FOUND, format!("Session not found: {id}"), "session_not_found");
    let Ok(sid) = SessionId::parse(&id) else { return not_found() };
    match s.app.sessions().show(&sid, 10_000).await {
        Ok(Some((_, msgs))) => {
            let data: Vec<Value> = msgs.iter().enumerate().map(|(n, m)| message_view(sid.as_str(), n, m)).collect();
            Json(json!({"object": "list", "session_id": sid.as_str(), "data": data})).into_response()
        }
        Ok(None) => not_found(),
        Err(e) => crate::http::error::ApiError::from(e).into_response(),
    }
}
