//! SQLite bodies of [`LedgerStore`]: the delivery ledger (insert-if-absent per occurrence
//! and target) and once keys (insert-if-absent after dropping expired keys, judged by the
//! caller's `now`), each one statement or one immediate transaction.

use super::{SqliteStore, ms};
use crate::core::job::Occurrence;
use crate::ports::{LedgerStore, StoreError};
use crate::store::backend;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

pub(super) fn ledger_begin(c: &Connection, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
    c.execute(
        "INSERT OR IGNORE INTO deliveries (job_id, fire_at, target, status, at) VALUES (?1, ?2, ?3, 'sending', ?4)",
        params![occ.job_id, occ.fire_at.timestamp(), target, ms(now)],
    )
    .map(|n| n > 0)
    .map_err(backend)
}

pub(super) fn ledger_finish(c: &Connection, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
    c.execute(
        "UPDATE deliveries SET status = ?4, at = ?5 WHERE job_id = ?1 AND fire_at = ?2 AND target = ?3",
        params![occ.job_id, occ.fire_at.timestamp(), target, status, ms(now)],
    )
    .map(|_| ())
    .map_err(backend)
}

fn use_once(c: &mut Connection, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let tx = super::tx::Tx::immediate(c)?;
    tx.execute("DELETE FROM once_keys WHERE expires_at < ?1", [ms(now)]).map_err(backend)?;
    let n =
        tx.execute("INSERT OR IGNORE INTO once_keys (key, expires_at) VALUES (?1, ?2)", params![key, ms(expires_at)]).map_err(backend)?;
    tx.commit().map_err(backend)?;
    Ok(n > 0)
}

#[async_trait]
impl LedgerStore for SqliteStore {
    async fn ledger_begin(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        let target = target.to_string();
        self.with(move |c| ledger_begin(c, &occ, &target, now)).await
    }

    async fn ledger_finish(&self, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        let occ = Occurrence { job_id: self.scope.key(&occ.job_id), ..occ.clone() };
        let (target, status) = (target.to_string(), status.to_string());
        self.with(move |c| ledger_finish(c, &occ, &target, &status, now)).await
    }

    async fn use_once(&self, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let key = self.scope.key(key);
        self.with(move |c| use_once(c, &key, expires_at, now)).await
    }
}
