//! SQLite bodies of [`MetaStore`]: small named records in the `meta` table.

use super::SqliteStore;
use crate::ports::{Counts, MetaStore, StoreError};
use crate::store::backend;
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

#[async_trait]
impl MetaStore for SqliteStore {
    async fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = self.scope.key(key);
        self.with(move |c| c.query_row("SELECT value FROM meta WHERE key = ?1", [&key], |r| r.get(0)).optional().map_err(backend)).await
    }

    async fn put_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (self.scope.key(key), value.to_string());
        self.with(move |c| {
            c.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2", params![key, value])
                .map(|_| ())
                .map_err(backend)
        })
        .await
    }

    async fn delete_meta(&self, key: &str) -> Result<(), StoreError> {
        let key = self.scope.key(key);
        self.with(move |c| c.execute("DELETE FROM meta WHERE key = ?1", [&key]).map(|_| ()).map_err(backend)).await
    }

    /// One statement: an insert that does nothing on a taken key, or an update guarded by
    /// the old value; a changed row count is the win.
    async fn swap_meta(&self, key: &str, expected: Option<&str>, new: &str) -> Result<bool, StoreError> {
        let (key, expected, new) = (self.scope.key(key), expected.map(str::to_string), new.to_string());
        self.with(move |c| {
            let n = match &expected {
                None => c.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO NOTHING", params![key, new]),
                Some(old) => c.execute("UPDATE meta SET value = ?2 WHERE key = ?1 AND value = ?3", params![key, new, old]),
            };
            n.map(|n| n == 1).map_err(backend)
        })
        .await
    }

    /// Counters live as a JSON object in the record's value; read, add and write back in one
    /// IMMEDIATE transaction, so concurrent processes on one file add up.
    async fn add_counts(&self, key: &str, deltas: &[(&str, i64)]) -> Result<(), StoreError> {
        let key = self.scope.key(&counts_key(key));
        let deltas: Vec<(String, i64)> = deltas.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            let old: Option<String> =
                tx.query_row("SELECT value FROM meta WHERE key = ?1", [&key], |r| r.get(0)).optional().map_err(backend)?;
            let mut counts = parse_counts(old.as_deref());
            for (name, delta) in deltas {
                *counts.entry(name).or_insert(0) += delta;
            }
            let value = serde_json::to_string(&counts).map_err(backend)?;
            tx.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2", params![key, value])
                .map_err(backend)?;
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn get_counts(&self, keys: &[String]) -> Result<Vec<Counts>, StoreError> {
        let keys: Vec<String> = keys.iter().map(|k| self.scope.key(&counts_key(k))).collect();
        self.with(move |c| {
            let mut stmt = c.prepare_cached("SELECT value FROM meta WHERE key = ?1").map_err(backend)?;
            let mut out = Vec::with_capacity(keys.len());
            for key in &keys {
                let value: Option<String> = stmt.query_row([key], |r| r.get(0)).optional().map_err(backend)?;
                out.push(parse_counts(value.as_deref()));
            }
            Ok(out)
        })
        .await
    }
}

/// Counter records have their own key space in `meta`, so `get_meta` never sees them.
fn counts_key(key: &str) -> String {
    format!("counts:{key}")
}

/// A stored counter object; anything unreadable counts as empty rather than failing a page.
fn parse_counts(value: Option<&str>) -> Counts {
    value.and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default()
}
