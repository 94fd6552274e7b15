//! DynamoDB bodies of [`crate::ports::FireStore`]: each folded fire write is one
//! `TransactWriteItems` (claim + job + prompt; ledger row + answer; ledger statuses + answer +
//! claim status + run + job). Appends take their position from the caller's hint, so no
//! `SEQ` read goes out unless the hint is wrong (the `Seq` condition fails; the retry reads).
//! A transaction touches each item once: the items are distinct by construction (one claim,
//! one run, one job, distinct ledger targets, new message numbers). The retention trim needs
//! a query, so a scheduled run trims every [`TRIM_EVERY`]th run of its job only.

use super::items::{key, ms, n, s};
use super::jobs::{claim_item, claim_key, claim_status, conflict, plan_job, trim_runs};
use super::ledger::{ledger_finish, ledger_item};
use super::transcript::{plan_append, plan_append_at};
use super::tx::{ATTEMPTS, Cond, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore};
use crate::core::job::{Job, Occurrence};
use crate::ports::{Claim, FireFinish, RunAppend, StoreError};
use crate::store::encode;
use chrono::{DateTime, Utc};

/// A scheduled run trims its job's runs when its count of scheduled runs is a multiple of
/// this (and past the retention): at most `TRIM_EVERY - 1` runs above the retention are kept
/// between trims, and a fire pays the trim's query once in this many runs.
pub(super) const TRIM_EVERY: u32 = 10;

/// Adds `a` to `tx` at its hinted position, or after reading the counter when `read`.
async fn plan_run_append(st: &DynamoStore, tx: &mut Tx, a: Option<&RunAppend>, read: bool) -> Result<(), StoreError> {
    match a {
        Some(a) if read => plan_append(st, tx, &a.session_id, &a.messages).await,
        Some(a) => plan_append_at(st, tx, &a.session_id, &a.messages, a.after),
        None => Ok(()),
    }
}

/// Whether a failed write lost on the transcript's position (a wrong hint).
fn lost_position(o: &Outcome) -> bool {
    o.lost(Part::Seq) || o.lost(Part::Message)
}

/// `FireStore::fire_claim`.
pub(super) async fn fire_claim(
    st: &DynamoStore,
    occ: &Occurrence,
    job: &Job,
    now: DateTime<Utc>,
    a: Option<&RunAppend>,
) -> Result<Claim, StoreError> {
    st.check_shards().await?;
    let mut read = false;
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        tx.put(&st.table, Part::Claim, claim_item(st, occ, now), Some(Cond::absent()))?;
        let next = plan_job(st, &mut tx, job)?;
        plan_run_append(st, &mut tx, a, read).await?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(Claim::Claimed(Box::new(next))),
            o if o.lost(Part::Claim) => return Ok(Claim::Duplicate),
            o if lost_position(&o) && !o.lost(Part::Job) => read = true,
            // As in `claim_occurrence`: a taken claim is a duplicate, not a conflict.
            Outcome::Failed(_) => {
                return if claim_status(st, occ).await?.is_some() { Ok(Claim::Duplicate) } else { Err(conflict(job)) };
            }
            Outcome::Contended => backoff(attempt).await,
        }
    }
    Err(conflict(job))
}

/// `FireStore::fire_deliver`.
pub(super) async fn fire_deliver(
    st: &DynamoStore,
    occ: &Occurrence,
    target: &str,
    now: DateTime<Utc>,
    a: Option<&RunAppend>,
) -> Result<bool, StoreError> {
    let (mut marker, mut read) = (true, false);
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        if marker {
            tx.put(&st.table, Part::Marker, ledger_item(st, occ, target, now), Some(Cond::absent()))?;
        }
        plan_run_append(st, &mut tx, a, read).await?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(marker),
            // The row exists: nothing was written; store the append alone.
            o if o.lost(Part::Marker) => marker = false,
            o if lost_position(&o) => read = true,
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("fire_deliver").into())
}

/// `FireStore::fire_finish`.
pub(super) async fn fire_finish(st: &DynamoStore, fin: &FireFinish) -> Result<Option<Job>, StoreError> {
    if fin.job.is_some() {
        st.check_shards().await?;
    }
    let occ = fin.run.occurrence();
    let at = fin.run.finished_at.unwrap_or(fin.run.started_at);
    let (mut ledger, mut claim, mut read) = (true, true, false);
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        if ledger {
            for (target, status) in &fin.ledger {
                let set = Cond::new("SET #status = :s, #at = :a").val(":s", s(status)).val(":a", n(ms(at)));
                tx.update(&st.table, Part::Marker, st.keys.ledger_key(&occ, target), set, Some(Cond::new("attribute_exists(#pk)")))?;
            }
        }
        if claim {
            let set = Cond::new("SET #status = :s").val(":s", s(fin.run.status.as_str()));
            tx.update(&st.table, Part::Claim, claim_key(st, &occ), set, Some(Cond::new("attribute_exists(#pk)")))?;
        }
        let mut run = key(st.keys.runs_pk(&fin.run.job_id), super::items::run_sk(fin.run.started_at, &fin.run.run_id));
        run.insert("doc".into(), s(encode("run", &fin.run)?));
        tx.put(&st.table, Part::Run, run, None)?;
        let written = fin.job.as_ref().map(|j| plan_job(st, &mut tx, j)).transpose()?;
        plan_run_append(st, &mut tx, fin.append.as_ref(), read).await?;
        match st.transact(tx).await? {
            Outcome::Done => {
                if trim_due(fin) {
                    trim_runs(st, &fin.run.job_id, fin.retention).await?;
                }
                return Ok(written);
            }
            o if o.lost(Part::Job) => return Err(StoreError::Conflict(format!("job {}", fin.run.job_id))),
            // A row that is absent stays absent: set the rows one by one (each skips an
            // absent row), and the claim's status only if there is a claim.
            o if o.lost(Part::Marker) => {
                for (target, status) in &fin.ledger {
                    ledger_finish(st, &occ, target, status, at).await?;
                }
                ledger = false;
            }
            o if o.lost(Part::Claim) => claim = false,
            o if lost_position(&o) => read = true,
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("fire_finish").into())
}

/// Whether this finish trims the job's runs: always for a run that is not a scheduled one,
/// else every [`TRIM_EVERY`]th scheduled run once past the retention.
fn trim_due(fin: &FireFinish) -> bool {
    match fin.runs_hint {
        None => true,
        Some(k) => k as usize > fin.retention && k % TRIM_EVERY == 0,
    }
}
