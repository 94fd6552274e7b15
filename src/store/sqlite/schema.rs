//! Versioned schema migrations for the SQLite store. Each step runs once, in order, inside an
//! immediate transaction, so two processes starting on one file cannot both apply it.

use rusqlite::{Connection, TransactionBehavior};

/// `(version, SQL)`; append only — never edit a released step.
const MIGRATIONS: &[(i64, &str)] = &[(
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
)];

/// The schema version this build writes.
pub const CURRENT: i64 = 1;

/// Applies pending migrations.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
    let have: i64 = tx.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_version", [], |r| r.get(0))?;
    for (v, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
        tx.execute_batch(sql)?;
        tx.execute("INSERT INTO schema_version (version) VALUES (?1)", [v])?;
    }
    tx.commit()
}
