//! Telegram Bot API wire format: the `sendMessage` / `editMessageText` client (one message
//! ≤ 4096 characters, failures classified once) and the subset of `Update` the webhook reads.

use crate::channels::Sent;
use crate::clients::send_failure;
use crate::ports::{DeliveryError, Target};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

/// Telegram's message length limit.
pub const LIMIT: usize = 4096;

/// A Bot API client, built once (its HTTP client is shared with the other channels).
pub struct TelegramClient {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) token: SecretString,
}

impl TelegramClient {
    /// Client for `api_base` (e.g. `https://api.telegram.org`) over `http`.
    pub fn new(http: reqwest::Client, api_base: &str, token: SecretString) -> Self {
        Self { http, base: api_base.trim_end_matches('/').to_string(), token }
    }

    /// Sends one message (≤ 4096 characters).
    pub async fn send_message(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        let url = format!("{}/bot{}/sendMessage", self.base, self.token.expose_secret());
        let mut body = json!({"chat_id": target.chat_id, "text": text});
        if let Some(t) = target.thread_id.as_deref().and_then(|t| t.parse::<i64>().ok()) {
            body["message_thread_id"] = json!(t);
        }
        let resp = self.http.post(url).json(&body).send().await.map_err(send_failure)?;
        let v = classify(resp).await?;
        Ok(Sent { message_id: v["result"]["message_id"].as_i64().map(|id| id.to_string()) })
    }

    /// Replaces the text of message `message_id` (`editMessageText`). Telegram's "message is
    /// not modified" (the same text again) is success.
    pub async fn edit_message(&self, target: &Target, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        let url = format!("{}/bot{}/editMessageText", self.base, self.token.expose_secret());
        let id: Value = message_id.parse::<i64>().map_or_else(|_| json!(message_id), |n| json!(n));
        let body = json!({"chat_id": target.chat_id, "message_id": id, "text": text});
        let resp = self.http.post(url).json(&body).send().await.map_err(send_failure)?;
        match classify(resp).await {
            Err(DeliveryError::Permanent(d)) if d.contains("message is not modified") => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

/// Classifies a Bot API answer once: 2xx gives the body; 429 rate-limited with its
/// `parameters.retry_after`; 5xx retryable; other statuses permanent with the description.
pub(super) async fn classify(resp: reqwest::Response) -> Result<Value, DeliveryError> {
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if (200..300).contains(&status) {
        return Ok(v);
    }
    let desc = v["description"].as_str().unwrap_or("no description").to_string();
    match status {
        429 => Err(DeliveryError::RateLimited(v["parameters"]["retry_after"].as_u64().unwrap_or(1))),
        s if s >= 500 => Err(DeliveryError::Retryable(format!("telegram HTTP {s}: {desc}"))),
        s => Err(DeliveryError::Permanent(format!("telegram HTTP {s}: {desc}"))),
    }
}

/// A Telegram `Update` (only the parts the gateway reads).
#[derive(Debug, Deserialize)]
pub struct Update {
    /// Update id (used for deduplication of webhook retries).
    pub update_id: i64,
    /// A new message.
    #[serde(default)]
    pub message: Option<TgMessage>,
    /// An edited message (ignored).
    #[serde(default)]
    pub edited_message: Option<Value>,
}

/// A Telegram message.
#[derive(Debug, Deserialize)]
pub struct TgMessage {
    /// Message id within the chat.
    pub message_id: i64,
    /// Thread (forum topic) id.
    #[serde(default)]
    pub message_thread_id: Option<i64>,
    /// Sender.
    #[serde(default)]
    pub from: Option<TgUser>,
    /// Chat.
    pub chat: TgChat,
    /// Text, if a text message.
    #[serde(default)]
    pub text: Option<String>,
    /// Caption of media, used as text when there is no text.
    #[serde(default)]
    pub caption: Option<String>,
    /// Photos, voice notes, documents, … (docs/design.md#media).
    #[serde(flatten)]
    pub media: super::media::TgMedia,
}

/// A Telegram user.
#[derive(Debug, Deserialize)]
pub struct TgUser {
    /// User id.
    pub id: i64,
    /// Whether a bot.
    #[serde(default)]
    pub is_bot: bool,
    /// First name.
    #[serde(default)]
    pub first_name: Option<String>,
    /// Username.
    #[serde(default)]
    pub username: Option<String>,
}

/// A Telegram chat.
#[derive(Debug, Deserialize)]
pub struct TgChat {
    /// Chat id.
    pub id: i64,
    /// private | group | supergroup | channel.
    #[serde(rename = "type")]
    pub kind: String,
    /// Title of groups/channels.
    #[serde(default)]
    pub title: Option<String>,
}
