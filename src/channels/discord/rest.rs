//! Discord REST: `POST /channels/{id}/messages` with the bot token (one message ≤ 2000
//! characters), `PATCH` of a sent message (streaming replies), and the one classification
//! of Discord's answers.

use crate::channels::Sent;
use crate::clients::{retry_after, send_failure};
use crate::ports::{DeliveryError, Target};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

/// Discord's message length limit.
pub const LIMIT: usize = 2000;

/// A Discord bot client, built once (its HTTP client is shared with the other channels).
pub struct DiscordClient {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) token: SecretString,
}

impl DiscordClient {
    /// Client for `api_base` (e.g. `https://discord.com/api/v10`) over `http`.
    pub fn new(http: reqwest::Client, api_base: &str, token: SecretString) -> Self {
        Self { http, base: api_base.trim_end_matches('/').to_string(), token }
    }

    /// Sends one message (≤ 2000 characters). Threads are channels in Discord, so a thread id wins.
    pub async fn send_message(&self, target: &Target, chunk: &str) -> Result<Sent, DeliveryError> {
        let channel = target.thread_id.as_deref().unwrap_or(&target.chat_id);
        let url = format!("{}/channels/{channel}/messages", self.base);
        let resp = self
            .http
            .post(&url)
            .header("Authorization", format!("Bot {}", self.token.expose_secret()))
            // No pings from echoed text: model output must not mention @everyone or roles.
            .json(&json!({"content": chunk, "allowed_mentions": {"parse": []}}))
            .send()
            .await
            .map_err(send_failure)?;
        classify(resp, "discord", false).await
    }

    /// Replaces the text of a bot message (`PATCH /channels/{id}/messages/{message_id}`).
    pub async fn edit_message(&self, target: &Target, message_id: &str, chunk: &str) -> Result<(), DeliveryError> {
        let channel = target.thread_id.as_deref().unwrap_or(&target.chat_id);
        let url = format!("{}/channels/{channel}/messages/{message_id}", self.base);
        let resp = self
            .http
            .patch(&url)
            .header("Authorization", format!("Bot {}", self.token.expose_secret()))
            .json(&json!({"content": chunk, "allowed_mentions": {"parse": []}}))
            .send()
            .await
            .map_err(send_failure)?;
        classify(resp, "discord edit", false).await.map(|_| ())
    }
}

/// Classifies a Discord REST answer once: 2xx ok; 429 rate-limited with its wait (header or
/// body); 5xx (and 404 when `retry_404`) retryable; other 4xx permanent. A sent message's id
/// is read from the answer.
pub async fn classify(resp: reqwest::Response, what: &str, retry_404: bool) -> Result<Sent, DeliveryError> {
    let status = resp.status().as_u16();
    let header_wait = retry_after(resp.headers(), 60);
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(Sent { message_id: v["id"].as_str().map(str::to_string) });
    }
    let msg = v["message"].as_str().unwrap_or("no message").to_string();
    Err(match status {
        429 => DeliveryError::RateLimited(header_wait.or_else(|| v["retry_after"].as_f64().map(|s| s.ceil() as u64)).unwrap_or(1)),
        s if s >= 500 || (retry_404 && s == 404) => DeliveryError::Retryable(format!("{what} HTTP {s}: {msg}")),
        s => DeliveryError::Permanent(format!("{what} HTTP {s}: {msg}")),
    })
}
