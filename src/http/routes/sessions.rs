//! `/api/sessions` in Hermes' shapes (`gateway/platforms/api_server.py`, CONTRACT §15):
//! list, create, get, patch, delete and fork, behind the OpenAI-style bearer check (401
//! before the body is read) and answering errors in OpenAI's shape with Hermes' codes
//! (`session_not_found`, `session_exists`, `invalid_session_id`, `invalid_title`,
//! `unsupported_session_field`, `session_busy`). `/messages` is `session_messages`; `/chat`
//! and `/chat/stream` are the API server's turns.

use crate::app::api_server::{CreateSession, ForkSession, ListQuery, PatchSession, SessionsError};
use crate::core::api_server::check_session_id;
use crate::core::api_sessions::{LIST_DEFAULT, LIST_MAX, OFFSET_MAX, SessionView};
use crate::http::HttpState;
use crate::http::routes::openai::{OpenAiError, OpenAiKey, json_body};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

impl From<SessionsError> for OpenAiError {
    fn from(e: SessionsError) -> Self {
        let (status, code) = match &e {
            SessionsError::NotFound(_) => (StatusCode::NOT_FOUND, "session_not_found"),
            SessionsError::Exists(_) => (StatusCode::CONFLICT, "session_exists"),
            SessionsError::InvalidId(_) => (StatusCode::BAD_REQUEST, "invalid_session_id"),
            SessionsError::InvalidTitle(_) => (StatusCode::BAD_REQUEST, "invalid_title"),
            SessionsError::Busy => (StatusCode::CONFLICT, "session_busy"),
            SessionsError::App(_) => (StatusCode::INTERNAL_SERVER_ERROR, ""),
        };
        match e {
            SessionsError::App(a) => a.into(),
            other => OpenAiError::invalid(status, other.to_string()).code(code),
        }
    }
}

/// A `{session_id}` path segment, checked as Hermes checks session ids (400 otherwise).
pub fn path_id(id: &str) -> Result<&str, OpenAiError> {
    check_session_id(id).map_err(|e| OpenAiError::invalid(StatusCode::BAD_REQUEST, e.message).code("invalid_session_id"))?;
    Ok(id)
}

/// Hermes' `_parse_nonnegative_int`: a non-negative integer at most `max`, else `default`.
fn bounded(v: Option<&String>, default: usize, max: usize) -> usize {
    v.and_then(|s| s.trim().parse::<i64>().ok()).and_then(|n| usize::try_from(n).ok()).map_or(default, |n| n.min(max))
}

/// A body field as Python's `str(body.get(name))` when truthy (`None` for absent, null,
/// false, 0, "", [] and {}).
fn truthy(body: &Map<String, Value>, name: &str) -> Option<String> {
    match body.get(name)? {
        Value::Null | Value::Bool(false) => None,
        Value::Bool(true) => Some("True".into()),
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Object(o) if o.is_empty() => None,
        other => Some(other.to_string()),
    }
}

/// A present, non-null field as Python's `str()`.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn object(body: Result<Bytes, BytesRejection>) -> Result<Map<String, Value>, OpenAiError> {
    match json_body(body)? {
        Value::Object(m) => Ok(m),
        _ => Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, "Request body must be a JSON object")),
    }
}

fn one(status: StatusCode, v: SessionView) -> (StatusCode, Json<Value>) {
    (status, Json(json!({"object": "hermes.session", "session": v})))
}

