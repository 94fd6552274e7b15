//! The registry of channels: the one list of platforms, built once at wiring time, looked up
//! by name for webhooks and delivery. It is the adapter behind the app's `Delivery` port.

use crate::channels::{Channel, discord, slack, telegram, whatsapp, with_retry};
use crate::clients::http_client;
use crate::config::Loaded;
use crate::ports::{Delivery, DeliveryError, Target};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Timeout of one outbound platform call.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// The registered channels.
pub struct Channels {
    list: Vec<Arc<dyn Channel>>,
    backoff: Duration,
    deferred: Arc<AtomicUsize>,
}

impl Default for Channels {
    fn default() -> Self {
        Self { list: Vec::new(), backoff: Duration::from_millis(500), deferred: Arc::default() }
    }
}

/// One deferred webhook message being handled in the background; counted until dropped.
pub struct DeferredGuard(Arc<AtomicUsize>);

impl Drop for DeferredGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Channels {
    /// Every platform of this build, configured from `cfg`, sharing one HTTP client. A
    /// platform is registered even without credentials: its webhook then refuses every
    /// call and a send fails `NotConfigured`, naming the variable to set.
    pub fn from_config(cfg: &Loaded) -> Self {
        let http = http_client(CALL_TIMEOUT);
        // One line per platform.
        Self::default()
            .with(telegram::Telegram::from_config(cfg, http.clone()))
            .with(discord::Discord::from_config(cfg, http.clone()))
            .with(slack::Slack::from_config(cfg, http.clone()))
            .with(whatsapp::WhatsApp::from_config(cfg, http))
    }

    /// Adds a channel (a later one with the same name replaces it).
    pub fn with(mut self, channel: impl Channel + 'static) -> Self {
        self.list.retain(|c| c.name() != channel.name());
        self.list.push(Arc::new(channel));
        self
    }

    /// The base wait between retries of a temporary failure (doubles per attempt).
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// The channel named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.list.iter().find(|c| c.name() == name)
    }

    /// The channel of `target`'s platform.
    fn channel(&self, target: &Target) -> Result<&Arc<dyn Channel>, DeliveryError> {
        self.get(&target.platform).ok_or_else(|| DeliveryError::NotConfigured(target.platform.clone()))
    }

    /// Counts a deferred message (answered already, handled in the background) until the
    /// guard drops, so the Lambda settle phase waits for its work and its replies.
    pub fn deferred_guard(&self) -> DeferredGuard {
        self.deferred.fetch_add(1, Ordering::SeqCst);
        DeferredGuard(self.deferred.clone())
    }

    /// Deferred messages still being handled in this process.
    pub fn deferred_running(&self) -> usize {
        self.deferred.load(Ordering::SeqCst)
    }

    /// All channels, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Channel>> {
        self.list.iter()
    }
}

#[async_trait]
impl Delivery for Channels {
    fn delivers_to(&self, platform: &str) -> bool {
        self.get(platform).is_some()
    }

    fn platforms(&self) -> Vec<String> {
        self.list.iter().filter(|c| c.ready().is_ok()).map(|c| c.name().to_string()).collect()
    }

    /// Splits `text` to the platform's limit and sends each part, retrying temporary
    /// failures; parts already sent are never re-sent.
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError> {
        for part in self.parts(target, text)? {
            self.send_part(target, &part).await?;
        }
        Ok(())
    }

    fn parts(&self, target: &Target, text: &str) -> Result<Vec<String>, DeliveryError> {
        let channel = self.channel(target)?;
        channel.ready()?;
        Ok(channel.split(text))
    }

    /// One part, retried only while the platform has certainly not taken it
    /// (`with_retry`: an `Unknown` outcome is never retried).
    async fn send_part(&self, target: &Target, part: &str) -> Result<(), DeliveryError> {
        let channel = self.channel(target)?;
        with_retry(channel.name(), self.backoff, || channel.send(target, part)).await.map(|_| ())
    }

    fn edits(&self, platform: &str) -> bool {
        self.get(platform).is_some_and(|c| c.edits() && c.ready().is_ok())
    }

    fn min_edit_gap(&self, target: &Target) -> Duration {
        self.get(&target.platform).map_or(Duration::ZERO, |c| c.min_edit_gap(target))
    }

    async fn send_one(&self, target: &Target, part: &str) -> Result<Option<String>, DeliveryError> {
        let channel = self.channel(target)?;
        with_retry(channel.name(), self.backoff, || channel.send(target, part)).await.map(|s| s.message_id)
    }

    /// One attempt: the streaming caller decides what a failure means.
    async fn edit(&self, target: &Target, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        self.channel(target)?.edit(target, message_id, text).await
    }

    async fn fetch(
        &self,
        platform: &str,
        attachment: &crate::core::inbound::Attachment,
        max_bytes: usize,
    ) -> Result<Vec<u8>, DeliveryError> {
        let channel = self.get(platform).ok_or_else(|| DeliveryError::NotConfigured(platform.to_string()))?;
        with_retry(channel.name(), self.backoff, || channel.fetch(attachment, max_bytes)).await
    }

    fn voice_notes(&self, platform: &str) -> bool {
        self.get(platform).is_some_and(|c| c.voice_notes())
    }

    /// One upload, retried only while the platform has certainly not taken it.
    async fn send_audio(&self, target: &Target, audio: &crate::ports::Audio) -> Result<(), DeliveryError> {
        let channel = self.channel(target)?;
        channel.ready()?;
        with_retry(channel.name(), self.backoff, || channel.send_audio(target, audio)).await.map(|_| ())
    }
}
