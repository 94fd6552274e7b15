//! The one place where failures become HTTP responses: `{"error": "..."}` bodies, opaque
//! 5xx (details go to the log with their cause chain), never a secret.

use crate::app::AppError;
use crate::channels::ChannelError;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An HTTP error response.
#[derive(Debug)]
pub struct ApiError {
    /// Status.
    pub status: StatusCode,
    /// Message shown to the client.
    pub message: String,
}

impl ApiError {
    /// An error with a status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// 401 with a fixed message that says nothing of which check failed.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({"error": self.message}))).into_response()
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

impl From<ChannelError> for ApiError {
    fn from(e: ChannelError) -> Self {
        match e {
            ChannelError::BadRequest(m) => Self::new(StatusCode::BAD_REQUEST, m),
        }
    }
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        match &e {
            AppError::BadRequest(m) | AppError::NotAllowed(m) => Self::new(StatusCode::BAD_REQUEST, m.clone()),
            AppError::Model(m) => Self::new(StatusCode::BAD_GATEWAY, format!("the model failed: {m}; your message was saved")),
            AppError::Contended => Self::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
            AppError::NotFound(m) => Self::new(StatusCode::NOT_FOUND, m.clone()),
            AppError::Store(crate::ports::StoreError::Full(_)) => {
                tracing::error!(error = %chain(&e), "the store is full");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the store is full (disk or size limit reached): nothing was saved; try again later",
                )
            }
            AppError::Store(_) => {
                tracing::error!(error = %chain(&e), "internal error");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_store_is_a_503_that_says_so() {
        let e = ApiError::from(AppError::Store(crate::ports::StoreError::Full("database or disk is full".into())));
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(e.message.contains("store is full") && e.message.contains("nothing was saved"), "{}", e.message);
    }
}
