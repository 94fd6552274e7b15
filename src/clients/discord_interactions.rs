//! Discord interaction follow-ups: `POST {api_base}/webhooks/{application_id}/{token}` with
//! the interaction token (valid 15 minutes, no bot token needed), split at 2000 characters.
//! Knows nothing of HTTP routing or of sessions.

use crate::clients::discord::LIMIT;
use crate::clients::{describe, http_client};
use crate::core::text::split_message;
use crate::ports::DeliveryError;
use serde_json::json;
use std::sync::OnceLock;
use std::time::Duration;

/// Attempts per follow-up chunk.
pub const ATTEMPTS: u32 = 3;

/// One HTTP client for every follow-up, built on first use (the router state has no slot
/// for it, and follow-ups do not depend on the bot token).
fn shared_http() -> reqwest::Client {
    static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
    HTTP.get_or_init(|| http_client(Duration::from_secs(20))).clone()
}

/// A client for interaction follow-ups.
pub struct InteractionClient {
    http: reqwest::Client,
    base: String,
    backoff: Duration,
}

impl InteractionClient {
    /// Client for `api_base` (e.g. `https://discord.com/api/v10`).
    pub fn new(api_base: &str) -> Self {
        Self { http: shared_http(), base: api_base.trim_end_matches('/').to_string(), backoff: Duration::from_millis(500) }
    }

    /// Sends `text` as follow-ups of one interaction, split at 2000 characters on line
    /// boundaries; each chunk is retried on temporary failures and never re-sent once accepted.
    pub async fn followup(&self, application_id: &str, token: &str, text: &str) -> Result<(), DeliveryError> {
        for chunk in split_message(text, LIMIT) {
            self.chunk_with_retry(application_id, token, &chunk).await?;
        }
        Ok(())
    }

    async fn chunk_with_retry(&self, application_id: &str, token: &str, chunk: &str) -> Result<(), DeliveryError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wait = match self.once(application_id, token, chunk).await {
                Ok(()) => return Ok(()),
                Err(DeliveryError::RateLimited(s)) if attempt < ATTEMPTS => Duration::from_secs(s.min(30)),
                Err(DeliveryError::Retryable(_)) if attempt < ATTEMPTS => self.backoff * 2u32.pow(attempt - 1),
                Err(e) => return Err(e),
            };
            tracing::warn!(attempt, delay_ms = wait.as_millis() as u64, "discord follow-up failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// One chunk. A 404 is retryable: a follow-up can race the deferred response that
    /// acknowledges the interaction, and Discord knows the webhook only after that.
    async fn once(&self, application_id: &str, token: &str, chunk: &str) -> Result<(), DeliveryError> {
        let url = format!("{}/webhooks/{application_id}/{token}", self.base);
        // No pings from echoed text: model output must not mention @everyone or roles.
        let body = json!({"content": chunk, "allowed_mentions": {"parse": []}});
        let resp = self.http.post(&url).json(&body).send().await.map_err(|e| DeliveryError::Retryable(describe(e)))?;
        crate::clients::discord::classify(resp, "discord follow-up", true).await
    }
}
