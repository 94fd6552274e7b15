//! A read-only reader of Hermes Agent's own `state.db` (the SQLite file `hermes_state.py`
//! writes): its `schema_version`, `sessions` and `messages` tables, turned into core
//! [`ImportedSession`]s and transcript [`Message`]s for `hermes-zero import`; and Hermes'
//! gateway routing index (which session is each chat's current one: the `gateway_routing`
//! table since schema 22, before that `sessions/sessions.json`, both of `gateway/session.py`'s
//! `SessionEntry` JSON).
//!
//! Opens the file read-only and never writes to it. Knows Hermes' schema, nothing of this
//! gateway's own store (the import use case writes through the `Store` port).

use crate::core::ids::{ChatType, Origin};
use crate::core::session::{ImportedSession, Message, Role, ToolCall};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};
use serde_json::Value;
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::Path;
use std::time::Duration;

/// The `schema_version` values whose `sessions`/`messages` columns this reader knows: from
/// Hermes' first schema with `finish_reason` (2) to the newest read (30). Newer versions may
/// have moved a column, so they are refused rather than half-read.
pub const SUPPORTED_VERSIONS: RangeInclusive<i64> = 2..=30;

const SESSION_COLS: &[&str] = &["id", "source", "user_id", "started_at", "ended_at", "end_reason"];
const MESSAGE_COLS: &[&str] = &["id", "session_id", "role", "content", "tool_call_id", "tool_calls", "timestamp"];

/// Why a `state.db` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HermesStateError {
    /// The file is not a SQLite database, or it is damaged.
    #[error("{path} is not a readable Hermes state.db (corrupt or not SQLite): {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// SQLite's reason.
        reason: String,
    },
    /// Another process holds a lock that blocks reading.
    #[error("{0} is locked by another process (is Hermes running? stop it and retry)")]
    Locked(String),
    /// A schema version this reader does not know.
    #[error("{path} has Hermes schema version {found}; this import reads versions {}–{}", SUPPORTED_VERSIONS.start(), SUPPORTED_VERSIONS.end())]
    Version {
        /// The file.
        path: String,
        /// The version found (`none` when the table is empty or missing).
        found: String,
    },
    /// A table or column Hermes always has is missing.
    #[error("{path} lacks `{what}`: not a Hermes state.db of a known schema")]
    Missing {
        /// The file.
        path: String,
        /// `table.column`.
        what: String,
    },
}

/// An open, validated `state.db`.
pub struct HermesState {
    conn: Connection,
    path: String,
    has_title: bool,
    has_active: bool,
}

impl HermesState {
    /// Opens `path` read-only and checks it: readable, intact (`quick_check`), a known
    /// schema version, and the columns the import reads.
    pub fn open(path: &Path) -> Result<Self, HermesStateError> {
        let p = path.display().to_string();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| classify(&p, e))?;
        conn.busy_timeout(Duration::from_secs(2)).map_err(|e| classify(&p, e))?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(|e| classify(&p, e))?;
        if check != "ok" {
            return Err(HermesStateError::Corrupt { path: p, reason: check });
        }
        let version: Option<i64> = match conn.query_row("SELECT version FROM schema_version LIMIT 1", [], |r| r.get(0)).optional() {
            Ok(v) => v,
            Err(rusqlite::Error::SqliteFailure(_, Some(m))) if m.contains("no such table") => None,
            Err(e) => return Err(classify(&p, e)),
        };
        if !version.is_some_and(|v| SUPPORTED_VERSIONS.contains(&v)) {
            return Err(HermesStateError::Version { path: p, found: version.map_or_else(|| "none".into(), |v| v.to_string()) });
        }
        let sessions = columns(&conn, "sessions").map_err(|e| classify(&p, e))?;
        let messages = columns(&conn, "messages").map_err(|e| classify(&p, e))?;
        let missing = SESSION_COLS
            .iter()
            .filter(|c| !sessions.iter().any(|s| s == *c))
            .map(|c| format!("sessions.{c}"))
            .chain(MESSAGE_COLS.iter().filter(|c| !messages.iter().any(|s| s == *c)).map(|c| format!("messages.{c}")))
            .next();
        if let Some(what) = missing {
            return Err(HermesStateError::Missing { path: p, what });
        }
        let has_title = sessions.iter().any(|c| c == "title");
        let has_active = messages.iter().any(|c| c == "active");
        Ok(Self { conn, path: p, has_title, has_active })
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<ImportedSession>, HermesStateError> {
        let title = if self.has_title { "title" } else { "NULL" };
        let sql = format!("SELECT id, source, user_id, {title}, started_at, ended_at, end_reason FROM sessions ORDER BY started_at, id");
        let mut st = self.conn.prepare(&sql).map_err(|e| classify(&self.path, e))?;
        let rows = st
            .query_map([], |r| {
                Ok(ImportedSession {
                    id: r.get(0)?,
                    source: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    user_id: text_of(r.get_ref(2)?),
                    title: r.get::<_, Option<String>>(3)?.filter(|t| !t.trim().is_empty()),
                    started_at: instant(r.get(4)?).unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
                    ended_at: r.get::<_, Option<f64>>(5)?.and_then(instant),
                    end_reason: r.get(6)?,
                    route: None,
                })
            })
            .map_err(|e| classify(&self.path, e))?;
        rows.collect::<Result<_, _>>().map_err(|e| classify(&self.path, e))
    }

