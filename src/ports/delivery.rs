//! The delivery port: outbound messages to chat platforms and their classified failures.
//! Adapters live in `clients/`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Where a message is delivered.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Target {
    /// Platform.
    pub platform: String,
    /// Chat.
    pub chat_id: String,
    /// Thread, if any.
    #[serde(default)]
    pub thread_id: Option<String>,
}

/// Delivery failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// No adapter or credentials for that platform.
    #[error("platform `{0}` is not configured for delivery")]
    NotConfigured(String),
    /// Temporary: worth retrying.
    #[error("delivery failed temporarily: {0}")]
    Retryable(String),
    /// Rate-limited, with the wait the platform asked for.
    #[error("delivery rate-limited (retry after {0} s)")]
    RateLimited(u64),
    /// No answer came after the request went out (a timeout, a cut connection): the platform
    /// may or may not have taken the message. Never retried (docs/design.md#delivery).
    #[error("delivery outcome unknown, not sent again: {0}")]
    Unknown(String),
    /// Permanent: retrying will not help.
    #[error("delivery refused: {0}")]
    Permanent(String),
    /// A fetched file is over the caller's cap (its size in bytes, when the platform said).
    /// Nothing past the cap was read.
    #[error("the file is larger than allowed")]
    TooLarge(Option<u64>),
}

/// Outbound messages to chat platforms.
#[async_trait]
pub trait Delivery: Send + Sync {
    /// Whether `platform` is a chat platform this port delivers to (a registered channel),
    /// whether or not its credentials are set (a send then fails `NotConfigured`).
    fn delivers_to(&self, platform: &str) -> bool;
    /// The platforms a send can reach now (registered, with credentials), in order; what the
    /// `send_message` tool offers. Default: none.
    fn platforms(&self) -> Vec<String> {
        Vec::new()
    }
    /// Sends `text` (split to the platform's limit by the adapter).
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError>;
    /// The messages `text` goes out as on `target`'s platform (split to its limit), so a
    /// caller can record each one before it is sent (job delivery's ledger). Default: one.
    fn parts(&self, _target: &Target, text: &str) -> Result<Vec<String>, DeliveryError> {
        Ok(vec![text.to_string()])
    }
    /// Sends one of [`Delivery::parts`], with the adapter's retries. Default: [`Delivery::send`].
    async fn send_part(&self, target: &Target, part: &str) -> Result<(), DeliveryError> {
        self.send(target, part).await
    }
    /// Whether messages sent to `platform` can be edited afterwards (streaming replies edit
    /// one message as the answer grows). Default: no.
    fn edits(&self, _platform: &str) -> bool {
        false
    }
    /// The shortest gap between two edits in `target`'s chat the platform's rate limits
    /// allow. Default: none.
    fn min_edit_gap(&self, _target: &Target) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// Sends one of [`Delivery::parts`] like [`Delivery::send_part`], returning the sent
    /// message's platform id when the platform named one (needed to edit it). Default:
    /// [`Delivery::send_part`], no id.
    async fn send_one(&self, target: &Target, part: &str) -> Result<Option<String>, DeliveryError> {
        self.send_part(target, part).await.map(|()| None)
    }
    /// Replaces the text of the sent message `message_id` with `text` (≤ the limit): one
    /// attempt, its failure classified (the caller decides whether to try again: a stale
    /// progress edit is skipped, a final one retried). Default: not supported.
    async fn edit(&self, target: &Target, _message_id: &str, _text: &str) -> Result<(), DeliveryError> {
        Err(DeliveryError::Permanent(format!("{} messages cannot be edited", target.platform)))
    }
    /// Downloads a file that came with an inbound message on `platform`, at most
    /// `max_bytes`. Default: not supported.
    async fn fetch(
        &self,
        platform: &str,
        _attachment: &crate::core::inbound::Attachment,
        _max_bytes: usize,
    ) -> Result<Vec<u8>, DeliveryError> {
        Err(DeliveryError::NotConfigured(platform.to_string()))
    }
    /// Whether audio sent to `platform` goes out as a voice note (Ogg/Opus: Telegram,
    /// WhatsApp) rather than as a file. Default: no.
    fn voice_notes(&self, _platform: &str) -> bool {
        false
    }
    /// Sends `audio` to `target`: a voice note where [`Delivery::voice_notes`] says so, else
    /// a file, with the adapter's retries. Default: not supported.
    async fn send_audio(&self, target: &Target, _audio: &super::Audio) -> Result<(), DeliveryError> {
        Err(DeliveryError::NotConfigured(target.platform.clone()))
    }
}

/// Where one inbound message's streamed reply goes when the transport that brought it
/// answers it itself (a Discord interaction's follow-ups, docs/design.md#streaming): the
/// same moves as [`Delivery`]'s, bound to that one conversation.
#[async_trait]
pub trait StreamTarget: Send + Sync {
    /// `text` split into messages within the platform's limit.
    fn parts(&self, text: &str) -> Vec<String>;
    /// The shortest gap between two edits the platform allows. Default: none.
    fn min_edit_gap(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// Sends one part (with retries), returning its message id when the platform named one.
    async fn send_one(&self, part: &str) -> Result<Option<String>, DeliveryError>;
    /// Replaces the text of sent message `message_id` (one attempt, classified).
    async fn edit(&self, message_id: &str, text: &str) -> Result<(), DeliveryError>;
    /// Sends `text`, split into parts, each once.
    async fn send(&self, text: &str) -> Result<(), DeliveryError>;
    /// Whether every model delta goes out as it arrives (an SSE client of the API server:
    /// no edit interval, no buffer threshold, no cursor), even with `streaming` off in the
    /// config. Default: no.
    fn live(&self) -> bool {
        false
    }
    /// A tool call of the turn started (`done` false) or finished (Hermes'
    /// `hermes.tool.progress`). Default: not shown.
    fn tool_progress(&self, _call_id: &str, _tool: &str, _args: &str, _done: bool) {}
}
