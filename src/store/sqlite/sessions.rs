//! SQLite bodies of [`SessionStore`]: session entries (compare-and-set with their
//! [`SessionChange`]s in one immediate transaction), conversation records, transcripts,
//! inbound ids and wake candidates. The transcript and inbound helpers are shared with the
//! queue, whose pop appends to a transcript.

use super::{SqliteStore, cached_execute, cached_row, from_ms, ms};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::search::SearchTerms;
use crate::core::session::{Fence, Message, SessionEntry, SessionRecord};
use crate::ports::{Appended, InboundId, SearchHit, SessionChange, SessionStore, StoreError};
use crate::store::{backend, decode, encode};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

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
pub(super) fn record_inbound(tx: &rusqlite::Connection, d: &InboundId, at: i64) -> Result<(), StoreError> {
    let n = cached_execute(
        tx,
        "INSERT OR IGNORE INTO inbound_seen (platform, chat_id, message_id, seen_at) VALUES (?1, ?2, ?3, ?4)",
        params![d.platform, d.chat_id, d.message_id, at],
    )
    .map_err(backend)?;
    if n == 0 { Err(StoreError::DuplicateInbound) } else { Ok(()) }
}

/// Appends encoded messages after the transcript's last sequence number.
pub(super) fn append_docs(tx: &rusqlite::Connection, id: &str, docs: &[String]) -> Result<(), StoreError> {
    let mut seq: i64 =
        cached_row(tx, "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1", [id], |r| r.get(0)).map_err(backend)?;
    let mut st = tx.prepare_cached("INSERT INTO messages (session_id, seq, doc) VALUES (?1, ?2, ?3)").map_err(backend)?;
    for d in docs {
        seq += 1;
        st.execute(params![id, seq, d]).map_err(backend)?;
    }
    Ok(())
}

/// Inside a write: fails with [`StoreError::Fenced`] unless the entry of `fence.key` still
/// holds a lease of `fence.epoch` (docs/design.md#lease).
pub(super) fn check_fence(tx: &rusqlite::Connection, fence: &Fence) -> Result<(), StoreError> {
    let epoch: Option<Option<i64>> = cached_row(
        tx,
        "SELECT json_extract(doc, '$.lease.epoch') FROM session_entries WHERE session_key = ?1",
        [fence.key.as_str()],
        |r| r.get(0),
    )
    .optional()
    .map_err(backend)?;
    match epoch.flatten() {
        Some(e) if u64::try_from(e).ok() == Some(fence.epoch) => Ok(()),
        _ => Err(StoreError::Fenced(fence.key.as_str().to_string())),
    }
}

fn apply_change(tx: &rusqlite::Connection, ch: &SessionChange) -> Result<(), StoreError> {
    match ch {
        SessionChange::Start(r) => {
            cached_execute(
                tx,
                "INSERT INTO sessions (session_id, session_key, platform, title, started_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![r.session_id.as_str(), r.session_key.as_str(), r.platform, r.title, ms(r.started_at)],
            )
            .map_err(backend)?;
        }
        SessionChange::End { session_id, reason, at } => {
            cached_execute(
                tx,
                "UPDATE sessions SET ended_at = ?2, end_reason = ?3 WHERE session_id = ?1 AND ended_at IS NULL",
                params![session_id.as_str(), ms(*at), reason],
            )
            .map_err(backend)?;
        }
        SessionChange::Reopen(id) => {
            cached_execute(tx, "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE session_id = ?1", [id.as_str()])
                .map_err(backend)?;
        }
        SessionChange::Title { session_id, title } => {
            cached_execute(tx, "UPDATE sessions SET title = ?2 WHERE session_id = ?1", params![session_id.as_str(), title])
                .map_err(backend)?;
        }
        SessionChange::Append { session_id, messages } => {
            let docs: Vec<String> = messages.iter().map(|m| encode("message", m)).collect::<Result<_, _>>()?;
            append_docs(tx, session_id.as_str(), &docs)?;
        }
        SessionChange::Inbound(d) => record_inbound(tx, d, 0)?,
        SessionChange::Once { key, expires_at, now } => {
            // As `use_once`: expired keys are swept first, so an expired key counts as absent.
            cached_execute(tx, "DELETE FROM once_keys WHERE expires_at < ?1", [ms(*now)]).map_err(backend)?;
            let n = cached_execute(tx, "INSERT OR IGNORE INTO once_keys (key, expires_at) VALUES (?1, ?2)", params![key, ms(*expires_at)])
                .map_err(backend)?;
            if n == 0 {
                return Err(StoreError::OnceUsed(key.clone()));
            }
        }
        SessionChange::QueueEmpty(k) => {
            let queued: bool =
                cached_row(tx, "SELECT EXISTS (SELECT 1 FROM queue_items WHERE session_key = ?1)", [k.as_str()], |r| r.get(0))
                    .map_err(backend)?;
            if queued {
                return Err(StoreError::QueueNotEmpty(k.as_str().to_string()));
            }
        }
    }
    Ok(())
}

