//! The store port, split by concern: [`SessionStore`] (entries, conversation records,
//! transcripts, inbound ids, wake candidates), [`QueueStore`] (the per-session FIFO),
//! [`JobStore`] (jobs, the due index, claims, runs), [`LedgerStore`] (delivery ledger and
//! once keys) and [`MetaStore`] (small named records). [`Store`] is all of them plus
//! [`Store::kind`]; the app holds it as `Arc<dyn Store>`.
//!
//! Every method is one atomic operation in every adapter. Adapters live in `store/`; the
//! one behaviour suite they all pass is `store/conformance`.

use crate::core::access::SearchOwners;
use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::search::SearchTerms;
use crate::core::session::{Fence, Message, Role, SessionEntry, SessionRecord};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Store failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A compare-and-set lost: someone else wrote first. Callers reload and retry.
    #[error("concurrent update of {0}")]
    Conflict(String),
    /// A fenced write lost: the session's entry no longer holds the writer's lease epoch
    /// (docs/design.md#lease). Nothing was written; the writer must stop.
    #[error("lease lost on {0}; nothing written")]
    Fenced(String),
    /// The per-session queue is at its cap.
    #[error("queue full ({0} items)")]
    QueueFull(usize),
    /// The inbound platform message id was already recorded; nothing was written.
    #[error("duplicate inbound message")]
    DuplicateInbound,
    /// A write conditioned on an empty FIFO ([`SessionChange::QueueEmpty`]) found items in
    /// it; nothing was written.
    #[error("the queue of {0} is not empty")]
    QueueNotEmpty(String),
    /// A write carrying [`SessionChange::Once`] found its once key taken (and not expired);
    /// nothing was written.
    #[error("once key {0} was used before; nothing written")]
    OnceUsed(String),
    /// A stored record could not be decoded.
    #[error("corrupt record {what}: {reason}")]
    Corrupt {
        /// Which record.
        what: String,
        /// Why.
        reason: String,
    },
    /// The store is out of space (SQLite's `SQLITE_FULL`: the disk or the file's size limit
    /// is reached). The write was rolled back whole: nothing of it was stored.
    #[error("disk full: {0}; nothing was written")]
    Full(String),
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
    /// Set (or clear) a conversation's title (`/title`).
    Title {
        /// Which.
        session_id: SessionId,
        /// The new title.
        title: Option<String>,
    },
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
    /// A condition, no write: the key's FIFO is empty; the whole write fails with
    /// [`StoreError::QueueNotEmpty`] otherwise. A release that carries it needs no queue
    /// read after it (docs/design.md#store-cost): a push that lands after the release sees
    /// the lease free and wakes the key itself.
    QueueEmpty(SessionKey),
    /// Record a once key (as [`LedgerStore::use_once`]) in the same write: the reply ledger
    /// record of a turn written with its answer (docs/design.md#store-cost). The whole
    /// write fails with [`StoreError::OnceUsed`] if the key is present and not expired.
    Once {
        /// The key.
        key: String,
        /// When it may be used again.
        expires_at: DateTime<Utc>,
        /// The caller's clock (a store never reads the wall clock).
        now: DateTime<Utc>,
    },
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
    /// Files that came with it, by platform reference (docs/design.md#media).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::core::inbound::Attachment>,
}

impl QueuedItem {
    /// The transcript message it becomes when a turn takes it.
    pub fn to_message(&self) -> crate::core::session::Message {
        let mut msg = crate::core::session::Message::text(crate::core::session::Role::User, self.text.clone(), self.at);
        msg.platform_message_id = self.message_id.clone();
        msg.attachments = self.attachments.clone();
        msg
    }
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

/// A past message found by [`SessionStore::search_messages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The conversation it belongs to.
    pub session_id: SessionId,
    /// That conversation's key, when its record is known.
    pub session_key: Option<SessionKey>,
    /// Who wrote it (`user` or `assistant`: only those are searched).
    pub role: Role,
    /// The text around the match, the match marked `>>>like this<<<`.
    pub snippet: String,
    /// When it was written.
    pub at: DateTime<Utc>,
}

/// Result of claiming an occurrence.
#[derive(Debug, Clone)]
pub enum Claim {
    /// This caller owns the occurrence; the job as written.
    Claimed(Box<Job>),
    /// Someone claimed it before.
    Duplicate,
}

