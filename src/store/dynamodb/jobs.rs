//! Jobs, claims and runs. `claim` is the at-most-once primitive: the claim's
//! `attribute_not_exists` insert and the job's version check in one transaction.

use super::items::{CLAIM_SK, Item, JOB_PREFIX, RUN_PREFIX, doc, get_s, key, ms, n, occ_ttl, s};
use super::query::Query;
use super::table::GSI_DUE;
use super::tx::{ATTEMPTS, Cond, Outcome, Part, Tx, backoff};
use super::{DynamoStore, sdk};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::ports::{Claim, StoreError};
use crate::store::encode;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValue;
use chrono::{DateTime, Utc};

/// The due index key: set only for jobs a ticker should look at (as in SQLite).
fn due_at(j: &Job) -> Option<i64> {
    // Running counts: a crash mid-run must not stop later occurrences (their claims differ).
    // A pending retry attempt counts too (`Job::due_at`).
    j.due_at().map(ms)
}

fn job_item(st: &DynamoStore, j: &Job) -> Result<Item, StoreError> {
    let mut it = st.keys.job_key(&j.id);
    it.insert("doc".into(), s(encode(&j.id, j)?));
    it.insert("version".into(), n(j.version));
    if let Some(t) = due_at(j) {
        it.insert("due_pk".into(), st.index_value(DUE, &j.id));
        it.insert("due_at".into(), n(t));
    }
    Ok(it)
}

/// The due index's partition name.
const DUE: &str = "DUE";

/// Adds `job` written as version `job.version + 1`, guarded by its current version.
pub(super) fn plan_job(st: &DynamoStore, tx: &mut Tx, job: &Job) -> Result<Job, StoreError> {
    let mut next = job.clone();
    next.version += 1;
    let cond = if job.version == 0 { Cond::absent() } else { Cond::new("#version = :v").val(":v", n(job.version)) };
    tx.put(&st.table, Part::Job, job_item(st, &next)?, Some(cond))?;
    Ok(next)
}

pub(super) fn conflict(job: &Job) -> StoreError {
    StoreError::Conflict(format!("job {}", job.id))
}

/// `JobStore::put_job`.
pub(super) async fn put(st: &DynamoStore, job: &Job) -> Result<Job, StoreError> {
    st.check_shards().await?;
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        let next = plan_job(st, &mut tx, job)?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(next),
            Outcome::Failed(_) => return Err(conflict(job)),
            Outcome::Contended => backoff(attempt).await,
        }
    }
    Err(conflict(job))
}

/// `JobStore::get_job`.
pub(super) async fn get(st: &DynamoStore, id: &str) -> Result<Option<Job>, StoreError> {
    st.get(st.keys.job_key(id)).await?.map(|it| doc(&it, id)).transpose()
}

/// `JobStore::list_jobs`: the fixed `JOBS` partition, in id order.
pub(super) async fn list(st: &DynamoStore) -> Result<Vec<Job>, StoreError> {
    let items = st.query(Query::prefix(st.keys.jobs_pk(), JOB_PREFIX)).await?;
    items.iter().map(|it| doc(it, "job")).collect()
}

/// `JobStore::delete_job`.
pub(super) async fn delete(st: &DynamoStore, id: &str) -> Result<bool, StoreError> {
    let out = st
        .client
        .delete_item()
        .table_name(&st.table)
        .set_key(Some(st.keys.job_key(id)))
        .return_values(ReturnValue::AllOld)
        .send()
        .await
        .map_err(sdk("DeleteItem"))?;
    Ok(out.attributes.is_some_and(|a| !a.is_empty()))
}

/// `JobStore::due_jobs`: the sparse due index, oldest first.
pub(super) async fn due(st: &DynamoStore, now: DateTime<Utc>, limit: usize) -> Result<Vec<Job>, StoreError> {
    let items = st.query_shards(GSI_DUE, DUE, Some(ms(now)), false, Some(limit)).await?;
    items.iter().map(|it| doc(it, "job")).collect()
}

