//! The fire path's folded writes (docs/design.md#store-cost): [`FireStore`] joins the
//! writes a fire of a due job makes into three atomic writes, so a fire delivering to one
//! chat costs four store requests (the job read, the claim, the delivery's ledger row, the
//! finish). Each method is one SQLite transaction or one DynamoDB `TransactWriteItems`.

use crate::core::ids::SessionId;
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::session::Message;
use crate::ports::{Claim, StoreError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// Messages appended to a job run's transcript in a fire write. `after` is how many
/// messages the caller knows the transcript holds (0 for the run's fresh session): an
/// adapter that numbers messages from a stored counter (DynamoDB) conditions the write on it
/// instead of reading the counter, and reads it only when that condition fails; one that
/// numbers them inside its transaction (SQLite) needs no hint.
#[derive(Debug, Clone)]
pub struct RunAppend {
    /// The run's session.
    pub session_id: SessionId,
    /// Messages the transcript holds before these, as the caller knows it.
    pub after: u64,
    /// The messages, in order.
    pub messages: Vec<Message>,
}

/// The last write of a job run: everything the run still has to record, in one write.
#[derive(Debug, Clone)]
pub struct FireFinish {
    /// The run record; its claim's status is set from it.
    pub run: RunRecord,
    /// Keep the newest this many runs of the job.
    pub retention: usize,
    /// The job as the run leaves it, written by compare-and-set on its version; `None`
    /// leaves the job alone (the run no longer owns it).
    pub job: Option<Job>,
    /// Ledger rows of this occurrence to set, as `(target key, status)`.
    pub ledger: Vec<(String, String)>,
    /// Messages to append to the run's transcript (its answer, when no delivery carried it).
    pub append: Option<RunAppend>,
    /// The job's count of scheduled runs when this is one (`repeat.completed`): an adapter
    /// whose retention trim needs a read may then trim every few runs only.
    pub runs_hint: Option<u32>,
}

/// The fire path's writes, each one atomic write joining what the plain operations of
/// [`crate::ports::JobStore`] and [`crate::ports::LedgerStore`] would write in several.
#[async_trait]
pub trait FireStore: Send + Sync {
    /// [`crate::ports::JobStore::claim_occurrence`] and, in the same atomic write, `append`
    /// (the run's prompt). Nothing is written unless the claim is won.
    async fn fire_claim(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>, append: Option<&RunAppend>) -> Result<Claim, StoreError>;

    /// [`crate::ports::LedgerStore::ledger_begin`] of `(occ, target)` and, in the same
    /// atomic write, `append` (the run's answer, stored before it is sent). The append is
    /// stored whether or not the row was new; returns whether it was.
    async fn fire_deliver(
        &self,
        occ: &Occurrence,
        target: &str,
        now: DateTime<Utc>,
        append: Option<&RunAppend>,
    ) -> Result<bool, StoreError>;

    /// One atomic write of `fin`: the ledger rows' statuses, the append, the claim's status,
    /// the run record with its retention, and the job by compare-and-set. A lost
    /// compare-and-set fails the whole write with [`StoreError::Conflict`] (nothing
    /// written). Returns the job as written, if one was. A ledger row or claim that is
    /// absent is left absent.
    async fn fire_finish(&self, fin: &FireFinish) -> Result<Option<Job>, StoreError>;
}
