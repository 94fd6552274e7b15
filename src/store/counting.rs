//! A [`Store`] that forwards every call to another store and counts the calls by operation.
//! Each port call is one SQLite transaction or one DynamoDB request / transaction, so the
//! counts are the store cost of what ran (docs/design.md#store-cost). Tests assert the
//! budgets with it and the benchmarks print the breakdown.

use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::search::SearchTerms;
use crate::core::session::{Fence, Message, SessionEntry, SessionRecord};
use crate::ports::{
    Appended, Claim, FireFinish, FireStore, InboundId, JobStore, LedgerStore, MetaStore, QueueStore, QueuedItem, RunAppend, SearchHit,
    SessionChange, SessionStore, Store, StoreError,
};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Calls per operation name (the port method's name).
pub type Counts = BTreeMap<&'static str, u64>;

/// Counts the calls made through it to the store it wraps.
pub struct CountingStore {
    inner: Arc<dyn Store>,
    counts: Mutex<Counts>,
    /// All calls, for the usage counters (docs/design.md#usage), which take and reset it.
    tally: Arc<std::sync::atomic::AtomicU64>,
}

impl CountingStore {
    /// Wraps `inner`, counting from zero.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self { inner, counts: Mutex::new(Counts::new()), tally: Arc::default() }
    }

    /// The running total of calls, shared (the app's usage counters take it once a minute).
    pub fn tally(&self) -> Arc<std::sync::atomic::AtomicU64> {
        Arc::clone(&self.tally)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn hit(&self, op: &'static str) {
        *self.lock().entry(op).or_default() += 1;
        self.tally.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Calls so far, by operation.
    pub fn counts(&self) -> Counts {
        self.lock().clone()
    }

    /// All calls so far.
    pub fn total(&self) -> u64 {
        self.lock().values().sum()
    }

    /// Returns the counts so far and starts again from zero.
    pub fn take(&self) -> Counts {
        std::mem::take(&mut *self.lock())
    }
}

/// `op ×n, op ×n, …`, for reports and failure messages.
pub fn breakdown(c: &Counts) -> String {
    c.iter().map(|(k, v)| format!("{k} ×{v}")).collect::<Vec<_>>().join(", ")
}

macro_rules! fwd {
    ($self:ident, $op:ident ( $($arg:expr),* )) => {{
        $self.hit(stringify!($op));
        $self.inner.$op($($arg),*).await
    }};
}

impl Store for CountingStore {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

#[async_trait]
impl SessionStore for CountingStore {
    async fn get_entry(&self, k: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
        fwd!(self, get_entry(k))
    }
    async fn put_entry(&self, e: &SessionEntry, c: &[SessionChange]) -> Result<SessionEntry, StoreError> {
        fwd!(self, put_entry(e, c))
    }
    async fn list_entries(&self, l: usize) -> Result<Vec<SessionEntry>, StoreError> {
        fwd!(self, list_entries(l))
    }
    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        fwd!(self, get_session(id))
    }
    async fn list_sessions(&self, k: Option<&SessionKey>, l: usize) -> Result<Vec<SessionRecord>, StoreError> {
        fwd!(self, list_sessions(k, l))
    }
    async fn append_messages(&self, id: &SessionId, m: &[Message], d: Option<&InboundId>) -> Result<Appended, StoreError> {
        fwd!(self, append_messages(id, m, d))
    }
    async fn append_fenced(&self, id: &SessionId, m: &[Message], f: &Fence) -> Result<(), StoreError> {
        fwd!(self, append_fenced(id, m, f))
    }
    async fn truncate_messages(&self, id: &SessionId, keep: u64, f: &Fence) -> Result<u64, StoreError> {
        fwd!(self, truncate_messages(id, keep, f))
    }
    async fn recent_messages(&self, id: &SessionId, l: usize) -> Result<Vec<Message>, StoreError> {
        fwd!(self, recent_messages(id, l))
    }
    async fn count_messages(&self, id: &SessionId) -> Result<u64, StoreError> {
        fwd!(self, count_messages(id))
    }
    async fn search_messages(
        &self,
        t: &SearchTerms,
        x: Option<&SessionId>,
        o: Option<&crate::core::access::SearchOwners>,
        l: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        fwd!(self, search_messages(t, x, o, l))
    }
    async fn seen_inbound(&self, d: &InboundId) -> Result<bool, StoreError> {
        fwd!(self, seen_inbound(d))
    }
    async fn wake_candidates(&self, n: DateTime<Utc>, a: bool) -> Result<Vec<SessionKey>, StoreError> {
        fwd!(self, wake_candidates(n, a))
    }
}

#[async_trait]
impl QueueStore for CountingStore {
    async fn queue_push(&self, k: &SessionKey, i: &QueuedItem, c: usize, d: Option<&InboundId>) -> Result<usize, StoreError> {
        fwd!(self, queue_push(k, i, c, d))
    }
    async fn queue_pop_into(&self, k: &SessionKey, s: &SessionId, f: Option<&Fence>) -> Result<Option<QueuedItem>, StoreError> {
        fwd!(self, queue_pop_into(k, s, f))
    }
    async fn queue_list(&self, k: &SessionKey) -> Result<Vec<QueuedItem>, StoreError> {
        fwd!(self, queue_list(k))
    }
    async fn queue_clear(&self, k: &SessionKey) -> Result<usize, StoreError> {
        fwd!(self, queue_clear(k))
    }
}

#[async_trait]
impl JobStore for CountingStore {
    async fn put_job(&self, j: &Job) -> Result<Job, StoreError> {
        fwd!(self, put_job(j))
    }
    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        fwd!(self, get_job(id))
    }
    async fn list_jobs(&self) -> Result<Vec<Job>, StoreError> {
        fwd!(self, list_jobs())
    }
    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        fwd!(self, delete_job(id))
    }
    async fn due_jobs(&self, n: DateTime<Utc>, l: usize) -> Result<Vec<Job>, StoreError> {
        fwd!(self, due_jobs(n, l))
    }
    async fn claim_occurrence(&self, o: &Occurrence, j: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError> {
        fwd!(self, claim_occurrence(o, j, now))
    }
    async fn claim_status(&self, o: &Occurrence) -> Result<Option<String>, StoreError> {
        fwd!(self, claim_status(o))
    }
    async fn finish_run(&self, r: &RunRecord, n: usize) -> Result<(), StoreError> {
        fwd!(self, finish_run(r, n))
    }
    async fn list_runs(&self, j: &str, l: usize) -> Result<Vec<RunRecord>, StoreError> {
        fwd!(self, list_runs(j, l))
    }
}

#[async_trait]
impl LedgerStore for CountingStore {
    async fn ledger_begin(&self, o: &Occurrence, t: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        fwd!(self, ledger_begin(o, t, now))
    }
    async fn ledger_finish(&self, o: &Occurrence, t: &str, s: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        fwd!(self, ledger_finish(o, t, s, now))
    }
    async fn use_once(&self, k: &str, e: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
        fwd!(self, use_once(k, e, now))
    }
}

#[async_trait]
impl FireStore for CountingStore {
    async fn fire_claim(&self, o: &Occurrence, j: &Job, now: DateTime<Utc>, a: Option<&RunAppend>) -> Result<Claim, StoreError> {
        fwd!(self, fire_claim(o, j, now, a))
    }
    async fn fire_deliver(&self, o: &Occurrence, t: &str, now: DateTime<Utc>, a: Option<&RunAppend>) -> Result<bool, StoreError> {
        fwd!(self, fire_deliver(o, t, now, a))
    }
    async fn fire_finish(&self, f: &FireFinish) -> Result<Option<Job>, StoreError> {
        fwd!(self, fire_finish(f))
    }
}

#[async_trait]
impl MetaStore for CountingStore {
    async fn get_meta(&self, k: &str) -> Result<Option<String>, StoreError> {
        fwd!(self, get_meta(k))
    }
    async fn put_meta(&self, k: &str, v: &str) -> Result<(), StoreError> {
        fwd!(self, put_meta(k, v))
    }
    async fn delete_meta(&self, k: &str) -> Result<(), StoreError> {
        fwd!(self, delete_meta(k))
    }
    async fn swap_meta(&self, k: &str, old: Option<&str>, new: &str) -> Result<bool, StoreError> {
        fwd!(self, swap_meta(k, old, new))
    }
    async fn add_counts(&self, k: &str, deltas: &[(&str, i64)]) -> Result<(), StoreError> {
        fwd!(self, add_counts(k, deltas))
    }
    async fn get_counts(&self, keys: &[String]) -> Result<Vec<crate::ports::Counts>, StoreError> {
        fwd!(self, get_counts(keys))
    }
}

#[async_trait]
impl crate::ports::TurnStore for CountingStore {
    async fn turn_read(&self, id: &SessionId, l: usize, names: &[&str]) -> Result<crate::ports::TurnRead, StoreError> {
        fwd!(self, turn_read(id, l, names))
    }
    async fn turn_put_note(&self, id: &SessionId, name: &str, v: Option<&str>) -> Result<(), StoreError> {
        fwd!(self, turn_put_note(id, name, v))
    }
}

#[async_trait]
impl crate::ports::SessionDeleteStore for CountingStore {
    async fn delete_session(&self, id: &SessionId) -> Result<crate::ports::Deleted, StoreError> {
        fwd!(self, delete_session(id))
    }
}