pub(super) fn claim_key(st: &DynamoStore, occ: &Occurrence) -> Item {
    key(st.keys.occ_pk(occ), CLAIM_SK)
}

/// A new claim of `occ`, stamped `now`.
pub(super) fn claim_item(st: &DynamoStore, occ: &Occurrence, now: DateTime<Utc>) -> Item {
    let mut c = claim_key(st, occ);
    c.insert("job_id".into(), s(&occ.job_id));
    c.insert("fire_at".into(), n(occ.fire_at.timestamp()));
    c.insert("status".into(), s("claimed"));
    c.insert("claimed_at".into(), n(ms(now)));
    c.insert(super::items::TTL.into(), occ_ttl(occ, now));
    c
}

/// `JobStore::claim_occurrence`.
pub(super) async fn claim(st: &DynamoStore, occ: &Occurrence, job: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError> {
    st.check_shards().await?;
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        tx.put(&st.table, Part::Claim, claim_item(st, occ, now), Some(Cond::absent()))?;
        let next = plan_job(st, &mut tx, job)?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(Claim::Claimed(Box::new(next))),
            o if o.lost(Part::Claim) => return Ok(Claim::Duplicate),
            // Only the job's version was reported: the claim may still be taken (a winner
            // bumps the version), and a taken claim is a duplicate, not a conflict.
            Outcome::Failed(_) => {
                return if claim_status(st, occ).await?.is_some() { Ok(Claim::Duplicate) } else { Err(conflict(job)) };
            }
            Outcome::Contended => backoff(attempt).await,
        }
    }
    Err(conflict(job))
}

/// `JobStore::claim_status`.
pub(super) async fn claim_status(st: &DynamoStore, occ: &Occurrence) -> Result<Option<String>, StoreError> {
    Ok(st.get(claim_key(st, occ)).await?.and_then(|it| get_s(&it, "status").map(str::to_string)))
}

/// `JobStore::finish_run`: the claim's status (if claimed), the run, then the retention trim.
pub(super) async fn finish_run(st: &DynamoStore, run: &RunRecord, retention: usize) -> Result<(), StoreError> {
    let occ = run.occurrence();
    let res = st
        .client
        .update_item()
        .table_name(&st.table)
        .set_key(Some(claim_key(st, &occ)))
        .update_expression("SET #status = :s")
        .condition_expression("attribute_exists(#pk)")
        .expression_attribute_names("#status", "status")
        .expression_attribute_names("#pk", "pk")
        .expression_attribute_values(":s", s(run.status.as_str()))
        .send()
        .await;
    match res {
        // No claim (e.g. a run recorded without one): nothing to update, as in SQLite.
        Err(e) if matches!(e.as_service_error(), Some(UpdateItemError::ConditionalCheckFailedException(_))) => {}
        other => {
            other.map_err(sdk("UpdateItem"))?;
        }
    }
    let mut it = key(st.keys.runs_pk(&run.job_id), super::items::run_sk(run.started_at, &run.run_id));
    it.insert("doc".into(), s(encode("run", run)?));
    st.client.put_item().table_name(&st.table).set_item(Some(it)).send().await.map_err(sdk("PutItem"))?;
    trim_runs(st, &run.job_id, retention).await
}

/// Deletes all but the newest `retention` runs of a job (a keys-only query, then a delete
/// per run past it).
pub(super) async fn trim_runs(st: &DynamoStore, job_id: &str, retention: usize) -> Result<(), StoreError> {
    let mut q = Query::prefix(st.keys.runs_pk(job_id), RUN_PREFIX).newest_first();
    q.keys_only = true;
    for old in st.query(q).await?.into_iter().skip(retention) {
        st.client.delete_item().table_name(&st.table).set_key(Some(old)).send().await.map_err(sdk("DeleteItem"))?;
    }
    Ok(())
}

/// `JobStore::list_runs`: newest first.
pub(super) async fn list_runs(st: &DynamoStore, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
    let items = st.query(Query::prefix(st.keys.runs_pk(job_id), RUN_PREFIX).newest_first().take(limit)).await?;
    items.iter().map(|it| doc(it, "run")).collect()
}
