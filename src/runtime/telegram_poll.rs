//! Telegram long polling inside `serve` (docs/design.md#telegram-polling): for a bot with no
//! public URL. `deleteWebhook` first, then `getUpdates` in a loop; every update goes through
//! the Telegram channel's own normalization (exactly what its webhook does) and the same
//! inbound use case. The offset lives in the store and moves past an update only once the
//! update is stored (or needs nothing stored), so a restart neither loses nor repeats one;
//! turns run in their own tasks, so a long turn never holds up the poll.

use crate::app::sessions::accept::Accepted;
use crate::app::{App, AppError};
use crate::channels::telegram::bot::{BotApi, BotError, POLL_TIMEOUT_SECS};
use crate::channels::{Channel, ChannelError, Channels, FollowUp, RawRequest, Received};
use crate::config::{IntakeMode, Loaded};
use axum::http::{HeaderMap, Method};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// First wait after a failed call; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest wait between failed calls.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Polling, when this configuration asks for it: the Bot API client and why.
pub struct Polling {
    api: BotApi,
    why: &'static str,
}

impl Polling {
    /// `platforms.telegram.mode`, or by default: poll when `TELEGRAM_BOT_TOKEN` is set and
    /// `TELEGRAM_WEBHOOK_SECRET` is not.
    pub fn from_config(cfg: &Loaded) -> Option<Self> {
        let s = &cfg.secrets;
        let why = match cfg.settings.platforms.telegram.mode {
            Some(IntakeMode::Webhook) => return None,
            Some(IntakeMode::Polling) => "platforms.telegram.mode: polling",
            None if s.telegram_webhook_secret.is_none() => "no webhook secret set",
            None => return None,
        };
        let Some(token) = s.telegram_bot_token.clone() else {
            if cfg.settings.platforms.telegram.mode.is_some() {
                tracing::warn!("telegram: platforms.telegram.mode is polling but TELEGRAM_BOT_TOKEN is not set: not polling");
            }
            return None;
        };
        Some(Self { api: BotApi::new(&cfg.settings.platforms.telegram.api_base, token), why })
    }
}

/// Exponential backoff, capped.
struct Backoff(Duration);

impl Backoff {
    fn next(&mut self) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(MAX_BACKOFF);
        d
    }
}

/// Waits `d`; false when `stop` came first.
async fn pause(stop: &mut watch::Receiver<bool>, d: Duration) -> bool {
    tokio::select! {
        _ = stop.wait_for(|s| *s) => false,
        () = tokio::time::sleep(d) => true,
    }
}

/// The poll loop, until `stop` turns true or Telegram refuses the token.
pub async fn run(p: Polling, app: App, channels: Arc<Channels>, mut stop: watch::Receiver<bool>) {
    let Some(channel) = channels.get("telegram").cloned() else {
        tracing::error!("telegram: no Telegram channel registered: not polling");
        return;
    };
    let cursor = format!("telegram:{}", p.api.bot_id());
    let mut backoff = Backoff(FIRST_BACKOFF);
    // Until the webhook is gone and the stored offset is read.
    let mut offset = loop {
        match start(&p.api, &app, &cursor).await {
            Ok(o) => break o,
            Err(BotError::Unauthorized(s, d)) => return refused(s, &d),
            Err(e) => tracing::warn!(error = %e, "telegram: cannot start polling yet; retrying"),
        }
        if !pause(&mut stop, backoff.next()).await {
            return;
        }
    };
    tracing::info!(offset, "telegram: polling ({})", p.why);
    let poller = Poller { app, channel };
    loop {
        let got = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            r = p.api.get_updates(offset, POLL_TIMEOUT_SECS) => r,
        };
        let wait = match got {
            Ok(updates) => match poller.take(updates, &mut offset, &cursor).await {
                Ok(()) => {
                    backoff = Backoff(FIRST_BACKOFF);
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, offset, "telegram: could not store an update; fetching it again after a pause");
                    backoff.next()
                }
            },
            Err(BotError::Unauthorized(s, d)) => return refused(s, &d),
            Err(BotError::RateLimited(secs)) => {
                tracing::warn!(retry_after_secs = secs, "telegram: getUpdates rate-limited");
                Duration::from_secs(secs)
            }
            Err(e @ BotError::Conflict(_)) => {
                let d = backoff.next();
                tracing::warn!(error = %e, retry_in_secs = d.as_secs(), "telegram: polling conflict; stop the other poller, or run `hermes-zero telegram delete-webhook` (or set TELEGRAM_WEBHOOK_SECRET to use the webhook)");
                d
            }
            Err(e) => {
                let d = backoff.next();
                tracing::warn!(error = %e, retry_in_secs = d.as_secs(), "telegram: getUpdates failed");
                d
            }
        };
        if !pause(&mut stop, wait).await {
            return;
        }
    }
}

