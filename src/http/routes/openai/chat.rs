//! `POST /v1/chat/completions`: OpenAI's request and response, Hermes' session continuity
//! (`X-Hermes-Session-Id`, else the id derived from the system prompt and first user
//! message; `X-Hermes-Session-Key`; both echoed). The last message is the turn's input and
//! the session's stored history its context. `stream: true` answers with SSE (`sse.rs`).

use crate::app::api_server::ApiTurn;
use crate::core::api_server::{derive_session_id, parse_chat};
use crate::http::HttpState;
use crate::http::routes::openai::{
    OpenAiError, OpenAiKey, SESSION_ID_HEADER, SESSION_KEY_HEADER, answer_text, json_body, not_run, random_id, session_id_header,
    session_key_header, sse, usage,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;

/// One chat completion: the checks in Hermes' order (body, messages, key, id), then the
/// turn. Nothing is stored when a check fails.
pub async fn completions(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let body = json_body(body)?;
    let input = parse_chat(&body)?;
    let key = session_key_header(&headers)?;
    let session_id = match session_id_header(&headers)? {
        Some(id) => id,
        None => derive_session_id(input.system.as_deref(), &input.first_user),
    };
    let api = s.app.api_server();
    let model = body.get("model").and_then(|m| m.as_str()).map_or_else(|| api.model(), str::to_string);
    let turn = ApiTurn { session_id: session_id.clone(), session_key: key.clone(), text: input.input, system: None };
    let (id, created) = (random_id("chatcmpl-", 29), s.app.now().timestamp());
    if input.stream {
        return Ok(sse::chat_stream(api, turn, sse::Chunk { id, created, model }));
    }
    let out = api.turn(turn, None).await.map_err(|e| OpenAiError::from(e).echo(&session_id, key.as_deref()))?;
    if let Some(e) = not_run(&out) {
        return Err(e.echo(&session_id, key.as_deref()));
    }
    let body = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer_text(&out)}, "finish_reason": "stop"}],
        "usage": usage(&out),
    });
    let mut resp = Json(body).into_response();
    echo(resp.headers_mut(), &session_id, key.as_deref());
    Ok(resp)
}

/// Sets the session headers of an answer (Hermes echoes both).
pub fn echo(h: &mut HeaderMap, session_id: &str, key: Option<&str>) {
    if let Ok(v) = HeaderValue::from_str(session_id) {
        h.insert(SESSION_ID_HEADER, v);
    }
    if let Some(v) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
        h.insert(SESSION_KEY_HEADER, v);
    }
}
