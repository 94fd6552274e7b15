//! The DynamoDB store (feature `aws`): the whole [`Store`] port on one table, for Lambda and
//! other hosts without a shared disk. It owns the table layout; it must not know the app's
//! rules (reset, queue policy, schedules) — those stay in `core` and `app`.
//!
//! # Single-table design
//! Every item has a string partition key `pk` and a string sort key `sk`:
//!
//! | item | `pk` | `sk` | other attributes |
//! | --- | --- | --- | --- |
//! | session entry | `KEY#<session_key>` | `ENTRY` | `doc` (JSON), `version`, `seq` (hint: its conversation's counter), index attributes |
//! | queue head | `KEY#<session_key>` | `QUEUE` | `head`, `tail` (items are `head..tail`) |
//! | queue item | `KEY#<session_key>` | `Q#<seq:012>` | `doc` |
//! | session record | `SESSION#<session_id>` | `RECORD` | `session_key`, `platform`, `title`, `started_at`, `ended_at`, `end_reason` |
//! | transcript counter | `SESSION#<session_id>` | `SEQ` | `n` (last sequence number = message count) |
//! | transcript message | `SESSION#<session_id>` | `MSG#<seq:012>` | `doc`, `text` (user/assistant text, lowercased, for `session_search`) |
//! | session note (memory snapshot, summary index) | `SESSION#<session_id>` | `NOTE#<name>` | `value` |
//! | inbound seen | `INBOUND#<platform>#<chat_id>#<message_id>` (`%`-escaped) | `SEEN` | `seen_at` |
//! | job | `JOBS` | `JOB#<id>` | `doc`, `version`, index attributes |
//! | claim | `OCC#<job_id>#<fire_at secs>` | `CLAIM` | `status`, `claimed_at`, `ttl` |
//! | delivery ledger | `OCC#<job_id>#<fire_at secs>` | `DELIVERY#<target>` | `status`, `at`, `ttl` |
//! | run | `RUNS#<job_id>` | `RUN#<started_ms:015>#<run_id>` | `doc` |
//! | once key (`jti`) | `ONCE#<key>` | `ONCE` | `expires_at`, `ttl` |
//! | meta | `META#<key>` | `META` | `value` |
//!
//! Times are milliseconds since the epoch (`N`), except `ttl` (seconds, as DynamoDB's TTL
//! wants) and the occurrence's `fire_at` (whole seconds, as in [`Occurrence`]).
//!
//! Four sparse global secondary indexes (string hash key, number range key) serve every
//! listing, so nothing on a request path scans:
//! - `gsi_recent` (`recent_pk`, `recent_at`): `ENTRIES#<k>` by `updated_at` (`list_entries`) and
//!   `SESSIONS#<k>` by `started_at` (`list_sessions` without a key);
//! - `gsi_key` (`key_pk` = `KS#<session_key>`, `key_at` = `started_at`): one key's sessions;
//! - `gsi_due` (`due_pk` = `DUE#<k>`, `due_at`): enabled scheduled/running jobs by `next_run_at`;
//! - `gsi_wake` (`wake_pk` = `WAKE#<k>`, `wake_at`), keys only: entries with an expiring lease
//!   (`wake_at` = lease expiry) or stored work (`wake_at` = 0: pending slot, resume mark) and
//!   non-empty queue heads (`wake_at` = 0). `wake_candidates(now)` is `wake_at <= now`.
//!
//! `<k>` is the item's write shard (`shards`): a stable hash of its own key (session key,
//! session id, job id) mod `store.dynamodb_shards`; with one shard the value is the bare
//! name. Listings query every shard and merge (docs/design.md#shards). The table item
//! `TABLE`/`SHARDS` records the shard count (`n`) the table was written with.
//!
//! Profiles (docs/design.md#profiles): a handle [`DynamoStore::scoped`] to a named profile
//! puts `@<profile>/` in front of every `pk` above and every index partition (`KS#…` and the
//! bases before their shard suffix); `main`'s keys are exactly the ones above. Only the
//! shard record is shared by all profiles.
//!
//! Jobs live in the fixed partition `JOBS`, so `list_jobs` is one query in id order.
//! TTL (`ttl`) removes once keys after they expire and claims and ledger rows 90 days after
//! their occurrence.
//!
//! # Consistency rules
//! - Every compare-and-set is a condition: entry and job `version`, `attribute_not_exists`
//!   for claims, inbound ids, once keys, ledger rows and new session records.
//! - Each port method that SQLite runs in one transaction is one `TransactWriteItems` here:
//!   `put_entry` with all its [`SessionChange`]s, `append_messages` with its dedupe,
//!   `queue_push` with its dedupe, `queue_pop_into` (delete head + append message, with the
//!   optional lease fence as a `ConditionCheck` on the entry), `append_fenced` (likewise),
//!   `claim_occurrence` (claim insert + job CAS). Cancellation reasons are read per item to
//!   tell a lost CAS (`Conflict`) from a seen id (`DuplicateInbound`) or a taken claim
//!   (`Duplicate`).
//! - Transcript sequence numbers come from the per-session `SEQ` counter, advanced in the
//!   same transaction as the messages with a condition on its old value; a writer that
//!   loses re-reads and retries. The queue's `QUEUE` head item does the same for the FIFO, so
//!   the cap check is atomic.
//! - A transaction holds at most 100 items: a write that would need more (e.g. appending
//!   more than ~97 messages at once) is refused whole with a clear error, never split.
//! - Why every compare-and-set and insert-if-absent uses `TransactWriteItems` with a
//!   `ClientRequestToken`, even for one item: the SDK retries timed-out attempts, and a
//!   retried conditional write that had in fact succeeded would otherwise report its own
//!   write as a conflict or a duplicate (a lost claim, an unsent delivery).
//! - Reads of the base table are strongly consistent; index queries (listings, `due_jobs`,
//!   `wake_candidates`) are eventually consistent, which sweeps and listings tolerate.
//! - One item is at most 400 KB (DynamoDB's limit): a single transcript message, queue item
//!   or entry document larger than that is refused by DynamoDB and nothing is written.

