//! The ports: narrow traits the application needs from the world, held as `Arc<dyn Port>`.
//!
//! Adapters live in `store/` and `clients/`; the app in `app/` sees only these traits.
//! Nothing here knows SQL, HTTP or AWS.

use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::session::{Message, SessionEntry, SessionRecord, ToolCall};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The source of "now". Every time rule is a pure function of this value.
pub trait Clock: Send + Sync {
    /// Current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The wall clock shifted by a fixed offset (the `HERMES_CLOCK_OFFSET_SECS` testing aid).
#[derive(Debug)]
pub struct OffsetClock(pub chrono::Duration);

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.0
    }
}

/// A clock moved by hand (tests and simulations).
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        Self(Mutex::new(t))
    }

    /// Moves to `t`.
    pub fn set(&self, t: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = t;
    }

    /// Moves forward.
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *g += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Store failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A compare-and-set lost: someone else wrote first. Callers reload and retry.
    #[error("concurrent update of {0}")]
    Conflict(String),
    /// The per-session queue is at its cap.
    #[error("queue full ({0} items)")]
    QueueFull(usize),
    /// The inbound platform message id was already recorded; nothing was written.
    #[error("duplicate inbound message")]
    DuplicateInbound,
    /// A stored record could not be decoded.
    #[error("corrupt record {what}: {reason}")]
    Corrupt {
        /// Which record.
        what: String,
        /// Why.
        reason: String,
    },
    /// The backend failed.
    #[error("store backend error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A change to session records made in the same write as an entry update.
#[derive(Debug, Clone)]
pub enum SessionChange {
    /// Create the record of a new conversation.
    Start(SessionRecord),
    /// End a conversation (first end reason wins).
    End {
        /// Which.
        session_id: SessionId,
        /// Why.
        reason: String,
        /// When.
        at: DateTime<Utc>,
    },
    /// Re-open an ended conversation (`/resume <id>`).
    Reopen(SessionId),
    /// Append messages to a transcript.
    Append {
        /// Which conversation.
        session_id: SessionId,
        /// The messages, in order.
        messages: Vec<Message>,
    },
    /// Record an inbound platform id; the whole write fails with
    /// [`StoreError::DuplicateInbound`] if it was seen before.
    Inbound(InboundId),
}

/// A message waiting in a session's FIFO for its own turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedItem {
    /// The prompt.
    pub text: String,
    /// Platform message id, if any.
    #[serde(default)]
    pub message_id: Option<String>,
    /// When it was queued.
    pub at: DateTime<Utc>,
}

/// A platform message id, for deduplicating platform retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundId {
    /// Platform.
    pub platform: String,
    /// Chat.
    pub chat_id: String,
    /// Message (or update) id.
    pub message_id: String,
}

/// What appending an inbound message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Stored.
    Stored,
    /// The inbound id was seen before; nothing was written.
    Duplicate,
}

/// The key-value store behind every process. Each method is one atomic operation.
#[async_trait]
pub trait Store: Send + Sync {
    /// `sqlite` or `dynamodb`.
    fn kind(&self) -> &'static str;

    /// The entry of a session key.
    async fn get_entry(&self, key: &SessionKey) -> Result<Option<SessionEntry>, StoreError>;

    /// Compare-and-set write: succeeds only if the stored version equals `entry.version`
    /// (0 = must not exist yet). Applies `changes` in the same atomic write. Returns the entry
    /// with its new version. Loses with [`StoreError::Conflict`].
    async fn put_entry(&self, entry: &SessionEntry, changes: &[SessionChange]) -> Result<SessionEntry, StoreError>;

    /// Entries, most recently updated first.
    async fn list_entries(&self, limit: usize) -> Result<Vec<SessionEntry>, StoreError>;

    /// One conversation's record.
    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;

    /// Conversations, newest first, optionally of one key.
    async fn list_sessions(&self, key: Option<&SessionKey>, limit: usize) -> Result<Vec<SessionRecord>, StoreError>;

    /// Appends messages in order. With `dedupe`, first records the inbound id and writes
    /// nothing if it was already seen — both in one atomic write.
    async fn append_messages(&self, id: &SessionId, msgs: &[Message], dedupe: Option<&InboundId>) -> Result<Appended, StoreError>;

    /// The newest `limit` messages of a conversation, oldest first.
    async fn recent_messages(&self, id: &SessionId, limit: usize) -> Result<Vec<Message>, StoreError>;

    /// Number of messages in a conversation.
    async fn count_messages(&self, id: &SessionId) -> Result<u64, StoreError>;

    /// Whether an inbound id was already recorded.
    async fn seen_inbound(&self, id: &InboundId) -> Result<bool, StoreError>;

    /// Appends to the key's FIFO if it holds fewer than `cap` items, recording `dedupe` in
    /// the same write. Returns the new length; [`StoreError::QueueFull`] past the cap,
    /// [`StoreError::DuplicateInbound`] for a seen id.
    async fn queue_push(&self, key: &SessionKey, item: &QueuedItem, cap: usize, dedupe: Option<&InboundId>) -> Result<usize, StoreError>;

    /// Moves the FIFO head into `session`'s transcript as a user message, in one write.
    async fn queue_pop_into(&self, key: &SessionKey, session: &SessionId) -> Result<Option<QueuedItem>, StoreError>;

    /// Items in the key's FIFO, oldest first.
    async fn queue_list(&self, key: &SessionKey) -> Result<Vec<QueuedItem>, StoreError>;

    /// Empties the key's FIFO; returns how many items were removed.
    async fn queue_clear(&self, key: &SessionKey) -> Result<usize, StoreError>;