    /// Hermes' routing index, session id → the chat it is current in: the `gateway_routing`
    /// table (every scope; where a key is in several, the newest row), then the entries of the
    /// legacy `sessions.json` text (`sessions_json`) for keys the table lacks, as Hermes'
    /// `SessionStore` loads them. Left out: suspended entries (Hermes starts such a chat
    /// afresh) and entries without a readable origin. Where one session is current in two
    /// chats, the newest entry wins.
    pub fn routes(&self, sessions_json: Option<&str>) -> Result<HashMap<String, Origin>, HermesStateError> {
        let mut by_key: HashMap<String, (f64, Value)> = HashMap::new();
        let cols = columns(&self.conn, "gateway_routing").map_err(|e| classify(&self.path, e))?;
        if ["session_key", "entry_json", "updated_at"].iter().all(|c| cols.iter().any(|k| k == c)) {
            let mut st = self
                .conn
                .prepare("SELECT session_key, entry_json, updated_at FROM gateway_routing ORDER BY updated_at")
                .map_err(|e| classify(&self.path, e))?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<f64>>(2)?.unwrap_or(0.0))))
                .map_err(|e| classify(&self.path, e))?;
            for row in rows {
                let (key, json, at) = row.map_err(|e| classify(&self.path, e))?;
                if let Ok(v) = serde_json::from_str::<Value>(&json) {
                    by_key.insert(key, (at, v));
                }
            }
        }
        if let Some(Ok(Value::Object(legacy))) = sessions_json.map(serde_json::from_str::<Value>) {
            for (key, v) in legacy {
                if !key.starts_with('_') && !by_key.contains_key(&key) {
                    let at = v.get("updated_at").and_then(Value::as_str).and_then(naive_secs).unwrap_or(0.0);
                    by_key.insert(key, (at, v));
                }
            }
        }
        let mut newest: HashMap<String, (f64, Origin)> = HashMap::new();
        for (at, v) in by_key.into_values() {
            let Some((id, origin)) = route_of(&v) else { continue };
            if newest.get(&id).is_none_or(|(t, _)| *t <= at) {
                newest.insert(id, (at, origin));
            }
        }
        Ok(newest.into_iter().map(|(id, (_, o))| (id, o)).collect())
    }

    /// A session's transcript in Hermes' order (`timestamp`, then row id). Rows Hermes
    /// marked inactive (compressed away or rewound) and roles other than
    /// system/user/assistant/tool are left out.
    pub fn messages(&self, session_id: &str) -> Result<Vec<Message>, HermesStateError> {
        let active = if self.has_active { " AND active = 1" } else { "" };
        let sql = format!(
            "SELECT role, content, tool_call_id, tool_calls, timestamp FROM messages WHERE session_id = ?1{active} ORDER BY timestamp, id"
        );
        let mut st = self.conn.prepare(&sql).map_err(|e| classify(&self.path, e))?;
        let rows = st
            .query_map([session_id], |r| {
                let role = match r.get::<_, String>(0)?.as_str() {
                    "system" => Some(Role::System),
                    "user" => Some(Role::User),
                    "assistant" => Some(Role::Assistant),
                    "tool" => Some(Role::Tool),
                    _ => None,
                };
                let at = instant(r.get(4)?).unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
                Ok(role.map(|role| Message {
                    role,
                    content: text_of(r.get_ref(1).unwrap_or(rusqlite::types::ValueRef::Null)).unwrap_or_default(),
                    tool_calls: r.get::<_, Option<String>>(3).ok().flatten().map(|t| tool_calls(&t)).unwrap_or_default(),
                    tool_call_id: r.get::<_, Option<String>>(2).ok().flatten().filter(|s| !s.is_empty()),
                    at,
                    platform_message_id: None,
                    model: None,
                    duration_ms: None,
                    summary_through: None,
                    attachments: Vec::new(),
                    images: Vec::new(),
                }))
            })
            .map_err(|e| classify(&self.path, e))?;
        let all: Vec<Option<Message>> = rows.collect::<Result<_, _>>().map_err(|e| classify(&self.path, e))?;
        Ok(all.into_iter().flatten().collect())
    }
}

