//! The embedded store: one SQLite file (WAL) shared safely by every process on the host.
//!
//! Why SQLite transactions are `IMMEDIATE`: each port method is a read-check-write; taking
//! the write lock up front makes the compare-and-set atomic across processes, and
//! `busy_timeout` turns contention into a short wait instead of an error.
//! Calls run, one after another, on the store's own thread, which owns the connection: a
//! lock wait never stalls the async workers, the thread count stays flat however many calls
//! wait, and SQLite's allocations stay in that thread's malloc arena (BENCHMARKS.md §5, "RSS
//! over 30,000 turns"). Calls that wait together share one transaction and one `fsync`
//! (group commit, `thread`), each in its own savepoint; every call opens its transaction with
//! `tx::Tx`, which is a savepoint inside such a batch.
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
mod session_delete;
mod sessions;
mod thread;
mod turn;
mod tx;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod full_tests;

use super::backend;
use crate::ports::{Store, StoreError};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use std::path::Path;
use std::sync::{Arc, mpsc};

/// The SQLite adapter.
#[derive(Clone)]
pub struct SqliteStore {
    /// The store thread that owns the connection; clones (and `scoped` views) share it.
    thread: Arc<Opened>,
    /// The profile whose key space this handle reads and writes.
    scope: Arc<crate::store::scope::Scope>,
}

/// The thread that owns one connection and runs the calls sent to it in order, with group
/// commit (`thread`). It ends, and the connection closes, when the last handle drops (the
/// drop waits for it, so a store dropped is a connection closed, as with the connection
/// itself).
struct StoreThread {
    calls: Option<mpsc::Sender<thread::Call>>,
    handle: Option<std::thread::JoinHandle<()>>,
    #[cfg_attr(not(test), allow(dead_code))]
    stats: Arc<StoreStats>,
}

/// What the store thread's group commit did: batches committed and the calls they held.
#[derive(Default)]
struct StoreStats {
    batches: std::sync::atomic::AtomicU64,
    batched: std::sync::atomic::AtomicU64,
}

impl StoreStats {
    /// Counts a committed batch of `calls` calls.
    fn batch(&self, calls: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.batches.fetch_add(1, Relaxed);
        self.batched.fetch_add(calls as u64, Relaxed);
    }
}

/// The store thread: started by [`SqliteStore::open`], or by the first call of a store made
/// with [`SqliteStore::lazy`], which creates the file only then (on Lambda the init makes no
/// store request: docs/design.md#lazy-start).
struct Opened {
    thread: tokio::sync::OnceCell<StoreThread>,
    /// The file a lazy store opens on its first call.
    path: std::path::PathBuf,
}

impl Opened {
    /// The running store thread, opening the file first if this store is lazy and not yet
    /// open. A failed open is this call's error; the next call tries again.
    async fn thread(&self) -> Result<&StoreThread, StoreError> {
        self.thread
            .get_or_try_init(|| async {
                let path = self.path.clone();
                let opened = tokio::task::spawn_blocking(move || SqliteStore::start_at(&path)).await.map_err(backend)?;
                opened.map_err(|e| match e {
                    StoreError::Backend(source) => backend(OpenFailed { path: self.path.display().to_string(), source }),
                    other => other,
                })
            })
            .await
    }
}

/// A lazy store's file could not be opened on its first call.
#[derive(Debug, thiserror::Error)]
#[error("cannot open {path}: {source}")]
struct OpenFailed {
    path: String,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl StoreThread {
    fn start(conn: Connection) -> Result<Self, StoreError> {
        let (calls, rx) = mpsc::channel::<thread::Call>();
        let stats = Arc::new(StoreStats::default());
        let counts = stats.clone();
        let handle =
            std::thread::Builder::new().name("sqlite-store".into()).spawn(move || thread::serve(conn, rx, counts)).map_err(backend)?;
        Ok(Self { calls: Some(calls), handle: Some(handle), stats })
    }
}

impl Drop for StoreThread {
    fn drop(&mut self) {
        drop(self.calls.take());
        if let Some(h) = self.handle.take()
            && h.thread().id() != std::thread::current().id()
        {
            h.join().ok();
        }
    }
}

/// The error of a store call that panicked: the panic's message, as the blocking pool's
/// `JoinError` carried it before the store had its own thread.
#[derive(Debug, thiserror::Error)]
#[error("store call panicked: {0}")]
struct Panicked(String);

/// The store thread is gone (it cannot end while a handle exists; kept as an error, not a panic).
#[derive(Debug, thiserror::Error)]
#[error("store thread stopped")]
struct Stopped;

/// Milliseconds since the epoch, the stored form of every instant.
fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// Statements kept prepared per connection: every statement of the hot paths (a message turn
/// runs about 20 distinct ones) stays parsed; rusqlite's default is 16.
const STATEMENT_CACHE: usize = 64;

/// `Connection::execute` through the connection's statement cache. Parsing the SQL of each
/// uncached statement was about a tenth of a message turn's CPU (BENCHMARKS.md §5).
fn cached_execute<P: rusqlite::Params>(c: &Connection, sql: &str, p: P) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(p)
}

