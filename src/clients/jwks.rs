//! Fetching a JWKS document (the NAS's fire-token signing keys): the `JwksSource` adapter.

use crate::clients::{describe, http_client};
use crate::ports::JwksSource;
use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;
use std::time::Duration;

/// JWKS over HTTPS with one client (5 s timeout), built once.
pub struct HttpJwks {
    http: reqwest::Client,
}

impl Default for HttpJwks {
    fn default() -> Self {
        Self { http: http_client(Duration::from_secs(5)) }
    }
}

#[async_trait]
impl JwksSource for HttpJwks {
    async fn fetch(&self, url: &str) -> Result<JwkSet, String> {
        let r = self.http.get(url).send().await.map_err(describe)?;
        if !r.status().is_success() {
            return Err(format!("JWKS HTTP {}", r.status().as_u16()));
        }
        r.json::<JwkSet>().await.map_err(|e| format!("JWKS not understood: {}", e.without_url()))
    }
}
