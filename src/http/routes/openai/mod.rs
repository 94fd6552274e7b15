//! The OpenAI-compatible API server (CONTRACT §15, Hermes' `gateway/platforms/api_server.py`):
//! `/v1/chat/completions` (JSON and SSE), `/v1/models`, `/v1/capabilities`, `/health`,
//! `/v1/health`, `/v1/responses` and the session chat (`/api/sessions/{id}/chat`, `/chat/stream`). Owns OpenAI's error shape, the bearer check that answers
//! in it (before any body is read), the JSON body reading and Hermes' session headers.

pub mod chat;
mod live;
pub mod models;
pub mod responses;
mod responses_sse;
pub mod session_chat;
mod session_stream;
mod sse;

use crate::app::AppError;
use crate::core::api_server::{RequestError, check_session_id, check_session_key};
use crate::http::HttpState;
use crate::http::extract::ct_eq;
use axum::Json;
use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::extract::rejection::BytesRejection;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use std::sync::Arc;

/// The session continuity header (Hermes).
pub const SESSION_ID_HEADER: &str = "X-Hermes-Session-Id";
/// The long-term memory scope header (Hermes).
pub const SESSION_KEY_HEADER: &str = "X-Hermes-Session-Key";

/// An error in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}` (boxed:
/// handlers return it in every `Result`).
#[derive(Debug)]
pub struct OpenAiError(Box<Detail>);

#[derive(Debug)]
struct Detail {
    status: StatusCode,
    message: String,
    kind: &'static str,
    param: Option<String>,
    code: Option<String>,
    /// Hermes' extra `error.hermes` object (run state of a failed turn).
    hermes: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl OpenAiError {
    /// An `invalid_request_error` with `status`.
    pub fn invalid(status: StatusCode, message: impl Into<String>) -> Self {
        Self(Box::new(Detail {
            status,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: None,
            hermes: None,
            headers: Vec::new(),
        }))
    }

    /// The same error with `code`.
    pub fn code(mut self, code: &str) -> Self {
        self.0.code = Some(code.to_string());
        self
    }

    /// The same error with the session headers echoed.
    pub fn echo(mut self, session_id: &str, key: Option<&str>) -> Self {
        self.0.headers.push((SESSION_ID_HEADER, session_id.to_string()));
        if let Some(k) = key {
            self.0.headers.push((SESSION_KEY_HEADER, k.to_string()));
        }
        self
    }

    /// The message shown to the client.
    pub fn message_text(&self) -> String {
        self.0.message.clone()
    }

    fn server(status: StatusCode, message: impl Into<String>) -> Self {
        let mut e = Self::invalid(status, message);
        e.0.kind = "server_error";
        e
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let d = *self.0;
        let mut error = json!({"message": d.message, "type": d.kind, "param": d.param, "code": d.code});
        if let Some(h) = d.hermes {
            error["hermes"] = h;
        }
        let mut resp = (d.status, Json(json!({"error": error}))).into_response();
        for (name, value) in d.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        resp
    }
}

impl From<RequestError> for OpenAiError {
    fn from(e: RequestError) -> Self {
        let mut err = Self::invalid(StatusCode::BAD_REQUEST, e.message);
        err.0.param = e.param;
        err.0.code = e.code.map(str::to_string);
        err
    }
}

impl From<AppError> for OpenAiError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::BadRequest(m) | AppError::NotAllowed(m) => Self::invalid(StatusCode::BAD_REQUEST, m),
            AppError::NotFound(m) => Self::invalid(StatusCode::NOT_FOUND, m),
            AppError::Model(m) => {
                // Hermes' hard-fail path: no answer and a failed run → 502 `agent_incomplete`.
                let mut err = Self::server(StatusCode::BAD_GATEWAY, format!("the model failed: {m}")).code("agent_incomplete");
                err.0.hermes = Some(json!({"completed": false, "partial": false, "failed": true}));
                err.0.headers.push(("X-Hermes-Completed", "false".into()));
                err.0.headers.push(("X-Hermes-Partial", "false".into()));
                err
            }
            other => {
                let plain = crate::http::error::ApiError::from(other);
                Self::server(plain.status, plain.message)
            }
        }
    }
}