    /// Keys that need attention from a sweep: leases expired before `now`, entries flagged
    /// for a wake (pending slot, resume), and keys with queued items. With `all_leases`,
    /// every key holding a lease (startup after an unclean exit).
    async fn wake_candidates(&self, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError>;

    /// Writes a job with compare-and-set on `job.version` (0 = create; it must not exist).
    /// Returns the job with its new version.
    async fn put_job(&self, job: &Job) -> Result<Job, StoreError>;

    /// One job.
    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError>;

    /// All jobs, by id.
    async fn list_jobs(&self) -> Result<Vec<Job>, StoreError>;

    /// Deletes a job; false if it did not exist.
    async fn delete_job(&self, id: &str) -> Result<bool, StoreError>;

    /// Enabled, scheduled jobs with `next_run_at <= now`, oldest first (an index, no scan).
    async fn due_jobs(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Job>, StoreError>;

    /// At most once per occurrence: inserts the claim if absent AND writes `job` (its
    /// advanced state) with compare-and-set on `job.version`, in one atomic write. A claim
    /// is never re-admitted. Returns [`Claim::Duplicate`] if the occurrence was claimed.
    /// `now` (from the caller's clock) stamps the claim and sets its retention.
    async fn claim_occurrence(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError>;

    /// The status of an occurrence's claim (`claimed`, `ok`, `error`, …), if claimed.
    async fn claim_status(&self, occ: &Occurrence) -> Result<Option<String>, StoreError>;

    /// Records a run's outcome on its claim and keeps the newest `retention` runs of the job.
    async fn finish_run(&self, run: &RunRecord, retention: usize) -> Result<(), StoreError>;

    /// Recent runs of a job, newest first.
    async fn list_runs(&self, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError>;

    /// Delivery ledger: records `(occurrence, target)`; false if it was already recorded
    /// (the message must not be sent again).
    async fn ledger_begin(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError>;

    /// Sets the ledger status of `(occurrence, target)` (`sent`, `failed`).
    async fn ledger_finish(&self, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError>;

    /// Records `key` once until `expires_at` (JWT `jti` replay store); false if present and
    /// not yet expired at `now` (the caller's clock: a store never reads the wall clock).
    async fn use_once(&self, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError>;

    /// A small named record (markers, heartbeats).
    async fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Writes a small named record.
    async fn put_meta(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// Deletes a small named record.
    async fn delete_meta(&self, key: &str) -> Result<(), StoreError>;
}

/// Result of claiming an occurrence.
#[derive(Debug, Clone)]
pub enum Claim {
    /// This caller owns the occurrence; the job as written.
    Claimed(Box<Job>),
    /// Someone claimed it before.
    Duplicate,
}

/// A tool the model may call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One model request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// The prompt: system first, then the transcript.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Per-job model override.
    pub model: Option<String>,
}

/// One model answer.
#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    /// Text (may be empty when calling tools).
    pub content: String,
    /// Tool calls requested.
    pub tool_calls: Vec<ToolCall>,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// Model failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Timed out or could not connect (after retries).
    #[error("model unreachable: {0}")]
    Unreachable(String),
    /// 429 after retries.
    #[error("model rate-limited")]
    RateLimited,
    /// 401/403.
    #[error("model rejected the API key (HTTP {0})")]
    Unauthorized(u16),
    /// Other non-success status.
    #[error("model returned HTTP {status}: {detail}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Short upstream detail (never a secret).
        detail: String,
    },
    /// The body was not a chat completion.
    #[error("model answer not understood: {0}")]
    BadResponse(String),
}

/// A chat-completions model.
#[async_trait]
pub trait Llm: Send + Sync {
    /// `offline` or `openai`.
    fn name(&self) -> &'static str;

    /// One completion.
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

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
    /// Sends `text` (split to the platform's limit by the adapter).
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError>;
}

/// Timer-provider failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// Temporary (5xx, timeout) after retries.
    #[error("timer provider unavailable: {0}")]
    Unavailable(String),
    /// Refused (4xx): retrying will not help.
    #[error("timer provider refused: {0}")]
    Refused(String),
}

/// What a reconcile changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReconcileReport {
    /// Timers armed or moved.
    pub armed: usize,
    /// Timers cancelled.
    pub cancelled: usize,
    /// Timers already right.
    pub unchanged: usize,
}

/// Whoever wakes the process for the next occurrence of each job (Chronos, EventBridge, or
/// nobody: the built-in ticker polls the store).
#[async_trait]
pub trait Timers: Send + Sync {
    /// `builtin`, `chronos`, `eventbridge`.
    fn name(&self) -> &'static str;

    /// Makes the provider's timer for `job` match `job.next_run_at` (cancels when the job is
    /// not armed).
    async fn arm(&self, job: &Job) -> Result<(), TimerError>;

    /// Removes the job's timer (unknown is fine).
    async fn cancel(&self, job_id: &str) -> Result<(), TimerError>;

    /// Compares the desired timers (`jobs`) with the provider's and fixes the difference.
    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError>;
}

/// The built-in provider: nothing to arm, the ticker finds due jobs in the store.
#[derive(Debug, Default)]
pub struct PollingTimers;

#[async_trait]
impl Timers for PollingTimers {
    fn name(&self) -> &'static str {
        "builtin"
    }
    async fn arm(&self, _job: &Job) -> Result<(), TimerError> {
        Ok(())
    }
    async fn cancel(&self, _job_id: &str) -> Result<(), TimerError> {
        Ok(())
    }
    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError> {
        Ok(ReconcileReport { unchanged: jobs.iter().filter(|j| j.armed()).count(), ..ReconcileReport::default() })
    }
}