/// One `SessionEntry` JSON (`session_id`, `suspended`, `origin` = a `SessionSource`) as the
/// session id and the chat it routes.
fn route_of(v: &Value) -> Option<(String, Origin)> {
    if v.get("suspended").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let id = v.get("session_id").and_then(Value::as_str).filter(|s| !s.is_empty())?.to_string();
    let o = v.get("origin")?;
    let text = |k: &str| match o.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let platform = text("platform")?.to_ascii_lowercase();
    let chat_type = ChatType::parse(&text("chat_type").unwrap_or_else(|| "dm".into())).ok()?;
    let mut origin = Origin::new(&platform, &text("chat_id")?, chat_type, text("user_id").as_deref(), text("thread_id").as_deref()).ok()?;
    origin.chat_name = text("chat_name");
    Some((id, origin))
}

/// Hermes' `datetime.isoformat()` of a naive local time, as seconds (ordering only).
fn naive_secs(s: &str) -> Option<f64> {
    let t = chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    Some(t.and_utc().timestamp_micros() as f64 / 1e6)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let names = st.query_map([], |r| r.get::<_, String>(1))?;
    names.collect()
}

/// Text of a TEXT or numeric cell (Hermes stores some ids as numbers).
fn text_of(v: rusqlite::types::ValueRef<'_>) -> Option<String> {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

/// Hermes' times are Unix seconds as REAL.
fn instant(secs: f64) -> Option<DateTime<Utc>> {
    secs.is_finite().then(|| DateTime::from_timestamp_micros((secs * 1e6).round() as i64)).flatten()
}

/// OpenAI-shaped tool calls (`[{id, type, function: {name, arguments}}]`) as Hermes stores them.
fn tool_calls(text: &str) -> Vec<ToolCall> {
    let Ok(Value::Array(calls)) = serde_json::from_str::<Value>(text) else { return Vec::new() };
    calls
        .iter()
        .filter_map(|c| {
            let f = c.get("function").unwrap_or(c);
            let name = f.get("name").and_then(Value::as_str)?.to_string();
            let id = c.get("id").or_else(|| c.get("call_id")).and_then(Value::as_str).unwrap_or_default().to_string();
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => "{}".into(),
            };
            Some(ToolCall { id, name, arguments })
        })
        .collect()
}

fn classify(path: &str, e: rusqlite::Error) -> HermesStateError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => HermesStateError::Locked(path.into()),
        _ => HermesStateError::Corrupt { path: path.into(), reason: e.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_routing_entry_names_its_session_and_chat() {
        let e = json!({"session_id": "s1", "suspended": false, "origin": {"platform": "Discord", "chat_id": 123, "chat_type": "group", "user_id": "u", "thread_id": "t9", "chat_name": "the den"}});
        let (id, o) = route_of(&e).unwrap();
        assert_eq!((id.as_str(), o.platform.as_str(), o.chat_id.as_str(), o.chat_type), ("s1", "discord", "123", ChatType::Group));
        assert_eq!((o.user_id.as_deref(), o.thread_id.as_deref(), o.chat_name.as_deref()), (Some("u"), Some("t9"), Some("the den")));
        assert!(route_of(&json!({"session_id": "s1", "suspended": true, "origin": e["origin"]})).is_none(), "Hermes starts it afresh");
        assert!(route_of(&json!({"session_id": "s1"})).is_none(), "no origin");
        assert!(
            route_of(&json!({"session_id": "s1", "origin": {"platform": "telegram", "chat_id": "a:b"}})).is_none(),
            "an ambiguous key part"
        );
        assert_eq!(naive_secs("2026-12-04T14:35:04.850572"), Some(1_796_394_904.850_572));
    }
}
