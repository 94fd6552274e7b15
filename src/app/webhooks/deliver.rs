//! Where a webhook route's answer goes, as Hermes' `send()`/`_deliver_cross_platform`
//! decide it: `log` (the default) only logs it; a platform name sends it to
//! `deliver_extra.chat_id` (and `message_thread_id`/`thread_id`), else to that platform's
//! home channel. The route is the operator's configuration, so (like a job from
//! `jobs.json`) its target is not held to the chat delivery policy.

use crate::app::App;
use crate::ports::Target;
use serde_json::{Map, Value};

/// A `deliver_extra` value as text (YAML may give a chat id as a number).
fn extra_text(extra: &Map<String, Value>, key: &str) -> Option<String> {
    match extra.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl App {
    /// The chat a route delivers to (`Ok(None)`: `log`), or why it cannot be delivered.
    pub(in crate::app) async fn webhook_target(&self, deliver: &str, extra: &Map<String, Value>) -> Result<Option<Target>, String> {
        let platform = deliver.trim();
        if platform.is_empty() || platform == "log" {
            return Ok(None);
        }
        if !self.inner.delivery.delivers_to(platform) {
            return Err(format!("platform `{platform}` is not connected (unknown deliver type, or its channel is not configured)"));
        }
        let thread_id = extra_text(extra, "message_thread_id").or_else(|| extra_text(extra, "thread_id"));
        if let Some(chat_id) = extra_text(extra, "chat_id") {
            return Ok(Some(Target { platform: platform.to_string(), chat_id, thread_id }));
        }
        // The home channels are read only when no chat is named (one store read).
        match self.homes().await.remove(platform) {
            Some(home) => Ok(Some(Target { thread_id: thread_id.or(home.thread_id), ..home })),
            None => Err(format!("no chat_id in deliver_extra and no home channel for {platform}")),
        }
    }

    /// Sends `text` to the route's target; `Ok(None)` when it only logs.
    pub(in crate::app) async fn webhook_deliver(
        &self,
        deliver: &str,
        extra: &Map<String, Value>,
        text: &str,
    ) -> Result<Option<Target>, String> {
        let Some(target) = self.webhook_target(deliver, extra).await? else {
            let head: String = text.chars().take(200).collect();
            tracing::info!(len = text.len(), "webhook answer logged (deliver: log)");
            tracing::debug!("webhook answer: {head}");
            return Ok(None);
        };
        self.inner.delivery.send(&target, text).await.map_err(|e| e.to_string())?;
        Ok(Some(target))
    }
}
