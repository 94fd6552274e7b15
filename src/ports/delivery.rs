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
    /// Permanent: retrying will not help.
    #[error("delivery refused: {0}")]
    Permanent(String),
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
}
