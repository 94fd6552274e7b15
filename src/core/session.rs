//! Session state as the store keeps it: [`SessionEntry`] (one per key, versioned for
//! compare-and-set), [`SessionRecord`] (one per conversation) and transcript [`Message`]s.
//!
//! Pure data plus small pure helpers; the store decides how it is laid out on disk.

use crate::core::ids::{Origin, SessionId, SessionKey};
use crate::core::inbound::Attachment;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A turn lease: at most one turn per session key runs at a time (docs/design.md#lease).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Random token of the holder; only the holder may clear the lease.
    pub token: String,
    /// The fencing token: the key's [`SessionEntry::lease_epoch`] when this lease was granted.
    /// Writes fenced by it succeed only while the entry still holds a lease of this epoch.
    #[serde(default)]
    pub epoch: u64,
    /// The holding process (`<host>:<pid>`), so a restart on the same host can tell a dead
    /// holder from a live one.
    #[serde(default)]
    pub owner: String,
    /// When the turn started.
    pub started_at: DateTime<Utc>,
    /// When the lease counts as abandoned (interrupted turn).
    pub expires_at: DateTime<Utc>,
}

/// Why the last automatic reset happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetReason {
    /// `idle_minutes` passed without activity.
    Idle,
    /// The daily boundary passed.
    Daily,
    /// The key was suspended after repeated interruptions.
    Suspended,
}

/// The per-key record: which conversation is current, and the key's control flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    /// The conversation place.
    pub session_key: SessionKey,
    /// The current conversation.
    pub session_id: SessionId,
    /// Where replies go.
    pub origin: Origin,
    /// When this key was first seen.
    pub created_at: DateTime<Utc>,
    /// Last activity (used by the idle and daily reset rules).
    pub updated_at: DateTime<Utc>,
    /// Prompt tokens used in the current session.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens used in the current session.
    #[serde(default)]
    pub output_tokens: u64,
    /// Set by an automatic reset, consumed by the first turn of the new session.
    #[serde(default)]
    pub was_auto_reset: bool,
    /// Why the automatic reset happened.
    #[serde(default)]
    pub auto_reset_reason: Option<ResetReason>,
    /// Whether the reset session had any messages.
    #[serde(default)]
    pub reset_had_activity: bool,
    /// Human description of the reset, for the notice (`inactive for 2h 5m`, …).
    #[serde(default)]
    pub reset_detail: Option<String>,
    /// The live turn lease, if a turn is running.
    #[serde(default)]
    pub lease: Option<Lease>,
    /// Interrupt-mode pending slot: messages that arrived while busy, oldest first. The last
    /// one is the one the next turn answers; earlier (superseded) ones still reach the
    /// transcript, in order, before that turn.
    #[serde(default)]
    pub pending: Vec<PendingMessage>,
    /// A running turn should stop at its next step boundary.
    #[serde(default)]
    pub interrupt_requested: bool,
    /// The previous turn was interrupted and should be resumed.
    #[serde(default)]
    pub resume_pending: bool,
    /// `restart_interrupted` or `shutdown_timeout`.
    #[serde(default)]
    pub resume_reason: Option<String>,
    /// When `resume_pending` was last set.
    #[serde(default)]
    pub last_resume_marked_at: Option<DateTime<Utc>>,
    /// Consecutive interrupted turns (loop detection).
    #[serde(default)]
    pub interruptions: u32,
    /// Set after `restart_loop_threshold` consecutive interruptions.
    #[serde(default)]
    pub suspended: bool,
    /// Last time a busy acknowledgement was sent (at most one per 30 s).
    #[serde(default)]
    pub last_ack_at: Option<DateTime<Utc>>,
    /// Leases granted on this key so far; every grant takes the next number (the epoch).
    #[serde(default)]
    pub lease_epoch: u64,
    /// The model this key's turns use (`/model`), until `/new`; `None`: the agent's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelChoice>,
    /// Compare-and-set version; bumped by every write.
    #[serde(default)]
    pub version: u64,
}

/// A model picked with `/model`: a provider (Hermes' names; `None`: the configured one)
/// and a model id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    /// The provider, canonical name; `None` keeps the configured provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model id sent upstream.
    pub model: String,
}

/// The condition of a fenced write: the entry of `key` must still hold a lease of `epoch`
/// (docs/design.md#lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The session key whose entry holds the lease.
    pub key: SessionKey,
    /// The lease's epoch.
    pub epoch: u64,
}

/// A message parked in the pending slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingMessage {
    /// The text.
    pub text: String,
    /// Platform message id, if any.
    pub message_id: Option<String>,
    /// When it arrived.
    pub at: DateTime<Utc>,
    /// Files that came with it, by platform reference (docs/design.md#media).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

