//! The key port: where the fire-token verifier gets a JWKS document (the NAS's signing keys).
//! The adapter (`clients::jwks`) is built once at wiring time with its own HTTP client.

use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;

/// Fetches JWKS documents.
#[async_trait]
pub trait JwksSource: Send + Sync {
    /// The key set at `url`, or a short reason (never a secret).
    async fn fetch(&self, url: &str) -> Result<JwkSet, String>;
}
