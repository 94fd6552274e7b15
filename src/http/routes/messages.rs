//! `POST /api/messages`: the API channel (`channels::api`) behind the bearer key.

use crate::channels::api::MessageRequest;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// Handles one API message.
pub async fn post_message(
    _: ApiKey,
    State(s): State<Arc<HttpState>>,
    JsonBody(req): JsonBody<MessageRequest>,
) -> Result<Response, ApiError> {
    let msg = req.into_inbound()?;
    let out = s.app.sessions().handle_inbound(msg).await?;
    Ok(crate::channels::api::answer(out).into_response())
}
