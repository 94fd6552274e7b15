//! The one router, served by `axum::serve`, by the Lambda runtime and by tests
//! (`tower::ServiceExt::oneshot`). Owns authentication extractors, body limits and the
//! mapping of use-case errors to HTTP; knows nothing of SQL or vendor SDKs.

pub mod error;
pub mod extract;
pub mod fire_auth;
pub mod hooks;
mod routes;

use crate::app::App;
use crate::channels::Channels;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use secrecy::SecretString;
use std::sync::Arc;

/// Largest accepted request body (docs/design.md#safety).
pub const MAX_BODY: usize = 1024 * 1024;

/// Shared state of every route.
pub struct HttpState {
    /// The use cases.
    pub app: App,
    /// The platform channels (their webhooks are generated from it). The same registry is
    /// the app's delivery port.
    pub channels: Arc<Channels>,
    /// Bearer key of `/api/*` (None: the API refuses everything).
    pub api_key: Option<SecretString>,
    /// Timer provider in use, for `/healthz`.
    pub provider: String,
}

/// Refuses a declared body over 1 MiB on every route before any handler runs (bodies without
/// a length are capped by `DefaultBodyLimit` where they are read).
async fn refuse_large_bodies(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let declared = req.headers().get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        if req.uri().path().starts_with("/v1/") {
            return routes::openai::too_large().into_response();
        }
        return error::ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, "request body is larger than 1 MiB").into_response();
    }
    next.run(req).await
}

/// Builds the router.
pub fn router(state: Arc<HttpState>) -> Router {
    Router::new()
        .route("/healthz", get(routes::health::healthz))
        .route("/api/messages", post(routes::messages::post_message))
        .route("/api/cron/fire", post(routes::fire::fire))
        .route("/api/jobs", get(routes::jobs::list).post(routes::jobs::create))
        .route("/api/jobs/{id}", get(routes::jobs::show).patch(routes::jobs::update).delete(routes::jobs::remove))
        .route("/api/jobs/{id}/run", post(routes::jobs::run))
        .route("/api/jobs/{id}/pause", post(routes::jobs::pause))
        .route("/api/jobs/{id}/resume", post(routes::jobs::resume))
        .route("/api/jobs/{id}/runs", get(routes::jobs::runs))
        .route("/api/memory", get(routes::memory::show).put(routes::memory::update))
        .route("/api/skills/{name}", get(routes::skills::show).delete(routes::skills::remove))
        .route("/api/pairing", get(routes::pairing::list))
        .route("/api/pairing/approve", post(routes::pairing::approve))
        .route("/api/pairing/revoke", post(routes::pairing::revoke))
        .route("/api/sessions", get(routes::sessions::list).post(routes::sessions::create))
        .route("/api/sessions/{session_id}", get(routes::sessions::show).patch(routes::sessions::patch).delete(routes::sessions::remove))
        .route("/api/sessions/{session_id}/fork", post(routes::sessions::fork))
        .route("/health", get(routes::openai::models::health))
        .route("/v1/health", get(routes::openai::models::health))
        .route("/v1/models", get(routes::openai::models::models))
        .route("/v1/capabilities", get(routes::openai::models::capabilities))
        .route("/v1/chat/completions", post(routes::openai::chat::completions))
        .route("/v1/responses", post(routes::openai::responses::create))
        .route("/v1/responses/{id}", get(routes::openai::responses::show).delete(routes::openai::responses::remove))
        .route("/api/sessions/{session_id}/messages", get(routes::session_messages::messages))
        .route("/api/sessions/{session_id}/chat", post(routes::openai::session_chat::chat))
        .route("/api/sessions/{session_id}/chat/stream", post(routes::openai::session_chat::chat_stream))
        .route("/webhooks/{route}", post(hooks::receive))
        .merge(routes::webhooks::routes(&state.channels))
        .merge(routes::ui::routes())
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(axum::middleware::from_fn(refuse_large_bodies))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

#[cfg(test)]
mod fire_tests;
#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod tests;