impl SessionEntry {
    /// A brand-new entry for a key with a fresh session.
    pub fn new(key: SessionKey, id: SessionId, origin: Origin, now: DateTime<Utc>) -> Self {
        Self {
            session_key: key,
            session_id: id,
            origin,
            created_at: now,
            updated_at: now,
            input_tokens: 0,
            output_tokens: 0,
            was_auto_reset: false,
            auto_reset_reason: None,
            reset_had_activity: false,
            reset_detail: None,
            lease: None,
            pending: Vec::new(),
            interrupt_requested: false,
            resume_pending: false,
            resume_reason: None,
            last_resume_marked_at: None,
            interruptions: 0,
            suspended: false,
            last_ack_at: None,
            lease_epoch: 0,
            model: None,
            version: 0,
        }
    }

    /// Grants `lease` as a new lease: the key's epoch goes up by one and the lease carries it.
    pub fn grant(&mut self, mut lease: Lease) {
        self.lease_epoch += 1;
        lease.epoch = self.lease_epoch;
        self.lease = Some(lease);
    }

    /// The fence of the lease held now, if any.
    pub fn fence(&self) -> Option<Fence> {
        self.lease.as_ref().map(|l| Fence { key: self.session_key.clone(), epoch: l.epoch })
    }

    /// Whether the entry still holds the lease of `fence`.
    pub fn holds(&self, fence: &Fence) -> bool {
        self.lease.as_ref().is_some_and(|l| l.epoch == fence.epoch)
    }

    /// Whether a lease is held and not yet expired at `now`.
    pub fn lease_live(&self, now: DateTime<Utc>) -> bool {
        self.lease.as_ref().is_some_and(|l| l.expires_at > now)
    }

    /// Whether stored work waits on this entry (a sweep must wake it if no turn is running).
    pub fn needs_wake(&self) -> bool {
        !self.pending.is_empty() || (self.resume_pending && !self.suspended)
    }
}

/// One conversation's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The conversation.
    pub session_id: SessionId,
    /// Its place.
    pub session_key: SessionKey,
    /// Platform of the place (for listings).
    pub platform: String,
    /// Optional title (from `/new <title>`).
    pub title: Option<String>,
    /// Start.
    pub started_at: DateTime<Utc>,
    /// End, once ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it ended (`session_reset`, `session_switch`, …); the first reason wins.
    pub end_reason: Option<String>,
}

/// Who wrote a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System prompt or note.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id, echoed in the tool result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// JSON arguments as text (as the model produced them).
    pub arguments: String,
}

/// One transcript message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text (may be empty for assistant messages that only call tools).
    pub content: String,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For tool results: the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it was written.
    pub at: DateTime<Utc>,
    /// Platform message id of an inbound user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_message_id: Option<String>,
    /// For assistant messages: the model id that answered (a fallback shows here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For tool results: how long the call took, in milliseconds (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Set on a context summary (docs/design.md#compression): it stands for the transcript
    /// messages before this position, and is itself left out of later prompts' tails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_through: Option<u64>,
    /// Files that came with a user message, by platform reference only (never the bytes):
    /// the photos a vision model gets in the turn that answers it (docs/design.md#media).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// Images loaded for this model call only: held in memory, never stored.
    #[serde(skip)]
    pub images: Vec<Image>,
}

/// An image's bytes for one model call (docs/design.md#media: never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// MIME type (`image/jpeg`, …).
    pub mime: String,
    /// The bytes, base64-encoded as both providers take them.
    pub base64: String,
}

impl Message {
    /// A plain message.
    pub fn text(role: Role, content: impl Into<String>, at: DateTime<Utc>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            at,
            platform_message_id: None,
            model: None,
            duration_ms: None,
            summary_through: None,
            attachments: Vec::new(),
            images: Vec::new(),
        }
    }
}

/// A conversation read from another agent's store (Hermes' `state.db`), to import as is.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedSession {
    /// Its id there, kept as the session id here.
    pub id: String,
    /// Where it happened there: `cli`, `telegram`, `discord`, `cron`, …
    pub source: String,
    /// The user, when known.
    pub user_id: Option<String>,
    /// Title, when it has one.
    pub title: Option<String>,
    /// Start.
    pub started_at: DateTime<Utc>,
    /// End, if it ended.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it ended.
    pub end_reason: Option<String>,
    /// The chat it is the current session of there (Hermes' gateway routing index), if any:
    /// imported as that chat's current session here, so the chat's next message continues it.
    pub route: Option<Origin>,
}
