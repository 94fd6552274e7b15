//! Telegram Bot API calls about how updates arrive: `getUpdates` (long polling),
//! `deleteWebhook`, `setWebhook` and `getWebhookInfo`. Failures are classified for the
//! poll loop (docs/design.md#telegram-polling): a bad token stops it, a conflict and a
//! rate limit are named, anything else is temporary.

use crate::clients::{describe, http_client};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::time::Duration;

/// Seconds Telegram may hold one `getUpdates` call open.
pub const POLL_TIMEOUT_SECS: u64 = 30;

/// A failed Bot API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BotError {
    /// 401/404: the token is wrong or revoked; retrying cannot help.
    #[error("Telegram refused the bot token (HTTP {0}: {1}); check TELEGRAM_BOT_TOKEN")]
    Unauthorized(u16, String),
    /// 409: a webhook is set, or another process polls with the same token.
    #[error("Telegram answered 409 Conflict ({0}): another process polls this bot or a webhook is set")]
    Conflict(String),
    /// 429: wait this many seconds.
    #[error("Telegram rate limit: retry after {0} s")]
    RateLimited(u64),
    /// Anything else (network, 5xx, a malformed answer): try again later.
    #[error("{0}")]
    Temporary(String),
}

/// A Bot API client for the intake calls.
pub struct BotApi {
    http: reqwest::Client,
    base: String,
    token: SecretString,
}

impl BotApi {
    /// Client for `api_base`; its HTTP timeout outlasts a long poll.
    pub fn new(api_base: &str, token: SecretString) -> Self {
        let http = http_client(Duration::from_secs(POLL_TIMEOUT_SECS + 15));
        Self { http, base: api_base.trim_end_matches('/').to_string(), token }
    }

    /// The bot's numeric id: the part of the token before `:` (not secret).
    pub fn bot_id(&self) -> String {
        let t = self.token.expose_secret();
        t.split_once(':').map_or("bot", |(id, _)| id).to_string()
    }

    /// Calls `method` with a JSON body; the `result` of an `ok` answer.
    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, BotError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token.expose_secret());
        let resp = self.http.post(url).json(body).send().await.map_err(|e| BotError::Temporary(describe(e)))?;
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        let desc = v["description"].as_str().unwrap_or("no description").to_string();
        match status {
            200..=299 if v["ok"] == json!(true) => Ok(v["result"].clone()),
            200..=299 => Err(BotError::Temporary(format!("{method}: not ok ({desc})"))),
            401 | 404 => Err(BotError::Unauthorized(status, desc)),
            409 => Err(BotError::Conflict(desc)),
            429 => Err(BotError::RateLimited(v["parameters"]["retry_after"].as_u64().unwrap_or(1).max(1))),
            s => Err(BotError::Temporary(format!("{method}: HTTP {s}: {desc}"))),
        }
    }

    /// Long-polls for updates with `update_id ≥ offset` (Telegram forgets the ones below).
    pub async fn get_updates(&self, offset: i64, timeout_secs: u64) -> Result<Vec<Value>, BotError> {
        let body = json!({"offset": offset, "timeout": timeout_secs, "allowed_updates": ["message"]});
        match self.call("getUpdates", &body).await? {
            Value::Array(updates) => Ok(updates),
            other => Err(BotError::Temporary(format!("getUpdates: not a list of updates: {other}"))),
        }
    }

    /// Removes the webhook, keeping the updates Telegram holds.
    pub async fn delete_webhook(&self) -> Result<Value, BotError> {
        self.call("deleteWebhook", &json!({"drop_pending_updates": false})).await
    }

    /// Registers `url` as the webhook, with `secret` as its secret token.
    pub async fn set_webhook(&self, url: &str, secret: &SecretString) -> Result<Value, BotError> {
        let body =
            json!({"url": url, "secret_token": secret.expose_secret(), "allowed_updates": ["message"], "drop_pending_updates": false});
        self.call("setWebhook", &body).await
    }

    /// Registers the bot's command menu (`setMyCommands`): `(command, description)` pairs.
    pub async fn set_my_commands(&self, commands: &[(&str, &str)]) -> Result<Value, BotError> {
        let list: Vec<Value> = commands.iter().map(|(c, d)| json!({"command": c, "description": d})).collect();
        self.call("setMyCommands", &json!({"commands": list})).await
    }

    /// The current webhook registration.
    pub async fn webhook_info(&self) -> Result<Value, BotError> {
        self.call("getWebhookInfo", &json!({})).await
    }
}
