//! SQLite bodies of [`JobStore`]: jobs with their due index, claims and runs. Each write is
//! one immediate transaction; `claim` is the at-most-once primitive (insert-if-absent of the
//! claim plus the job's compare-and-set, together).

use super::{SqliteStore, ms};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::ports::{Claim, JobStore, StoreError};
use crate::store::{backend, decode, encode};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// The index column: set only for jobs that a ticker should look at.
fn due_at(j: &Job) -> Option<i64> {
    // Running counts: a crash mid-run must not stop later occurrences (their claims differ).
    // A pending retry attempt counts too (`Job::due_at`).
    j.due_at().map(ms)
}

/// Writes `job` under its stored id `sid` (the profile's key, `crate::store::scope`).
pub(super) fn write_job(tx: &Connection, job: &Job, sid: &str) -> Result<Job, StoreError> {
    let cur: Option<u64> = tx.query_row("SELECT version FROM jobs WHERE id = ?1", [sid], |r| r.get(0)).optional().map_err(backend)?;
    if cur.unwrap_or(0) != job.version {
        return Err(StoreError::Conflict(format!("job {}", job.id)));
    }
    let mut next = job.clone();
    next.version += 1;
    let doc = encode(&job.id, &next)?;
    tx.execute(
        "INSERT INTO jobs (id, version, due_at, doc) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET version = ?2, due_at = ?3, doc = ?4",
        params![sid, next.version, due_at(&next), doc],
    )
    .map_err(backend)?;
    Ok(next)
}

fn put(c: &mut Connection, job: &Job, sid: &str) -> Result<Job, StoreError> {
    let tx = super::tx::Tx::immediate(c)?;
    let j = write_job(&tx, job, sid)?;
    tx.commit().map_err(backend)?;
    Ok(j)
}

fn get(c: &Connection, id: &str) -> Result<Option<Job>, StoreError> {
    let doc: Option<String> = c.query_row("SELECT doc FROM jobs WHERE id = ?1", [id], |r| r.get(0)).optional().map_err(backend)?;
    doc.map(|d| decode(id, &d)).transpose()
}

/// Jobs whose stored id matches `glob` (one profile's), due ones or all.
fn list(c: &Connection, glob: &str, due_before: Option<i64>, limit: usize) -> Result<Vec<Job>, StoreError> {
    let (sql, arg) = match due_before {
        Some(t) => ("SELECT doc FROM jobs WHERE due_at IS NOT NULL AND due_at <= ?1 AND id GLOB ?3 ORDER BY due_at LIMIT ?2", t),
        None => ("SELECT doc FROM jobs WHERE ?1 = ?1 AND id GLOB ?3 ORDER BY id LIMIT ?2", 0),
    };
    let mut st = c.prepare_cached(sql).map_err(backend)?;
    let rows = st.query_map(params![arg, limit as i64, glob], |r| r.get::<_, String>(0)).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|d| decode("job", &d))).collect()
}

fn delete(c: &Connection, id: &str) -> Result<bool, StoreError> {
    c.execute("DELETE FROM jobs WHERE id = ?1", [id]).map(|n| n > 0).map_err(backend)
}

/// `occ.job_id` and `sid` are stored ids (the profile's keys).
fn claim(c: &mut Connection, occ: &Occurrence, job: &Job, sid: &str, now: DateTime<Utc>) -> Result<Claim, StoreError> {
    let tx = super::tx::Tx::immediate(c)?;
    let claimed = claim_in(&tx, occ, job, sid, now)?;
    if claimed.is_some() {
        tx.commit().map_err(backend)?;
    }
    Ok(claimed.map_or(Claim::Duplicate, |j| Claim::Claimed(Box::new(j))))
}

/// Inside a write: inserts the claim if absent and writes the job; `None` if it was claimed.
pub(super) fn claim_in(tx: &Connection, occ: &Occurrence, job: &Job, sid: &str, now: DateTime<Utc>) -> Result<Option<Job>, StoreError> {
    let n = tx
        .execute(
            "INSERT OR IGNORE INTO claims (job_id, fire_at, status, claimed_at) VALUES (?1, ?2, 'claimed', ?3)",
            params![occ.job_id, occ.fire_at.timestamp(), ms(now)],
        )
        .map_err(backend)?;
    if n == 0 {
        return Ok(None);
    }
    write_job(tx, job, sid).map(Some)
}

