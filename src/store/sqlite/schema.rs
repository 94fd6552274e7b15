//! Versioned schema migrations for the SQLite store. Each step runs once, in order, inside an
//! immediate transaction, so two processes starting on one file cannot both apply it.

use rusqlite::{Connection, TransactionBehavior};

/// `(version, SQL)`; append only — never edit a released step.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE session_entries (
        session_key TEXT PRIMARY KEY,
        version     INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        lease_until INTEGER,
        needs_wake  INTEGER NOT NULL DEFAULT 0,
        doc         TEXT NOT NULL
     );
     CREATE INDEX session_entries_updated ON session_entries(updated_at);
     CREATE INDEX session_entries_lease ON session_entries(lease_until) WHERE lease_until IS NOT NULL;
     CREATE INDEX session_entries_wake ON session_entries(needs_wake) WHERE needs_wake = 1;
     CREATE TABLE queue_items (
        session_key TEXT NOT NULL,
        seq         INTEGER NOT NULL,
        doc         TEXT NOT NULL,
        PRIMARY KEY (session_key, seq)
     ) WITHOUT ROWID;
     CREATE TABLE sessions (
        session_id  TEXT PRIMARY KEY,
        session_key TEXT NOT NULL,
        platform    TEXT NOT NULL,
        title       TEXT,
        started_at  INTEGER NOT NULL,
        ended_at    INTEGER,
        end_reason  TEXT
     );
     CREATE INDEX sessions_by_key ON sessions(session_key, started_at);
     CREATE INDEX sessions_by_start ON sessions(started_at);
     CREATE TABLE messages (
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        doc        TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
     ) WITHOUT ROWID;
     CREATE TABLE inbound_seen (
        platform   TEXT NOT NULL,
        chat_id    TEXT NOT NULL,
        message_id TEXT NOT NULL,
        seen_at    INTEGER NOT NULL,
        PRIMARY KEY (platform, chat_id, message_id)
     ) WITHOUT ROWID;
     CREATE TABLE jobs (
        id          TEXT PRIMARY KEY,
        version     INTEGER NOT NULL,
        due_at      INTEGER,
        doc         TEXT NOT NULL
     );
     CREATE INDEX jobs_due ON jobs(due_at) WHERE due_at IS NOT NULL;
     CREATE TABLE claims (
        job_id     TEXT NOT NULL,
        fire_at    INTEGER NOT NULL,
        status     TEXT NOT NULL,
        claimed_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, fire_at)
     ) WITHOUT ROWID;
     CREATE TABLE runs (
        run_id     TEXT PRIMARY KEY,
        job_id     TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        doc        TEXT NOT NULL
     );
     CREATE INDEX runs_by_job ON runs(job_id, started_at);
     CREATE TABLE deliveries (
        job_id  TEXT NOT NULL,
        fire_at INTEGER NOT NULL,
        target  TEXT NOT NULL,
        status  TEXT NOT NULL,
        at      INTEGER NOT NULL,
        PRIMARY KEY (job_id, fire_at, target)
     ) WITHOUT ROWID;
     CREATE TABLE once_keys (
        key        TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
     );",
    ),
    (2, SEARCH_INDEX),
];