/// Proof of `Authorization: Bearer <API_SERVER_KEY>`; a 401 in OpenAI's shape (Hermes'
/// `invalid_api_key`) otherwise, before the body is read.
pub struct OpenAiKey;

impl FromRequestParts<Arc<HttpState>> for OpenAiKey {
    type Rejection = OpenAiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<HttpState>) -> Result<Self, OpenAiError> {
        let given =
            parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match (given, &state.api_key) {
            (Some(g), Some(k)) if ct_eq(g.trim().as_bytes(), k.expose_secret().as_bytes()) => Ok(Self),
            _ => Err(OpenAiError::invalid(StatusCode::UNAUTHORIZED, "Invalid API key").code("invalid_api_key")),
        }
    }
}

/// 413 in OpenAI's shape (Hermes' `body_too_large`).
pub fn too_large() -> OpenAiError {
    OpenAiError::invalid(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large.").code("body_too_large")
}

/// The request body parsed as JSON: 413 past the body limit, 400 when it cannot be read or
/// is not JSON.
pub fn parsed_body(body: Result<Bytes, BytesRejection>) -> Result<Value, OpenAiError> {
    let bytes = body.map_err(|r| match r.status() {
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        s => OpenAiError::invalid(s, "Invalid JSON in request body"),
    })?;
    serde_json::from_slice::<Value>(&bytes).map_err(|_| OpenAiError::invalid(StatusCode::BAD_REQUEST, "Invalid JSON in request body"))
}

/// The request body as a JSON object: 413 past the body limit, 400 for anything else.
pub fn json_body(body: Result<Bytes, BytesRejection>) -> Result<Value, OpenAiError> {
    match parsed_body(body)? {
        v @ Value::Object(_) => Ok(v),
        _ => Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, "Invalid JSON in request body")),
    }
}

/// A session header's trimmed value, checked with `check`; `None` when absent or empty.
fn header(headers: &HeaderMap, name: &str, check: fn(&str) -> Result<(), RequestError>, bad: &str) -> Result<Option<String>, OpenAiError> {
    let Some(raw) = headers.get(name) else { return Ok(None) };
    let Ok(text) = raw.to_str() else { return Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, bad)) };
    let v = text.trim();
    if v.is_empty() {
        return Ok(None);
    }
    check(v)?;
    Ok(Some(v.to_string()))
}

/// `X-Hermes-Session-Id`, checked as Hermes checks it (400 `Invalid session ID`, `Session ID
/// too long`).
pub fn session_id_header(headers: &HeaderMap) -> Result<Option<String>, OpenAiError> {
    header(headers, SESSION_ID_HEADER, check_session_id, "Invalid session ID")
}

/// `X-Hermes-Session-Key`, checked as Hermes checks it.
pub fn session_key_header(headers: &HeaderMap) -> Result<Option<String>, OpenAiError> {
    header(headers, SESSION_KEY_HEADER, check_session_key, "Invalid session key")
}

/// The outcome of a turn that did not run now: the session was busy (the message waits in
/// its queue, 409) or its queue was full (429).
pub fn not_run(out: &crate::app::Outcome) -> Option<OpenAiError> {
    if out.queue_full {
        return Some(
            OpenAiError::invalid(StatusCode::TOO_MANY_REQUESTS, "This session's queue is full; try again later.").code("queue_full"),
        );
    }
    out.busy.then(|| {
        OpenAiError::invalid(
            StatusCode::CONFLICT,
            "This session is busy with another turn; the message was queued and will be answered in the session.",
        )
        .code("session_busy")
    })
}

/// `prefix` and `n` random hex digits (ids of completions and responses).
pub fn random_id(prefix: &str, n: usize) -> String {
    let hex = format!("{:032x}{:032x}", rand::random::<u128>(), rand::random::<u128>());
    format!("{prefix}{}", &hex[..n.min(64)])
}

/// The turn's text as the answer shows it: its notices first, then the reply.
pub fn answer_text(out: &crate::app::Outcome) -> String {
    let mut parts: Vec<&str> = out.notices.iter().map(String::as_str).collect();
    parts.extend(out.reply.as_deref());
    parts.join("\n\n")
}

/// OpenAI's `usage` of a turn's tokens.
pub fn usage(out: &crate::app::Outcome) -> Value {
    let (i, o) = out.usage;
    json!({"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o})
}
