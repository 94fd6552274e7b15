//! `GET /api/sessions/{session_id}/messages` in Hermes' shape (`gateway/platforms/
//! api_server.py` `_handle_session_messages`, CONTRACT §15): `{"object":"list",
//! "session_id","data":[{"id","session_id","role","content","tool_call_id","tool_calls",
//! "timestamp"}…]}`, oldest first. The id is our conversation id or the API server's Hermes
//! session id (the app's resolver); an unknown session is 404 in Hermes' OpenAI-style error
//! shape (`session_not_found`).

use crate::core::session::Message;
use crate::http::HttpState;
use crate::http::routes::openai::{OpenAiError, OpenAiKey};
use crate::http::routes::sessions::path_id;
use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};
use std::sync::Arc;

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
pub async fn messages(_: OpenAiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, OpenAiError> {
    let (shown, msgs) = s.app.api_server().session_messages(path_id(&id)?).await?;
    let data: Vec<Value> = msgs.iter().enumerate().map(|(n, m)| message_view(&shown, n, m)).collect();
    Ok(Json(json!({"object": "list", "session_id": shown, "data": data})))
}
