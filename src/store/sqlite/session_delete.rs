//! SQLite body of [`SessionDeleteStore`]: one immediate transaction reads the record and its
//! place's entry, refuses while that entry points at the conversation with a lease, and
//! deletes the record, the transcript, its search rows, its notes (`meta` rows
//! `<name>:<session id>`) and, when the entry points at it, the entry and the place's queue.

use super::{SqliteStore, cached_row};
use crate::core::ids::SessionId;
use crate::core::session::SessionEntry;
use crate::ports::{Deleted, SessionDeleteStore, StoreError};
use crate::store::{backend, decode};
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

#[async_trait]
impl SessionDeleteStore for SqliteStore {
    async fn delete_session(&self, id: &SessionId) -> Result<Deleted, StoreError> {
        let (id, glob) = (id.as_str().to_string(), self.scope.session_glob());
        let meta_glob = self.scope.key_glob();
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            let key: Option<String> =
                cached_row(&tx, "SELECT session_key FROM sessions WHERE session_id = ?1 AND session_key GLOB ?2", [&id, &glob], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(backend)?;
            let Some(key) = key else { return Ok(Deleted::NotFound) };
            let doc: Option<String> = cached_row(&tx, "SELECT doc FROM session_entries WHERE session_key = ?1", [&key], |r| r.get(0))
                .optional()
                .map_err(backend)?;
            let entry: Option<SessionEntry> = doc.map(|d| decode(&key, &d)).transpose()?;
            if let Some(e) = entry.filter(|e| e.session_id.as_str() == id) {
                if e.lease.is_some() {
                    return Ok(Deleted::Busy);
                }
                tx.execute("DELETE FROM session_entries WHERE session_key = ?1", [&key]).map_err(backend)?;
                tx.execute("DELETE FROM queue_items WHERE session_key = ?1", [&key]).map_err(backend)?;
            }
            tx.execute("DELETE FROM messages WHERE session_id = ?1", [&id]).map_err(backend)?;
            // The search index keeps its own copy of the text (schema step 2).
            tx.execute("DELETE FROM message_search WHERE session_id = ?1", [&id]).map_err(backend)?;
            let suffix = format!(":{id}");
            tx.execute(
                "DELETE FROM meta WHERE key GLOB ?1 AND length(key) > ?2 AND substr(key, -?2) = ?3",
                params![meta_glob, suffix.chars().count() as i64, suffix],
            )
            .map_err(backend)?;
            tx.execute("DELETE FROM sessions WHERE session_id = ?1", [&id]).map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(Deleted::Deleted)
        })
        .await
    }
}
