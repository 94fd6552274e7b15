//! `POST /api/sessions/{session_id}/chat` and `/chat/stream`, as Hermes 0.19.0's
//! `_handle_session_chat` and `_handle_session_chat_stream`: one turn in an existing
//! session, its stored history the context, `system_message` (or `instructions`) an
//! ephemeral system prompt for that turn only. Checks in Hermes' order: the key (before the
//! body), `X-Hermes-Session-Key`, the session (404 `session_not_found`), the JSON body, the
//! message, the system prompt. Beyond Hermes: an ended conversation and another platform's
//! conversation take no turn here (409, `session_ended` / `session_not_api`), so each
//! place keeps one current conversation under its own lease.

use crate::app::api_server::{ApiTurn, ChatTarget};
use crate::app::{ApiServer, Outcome};
use crate::core::session_chat::parse_session_chat;
use crate::http::HttpState;
use crate::http::routes::openai::chat::echo;
use crate::http::routes::openai::{OpenAiError, OpenAiKey, answer_text, not_run, parsed_body, session_key_header, session_stream};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// A session chat that passed its checks.
pub struct Prepared {
    /// The turn to run.
    pub turn: ApiTurn,
    /// The `{session_id}` asked for.
    pub asked: String,
    /// The Hermes session id of its place.
    pub hermes_id: String,
}

impl Prepared {
    /// The session id the answer names (Hermes' effective session id): the one asked for
    /// when it is the place's Hermes id; else (a conversation id of ours) the conversation
    /// the turn went to, which differs after an automatic reset.
    pub fn effective(&self, out: &Outcome) -> String {
        if self.asked == self.hermes_id || out.session_id.is_empty() { self.asked.clone() } else { out.session_id.clone() }
    }
}

/// Hermes' `_read_json_body`: 413 past the body limit, 400 for bad JSON or a non-object.
fn object_body(body: Result<Bytes, BytesRejection>) -> Result<Value, OpenAiError> {
    match parsed_body(body)? {
        v @ Value::Object(_) => Ok(v),
        _ => Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, "Request body must be a JSON object")),
    }
}

/// The session `id` as a turn's target: 404, or 409 when it takes no turn here.
async fn target(api: &ApiServer, id: &str) -> Result<String, OpenAiError> {
    let conflict = |m: String, code: &str| OpenAiError::invalid(StatusCode::CONFLICT, m).code(code);
    match api.chat_target(id).await? {
        None => Err(OpenAiError::invalid(StatusCode::NOT_FOUND, format!("Session not found: {id}")).code("session_not_found")),
        Some(ChatTarget::Open { hermes_id, .. }) => Ok(hermes_id),
        Some(ChatTarget::Ended(s)) => Err(conflict(
            format!(
                "Session {id} has ended ({}); it takes no new turns. Chat in its place's current session or start a new one.",
                s.record.end_reason.as_deref().unwrap_or("replaced by a newer session")
            ),
            "session_ended",
        )),
        Some(ChatTarget::Elsewhere(s)) => {
            let kind = s.current.as_ref().map_or("", |e| e.origin.chat_type.as_str());
            Err(conflict(
                format!("Session {id} is a {} {kind} conversation, not an API server session; it takes no turns here.", s.record.platform),
                "session_not_api",
            ))
        }
    }
}

/// The checks of both routes, in Hermes' order; nothing is stored when one fails.
async fn prepare(s: &HttpState, id: String, headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Prepared, OpenAiError> {
    let key = session_key_header(headers)?;
    let hermes_id = target(&s.app.api_server(), &id).await?;
    let input = parse_session_chat(&object_body(body)?)?;
    let turn = ApiTurn { session_id: hermes_id.clone(), session_key: key, text: input.message, system: input.system };
    Ok(Prepared { turn, asked: id, hermes_id })
}

/// Hermes' session usage (`input_tokens`, `output_tokens`, `total_tokens`).
pub fn session_usage(out: &Outcome) -> Value {
    let (i, o) = out.usage;
    json!({"input_tokens": i, "output_tokens": o, "total_tokens": i + o})
}

/// One synchronous turn: `hermes.session.chat.completion`.
pub async fn chat(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let p = prepare(&s, id, &headers, body).await?;
    let key = p.turn.session_key.clone();
    let out = s.app.api_server().turn(p.turn.clone(), None).await.map_err(|e| OpenAiError::from(e).echo(&p.asked, key.as_deref()))?;
    if let Some(e) = not_run(&out) {
        return Err(e.echo(&p.asked, key.as_deref()));
    }
    let session_id = p.effective(&out);
    let body = json!({
        "object": "hermes.session.chat.completion",
        "session_id": session_id,
        "message": {"role": "assistant", "content": answer_text(&out)},
        "usage": session_usage(&out),
    });
    let mut resp = Json(body).into_response();
    echo(resp.headers_mut(), &session_id, key.as_deref());
    Ok(resp)
}

/// The same turn as an SSE stream of Hermes' session events (`session_stream.rs`).
pub async fn chat_stream(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let p = prepare(&s, id, &headers, body).await?;
    Ok(session_stream::start(s.app.clone(), p))
}