const RECORD_COLS: &str = "session_id, session_key, platform, title, started_at, ended_at, end_reason";

#[async_trait]
impl SessionStore for SqliteStore {
    async fn get_entry(&self, key: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
        let key = key.as_str().to_string();
        self.with(move |c| {
            let doc: Option<String> = cached_row(c, "SELECT doc FROM session_entries WHERE session_key = ?1", [&key], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            doc.map(|d| decode(&key, &d)).transpose()
        })
        .await
    }

    async fn put_entry(&self, entry: &SessionEntry, changes: &[SessionChange]) -> Result<SessionEntry, StoreError> {
        let mut next = entry.clone();
        next.version = entry.version + 1;
        let changes: Vec<SessionChange> = changes
            .iter()
            .map(|ch| match ch {
                SessionChange::Inbound(d) => SessionChange::Inbound(self.inbound(d)),
                SessionChange::Once { key, expires_at, now } => {
                    SessionChange::Once { key: self.scope.key(key), expires_at: *expires_at, now: *now }
                }
                other => other.clone(),
            })
            .collect();
        self.with(move |c| {
            let key = next.session_key.as_str().to_string();
            let tx = super::tx::Tx::immediate(c)?;
            let cur: Option<u64> = cached_row(&tx, "SELECT version FROM session_entries WHERE session_key = ?1", [&key], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            if cur.unwrap_or(0) != next.version - 1 {
                return Err(StoreError::Conflict(key));
            }
            let doc = encode(&key, &next)?;
            let lease_until = next.lease.as_ref().map(|l| ms(l.expires_at));
            cached_execute(&tx,
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
        let glob = self.scope.session_glob();
        self.with(move |c| {
            let mut st = c
                .prepare_cached("SELECT session_key, doc FROM session_entries WHERE session_key GLOB ?2 ORDER BY updated_at DESC LIMIT ?1")
                .map_err(backend)?;
            let rows =
                st.query_map(params![limit as i64, glob], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|(k, d)| decode(&k, &d))).collect()
        })
        .await
    }

    async fn get_session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let (id, glob) = (id.as_str().to_string(), self.scope.session_glob());
        self.with(move |c| {
            let row = cached_row(
                c,
                &format!("SELECT {RECORD_COLS} FROM sessions WHERE session_id = ?1 AND session_key GLOB ?2"),
                [&id, &glob],
                row_to_record,
            )
            .optional()
            .map_err(backend)?;
            row.map(to_record).transpose()
        })
        .await
    }

    async fn list_sessions(&self, key: Option<&SessionKey>, limit: usize) -> Result<Vec<SessionRecord>, StoreError> {
        let key = key.map(|k| k.as_str().to_string());
        let glob = self.scope.session_glob();
        self.with(move |c| {
            let (sql, args): (String, Vec<rusqlite::types::Value>) = match key {
                Some(k) => (
                    format!("SELECT {RECORD_COLS} FROM sessions WHERE session_key = ?1 ORDER BY started_at DESC LIMIT ?2"),
                    vec![k.into(), (limit as i64).into()],
                ),
                None => (
                    format!("SELECT {RECORD_COLS} FROM sessions WHERE session_key GLOB ?2 ORDER BY started_at DESC LIMIT ?1"),
                    vec![(limit as i64).into(), glob.into()],
                ),
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
        let dedupe = dedupe.map(|d| self.inbound(d));
        let at = msgs.first().map_or(0, |m| ms(m.at));
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
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

    async fn append_fenced(&self, id: &SessionId, msgs: &[Message], fence: &Fence) -> Result<(), StoreError> {
        let id = id.as_str().to_string();
        let docs: Vec<String> = msgs.iter().map(|m| encode("message", m)).collect::<Result<_, _>>()?;
        let fence = fence.clone();
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            check_fence(&tx, &fence)?;
            append_docs(&tx, &id, &docs)?;
            tx.commit().map_err(backend)
        })
        .await
    }

    async fn truncate_messages(&self, id: &SessionId, keep: u64, fence: &Fence) -> Result<u64, StoreError> {
        let id = id.as_str().to_string();
        let fence = fence.clone();
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            check_fence(&tx, &fence)?;
            // The `keep`-th message's sequence number (0 keeps none): robust to gaps.
            let last: i64 = if keep == 0 {
                0
            } else {
                cached_row(
                    &tx,
                    "SELECT seq FROM messages WHERE session_id = ?1 ORDER BY seq LIMIT 1 OFFSET ?2",
                    params![id, keep as i64 - 1],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?
                .unwrap_or(i64::MAX)
            };
            let n = cached_execute(&tx, "DELETE FROM messages WHERE session_id = ?1 AND seq > ?2", params![id, last]).map_err(backend)?;
            // The search index keeps its own copy of the text (schema step 2).
            cached_execute(&tx, "DELETE FROM message_search WHERE session_id = ?1 AND seq > ?2", params![id, last]).map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(n as u64)
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
        self.with(move |c| cached_row(c, "SELECT COUNT(*) FROM messages WHERE session_id = ?1", [&id], |r| r.get(0)).map_err(backend)).await
    }

    async fn search_messages(
        &self,
        terms: &SearchTerms,
        exclude: Option<&SessionId>,
        owners: Option<&crate::core::access::SearchOwners>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let (terms, exclude, scope, owners) = (terms.clone(), exclude.cloned(), self.scope.clone(), owners.cloned());
        self.with(move |c| super::search::search(c, &scope, &terms, exclude.as_ref(), owners.as_ref(), limit)).await
    }

    async fn seen_inbound(&self, d: &InboundId) -> Result<bool, StoreError> {
        let d = self.inbound(d);
        self.with(move |c| {
            cached_row(
                c,
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

    async fn wake_candidates(&self, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError> {
        let until = if all_leases { i64::MAX } else { ms(now) };
        let glob = self.scope.session_glob();
        self.with(move |c| {
            let mut st = c
                .prepare_cached(
                    "SELECT session_key FROM session_entries WHERE lease_until IS NOT NULL AND lease_until <= ?1 AND session_key GLOB ?2
                     UNION SELECT session_key FROM session_entries WHERE needs_wake = 1 AND session_key GLOB ?2
                     UNION SELECT DISTINCT session_key FROM queue_items WHERE session_key GLOB ?2",
                )
                .map_err(backend)?;
            let rows = st.query_map(params![until, glob], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.map(|r| {
                r.map_err(backend).and_then(|k| SessionKey::parse(&k).map_err(|e| StoreError::Corrupt { what: k, reason: e.to_string() }))
            })
            .collect()
        })
        .await
    }
}
