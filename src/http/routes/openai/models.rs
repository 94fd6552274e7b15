//! `GET /health`, `GET /v1/health` (no key), `GET /v1/models` and `GET /v1/capabilities`
//! (the document Hermes serves, with the features this gateway has).

use crate::http::HttpState;
use crate::http::routes::openai::{OpenAiKey, SESSION_ID_HEADER, SESSION_KEY_HEADER};
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use std::sync::Arc;

/// Hermes' health answer.
pub async fn health() -> Json<Value> {
    Json(json!({"status": "ok", "platform": "hermes-agent", "version": env!("CARGO_PKG_VERSION")}))
}

/// The one model the API server offers.
pub async fn models(_: OpenAiKey, State(s): State<Arc<HttpState>>) -> Json<Value> {
    let model = s.app.api_server().model();
    let now = s.app.now().timestamp();
    Json(json!({"object": "list", "data": [
        {"id": model, "object": "model", "created": now, "owned_by": "hermes", "permission": [], "root": model, "parent": null}
    ]}))
}

fn route(method: &str, path: &str) -> Value {
    json!({"method": method, "path": path})
}

/// The capability document of Hermes' API server (`object`, `platform`, `model`, `auth`,
/// `runtime`, `features`, `endpoints`), true only for what this gateway serves.
pub async fn capabilities(_: OpenAiKey, State(s): State<Arc<HttpState>>) -> Json<Value> {
    Json(json!({
        "object": "hermes.api_server.capabilities",
        "platform": "hermes-agent",
        "model": s.app.api_server().model(),
        "auth": {"type": "bearer", "required": true},
        "runtime": {
            "mode": "server_agent",
            "tool_execution": "server",
            "split_runtime": false,
            "description": "hermes-zero runs the agent on the gateway: tools execute on the gateway host (or its Lambda sandbox).",
        },
        "features": {
            "chat_completions": true,
            "chat_completions_streaming": true,
            "responses_api": true,
            "responses_streaming": true,
            "run_submission": false,
            "run_status": false,
            "run_events_sse": false,
            "run_stop": false,
            "run_approval_response": false,
            "tool_progress_events": true,
            "approval_events": false,
            "session_resources": true,
            "session_chat": true,
            "session_chat_streaming": true,
            "session_fork": true,
            "admin_config_rw": false,
            "jobs_admin": false,
            "memory_write_api": false,
            "skills_api": false,
            "audio_api": false,
            "realtime_voice": false,
            "session_continuity_header": SESSION_ID_HEADER,
            "session_key_header": SESSION_KEY_HEADER,
            "cors": false,
        },
        "endpoints": {
            "health": route("GET", "/health"),
            "models": route("GET", "/v1/models"),
            "chat_completions": route("POST", "/v1/chat/completions"),
            "responses": route("POST", "/v1/responses"),
            "sessions": route("GET", "/api/sessions"),
            "session_create": route("POST", "/api/sessions"),
            "session": route("GET", "/api/sessions/{session_id}"),
            "session_update": route("PATCH", "/api/sessions/{session_id}"),
            "session_delete": route("DELETE", "/api/sessions/{session_id}"),
            "session_messages": route("GET", "/api/sessions/{session_id}/messages"),
            "session_fork": route("POST", "/api/sessions/{session_id}/fork"),
            "session_chat": route("POST", "/api/sessions/{session_id}/chat"),
            "session_chat_stream": route("POST", "/api/sessions/{session_id}/chat/stream"),
        },
    }))
}
