//! Slack over the HTTP Events API (no Socket Mode, so nothing stays connected and the gateway
//! can scale to zero): `POST /webhooks/slack` (v0 signature checked on the raw body before
//! anything is parsed, a 300 s window, replays refused; Slack's retries answered without a
//! turn; every message answered with 200 at once and handled in the background, since Slack
//! wants an answer within 3 s), and the Web API for replies (`chat.postMessage` in the
//! message's thread, split at 39,000 characters), edits (`chat.update`) and shared files.

pub mod api;
pub mod event;
pub mod signature;
mod upload;

use crate::channels::{Attachment, Channel, ChannelError, RawRequest, Received, Route, Sent, Unauthenticated, WebReply};
use crate::config::Loaded;
use crate::ports::{DeliveryError, Target};
use api::SlackClient;
use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use signature::{ReplayCache, SIGNATURE_HEADER, TIMESTAMP_HEADER, fresh, verify};

/// Default Web API base (`platforms.slack.api_base`).
pub const DEFAULT_API_BASE: &str = "https://slack.com/api";
/// Header Slack sets on a retried delivery (1, 2, 3).
pub const RETRY_HEADER: &str = "x-slack-retry-num";

/// The Slack channel.
pub struct Slack {
    signing_secret: Option<SecretString>,
    client: Option<SlackClient>,
    replays: ReplayCache,
    threading: event::Threading,
}

impl Slack {
    /// From `SLACK_SIGNING_SECRET` (inbound), `SLACK_BOT_TOKEN` (outbound) and
    /// `platforms.slack.api_base` (default `https://slack.com/api`), with Hermes'
    /// `platforms.slack.extra.reply_in_thread` and `dm_top_level_threads_as_sessions` (both
    /// default true).
    pub fn from_config(cfg: &Loaded, http: reqwest::Client) -> Self {
        let p = cfg.platform("slack");
        let threading = event::Threading {
            dm_top_level_threads_as_sessions: p.extra_flag("dm_top_level_threads_as_sessions", true),
            reply_in_thread: p.extra_flag("reply_in_thread", true),
        };
        let base = if p.api_base.trim().is_empty() { DEFAULT_API_BASE.to_string() } else { p.api_base };
        Self {
            signing_secret: cfg.env.secret("SLACK_SIGNING_SECRET"),
            client: cfg.env.secret("SLACK_BOT_TOKEN").map(|t| SlackClient::new(http, &base, t)),
            replays: ReplayCache::default(),
            threading,
        }
    }

    fn client(&self) -> Result<&SlackClient, DeliveryError> {
        self.client.as_ref().ok_or_else(|| DeliveryError::NotConfigured("slack (SLACK_BOT_TOKEN is not set)".into()))
    }
}

#[async_trait]
impl Channel for Slack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn routes(&self) -> Vec<Route> {
        vec![Route::post("/webhooks/slack")]
    }

    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated> {
        let Some(secret) = &self.signing_secret else { return Err(Unauthenticated("SLACK_SIGNING_SECRET is not set")) };
        let (Some(sig), Some(ts)) = (req.header(SIGNATURE_HEADER), req.header(TIMESTAMP_HEADER)) else {
            return Err(Unauthenticated("no signature headers"));
        };
        let Some(signed_at) = fresh(ts, req.now) else { return Err(Unauthenticated("stale signature timestamp")) };
        if !verify(secret.expose_secret(), sig, ts, req.body) {
            return Err(Unauthenticated("bad signature"));
        }
        // Only valid signatures are remembered, so forged requests cannot fill the cache.
        if !self.replays.first_time(sig, signed_at, req.now) {
            return Err(Unauthenticated("replayed signature"));
        }
        Ok(())
    }

    /// A retried delivery: the first one was answered already (its message is handled or
    /// stored), so a retry never starts a second turn.
    fn retry(&self, req: &RawRequest<'_>) -> Option<WebReply> {
        req.header(RETRY_HEADER).map(|_| WebReply::json(json!({"ok": true, "duplicate": true})))
    }

    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError> {
        event::receive(req.body, self.threading)
    }

    fn limit(&self) -> usize {
        api::LIMIT
    }

    fn ready(&self) -> Result<(), DeliveryError> {
        self.client().map(|_| ())
    }

    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        self.client()?.post_message(target, text).await
    }

    async fn send_audio(&self, target: &Target, audio: &crate::ports::Audio) -> Result<Sent, DeliveryError> {
        self.client()?.upload_file(target, audio).await
    }

    fn edits(&self) -> bool {
        true
    }

    /// `chat.update` is a Tier 3 method (about 50 calls a minute per workspace).
    fn min_edit_gap(&self, _target: &Target) -> std::time::Duration {
        std::time::Duration::from_millis(1200)
    }

    async fn edit(&self, target: &Target, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        self.client()?.update(target, message_id, text).await
    }

    async fn fetch(&self, attachment: &Attachment, max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        self.client()?.download(attachment, max_bytes).await
    }
}
