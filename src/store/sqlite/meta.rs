//! SQLite bodies of [`MetaStore`]: small named records in the `meta` table.

use super::SqliteStore;
use crate::ports::{MetaStore, StoreError};
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
}
