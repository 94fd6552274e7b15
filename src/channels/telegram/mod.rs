//! Telegram: `POST /webhooks/telegram` (secret-token header checked before the body is
//! read; an `Update` becomes one inbound message, answered with 200 after it is handled)
//! and `sendMessage` for replies (split at 4096 characters on line boundaries), edited in
//! place with `editMessageText` while a streamed reply grows; files that come with a message
//! are attachments, downloaded by `media`.

pub mod api;
pub mod bot;
pub mod media;
mod voice;

use crate::app::{AppError, Outcome};
use crate::channels::{Channel, ChannelError, RawRequest, Received, Route, Sent, Unauthenticated, WebReply};
use crate::config::Loaded;
use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Attachment, Inbound, ReplyPath};
use crate::ports::{DeliveryError, Target};
use api::{TelegramClient, Update};
use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use subtle::ConstantTimeEq;

/// Header Telegram sends with the webhook secret.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// The Telegram channel.
pub struct Telegram {
    webhook_secret: Option<SecretString>,
    client: Option<TelegramClient>,
}

impl Telegram {
    /// From `TELEGRAM_WEBHOOK_SECRET` (inbound) and `TELEGRAM_BOT_TOKEN` (outbound).
    pub fn from_config(cfg: &Loaded, http: reqwest::Client) -> Self {
        let api_base = &cfg.settings.platforms.telegram.api_base;
        Self {
            webhook_secret: cfg.secrets.telegram_webhook_secret.clone(),
            client: cfg.secrets.telegram_bot_token.clone().map(|t| TelegramClient::new(http, api_base, t)),
        }
    }
}

fn bad(msg: String) -> ChannelError {
    ChannelError::BadRequest(msg)
}

fn ignored(why: &str) -> Received {
    Received::Answer(WebReply::json(json!({"ok": true, "ignored": why})))
}

/// The inbound message of an update, or why it is ignored.
fn normalize(update: Update) -> Result<Result<Inbound, &'static str>, ChannelError> {
    let Some(m) = update.message else { return Ok(Err("no message")) };
    let attachments = media::attachments(&m.media);
    let text = m.text.or(m.caption).unwrap_or_default();
    if text.trim().is_empty() && attachments.is_empty() {
        return Ok(Err("no text"));
    }
    if m.from.as_ref().is_some_and(|f| f.is_bot) {
        return Ok(Err("from a bot"));
    }
    let chat_type = ChatType::parse(&m.chat.kind).unwrap_or(ChatType::Group);
    let user = m.from.as_ref().map(|f| f.id.to_string());
    let thread = m.message_thread_id.map(|t| t.to_string());
    let mut origin =
        Origin::new("telegram", &m.chat.id.to_string(), chat_type, user.as_deref(), thread.as_deref()).map_err(|e| bad(e.to_string()))?;
    origin.chat_name = m.chat.title.clone().or_else(|| m.from.as_ref().and_then(|f| f.username.clone().or(f.first_name.clone())));
    let user_name = m.from.as_ref().and_then(|f| f.first_name.clone());
    Ok(Ok(Inbound { origin, text, message_id: Some(m.message_id.to_string()), user_name, reply: ReplyPath::Origin, attachments }))
}

#[async_trait]
impl Channel for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn routes(&self) -> Vec<Route> {
        vec![Route::post("/webhooks/telegram")]
    }

    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated> {
        let given = req.headers.get(SECRET_HEADER).map(|v| v.as_bytes());
        match (&self.webhook_secret, given) {
            (Some(secret), Some(g)) if bool::from(g.ct_eq(secret.expose_secret().as_bytes())) => Ok(()),
            (None, _) => Err(Unauthenticated("TELEGRAM_WEBHOOK_SECRET is not set")),
            _ => Err(Unauthenticated("wrong or missing secret token")),
        }
    }

    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError> {
        let v: Value = serde_json::from_slice(req.body).map_err(|e| bad(format!("invalid JSON body: {e}")))?;
        let update: Update = serde_json::from_value(v).map_err(|e| bad(format!("not a Telegram Update: {e}")))?;
        Ok(match normalize(update)? {
            Ok(msg) => Received::Turn(msg),
            Err(why) => ignored(why),
        })
    }

    fn answer(&self, result: Result<Outcome, AppError>) -> Result<WebReply, AppError> {
        match result {
            Ok(out) => Ok(WebReply::json(
                json!({"ok": true, "session_id": out.session_id, "duplicate": out.duplicate, "queued": out.queued || out.busy}),
            )),
            // The user got an apology and the message is in the transcript: a Telegram retry would not help.
            Err(AppError::Model(e)) => Ok(WebReply::json(json!({"ok": false, "error": format!("the model failed: {e}")}))),
            Err(e) => Err(e),
        }
    }

    fn limit(&self) -> usize {
        api::LIMIT
    }

    /// Telegram's 4096 is counted in UTF-16 code units, not characters.
    fn split(&self, text: &str) -> Vec<String> {
        crate::core::text::split_message_utf16(text, api::LIMIT)
    }

    fn ready(&self) -> Result<(), DeliveryError> {
        match self.client {
            Some(_) => Ok(()),
            None => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
        }
    }

    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        match &self.client {
            Some(c) => c.send_message(target, text).await,
            None => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
        }
    }

    fn edits(&self) -> bool {
        true
    }

    /// Telegram allows a bot about 20 messages a minute in one group (group ids are
    /// negative); private chats have no per-chat floor beyond `edit_interval`.
    fn min_edit_gap(&self, target: &Target) -> std::time::Duration {
        if target.chat_id.starts_with('-') { std::time::Duration::from_secs(3) } else { std::time::Duration::ZERO }
    }

    async fn edit(&self, target: &Target, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        match &self.client {
            Some(c) => c.edit_message(target, message_id, text).await,
            None => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
        }
    }

    async fn fetch(&self, attachment: &Attachment, max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        match &self.client {
            Some(c) => media::fetch(c, attachment, max_bytes).await,
            None => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
        }
    }

    fn voice_notes(&self) -> bool {
        true
    }

    async fn send_audio(&self, target: &Target, audio: &crate::ports::Audio) -> Result<Sent, DeliveryError> {
        match &self.client {
            Some(c) => c.send_voice(target, audio).await,
            None => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
        }
    }
}
