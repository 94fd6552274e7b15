//! Extractors: the API bearer key, and a JSON body that turns every rejection into a JSON
//! error (400 for bad JSON, 413 past the body limit).

use crate::http::HttpState;
use crate::http::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use secrecy::ExposeSecret;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Constant-time comparison of two secrets that leaks neither where they differ nor their
/// lengths: their SHA-256 digests (always 32 bytes) are compared without an early exit.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    let (da, db) = (ring::digest::digest(&ring::digest::SHA256, a), ring::digest::digest(&ring::digest::SHA256, b));
    bool::from(da.as_ref().ct_eq(db.as_ref()))
}

/// Proof that the request carried `Authorization: Bearer <API_SERVER_KEY>`.
pub struct ApiKey;

impl FromRequestParts<Arc<HttpState>> for ApiKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<HttpState>) -> Result<Self, ApiError> {
        let given =
            parts.headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match (given, &state.api_key) {
            (Some(g), Some(k)) if ct_eq(g.trim().as_bytes(), k.expose_secret().as_bytes()) => Ok(Self),
            _ => Err(ApiError::unauthorized()),
        }
    }
}

/// The raw body bytes, with a JSON 413 past the limit (for handlers that authenticate
/// before parsing).
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, state).await.map(RawBody).map_err(|r| {
            let status = r.status();
            let msg = if status == StatusCode::PAYLOAD_TOO_LARGE { "request body is larger than 1 MiB".to_string() } else { r.body_text() };
            ApiError::new(status, msg)
        })
    }
}

/// A JSON body with JSON errors.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|r| {
            let status = r.status();
            let msg = if status == StatusCode::PAYLOAD_TOO_LARGE { "request body is larger than 1 MiB".to_string() } else { r.body_text() };
            ApiError::new(status, msg)
        })?;
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::ct_eq;

    #[test]
    fn ct_eq_compares_digests_of_any_length() {
        assert!(ct_eq(b"test-key-123", b"test-key-123"));
        assert!(ct_eq(b"", b""));
        assert!(!ct_eq(b"test-key-123", b"test-key-124"));
        assert!(!ct_eq(b"test-key-123", b"test-key-1234"), "a longer guess");
        assert!(!ct_eq(b"test", b"test-key-123"), "a prefix");
        assert!(!ct_eq(b"", b"x"));
    }
}
