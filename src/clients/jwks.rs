//! Fetching a JWKS document (the NAS's fire-token signing keys).

use crate::clients::{describe, http_client};
use jsonwebtoken::jwk::JwkSet;
use std::time::Duration;

/// Fetches and parses a JWKS (5 s timeout).
pub async fn fetch(url: &str) -> Result<JwkSet, String> {
    let http = http_client(Duration::from_secs(5));
    let r = http.get(url).send().await.map_err(describe)?;
    if !r.status().is_success() {
        return Err(format!("JWKS HTTP {}", r.status().as_u16()));
    }
    r.json::<JwkSet>().await.map_err(|e| format!("JWKS not understood: {}", e.without_url()))
}