/// The whole store: every concern on one backing store, plus its name. The app holds it as
/// `Arc<dyn Store>`; adapters implement each concern's trait and this one.
pub trait Store:
    SessionStore + QueueStore + JobStore + LedgerStore + MetaStore + TurnStore + crate::ports::FireStore + crate::ports::SessionDeleteStore
{
    /// `sqlite` or `dynamodb`.
    fn kind(&self) -> &'static str;
}

/// Session entries (the compare-and-set hub of a conversation key), conversation records,
/// transcripts and inbound ids.
#[async_trait]
pub trait SessionStore: Send + Sync {
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

    /// Appends messages in order, in one atomic write with the condition that the entry of
    /// `fence.key` still holds a lease of `fence.epoch`; [`StoreError::Fenced`] otherwise.
    async fn append_fenced(&self, id: &SessionId, msgs: &[Message], fence: &Fence) -> Result<(), StoreError>;

    /// Removes every message of a conversation after its first `keep` (`/undo`, `/retry`),
    /// only while the entry of `fence.key` still holds a lease of `fence.epoch`
    /// ([`StoreError::Fenced`] otherwise, nothing removed). Returns how many were removed;
    /// the next append continues right after the kept ones.
    async fn truncate_messages(&self, id: &SessionId, keep: u64, fence: &Fence) -> Result<u64, StoreError>;

    /// The newest `limit` messages of a conversation, oldest first.
    async fn recent_messages(&self, id: &SessionId, limit: usize) -> Result<Vec<Message>, StoreError>;

    /// Number of messages in a conversation.
    async fn count_messages(&self, id: &SessionId) -> Result<u64, StoreError>;