fn refused(status: u16, desc: &str) {
    tracing::error!(
        status,
        description = desc,
        "telegram: polling stopped: Telegram refused the bot token; check TELEGRAM_BOT_TOKEN and restart"
    );
}

/// `deleteWebhook`, then the stored offset (0 when none).
async fn start(api: &BotApi, app: &App, cursor: &str) -> Result<i64, BotError> {
    api.delete_webhook().await?;
    let stored = app.sessions().cursor(cursor).await.map_err(|e| BotError::Temporary(format!("reading the stored offset: {e}")))?;
    Ok(stored.and_then(|s| s.trim().parse::<i64>().ok()).unwrap_or(0))
}

/// Hands updates to the app.
struct Poller {
    app: App,
    channel: Arc<dyn Channel>,
}

impl Poller {
    /// Takes a batch in order; after each stored update the offset moves past it (stored
    /// first). Stops at the first update that could not be stored.
    async fn take(&self, updates: Vec<Value>, offset: &mut i64, cursor: &str) -> Result<(), AppError> {
        for update in updates {
            let Some(id) = update["update_id"].as_i64() else {
                tracing::warn!("telegram: an update without update_id was ignored");
                continue;
            };
            if id < *offset {
                continue;
            }
            self.accept(id, &update).await?;
            crate::app::crash::crash_point("telegram:accepted");
            self.app.sessions().set_cursor(cursor, &(id + 1).to_string()).await?;
            *offset = id + 1;
        }
        Ok(())
    }

    /// One update, normalized exactly as the webhook does, handed to the app; returns once
    /// it is stored or handled. Only a store failure is an error (the update is fetched
    /// again); anything else is logged and the update is done.
    async fn accept(&self, id: i64, update: &Value) -> Result<(), AppError> {
        let body = serde_json::to_vec(update).map_err(|e| AppError::BadRequest(e.to_string()))?;
        let headers = HeaderMap::new();
        let req = RawRequest { method: &Method::POST, headers: &headers, query: None, body: &body, now: self.app.now() };
        let (msg, then) = match self.channel.receive(&req) {
            Ok(Received::Answer(_)) => return Ok(()),
            Ok(Received::Turn(msg)) => (msg, None),
            Ok(Received::Deferred { msg, then, .. }) => (msg, then),
            Ok(Received::DeferredMany { .. }) => {
                // One Telegram update is one message; the channel never batches.
                tracing::warn!(update_id = id, "telegram: a batched update is not expected; ignored");
                return Ok(());
            }
            Err(ChannelError::BadRequest(why)) => {
                tracing::warn!(update_id = id, %why, "telegram: update ignored");
                return Ok(());
            }
        };
        match self.app.sessions().handle_inbound_detached(msg).await {
            Ok(Accepted::Done(out)) => finish(then, Ok(out)).await,
            Ok(Accepted::Running(task)) => {
                tokio::spawn(async move {
                    let result = task.await.unwrap_or_else(|e| Err(AppError::BadRequest(format!("the turn stopped: {e}"))));
                    if let Err(e) = &result {
                        tracing::warn!(update_id = id, error = %e, "telegram: turn failed");
                    }
                    finish(then, result).await;
                });
            }
            Err(e @ (AppError::Store(_) | AppError::Contended)) => return Err(e),
            Err(e) => tracing::warn!(update_id = id, error = %e, "telegram: update not handled"),
        }
        Ok(())
    }
}

async fn finish(then: Option<Box<dyn FollowUp>>, result: Result<crate::app::Outcome, AppError>) {
    if let Some(then) = then {
        then.finish(result).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polls(yaml: &str, env: &[(&str, &str)]) -> Option<&'static str> {
        let dir = std::env::temp_dir().join(format!("hz-poll-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.yaml"), yaml).unwrap();
        let cfg = crate::config::load_settings(&dir, None, &crate::config::Env::from_pairs(env.iter().copied())).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        Polling::from_config(&cfg).map(|p| p.why)
    }

    #[test]
    fn the_mode_rule() {
        let (token, secret) = (("TELEGRAM_BOT_TOKEN", "1:a"), ("TELEGRAM_WEBHOOK_SECRET", "s"));
        assert_eq!(polls("", &[token]), Some("no webhook secret set"));
        assert_eq!(polls("", &[token, secret]), None);
        assert_eq!(polls("", &[]), None);
        let forced = "platforms:\n  telegram:\n    mode: polling\n";
        assert_eq!(polls(forced, &[token, secret]), Some("platforms.telegram.mode: polling"));
        assert_eq!(polls(forced, &[]), None, "no token, nothing to poll with");
        assert_eq!(polls("platforms:\n  telegram:\n    mode: webhook\n", &[token]), None);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let mut b = Backoff(FIRST_BACKOFF);
        let secs: Vec<u64> = (0..9).map(|_| b.next().as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
