//! The platform router behind the `Delivery` port: picks the adapter by platform and retries
//! temporary failures (3 attempts, backoff, honouring the platform's retry-after).

use crate::clients::discord::{self, DiscordClient};
use crate::clients::telegram::{self, TelegramClient};
use crate::config::Loaded;
use crate::core::text::split_message;
use crate::ports::{Delivery, DeliveryError, Target};
use async_trait::async_trait;
use std::time::Duration;

/// Attempts per delivery.
pub const ATTEMPTS: u32 = 3;

/// Routes deliveries to the configured platforms.
pub struct PlatformDelivery {
    telegram: Option<TelegramClient>,
    discord: Option<DiscordClient>,
    backoff: Duration,
}

impl PlatformDelivery {
    /// Builds the clients that have credentials.
    pub fn from_config(cfg: &Loaded) -> Self {
        let p = &cfg.settings.platforms;
        Self {
            telegram: cfg.secrets.telegram_bot_token.clone().map(|t| TelegramClient::new(&p.telegram.api_base, t)),
            discord: cfg.secrets.discord_bot_token.clone().map(|t| DiscordClient::new(&p.discord.api_base, t)),
            backoff: Duration::from_millis(500),
        }
    }

    fn limit(&self, target: &Target) -> Result<usize, DeliveryError> {
        match (target.platform.as_str(), &self.telegram, &self.discord) {
            ("telegram", Some(_), _) => Ok(telegram::LIMIT),
            ("discord", _, Some(_)) => Ok(discord::LIMIT),
            ("telegram", None, _) => Err(DeliveryError::NotConfigured("telegram (TELEGRAM_BOT_TOKEN is not set)".into())),
            ("discord", _, None) => Err(DeliveryError::NotConfigured("discord (DISCORD_BOT_TOKEN is not set)".into())),
            (other, _, _) => Err(DeliveryError::NotConfigured(other.to_string())),
        }
    }

    async fn once(&self, target: &Target, chunk: &str) -> Result<(), DeliveryError> {
        match (&self.telegram, &self.discord, target.platform.as_str()) {
            (Some(c), _, "telegram") => c.send_chunk(target, chunk).await,
            (_, Some(c), "discord") => c.send_chunk(target, chunk).await,
            _ => Err(DeliveryError::NotConfigured(target.platform.clone())),
        }
    }

    /// Sends one chunk, retrying temporary failures; chunks already sent are never re-sent.
    async fn chunk_with_retry(&self, target: &Target, chunk: &str) -> Result<(), DeliveryError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wait = match self.once(target, chunk).await {
                Ok(()) => return Ok(()),
                Err(DeliveryError::RateLimited(s)) if attempt < ATTEMPTS => Duration::from_secs(s.min(30)),
                Err(DeliveryError::Retryable(_)) if attempt < ATTEMPTS => self.backoff * 2u32.pow(attempt - 1),
                Err(e) => return Err(e),
            };
            tracing::warn!(platform = %target.platform, attempt, delay_ms = wait.as_millis() as u64, "delivery failed; retrying");
            tokio::time::sleep(wait).await;
        }
    }
}

#[async_trait]
impl Delivery for PlatformDelivery {
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError> {
        let limit = self.limit(target)?;
        for chunk in split_message(text, limit) {
            self.chunk_with_retry(target, &chunk).await?;
        }
        Ok(())
    }
}
