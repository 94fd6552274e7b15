//! The embedded store: one SQLite file (WAL) shared safely by every process on the host.
//!
//! Why SQLite transactions are `IMMEDIATE`: each port method is a read-check-write; taking
//! the write lock up front makes the compare-and-set atomic across processes, and
//! `busy_timeout` turns contention into a short wait instead of an error.
//! Calls run on tokio's blocking pool so a lock wait never stalls the async workers.
//!
//! One file per concern of the port: `sessions` (entries, records, transcripts, inbound ids,
//! wake candidates), `queue`, `jobs` (jobs, claims, runs), `ledger` (delivery ledger, once
//! keys) and `meta`; `schema` owns the tables and their migrations, `search` the FTS5
//! query of `session_search`.

mod fire;
mod jobs;
mod ledger;
mod meta;
mod queue;
mod schema;
mod search;
mod sessions;
mod turn;

#[cfg(test)]
mod full_tests;

use super::backend;
use crate::ports::{Store, StoreError};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The SQLite adapter.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    /// The profile whose key space this handle reads and writes.
    scope: Arc<crate::store::scope::Scope>,
}

/// Milliseconds since the epoch, the stored form of every instant.
fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The instant of a stored millisecond count.
fn from_ms(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(v).unwrap_or_default()
}

/// The `synchronous` level: `FULL`, so a commit is on disk before the call returns and a
/// power loss cannot forget a claim, a ledger entry or a lease (with `NORMAL` in WAL mode the
/// last commits can be lost). Every write uses it: the writes that could go without are few
/// and small, one level is simpler to reason about, and the cost is measured in BENCHMARKS.md
/// (docs/design.md#guarantees). `HZ_BENCH_SQLITE_SYNC` overrides it for that benchmark only
/// and exists only in builds with the `testing` feature.
fn synchronous() -> &'static str {
    #[cfg(feature = "testing")]
    if let Ok(v) = std::env::var("HZ_BENCH_SQLITE_SYNC") {
        match v.as_str() {
            "NORMAL" => return "NORMAL",
            "OFF" => return "OFF",
            _ => {}
        }
    }
    "FULL"
}

impl SqliteStore {
    /// Opens (creating if needed) the store file and migrates it.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(backend)?;
        }
        // Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files the mode of
        // the database file, so the whole store stays private (conversations live here).
        let mut create = std::fs::OpenOptions::new();
        create.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut create, 0o600);
        match create.open(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(backend(e)),
        }
        let mut conn = Connection::open(path).map_err(backend)?;
        conn.busy_timeout(std::time::Duration::from_secs(15)).map_err(backend)?;
        conn.execute_batch(&format!("PRAGMA journal_mode=WAL; PRAGMA synchronous={}; PRAGMA foreign_keys=ON;", synchronous()))
            .map_err(backend)?;
        schema::migrate(&mut conn).map_err(backend)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)), scope: Arc::default() })
    }

    /// This store seen as `profile`'s key space (docs/design.md#profiles): the same file,
    /// nothing of another profile visible.
    pub fn scoped(mut self, profile: crate::core::profile::Profile) -> Self {
        self.scope = Arc::new(crate::store::scope::Scope::new(profile));
        self
    }

    /// An inbound id in this profile's key space (its platform scoped).
    fn inbound(&self, d: &crate::ports::InboundId) -> crate::ports::InboundId {
        crate::ports::InboundId { platform: self.scope.key(&d.platform), ..d.clone() }
    }

    /// An in-memory store (tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        let mut conn = Connection::open_in_memory().map_err(backend)?;
        schema::migrate(&mut conn).map_err(backend)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)), scope: Arc::default() })
    }

    /// The schema version in the file.
    pub fn schema_version() -> i64 {
        schema::CURRENT
    }

    /// Runs `f` with the connection on the blocking pool.
    pub(crate) async fn with<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        .map_err(backend)?
    }
}

impl Store for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance::{Fixture, conformance_tests};

    /// The in-memory store; its second handle shares the one connection.
    impl Fixture for SqliteStore {
        fn store(&self) -> Arc<dyn Store> {
            Arc::new(self.clone())
        }
        async fn second(&self) -> Arc<dyn Store> {
            Arc::new(self.clone())
        }
    }

    /// A store file in its own temporary directory, removed on drop. A second handle is an
    /// independent connection on the same file, standing in for a second process.
    struct OnFile {
        dir: std::path::PathBuf,
        store: Option<SqliteStore>,
    }

    impl OnFile {
        fn new() -> Self {
            let dir = std::env::temp_dir().join(format!("hz-sqlite-{}-{}", std::process::id(), rand::random::<u32>()));
            let store = SqliteStore::open(&dir.join("state.db")).unwrap();
            Self { dir, store: Some(store) }
        }
    }

    impl Fixture for OnFile {
        fn store(&self) -> Arc<dyn Store> {
            Arc::new(self.store.clone().unwrap())
        }
        async fn second(&self) -> Arc<dyn Store> {
            Arc::new(SqliteStore::open(&self.dir.join("state.db")).unwrap())
        }
    }

    impl Drop for OnFile {
        fn drop(&mut self) {
            drop(self.store.take());
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }

    conformance_tests!(in_memory, async { Some(SqliteStore::in_memory().unwrap()) });
    conformance_tests!(on_file, async { Some(OnFile::new()) });

    #[test]
    fn migrations_are_idempotent() {
        let dir = std::env::temp_dir().join(format!("hz-mig-{}-{}", std::process::id(), rand::random::<u32>()));
        let path = dir.join("s.db");
        drop(SqliteStore::open(&path).unwrap());
        drop(SqliteStore::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        let n: i64 = c.query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0)).unwrap();
        assert_eq!(n, schema::CURRENT);
        std::fs::remove_dir_all(dir).ok();
    }
}