/// `GET /api/sessions`: a page of sessions, most recently active first.
pub async fn list(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<Value>, OpenAiError> {
    let limit = bounded(q.get("limit"), LIST_DEFAULT, LIST_MAX);
    let offset = bounded(q.get("offset"), 0, OFFSET_MAX);
    // `include_children` is accepted as Hermes takes it; this gateway keeps no child
    // sessions besides forks, which Hermes lists anyway.
    let query = ListQuery { limit, offset, source: q.get("source").filter(|v| !v.is_empty()).cloned() };
    let data = s.app.api_server().list_sessions(&query).await?;
    let has_more = data.len() == limit;
    let legacy = legacy_places(&s).await?;
    Ok(Json(json!({"object": "list", "data": data, "limit": limit, "offset": offset, "has_more": has_more, "sessions": legacy})))
}

/// The list this route answered before Hermes' shape (CONTRACT §4, one item per place with
/// its current conversation), kept as the extra key `sessions` until its users have moved
/// to `data` (deprecated; Hermes' clients ignore it).
async fn legacy_places(s: &HttpState) -> Result<Vec<Value>, OpenAiError> {
    let entries = s.app.sessions().list(500).await?;
    Ok(entries
        .iter()
        .map(|e| {
            json!({
                "session_key": e.session_key, "session_id": e.session_id, "platform": e.origin.platform,
                "chat_id": e.origin.chat_id, "chat_type": e.origin.chat_type, "user_id": e.origin.user_id,
                "updated_at": e.updated_at, "created_at": e.created_at, "running": e.lease.is_some(),
                "input_tokens": e.input_tokens, "output_tokens": e.output_tokens,
            })
        })
        .collect())
}

/// `POST /api/sessions`: a new API server session with an empty transcript (201).
pub async fn create(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), OpenAiError> {
    let body = object(body)?;
    let id = truthy(&body, "id").or_else(|| truthy(&body, "session_id"));
    if body.get("system_prompt").is_some_and(|v| !v.is_null() && !v.is_string()) {
        return Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, "system_prompt must be a string").code("invalid_system_prompt"));
    }
    let c = CreateSession { id, model: truthy(&body, "model"), title: body.get("title").and_then(text) };
    Ok(one(StatusCode::CREATED, s.app.api_server().create_session(c).await?))
}

/// `GET /api/sessions/{session_id}`: Hermes' body, plus the conversation's transcript as
/// this route showed it before (`messages`, deprecated: `/messages` is Hermes' read).
pub async fn show(_: OpenAiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, OpenAiError> {
    let api = s.app.api_server();
    let view = api.session_view(path_id(&id)?).await?;
    let messages = match api.session(&id).await? {
        Some(found) => s.app.sessions().show(&found.record.session_id, 10_000).await?.map(|(_, m)| m).unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(Json(json!({"object": "hermes.session", "session": view, "messages": messages})))
}

/// `PATCH /api/sessions/{session_id}`: `title` and `end_reason` only.
pub async fn patch(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), OpenAiError> {
    let id = path_id(&id)?;
    let body = object(body)?;
    let mut unknown: Vec<&str> = body.keys().map(String::as_str).filter(|k| !matches!(*k, "title" | "end_reason")).collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        let msg = format!("Unsupported session fields: {}", unknown.join(", "));
        return Err(OpenAiError::invalid(StatusCode::BAD_REQUEST, msg).code("unsupported_session_field"));
    }
    let p = PatchSession { title: body.get("title").map(text), end_reason: truthy(&body, "end_reason") };
    Ok(one(StatusCode::OK, s.app.api_server().patch_session(id, p).await?))
}

/// `DELETE /api/sessions/{session_id}`.
pub async fn remove(_: OpenAiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, OpenAiError> {
    s.app.api_server().delete_session(path_id(&id)?).await?;
    Ok(Json(json!({"object": "hermes.session.deleted", "id": id, "deleted": true})))
}

/// `POST /api/sessions/{session_id}/fork`: a new session carrying the transcript (201).
pub async fn fork(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), OpenAiError> {
    let id = path_id(&id)?;
    let body = object(body)?;
    let f = ForkSession { id: truthy(&body, "id").or_else(|| truthy(&body, "session_id")), title: body.get("title").and_then(text) };
    Ok(one(StatusCode::CREATED, s.app.api_server().fork_session(id, f).await?))
}
