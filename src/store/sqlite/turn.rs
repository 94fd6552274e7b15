//! SQLite bodies of [`TurnStore`]: a chat turn's folded read (transcript tail, message count
//! and session notes in one transaction). Notes are `meta` rows keyed `<name>:<session id>`
//! ([`note_meta_key`]), the keys the memory snapshot and the summary index always had.

use super::{SqliteStore, cached_row};
use crate::core::ids::SessionId;
use crate::core::session::Message;
use crate::ports::{StoreError, TurnRead, TurnStore, note_meta_key};
use crate::store::{backend, decode};
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

#[async_trait]
impl TurnStore for SqliteStore {
    async fn turn_read(&self, id: &SessionId, limit: usize, names: &[&str]) -> Result<TurnRead, StoreError> {
        let keys: Vec<(String, String)> = names.iter().map(|n| ((*n).to_string(), self.scope.key(&note_meta_key(id, n)))).collect();
        let id = id.as_str().to_string();
        self.with(move |c| {
            // A deferred transaction: one consistent snapshot of the three reads.
            let tx = super::tx::Tx::deferred(c)?;
            let mut out = TurnRead::default();
            for (name, key) in &keys {
                let v: Option<String> =
                    cached_row(&tx, "SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional().map_err(backend)?;
                if let Some(v) = v {
                    out.notes.insert(name.clone(), v);
                }
            }
            let count: i64 = cached_row(&tx, "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?1", [&id], |r| r.get(0))
                .map_err(backend)?;
            out.count = u64::try_from(count).unwrap_or(0);
            {
                let mut st =
                    tx.prepare_cached("SELECT doc FROM messages WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2").map_err(backend)?;
                let rows = st.query_map(params![id, limit as i64], |r| r.get::<_, String>(0)).map_err(backend)?;
                out.messages = rows.map(|r| r.map_err(backend).and_then(|d| decode("message", &d))).collect::<Result<Vec<Message>, _>>()?;
            }
            out.messages.reverse();
            tx.commit().map_err(backend)?;
            Ok(out)
        })
        .await
    }
}
