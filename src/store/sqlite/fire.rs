//! SQLite bodies of [`FireStore`]: each folded fire write is one immediate transaction made
//! of the same statements as the plain operations it joins (claim, append, ledger row, run
//! record, job write), so it lands whole or not at all. The append position needs no hint
//! here: the transaction numbers messages after the transcript's last one.

use super::SqliteStore;
use super::jobs::{claim_in, finish_run_in, write_job};
use super::ledger::{ledger_begin, ledger_finish};
use super::sessions::append_docs;
use crate::core::job::{Job, Occurrence};
use crate::ports::{Claim, FireFinish, FireStore, RunAppend, StoreError};
use crate::store::{backend, encode};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

/// An append encoded for the store thread: the session id and the message documents.
type Encoded = Option<(String, Vec<String>)>;

fn encoded(a: Option<&RunAppend>) -> Result<Encoded, StoreError> {
    a.map(|a| Ok((a.session_id.as_str().to_string(), a.messages.iter().map(|m| encode("message", m)).collect::<Result<_, _>>()?)))
        .transpose()
}

fn append(tx: &Connection, a: &Encoded) -> Result<(), StoreError> {
    match a {
        Some((id, docs)) if !docs.is_empty() => append_docs(tx, id, docs),
        _ => Ok(()),
    }
}

#[async_trait]
impl FireStore for SqliteStore {
    async fn fire_claim(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>, a: Option<&RunAppend>) -> Result<Claim, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        let (job, sid, a) = (job.clone(), self.scope.key(&job.id), encoded(a)?);
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            let Some(j) = claim_in(&tx, &occ, &job, &sid, now)? else { return Ok(Claim::Duplicate) };
            append(&tx, &a)?;
            tx.commit().map_err(backend)?;
            Ok(Claim::Claimed(Box::new(j)))
        })
        .await
    }

    async fn fire_deliver(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>, a: Option<&RunAppend>) -> Result<bool, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        let (target, a) = (target.to_string(), encoded(a)?);
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            let new = ledger_begin(&tx, &occ, &target, now)?;
            append(&tx, &a)?;
            tx.commit().map_err(backend)?;
            Ok(new)
        })
        .await
    }

    async fn fire_finish(&self, fin: &FireFinish) -> Result<Option<Job>, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&fin.run.occurrence().job_id), ..fin.run.occurrence() };
        let (sid, a, fin) = (self.scope.key(&fin.run.job_id), encoded(fin.append.as_ref())?, fin.clone());
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            for (target, status) in &fin.ledger {
                ledger_finish(&tx, &occ, target, status, fin.run.finished_at.unwrap_or(fin.run.started_at))?;
            }
            append(&tx, &a)?;
            finish_run_in(&tx, &fin.run, &sid, &occ.job_id, fin.retention)?;
            let written = fin.job.as_ref().map(|j| write_job(&tx, j, &sid)).transpose()?;
            tx.commit().map_err(backend)?;
            Ok(written)
        })
        .await
    }
}
