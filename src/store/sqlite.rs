//! The embedded store: one SQLite file (WAL) shared safely by every process on the host.
//!
//! Why SQLite transactions are `IMMEDIATE`: each port method is a read-check-write; taking
//! the write lock up front makes the compare-and-set atomic across processes, and
//! `busy_timeout` turns contention into a short wait instead of an error.
//! Calls run on tokio's blocking pool so a lock wait never stalls the async workers.

mod jobs;
mod schema;

use super::{backend, decode, encode};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::{Job, Occurrence, RunRecord};
use crate::core::session::{Message, Role, SessionEntry, SessionRecord};
use crate::ports::{Appended, Claim, InboundId, QueuedItem, SessionChange, Store, StoreError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The SQLite adapter.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn from_ms(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(v).unwrap_or_default()
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
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;").map_err(backend)?;
        schema::migrate(&mut conn).map_err(backend)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    /// An in-memory store (tests).
    pub fn in_memory() -> Result<Self, StoreError> {
        let mut conn = Connection::open_in_memory().map_err(backend)?;
        schema::migrate(&mut conn).map_err(backend)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
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

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RecordRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
}

type RecordRow = (String, String, String, Option<String>, i64, Option<i64>, Option<String>);

fn to_record(row: RecordRow) -> Result<SessionRecord, StoreError> {
    let (id, key, platform, title, started, ended, reason) = row;
    Ok(SessionRecord {
        session_id: SessionId::named(id),
        session_key: SessionKey::parse(&key).map_err(|e| StoreError::Corrupt { what: "session".into(), reason: e.to_string() })?,
        platform,
        title,
        started_at: from_ms(started),
        ended_at: ended.map(from_ms),
        end_reason: reason,
    })
}

/// Records an inbound id; `DuplicateInbound` if it was already there.
fn record_inbound(tx: &rusqlite::Transaction<'_>, d: &InboundId, at: i64) -> Result<(), StoreError> {
    let n = tx
        .execute(
            "INSERT OR IGNORE INTO inbound_seen (platform, chat_id, message_id, seen_at) VALUES (?1, ?2, ?3, ?4)",
            params![d.platform, d.chat_id, d.message_id, at],
        )
        .map_err(backend)?;
    if n == 0 { Err(StoreError::DuplicateInbound) } else { Ok(()) }
}

/// Appends encoded messages after the transcript's last sequence number.
fn append_docs(tx: &rusqlite::Transaction<'_>, id: &str, docs: &[String]) -> Result<(), StoreError> {
    let mut seq: i64 =
        tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1", [id], |r| r.get(0)).map_err(backend)?;
    let mut st = tx.prepare_cached("INSERT INTO messages (session_id, seq, doc) VALUES (?1, ?2, ?3)").map_err(backend)?;
    for d in docs {
        seq += 1;
        st.execute(params![id, seq, d]).map_err(backend)?;
    }
    Ok(())
}

fn apply_change(tx: &rusqlite::Transaction<'_>, ch: &SessionChange) -> Result<(), StoreError> {
    match ch {
        SessionChange::Start(r) => {
            tx.execute(
                "INSERT INTO sessions (session_id, session_key, platform, title, started_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![r.session_id.as_str(), r.session_key.as_str(), r.platform, r.title, ms(r.started_at)],
            )
            .map_err(backend)?;
        }
        SessionChange::End { session_id, reason, at } => {
            tx.execute(
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE session_id = ?1 AND ended_at IS NULL",
                params![session_id.as_str(), ms(*at), reason],
            )
            .map_err(backend)?;
        }
        SessionChange::Reopen(id) => {
            tx.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE session_id = ?1", [id.as_str()]).map_err(backend)?;
        }
        SessionChange::Append { session_id, messages } => {
            let docs: Vec<String> = messages.iter().map(|m| encode("message", m)).collect::<Result<_, _>>()?;
            append_docs(tx, session_id.as_str(), &docs)?;
        }
        SessionChange::Inbound(d) => record_inbound(tx, d, 0)?,
    }
    Ok(())
}

const RECORD_COLS: &str = "session_id, session_key, platform, title, started_at, ended_at, end_reason";

#[async_trait]
impl Store for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    async fn get_entry(&self, key: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
        let key = key.as_str().to_string();
        self.with(move |c| {
            let doc: Option<String> =
                c.query_row("SELECT doc FROM session_entries WHERE session_key = ?1", [&key], |r| r.get(0)).optional().map_err(backend)?;
            doc.map(|d| decode(&key, &d)).transpose()
        })
        .await
    }

    async fn put_entry(&self, entry: &SessionEntry, changes: &[SessionChange]) -> Result<SessionEntry, StoreError> {
        let mut next = entry.clone();
        next.version = entry.version + 1;
        let changes = changes.to_vec();
        self.with(move |c| {
            let key = next.session_key.as_str().to_string();
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let cur: Option<u64> = tx
                .query_row("SELECT version FROM session_entries WHERE session_key = ?1", [&key], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            if cur.unwrap_or(0) != next.version - 1 {
                return Err(StoreError::Conflict(key));
            }
            let doc = encode(&key, &next)?;
            let lease_until = next.lease.as_ref().map(|l| ms(l.expires_at));
            tx.execute(
                "INSERT INTO session_entries (session_key, version, updated_at, lease_until, needs_wake, doc) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(session_key) DO UPDATE SET version = ?2, updated_at = ?3, lease_until = ?4, needs_wake = ?5, doc = ?6",
                params![key, next.version, ms(next.updated_at), lease_until, next.needs_wake(), doc],
            )
            .map_err(backend)?;
            for ch in &changes {
                apply_change(&tx, ch)?;
            }
            tx.commit().map_err(backend)?;
            Ok(next)
        })
        .await
    }

    async fn list_entries(&self, limit: usize) -> Result<Vec<SessionEntry>, StoreError> {
        self.with(move |c| {
            let mut st =
                c.prepare_cached("SELECT session_key, doc FROM session_entries ORDER BY updated_at DESC LIMIT ?1").map_err(backend)?;
            let rows = st.query_map([limit as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|(k, d)| decode(&k, &d))).collect()
        })
        .await
    }

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.as_str().to_string();
        self.with(move |c| {
            let row = c
                .query_row(&format!("SELECT {RECORD_COLS} FROM sessions WHERE session_id = ?1"), [&id], row_to_record)
                .optional()
                .map_err(backend)?;
            row.map(to_record).transpose()
        })
        .await
    }

    async fn list_sessions(&self, key: Option<&SessionKey>, limit: usize) -> Result<Vec<SessionRecord>, StoreError> {
        let key = key.map(|k| k.as_str().to_string());
        self.with(move |c| {
            let (sql, args): (String, Vec<rusqlite::types::Value>) = match key {
                Some(k) => (
                    format!("SELECT {RECORD_COLS} FROM sessions WHERE session_key = ?1 ORDER BY started_at DESC LIMIT ?2"),
                    vec![k.into(), (limit as i64).into()],
                ),
                None => (format!("SELECT {RECORD_COLS} FROM sessions ORDER BY started_at DESC LIMIT ?1"), vec![(limit as i64).into()]),
            };
            let mut st = c.prepare_cached(&sql).map_err(backend)?;
            let rows = st.query_map(rusqlite::params_from_iter(args), row_to_record).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(to_record)).collect()
        })
        .await
    }

    async fn append_messages(&self, id: &SessionId, msgs: &[Message], dedupe: Option<&InboundId>) -> Result<Appended, StoreError> {
        let id = id.as_str().to_string();
        let docs: Vec<String> = msgs.iter().map(|m| encode("message", m)).collect::<Result<_, _>>()?;
        let dedupe = dedupe.cloned();
        let at = msgs.first().map_or(0, |m| ms(m.at));
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            if let Some(d) = &dedupe {
                match record_inbound(&tx, d, at) {
                    Err(StoreError::DuplicateInbound) => return Ok(Appended::Duplicate),
                    other => other?,
                }
            }
            append_docs(&tx, &id, &docs)?;
            tx.commit().map_err(backend)?;
            Ok(Appended::Stored)
        })
        .await
    }

    async fn recent_messages(&self, id: &SessionId, limit: usize) -> Result<Vec<Message>, StoreError> {
        let id = id.as_str().to_string();
        self.with(move |c| {
            let mut st = c.prepare_cached("SELECT doc FROM messages WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2").map_err(backend)?;
            let rows = st.query_map(params![id, limit as i64], |r| r.get::<_, String>(0)).map_err(backend)?;
            let mut out: Vec<Message> = rows.map(|r| r.map_err(backend).and_then(|d| decode("message", &d))).collect::<Result<_, _>>()?;
            out.reverse();
            Ok(out)
        })
        .await
    }

    async fn count_messages(&self, id: &SessionId) -> Result<u64, StoreError> {
        let id = id.as_str().to_string();
        self.with(move |c| c.query_row("SELECT COUNT(*) FROM messages WHERE session_id = ?1", [&id], |r| r.get(0)).map_err(backend)).await
    }

    async fn seen_inbound(&self, d: &InboundId) -> Result<bool, StoreError> {
        let d = d.clone();
        self.with(move |c| {
            c.query_row(
                "SELECT 1 FROM inbound_seen WHERE platform = ?1 AND chat_id = ?2 AND message_id = ?3",
                params![d.platform, d.chat_id, d.message_id],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(backend)
        })
        .await
    }

    async fn queue_push(&self, key: &SessionKey, item: &QueuedItem, cap: usize, dedupe: Option<&InboundId>) -> Result<usize, StoreError> {
        let key = key.as_str().to_string();
        let doc = encode("queue item", item)?;
        let dedupe = dedupe.cloned();
        let at = ms(item.at);
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let (n, last): (usize, i64) = tx
                .query_row("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM queue_items WHERE session_key = ?1", [&key], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(backend)?;
            if let Some(d) = &dedupe {
                record_inbound(&tx, d, at)?;
            }
            if n >= cap {
                return Err(StoreError::QueueFull(n));
            }
            tx.execute("INSERT INTO queue_items (session_key, seq, doc) VALUES (?1, ?2, ?3)", params![key, last + 1, doc])
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(n + 1)
        })
        .await
    }

    async fn queue_pop_into(&self, key: &SessionKey, session: &SessionId) -> Result<Option<QueuedItem>, StoreError> {
        let key = key.as_str().to_string();
        let session = session.as_str().to_string();
        self.with(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend)?;
            let head: Option<(i64, String)> = tx
                .query_row("SELECT seq, doc FROM queue_items WHERE session_key = ?1 ORDER BY seq LIMIT 1", [&key], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(backend)?;
            let Some((seq, doc)) = head else { return Ok(None) };
            let item: QueuedItem = decode("queue item", &doc)?;
            tx.execute("DELETE FROM queue_items WHERE session_key = ?1 AND seq = ?2", params![key, seq]).map_err(backend)?;
            let mut msg = Message::text(Role::User, item.text.clone(), item.at);
            msg.platform_message_id = item.message_id.clone();
            append_docs(&tx, &session, &[encode("message", &msg)?])?;
            tx.commit().map_err(backend)?;
            Ok(Some(item))
        })
        .await
    }

    async fn queue_list(&self, key: &SessionKey) -> Result<Vec<QueuedItem>, StoreError> {
        let key = key.as_str().to_string();
        self.with(move |c| {
            let mut st = c.prepare_cached("SELECT doc FROM queue_items WHERE session_key = ?1 ORDER BY seq").map_err(backend)?;
            let rows = st.query_map([&key], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|d| decode("queue item", &d))).collect()
        })
        .await
    }

    async fn queue_clear(&self, key: &SessionKey) -> Result<usize, StoreError> {
        let key = key.as_str().to_string();
        self.with(move |c| c.execute("DELETE FROM queue_items WHERE session_key = ?1", [&key]).map_err(backend)).await
    }

    async fn wake_candidates(&self, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError> {
        let until = if all_leases { i64::MAX } else { ms(now) };
        self.with(move |c| {
            let mut st = c
                .prepare_cached(
                    "SELECT session_key FROM session_entries WHERE lease_until IS NOT NULL AND lease_until <= ?1
                     UNION SELECT session_key FROM session_entries WHERE needs_wake = 1
                     UNION SELECT DISTINCT session_key FROM queue_items",
                )
                .map_err(backend)?;
            let rows = st.query_map([until], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.map(|r| {
                r.map_err(backend).and_then(|k| SessionKey::parse(&k).map_err(|e| StoreError::Corrupt { what: k, reason: e.to_string() }))
            })
            .collect()
        })
        .await
    }

    async fn put_job(&self, job: &Job) -> Result<Job, StoreError> {
        let job = job.clone();
        self.with(move |c| jobs::put(c, &job)).await
    }

    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        let id = id.to_string();
        self.with(move |c| jobs::get(c, &id)).await
    }

    async fn list_jobs(&self) -> Result<Vec<Job>, StoreError> {
        self.with(|c| jobs::list(c, None, usize::MAX >> 1)).await
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_string();
        self.with(move |c| jobs::delete(c, &id)).await
    }

    async fn due_jobs(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<Job>, StoreError> {
        self.with(move |c| jobs::list(c, Some(ms(now)), limit)).await
    }

    async fn claim_occurrence(&self, occ: &Occurrence, job: &Job, now: DateTime<Utc>) -> Result<Claim, StoreError> {
        let (occ, job) = (occ.clone(), job.clone());
        self.with(move |c| jobs::claim(c, &occ, &job, now)).await
    }

    async fn claim_status(&self, occ: &Occurrence) -> Result<Option<String>, StoreError> {
        let occ = occ.clone();
        self.with(move |c| jobs::claim_status(c, &occ)).await
    }

    async fn finish_run(&self, run: &RunRecord, retention: usize) -> Result<(), StoreError> {
        let run = run.clone();
        self.with(move |c| jobs::finish_run(c, &run, retention)).await
    }

    async fn list_runs(&self, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let id = job_id.to_string();
        self.with(move |c| jobs::list_runs(c, &id, limit)).await
    }

    async fn ledger_begin(&self, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let (occ, target) = (occ.clone(), target.to_string());
        self.with(move |c| jobs::ledger_begin(c, &occ, &target, now)).await
    }

    async fn ledger_finish(&self, occ: &Occurrence, target: &str, status: &str, now: DateTime<Utc>) -> Result<(), StoreError> {
        let (occ, target, status) = (occ.clone(), target.to_string(), status.to_string());
        self.with(move |c| jobs::ledger_finish(c, &occ, &target, &status, now)).await
    }

    async fn use_once(&self, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let key = key.to_string();
        self.with(move |c| jobs::use_once(c, &key, expires_at, now)).await
    }

    async fn get_meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        self.with(move |c| c.query_row("SELECT value FROM meta WHERE key = ?1", [&key], |r| r.get(0)).optional().map_err(backend)).await
    }

    async fn put_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let (key, value) = (key.to_string(), value.to_string());
        self.with(move |c| {
            c.execute("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2", params![key, value])
                .map(|_| ())
                .map_err(backend)
        })
        .await
    }

    async fn delete_meta(&self, key: &str) -> Result<(), StoreError> {
        let key = key.to_string();
        self.with(move |c| c.execute("DELETE FROM meta WHERE key = ?1", [&key]).map(|_| ()).map_err(backend)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn conformance_in_memory() {
        crate::store::conformance::run_all(|| async { Arc::new(SqliteStore::in_memory().unwrap()) as Arc<dyn Store> }).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_on_file_with_two_handles() {
        let dir = std::env::temp_dir().join(format!("hz-sqlite-{}-{}", std::process::id(), rand::random::<u32>()));
        let path = dir.join("state.db");
        // Two independent connections on one file stand in for two processes.
        let a = SqliteStore::open(&path).unwrap();
        let b = SqliteStore::open(&path).unwrap();
        let (a, b): (Arc<dyn Store>, Arc<dyn Store>) = (Arc::new(a), Arc::new(b));
        crate::store::conformance::cas_race(a.clone(), b.clone()).await;
        crate::store::conformance::claim_race(a, b).await;
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