/// Step 2, `session_search` (docs/design.md#session-search): an FTS5 index of the text of
/// user and assistant messages, filled by a trigger inside the very transaction that appends
/// a message (every append path, the queue's pop included), so the index can never miss or
/// half-hold a write. It keeps its own copy of the text (the transcript is JSON documents in
/// a `WITHOUT ROWID` table, which FTS5 cannot use as external content); tool results and
/// system notes are not indexed, which keeps that copy small. The last statement indexes the
/// messages already stored: nothing to do in a new file, one pass over the transcripts once
/// in an existing one (its cost: docs/design.md#session-search).
const SEARCH_INDEX: &str = "
     CREATE VIRTUAL TABLE message_search USING fts5(
        content,
        session_id UNINDEXED,
        seq UNINDEXED,
        role UNINDEXED,
        at UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2'
     );
     CREATE TRIGGER message_search_insert AFTER INSERT ON messages
     WHEN json_extract(new.doc, '$.role') IN ('user', 'assistant') AND COALESCE(json_extract(new.doc, '$.content'), '') <> ''
     BEGIN
        INSERT INTO message_search (content, session_id, seq, role, at) VALUES (
            json_extract(new.doc, '$.content'), new.session_id, new.seq, json_extract(new.doc, '$.role'),
            CAST(unixepoch(json_extract(new.doc, '$.at'), 'subsec') * 1000 AS INTEGER));
     END;
     INSERT INTO message_search (content, session_id, seq, role, at)
        SELECT json_extract(doc, '$.content'), session_id, seq, json_extract(doc, '$.role'),
               CAST(unixepoch(json_extract(doc, '$.at'), 'subsec') * 1000 AS INTEGER)
        FROM messages
        WHERE json_extract(doc, '$.role') IN ('user', 'assistant') AND COALESCE(json_extract(doc, '$.content'), '') <> '';";

/// The schema version this build writes.
pub const CURRENT: i64 = 2;

/// Applies pending migrations. A file already at [`CURRENT`] (every start but the first
/// after an upgrade) is recognised by one read, without taking the write lock.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    if is_current(conn) {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
    let have: i64 = tx.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_version", [], |r| r.get(0))?;
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
        tx.execute_batch(sql)?;
        tx.execute("INSERT INTO schema_version (version) VALUES (?1)", [v])?;
    }
    tx.commit()
}

/// Whether the file's schema is this build's (or newer): a read, no write lock. Any error
/// (no `schema_version` table yet) means "not known to be current".
fn is_current(conn: &Connection) -> bool {
    conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get::<_, Option<i64>>(0))
        .ok()
        .flatten()
        .is_some_and(|v| v >= CURRENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written by schema 1 gets the search index over the messages it already holds,
    /// user and assistant text only, with each message's time.
    #[test]
    fn step_2_indexes_existing_messages() {
        let mut c = Connection::open_in_memory().unwrap();
        c.execute_batch(MIGRATIONS[0].1).unwrap();
        c.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1);").unwrap();
        for (seq, role, text) in [(1, "user", "old whale"), (2, "tool", "tool whale"), (3, "assistant", "")] {
            let doc = serde_json::json!({"role": role, "content": text, "at": "2026-01-02T03:04:05.5Z"}).to_string();
            c.execute("INSERT INTO messages (session_id, seq, doc) VALUES ('s', ?1, ?2)", rusqlite::params![seq, doc]).unwrap();
        }
        migrate(&mut c).unwrap();
        let rows: Vec<(i64, i64)> = c
            .prepare("SELECT seq, at FROM message_search WHERE message_search MATCH 'whale'")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows, [(1, 1_767_323_045_500)]);
        let n: i64 = c.query_row("SELECT COUNT(*) FROM message_search", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1, "tool results and empty texts are not indexed");
    }

    /// A current file is recognised without the write lock: migrating it again while another
    /// connection holds a write transaction does not wait; a file behind is still migrated.
    #[test]
    fn current_file_needs_no_write_lock() {
        let dir = std::env::temp_dir().join(format!("hz-schema-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.db");
        let mut a = Connection::open(&path).unwrap();
        a.execute_batch("PRAGMA journal_mode=WAL").unwrap();
        assert!(!is_current(&a), "an empty file is not current");
        migrate(&mut a).unwrap();
        assert!(is_current(&a));
        let mut b = Connection::open(&path).unwrap();
        b.busy_timeout(std::time::Duration::ZERO).unwrap();
        let tx = a.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
        migrate(&mut b).unwrap();
        tx.commit().unwrap();
        let v: i64 = b.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0)).unwrap();
        assert_eq!(v, CURRENT);
        drop((a, b));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