mod fire;
mod items;
mod jobs;
mod ledger;
mod query;
mod queue;
mod search;
mod session_delete;
mod sessions;
mod shards;
mod table;
mod transcript;
mod turn;
mod tx;

#[cfg(test)]
mod profile_tests;
#[cfg(test)]
mod shard_tests;
#[cfg(test)]
mod tests;

use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::search::SearchTerms;
use crate::core::session::{Fence, Message, SessionEntry, SessionRecord};
use crate::ports::{
    Appended, Claim, InboundId, JobStore, LedgerStore, MetaStore, QueueStore, QueuedItem, SearchHit, SessionChange, SessionStore, Store,
    StoreError,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Failures of this adapter, carried inside [`StoreError::Backend`].
#[derive(Debug, thiserror::Error)]
pub enum DynamoError {
    /// A DynamoDB call failed (the SDK error is the source).
    #[error("DynamoDB {op} failed: {detail}")]
    Sdk {
        /// The API operation.
        op: &'static str,
        /// The service's error code and message, or the transport failure.
        detail: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// One atomic write would exceed DynamoDB's transaction limit.
    #[error("one atomic write would need {0} items; a DynamoDB transaction holds at most 100")]
    TooManyItems(usize),
    /// `SessionChange::Start` for a session id that already has a record.
    #[error("session record {0} already exists")]
    RecordExists(String),
    /// A transaction was cancelled for a reason other than a condition or contention.
    #[error("DynamoDB transaction cancelled: {0}")]
    Cancelled(String),
    /// Contention did not clear after several retries.
    #[error("DynamoDB {0}: still contended after retries")]
    Contended(&'static str),
    /// No region could be found in the environment or the AWS config files.
    #[error("no AWS region configured (set AWS_REGION)")]
    NoRegion,
    /// The table exists but does not have the layout this adapter needs.
    #[error("table {table}: {reason}")]
    Table {
        /// Table name.
        table: String,
        /// What is wrong.
        reason: String,
    },
}

impl From<DynamoError> for StoreError {
    fn from(e: DynamoError) -> Self {
        StoreError::Backend(Box::new(e))
    }
}

/// Wraps an SDK error of operation `op`.
pub(crate) fn sdk<E>(op: &'static str) -> impl FnOnce(E) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    move |e| {
        let detail = match e.code() {
            Some(code) => format!("{code}: {}", e.message().unwrap_or("")),
            None => aws_sdk_dynamodb::error::DisplayErrorContext(&e).to_string(),
        };
        DynamoError::Sdk { op, detail, source: Box::new(e) }.into()
    }
}

/// The DynamoDB adapter. Cheap to clone: the SDK client is shared.
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Page size of queries (`None`: DynamoDB's 1 MB pages). Tests set it small so every
    /// listing crosses page boundaries.
    page_size: Option<i32>,
    /// Write shards of `gsi_recent`, `gsi_due` and `gsi_wake` (docs/design.md#shards).
    shards: u32,
    /// Set once the table's recorded shard count was found equal to `shards`.
    shards_checked: std::sync::Arc<tokio::sync::OnceCell<()>>,
    /// Last known transcript counters, so appends need not read them first (`turn`).
    seqs: turn::SeqHints,
    /// The profile's key space (docs/design.md#profiles); `main` by default.
    keys: items::Keys,
}

impl DynamoStore {
    /// Builds the client once from the standard AWS environment (region, credentials), with
    /// `endpoint` overriding the DynamoDB endpoint (local servers, tests).
    pub async fn connect(table: &str, endpoint: Option<&str>) -> Result<Self, StoreError> {
        // Why an attempt timeout: a hung connection must not eat a Lambda invocation; the
        // SDK retries the attempt, and the idempotency tokens make those retries safe.
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(10))
            .operation_timeout(Duration::from_secs(30))
            .build();
        let cfg = crate::clients::aws_sdk_loader().timeout_config(timeouts).load().await;
        if cfg.region().is_none() {
            return Err(DynamoError::NoRegion.into());
        }
        let mut b = aws_sdk_dynamodb::config::Builder::from(&cfg);
        if let Some(ep) = endpoint.map(str::trim).filter(|e| !e.is_empty()) {
            b = b.endpoint_url(ep);
        }
        Ok(Self {
            client: Client::from_conf(b.build()),
            table: table.to_string(),
            page_size: None,
            shards: crate::store::shard::DEFAULT_SHARDS,
            shards_checked: std::sync::Arc::default(),
            seqs: turn::SeqHints::default(),
            keys: items::Keys::default(),
        })
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Uses `n` write shards (`store.dynamodb_shards`, clamped to 1..=64) for the listing indexes.
    pub fn with_shards(mut self, n: u32) -> Self {
        self.shards = n.clamp(1, crate::store::shard::MAX_SHARDS);
        self.shards_checked = std::sync::Arc::default();
        self
    }

    /// This store seen as `profile`'s key space (docs/design.md#profiles): the same table and
    /// client, every partition key and index partition of the profile prefixed with
    /// `@<profile>/` (`main`'s unchanged), nothing of another profile visible.
    pub fn scoped(mut self, profile: crate::core::profile::Profile) -> Self {
        self.keys = items::Keys::new(profile);
        self
    }

    /// Uses pages of at most `n` items for every query (tests of pagination).
    pub fn with_page_size(mut self, n: i32) -> Self {
        self.page_size = Some(n.max(1));
        self
    }
}

impl Store for DynamoStore {
    fn kind(&self) -> &'static str {
        "dynamodb"
    }
}

#[async_trait]
impl SessionStore for DynamoStore {
    async fn get_entry(&self, key: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
        sessions::get_entry(self, key).await
    }

    async fn put_entry(&self, entry: &SessionEntry, changes: &[SessionChange]) -> Result<SessionEntry, StoreError> {
        sessions::put_entry(self, entry, changes).await
    }

    async fn list_entries(&self, limit: usize) -> Result<Vec<SessionEntry>, StoreError> {
        sessions::list_entries(self, limit).await
    }

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        sessions::get_session(self, id).await
    }

    async fn list_sessions(&self, key: Option<&SessionKey>, limit: usize) -> Result<Vec<SessionRecord>, StoreError> {
        sessions::list_sessions(self, key, limit).await
    }

    async fn append_messages(&self, id: &SessionId, msgs: &[Message], dedupe: Option<&InboundId>) -> Result<Appended, StoreError> {
        transcript::append(self, id, msgs, dedupe).await
    }

    async fn append_fenced(&self, id: &SessionId, msgs: &[Message], fence: &Fence) -> Result<(), StoreError> {
        transcript::append_fenced(self, id, msgs, fence).await
    }

    async fn truncate_messages(&self, id: &SessionId, keep: u64, fence: &Fence) -> Result<u64, StoreError> {
        transcript::truncate(self, id, keep, fence).await
    }

    async fn recent_messages(&self, id: &SessionId, limit: usize) -> Result<Vec<Message>, StoreError> {
        transcript::recent(self, id, limit).await
    }

    async fn count_messages(&self, id: &SessionId) -> Result<u64, StoreError> {
        transcript::count(self, id).await
    }

    async fn search_messages(
        &self,
        terms: &SearchTerms,
        exclude: Option<&SessionId>,
        owners: Option<&crate::core::access::SearchOwners>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        search::search(self, terms, exclude, owners, limit).await
    }

    async fn seen_inbound(&self, id: &InboundId) -> Result<bool, StoreError> {
        transcript::seen_inbound(self, id).await
    }

    async fn wake_candidates(&self, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError> {
        queue::wake_candidates(self, now, all_leases).await
    }
}

#[async_trait]
impl QueueStore for DynamoStore {
    async fn queue_push(&self, key: &SessionKey, item: &QueuedItem, cap: usize, dedupe: Option<&InboundId>) -> Result<usize, StoreError> {
        queue::push(self, key, item, cap, dedupe).await
    }

    async fn queue_pop_into(&self, key: &SessionKey, session: &SessionId, fence: Option<&Fence>) -> Result<Option<QueuedItem>, StoreError> {
        queue::pop_into(self, key, session, fence).await
    }

    async fn queue_list(&self, key: &SessionKey) -> Result<Vec<QueuedItem>, StoreError> {
        queue::list(self, key).await
    }

    async fn queue_clear(&self, key: &SessionKey) -> Result<usize, StoreError> {
        queue::clear(self, key).await
    }
}

#[async_trait]
impl JobStore for DynamoStore {
    async fn put_job(&self, job: &Job) -> Result<Job, StoreError> {
        jobs::put(self, job).await
    }

    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        jobs::get(self, id).await
    }

    async fn list_jobs(&self) -> Result<Vec<Job>, StoreError> {
        jobs::list(self).await
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        jobs::delete(self, id).await
    }

    async fn due_jobs(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Job>, StoreError> {
        jobs::due(self, now, limit).await
    }

    async fn claim_occurrence(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError> {
        jobs::claim(self, occ, job, now).await
    }

    async fn claim_status(&self, occ: &Occurrence) -> Result<Option<String>, StoreError> {
        jobs::claim_status(self, occ).await
    }

    async fn finish_run(&self, run: &RunRecord, retention: usize) -> Result<(), StoreError> {
        jobs::finish_run(self, run, retention).await
    }

    async fn list_runs(&self, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        jobs::list_runs(self, job_id, limit).await
    }
}

#[async_trait]
impl crate::ports::FireStore for DynamoStore {
    async fn fire_claim(
        &self,
        occ: &Occurrence,
        job: &Job,
        now: DateTime<Utc>,
        a: Option<&crate::ports::RunAppend>,
    ) -> Result<Claim, StoreError> {
        fire::fire_claim(self, occ, job, now, a).await
    }

    async fn fire_deliver(
        &self,
        occ: &Occurrence,
        target: &str,
        now: DateTime<Utc>,
        a: Option<&crate::ports::RunAppend>,
    ) -> Result<bool, StoreError> {
        fire::fire_deliver(self, occ, target, now, a).await
    }

    async fn fire_finish(&self, fin: &crate::ports::FireFinish) -> Result<Option<Job>, StoreError> {
        fire::fire_finish(self, fin).await
    }
}

#[async_trait]
impl LedgerStore for DynamoStore {
    async fn ledger_begin(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        ledger::ledger_begin(self, occ, target, now).await
    }

    async fn ledger_finish(&self, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        ledger::ledger_finish(self, occ, target, status, now).await
    }

    async fn use_once(&self, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
        ledger::use_once(self, key, expires_at, now).await
    }
}

#[async_trait]
impl MetaStore for DynamoStore {
    async fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        ledger::get_meta(self, key).await
    }

    async fn put_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        ledger::put_meta(self, key, value).await
    }

    async fn delete_meta(&self, key: &str) -> Result<(), StoreError> {
        ledger::delete_meta(self, key).await
    }

    async fn swap_meta(&self, key: &str, expected: Option<&str>, new: &str) -> Result<bool, StoreError> {
        ledger::swap_meta(self, key, expected, new).await
    }

    async fn add_counts(&self, key: &str, deltas: &[(&str, i64)]) -> Result<(), StoreError> {
        ledger::add_counts(self, key, deltas).await
    }

    async fn get_counts(&self, keys: &[String]) -> Result<Vec<crate::ports::Counts>, StoreError> {
        ledger::get_counts(self, keys).await
    }
}
