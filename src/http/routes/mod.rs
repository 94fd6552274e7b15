//! Route handlers: parse, call one use case, map the result.

pub mod fire;
pub mod health;
pub mod jobs;
pub mod memory;
pub mod messages;
pub mod openai;
pub mod pairing;
pub mod session_messages;
pub mod sessions;
pub mod skills;
pub mod ui;
pub mod webhooks;

use crate::http::error::ApiError;
use axum::http::StatusCode;

/// 405 for a known path with another method, as JSON.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
}

/// 404 for unknown paths, as JSON.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not found")
}