/// `Connection::query_row` through the connection's statement cache.
fn cached_row<T, P: rusqlite::Params, F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>>(
    c: &Connection,
    sql: &str,
    p: P,
    f: F,
) -> rusqlite::Result<T> {
    c.prepare_cached(sql)?.query_row(p, f)
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
        Ok(Self::on(Self::start_at(path)?, path))
    }

    /// The store of the file at `path`, opened (created if needed, migrated) by its first
    /// call rather than now: nothing touches the disk until then, and an open that fails is
    /// that call's error (the next call tries again).
    pub fn lazy(path: &Path) -> Self {
        let opened = Opened { thread: tokio::sync::OnceCell::new(), path: path.to_path_buf() };
        Self { thread: Arc::new(opened), scope: Arc::default() }
    }

    /// Opens a lazy store's file now, if it is not open yet ([`SqliteStore::lazy`]).
    pub async fn ready(&self) -> Result<(), StoreError> {
        self.thread.thread().await.map(|_| ())
    }

    /// The store whose thread is `thread`, running already.
    fn on(thread: StoreThread, path: &Path) -> Self {
        let opened = Opened { thread: tokio::sync::OnceCell::new_with(Some(thread)), path: path.to_path_buf() };
        Self { thread: Arc::new(opened), scope: Arc::default() }
    }

    /// Opens (creating if needed) the store file, migrates it, and starts its thread.
    fn start_at(path: &Path) -> Result<StoreThread, StoreError> {
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
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.execute_batch(&format!("PRAGMA journal_mode=WAL; PRAGMA synchronous={}; PRAGMA foreign_keys=ON;", synchronous()))
            .map_err(backend)?;
        schema::migrate(&mut conn).map_err(backend)?;
        StoreThread::start(conn)
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
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        schema::migrate(&mut conn).map_err(backend)?;
        Ok(Self::on(StoreThread::start(conn)?, Path::new(":memory:")))
    }

    /// Batches the group commit has committed, and the calls they held (tests).
    #[cfg(test)]
    pub(crate) fn group_commits(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(t) = self.thread.thread.get() else { return (0, 0) };
        (t.stats.batches.load(Relaxed), t.stats.batched.load(Relaxed))
    }

    /// The schema version in the file.
    pub fn schema_version() -> i64 {
        schema::CURRENT
    }

    /// Runs `f` with the connection on the store thread, after the calls sent before it,
    /// possibly in one transaction with other waiting calls (group commit, `thread`): `f`
    /// opens its transaction with `tx::Tx`, and an error it returns rolls back what it wrote.
    /// The answer comes once its write is on disk. A panic in `f` is this call's error; the
    /// thread and the connection live on (an open transaction rolls back as it unwinds). A
    /// caller that stops waiting does not stop `f`.
    pub(crate) async fn with<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let call: thread::Call = Box::new(move |c| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c))).unwrap_or_else(|p| {
                let msg = p.downcast_ref::<&str>().map(|s| (*s).to_string()).or_else(|| p.downcast_ref::<String>().cloned());
                Err(backend(Panicked(msg.unwrap_or_default())))
            });
            let (failed, full) = match &r {
                Ok(_) => (false, false),
                Err(e) => (true, matches!(e, StoreError::Full(_))),
            };
            let reply: thread::Reply = Box::new(move |batch_failed| {
                tx.send(batch_failed.map_or(r, Err)).ok();
            });
            thread::Ran { failed, full, reply }
        });
        let thread = self.thread.thread().await?;
        thread.calls.as_ref().ok_or(Stopped).and_then(|t| t.send(call).map_err(|_| Stopped)).map_err(backend)?;
        rx.await.map_err(|_| backend(Stopped))?
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

    /// A store call that panics is that call's error; the thread and the connection live on,
    /// and the transaction the call had open was rolled back.
    #[tokio::test]
    async fn a_panicking_call_is_an_error_and_the_store_lives_on() {
        let s = SqliteStore::in_memory().unwrap();
        let e = s
            .with(|c| -> Result<(), StoreError> {
                let tx = tx::Tx::deferred(c)?;
                tx.execute("INSERT INTO meta (key, value) VALUES ('half', 'written')", []).map_err(backend)?;
                panic!("boom");
            })
            .await
            .unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
        let n: i64 = s
            .clone()
            .with(|c| c.query_row("SELECT COUNT(*) FROM meta WHERE key = 'half'", [], |r| r.get(0)).map_err(backend))
            .await
            .unwrap();
        assert_eq!(n, 0);
    }

    /// Concurrent calls all run on the one store thread, in turn: no thread per waiting call
    /// (the blocking pool grew to 116 threads under 100 concurrent chats).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_share_one_thread() {
        let s = SqliteStore::in_memory().unwrap();
        let calls = (0..100).map(|i: i64| {
            let s = s.clone();
            tokio::spawn(async move {
                s.with(move |c| {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    let v: i64 = c.query_row("SELECT ?1", [i], |r| r.get(0)).map_err(backend)?;
                    Ok((v, std::thread::current().id()))
                })
                .await
                .unwrap()
            })
        });
        let out: Vec<_> = futures_util::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
        assert_eq!(out.iter().map(|(v, _)| v).sum::<i64>(), (0..100).sum::<i64>());
        let threads: std::collections::HashSet<_> = out.iter().map(|(_, t)| *t).collect();
        assert_eq!(threads.len(), 1);
        assert!(!threads.contains(&std::thread::current().id()));
    }

    /// Dropping the last handle ends the thread and closes the connection before the drop
    /// returns: SQLite removes the WAL file at the last close.
    #[tokio::test]
    async fn dropping_the_last_handle_closes_the_connection() {
        let dir = std::env::temp_dir().join(format!("hz-close-{}-{}", std::process::id(), rand::random::<u32>()));
        let path = dir.join("s.db");
        let s = SqliteStore::open(&path).unwrap();
        let other = s.clone().scoped(crate::core::profile::Profile::default());
        s.with(|c| c.execute("INSERT INTO meta (key, value) VALUES ('k', 'v')", []).map_err(backend)).await.unwrap();
        let wal = dir.join("s.db-wal");
        assert!(wal.exists());
        drop(s);
        assert!(wal.exists(), "a clone still holds the connection");
        drop(other);
        assert!(!wal.exists());
        std::fs::remove_dir_all(dir).ok();
    }

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