fn claim_status(c: &Connection, occ: &Occurrence) -> Result<Option<String>, StoreError> {
    c.query_row("SELECT status FROM claims WHERE job_id = ?1 AND fire_at = ?2", params![occ.job_id, occ.fire_at.timestamp()], |r| r.get(0))
        .optional()
        .map_err(backend)
}

/// `sid` is the stored id of the run's job (the profile's key).
/// `claim_id` is the stored job id of its claim (a manual run's own key space, scoped the same way).
fn finish_run(c: &mut Connection, run: &RunRecord, sid: &str, claim_id: &str, retention: usize) -> Result<(), StoreError> {
    let tx = super::tx::Tx::immediate(c)?;
    finish_run_in(&tx, run, sid, claim_id, retention)?;
    tx.commit().map_err(backend)
}

/// Inside a write: the claim's status, the run record, and the retention trim.
pub(super) fn finish_run_in(tx: &Connection, run: &RunRecord, sid: &str, claim_id: &str, retention: usize) -> Result<(), StoreError> {
    let occ = Occurrence { job_id: claim_id.to_string(), ..run.occurrence() };
    tx.execute(
        "UPDATE claims SET status = ?3 WHERE job_id = ?1 AND fire_at = ?2",
        params![occ.job_id, occ.fire_at.timestamp(), run.status.as_str()],
    )
    .map_err(backend)?;
    tx.execute(
        "INSERT INTO runs (run_id, job_id, started_at, doc) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(run_id) DO UPDATE SET doc = ?4",
        params![run.run_id, sid, ms(run.started_at), encode("run", run)?],
    )
    .map_err(backend)?;
    tx.execute(
        "DELETE FROM runs WHERE job_id = ?1 AND run_id NOT IN (SELECT run_id FROM runs WHERE job_id = ?1 ORDER BY started_at DESC, run_id DESC LIMIT ?2)",
        params![sid, retention as i64],
    )
    .map_err(backend)?;
    Ok(())
}

fn list_runs(c: &Connection, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
    let mut st =
        c.prepare_cached("SELECT doc FROM runs WHERE job_id = ?1 ORDER BY started_at DESC, run_id DESC LIMIT ?2").map_err(backend)?;
    let rows = st.query_map(params![job_id, limit as i64], |r| r.get::<_, String>(0)).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|d| decode("run", &d))).collect()
}

#[async_trait]
impl JobStore for SqliteStore {
    async fn put_job(&self, job: &Job) -> Result<Job, StoreError> {
        let (job, sid) = (job.clone(), self.scope.key(&job.id));
        self.with(move |c| put(c, &job, &sid)).await
    }

    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        let id = self.scope.key(id);
        self.with(move |c| get(c, &id)).await
    }

    async fn list_jobs(&self) -> Result<Vec<Job>, StoreError> {
        let glob = self.scope.key_glob();
        self.with(move |c| list(c, &glob, None, usize::MAX >> 1)).await
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        let id = self.scope.key(id);
        self.with(move |c| delete(c, &id)).await
    }

    async fn due_jobs(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Job>, StoreError> {
        let glob = self.scope.key_glob();
        self.with(move |c| list(c, &glob, Some(ms(now)), limit)).await
    }

    async fn claim_occurrence(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        let (job, sid) = (job.clone(), self.scope.key(&job.id));
        self.with(move |c| claim(c, &occ, &job, &sid, now)).await
    }

    async fn claim_status(&self, occ: &Occurrence) -> Result<Option<String>, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        self.with(move |c| claim_status(c, &occ)).await
    }

    async fn finish_run(&self, run: &RunRecord, retention: usize) -> Result<(), StoreError> {
        let (run, sid, claim_id) = (run.clone(), self.scope.key(&run.job_id), self.scope.key(&run.occurrence().job_id));
        self.with(move |c| finish_run(c, &run, &sid, &claim_id, retention)).await
    }

    async fn list_runs(&self, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let id = self.scope.key(job_id);
        self.with(move |c| list_runs(c, &id, limit)).await
    }
}
