//! `POST /v1/responses`, `GET` and `DELETE /v1/responses/{id}`: OpenAI's Responses API as
//! Hermes serves it. A response chain is one session: `previous_response_id` continues the
//! session its response ran in (its stored history is the context) and carries its
//! `instructions` forward; `store: false` keeps the response out of the store.

use crate::app::api_server::{ApiTurn, StoredResponse};
use crate::core::api_server::parse_responses;
use crate::http::HttpState;
use crate::http::routes::openai::chat::echo;
use crate::http::routes::openai::{OpenAiError, OpenAiKey, answer_text, json_body, not_run, random_id, session_key_header};
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// One response: the checks in Hermes' order (key, body, input, previous response), then
/// the turn, then the stored record.
pub async fn create(
    _: OpenAiKey,
    State(s): State<Arc<HttpState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let key = session_key_header(&headers)?;
    let body = json_body(body)?;
    let input = parse_responses(&body)?;
    if input.stream {
        return Err(OpenAiError::invalid(
            StatusCode::BAD_REQUEST,
            "'stream' is not supported on /v1/responses by this gateway yet; use /v1/chat/completions for streaming.",
        )
        .code("unsupported_parameter"));
    }
    let api = s.app.api_server();
    let (session_id, instructions) = match &input.previous {
        Some(p) => {
            let stored = api.response(p).await?;
            let Some(prev) = stored else {
                return Err(OpenAiError::invalid(StatusCode::NOT_FOUND, format!("Previous response not found: {p}")));
            };
            (prev.session_id, input.instructions.or(prev.instructions))
        }
        None => (random_id("", 32), input.instructions),
    };
    let turn = ApiTurn { session_id: session_id.clone(), session_key: key.clone(), text: input.input, system: None };
    let out = api.turn(turn, None).await.map_err(|e| OpenAiError::from(e).echo(&session_id, key.as_deref()))?;
    if let Some(e) = not_run(&out) {
        return Err(e.echo(&session_id, key.as_deref()));
    }
    let id = api.new_response_id();
    let (i, o) = out.usage;
    let response = json!({
        "id": id,
        "object": "response",
        "status": "completed",
        "created_at": s.app.now().timestamp(),
        "model": body.get("model").and_then(Value::as_str).map_or_else(|| api.model(), str::to_string),
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer_text(&out)}]}],
        "usage": {"input_tokens": i, "output_tokens": o, "total_tokens": i + o},
    });
    if input.store {
        api.store_response(&id, &StoredResponse { response: response.clone(), session_id: session_id.clone(), instructions }).await?;
    }
    let mut resp = Json(response).into_response();
    echo(resp.headers_mut(), &session_id, key.as_deref());
    Ok(resp)
}

fn not_found(id: &str) -> OpenAiError {
    OpenAiError::invalid(StatusCode::NOT_FOUND, format!("Response not found: {id}"))
}

/// A stored response.
pub async fn show(_: OpenAiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, OpenAiError> {
    match s.app.api_server().response(&id).await? {
        Some(r) => Ok(Json(r.response)),
        None => Err(not_found(&id)),
    }
}

/// Deletes a stored response.
pub async fn remove(_: OpenAiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Result<Json<Value>, OpenAiError> {
    if !s.app.api_server().delete_response(&id).await? {
        return Err(not_found(&id));
    }
    Ok(Json(json!({"id": id, "object": "response", "deleted": true})))
}
