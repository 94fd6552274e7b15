//! Discord: the interactions endpoint `POST /webhooks/discord` (Ed25519 signature checked on
//! the raw body before anything is parsed; slash commands answered with a deferred response
//! and follow-ups) and the bot REST API for replies to channels (split at 2000 characters).

pub mod commands;
pub mod followup;
pub mod interaction;
pub mod rest;
pub mod signature;
mod upload;

use crate::channels::{Channel, ChannelError, RawRequest, Received, Route, Sent, Unauthenticated};
use crate::config::{BusyInputMode, Loaded};
use crate::ports::{DeliveryError, Target};
use async_trait::async_trait;
use followup::InteractionClient;
use rest::DiscordClient;
use signature::{SIGNATURE_HEADER, TIMESTAMP_HEADER, fresh, verify};

/// The Discord channel.
pub struct Discord {
    public_key: Option<String>,
    client: Option<DiscordClient>,
    followups: InteractionClient,
    busy_mode: BusyInputMode,
}

impl Discord {
    /// From `DISCORD_PUBLIC_KEY` (inbound), `DISCORD_BOT_TOKEN` (channel messages) and
    /// `busy_input_mode` (which acknowledgement a busy session's follow-up shows).
    /// Follow-ups need no bot token: the interaction token authorizes them.
    pub fn from_config(cfg: &Loaded, http: reqwest::Client) -> Self {
        let api_base = &cfg.settings.platforms.discord.api_base;
        Self {
            public_key: cfg.secrets.discord_public_key.clone(),
            client: cfg.secrets.discord_bot_token.clone().map(|t| DiscordClient::new(http.clone(), api_base, t)),
            followups: InteractionClient::new(http, api_base),
            busy_mode: cfg.settings.busy_input_mode,
        }
    }
}

#[async_trait]
impl Channel for Discord {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn routes(&self) -> Vec<Route> {
        vec![Route::post("/webhooks/discord")]
    }

    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated> {
        let Some(key) = self.public_key.as_deref() else { return Err(Unauthenticated("DISCORD_PUBLIC_KEY is not set")) };
        let (Some(sig), Some(ts)) = (req.header(SIGNATURE_HEADER), req.header(TIMESTAMP_HEADER)) else {
            return Err(Unauthenticated("no signature headers"));
        };
        if !fresh(ts, req.now) {
            return Err(Unauthenticated("stale signature timestamp"));
        }
        if !verify(key, sig, ts, req.body) {
            return Err(Unauthenticated("bad signature"));
        }
        Ok(())
    }

    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError> {
        interaction::receive(req.body, &self.followups, self.busy_mode)
    }

    fn limit(&self) -> usize {
        rest::LIMIT
    }

    fn ready(&self) -> Result<(), DeliveryError> {
        match self.client {
            Some(_) => Ok(()),
            None => Err(DeliveryError::NotConfigured("discord (DISCORD_BOT_TOKEN is not set)".into())),
        }
    }

    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        match &self.client {
            Some(c) => c.send_message(target, text).await,
            None => Err(DeliveryError::NotConfigured("discord (DISCORD_BOT_TOKEN is not set)".into())),
        }
    }

    async fn send_audio(&self, target: &Target, audio: &crate::ports::Audio) -> Result<Sent, DeliveryError> {
        match &self.client {
            Some(c) => c.send_file(target, audio).await,
            None => Err(DeliveryError::NotConfigured("discord (DISCORD_BOT_TOKEN is not set)".into())),
        }
    }

    fn edits(&self) -> bool {
        true
    }

    async fn edit(&self, target: &Target, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        match &self.client {
            Some(c) => c.edit_message(target, message_id, text).await,
            None => Err(DeliveryError::NotConfigured("discord (DISCORD_BOT_TOKEN is not set)".into())),
        }
    }
}