    /// User and assistant messages of every conversation but `exclude` that contain all
    /// `terms`, newest first, at most `limit`. How far back it looks depends on the adapter
    /// (docs/design.md#session-search): SQLite searches everything through its FTS5 index,
    /// DynamoDB a bounded window of the newest conversations. With `owners`, only the
    /// conversations whose key it admits are searched (docs/who-sees-what.md): the filter is
    /// part of the query, so neither results nor their count include anyone else's text.
    async fn search_messages(
        &self,
        terms: &SearchTerms,
        exclude: Option<&SessionId>,
        owners: Option<&SearchOwners>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;

    /// Whether an inbound id was already recorded.
    async fn seen_inbound(&self, id: &InboundId) -> Result<bool, StoreError>;

    /// Keys that need attention from a sweep: leases expired before `now`, entries flagged
    /// for a wake (pending slot, resume), and keys with queued items. With `all_leases`,
    /// every key holding a lease (startup after an unclean exit).
    async fn wake_candidates(&self, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError>;
}

/// The per-session FIFO of messages waiting for their own turn.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Appends to the key's FIFO if it holds fewer than `cap` items, recording `dedupe` in
    /// the same write. Returns the new length; [`StoreError::QueueFull`] past the cap,
    /// [`StoreError::DuplicateInbound`] for a seen id.
    async fn queue_push(&self, key: &SessionKey, item: &QueuedItem, cap: usize, dedupe: Option<&InboundId>) -> Result<usize, StoreError>;

    /// Moves the FIFO head into `session`'s transcript as a user message, in one write. With
    /// `fence`, the write also requires the lease (see [`SessionStore::append_fenced`]).
    async fn queue_pop_into(&self, key: &SessionKey, session: &SessionId, fence: Option<&Fence>) -> Result<Option<QueuedItem>, StoreError>;

    /// Items in the key's FIFO, oldest first.
    async fn queue_list(&self, key: &SessionKey) -> Result<Vec<QueuedItem>, StoreError>;

    /// Empties the key's FIFO; returns how many items were removed.
    async fn queue_clear(&self, key: &SessionKey) -> Result<usize, StoreError>;
}

/// Jobs with their due index, the at-most-once claims of their occurrences, and run records.
#[async_trait]
pub trait JobStore: Send + Sync {
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
}

/// Records written once and never again: the delivery ledger of each occurrence and target,
/// and expiring once keys (JWT `jti`).
#[async_trait]
pub trait LedgerStore: Send + Sync {
    /// Delivery ledger: records `(occurrence, target)`; false if it was already recorded
    /// (the message must not be sent again).
    async fn ledger_begin(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError>;

    /// Sets the ledger status of `(occurrence, target)` (`sent`, `failed`).
    async fn ledger_finish(&self, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError>;

    /// Records `key` once until `expires_at` (JWT `jti` replay store); false if present and
    /// not yet expired at `now` (the caller's clock: a store never reads the wall clock).
    async fn use_once(&self, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError>;
}

/// Small named records (markers, heartbeats).
#[async_trait]
pub trait MetaStore: Send + Sync {
    /// A small named record.
    async fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Writes a small named record.
    async fn put_meta(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// Deletes a small named record.
    async fn delete_meta(&self, key: &str) -> Result<(), StoreError>;

    /// Compare-and-set of a small named record, atomic across processes: writes `new` only
    /// if the stored value is `expected` (`None` = the record must not exist). False when
    /// another writer got there first; nothing was written (the pairing records, CONTRACT §17).
    async fn swap_meta(&self, key: &str, expected: Option<&str>, new: &str) -> Result<bool, StoreError>;

    /// Adds each `(name, delta)` to the named counters of the record `key` (absent counters
    /// start at zero), atomically across processes: the usage counters of the dashboard
    /// (docs/design.md#usage). Names are `[a-z_]+`. Default: counters are not kept.
    async fn add_counts(&self, _key: &str, _deltas: &[(&str, i64)]) -> Result<(), StoreError> {
        Ok(())
    }

    /// The counters of each record in `keys`, in order (an absent record is empty), in one
    /// request. Default: all empty.
    async fn get_counts(&self, keys: &[String]) -> Result<Vec<Counts>, StoreError> {
        Ok(vec![Counts::new(); keys.len()])
    }
}

/// Named counters of one record (see [`MetaStore::add_counts`]).
pub type Counts = std::collections::BTreeMap<String, i64>;

/// What [`TurnStore::turn_read`] returns: everything a chat turn reads before the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnRead {
    /// The newest messages asked for, oldest first.
    pub messages: Vec<Message>,
    /// The conversation's message count (its last sequence number).
    pub count: u64,
    /// The session notes found, by name (an absent note is not in the map).
    pub notes: std::collections::BTreeMap<String, String>,
}

/// Most notes a session may have (a read of the transcript over-reads by this many items on
/// DynamoDB, where the notes share the transcript's partition).
pub const MAX_SESSION_NOTES: usize = 8;

/// The message turn's folded read (docs/design.md#store-cost): a conversation's small named
/// notes (the frozen memory snapshot, the summary index) are kept next to its transcript, so
/// one SQLite transaction or one DynamoDB `Query` returns the transcript tail, the message
/// count and the notes. The defaults compose other port calls (several requests); the
/// adapters override them with one request each.
#[async_trait]
pub trait TurnStore: SessionStore + MetaStore {
    /// In one read: the newest `limit` messages of `id` (oldest first), its message count and
    /// its notes `names` (at most [`MAX_SESSION_NOTES`] distinct names per session).
    async fn turn_read(&self, id: &SessionId, limit: usize, names: &[&str]) -> Result<TurnRead, StoreError> {
        let mut notes = std::collections::BTreeMap::new();
        for name in names {
            if let Some(v) = self.get_meta(&note_meta_key(id, name)).await? {
                notes.insert((*name).to_string(), v);
            }
        }
        let messages = self.recent_messages(id, limit).await?;
        let count = self.count_messages(id).await?;
        Ok(TurnRead { messages, count, notes })
    }

    /// Writes (`Some`) or deletes (`None`) the note `name` of conversation `id`.
    async fn turn_put_note(&self, id: &SessionId, name: &str, value: Option<&str>) -> Result<(), StoreError> {
        match value {
            Some(v) => self.put_meta(&note_meta_key(id, name), v).await,
            None => self.delete_meta(&note_meta_key(id, name)).await,
        }
    }
}

/// The meta key a note is kept under where notes are meta records (SQLite, the defaults):
/// `<name>:<session id>`, the keys the snapshot and summary index always had there.
pub fn note_meta_key(id: &SessionId, name: &str) -> String {
    format!("{name}:{id}")
}
