//! SQLite bodies of [`QueueStore`]: the per-session FIFO. Push checks the cap and records
//! the inbound id in one immediate transaction; pop moves the head into the transcript in
//! one transaction too.

use super::sessions::{append_docs, check_fence, record_inbound};
use super::{SqliteStore, ms};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::session::Fence;
use crate::ports::{InboundId, QueueStore, QueuedItem, StoreError};
use crate::store::{backend, decode, encode};
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

#[async_trait]
impl QueueStore for SqliteStore {
    async fn queue_push(&self, key: &SessionKey, item: &QueuedItem, cap: usize, dedupe: Option<&InboundId>) -> Result<usize, StoreError> {
        let key = key.as_str().to_string();
        let doc = encode("queue item", item)?;
        let dedupe = dedupe.map(|d| self.inbound(d));
        let at = ms(item.at);
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
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

    async fn queue_pop_into(&self, key: &SessionKey, session: &SessionId, fence: Option<&Fence>) -> Result<Option<QueuedItem>, StoreError> {
        let key = key.as_str().to_string();
        let session = session.as_str().to_string();
        let fence = fence.cloned();
        self.with(move |c| {
            let tx = super::tx::Tx::immediate(c)?;
            if let Some(f) = &fence {
                check_fence(&tx, f)?;
            }
            let head: Option<(i64, String)> = tx
                .query_row("SELECT seq, doc FROM queue_items WHERE session_key = ?1 ORDER BY seq LIMIT 1", [&key], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(backend)?;
            let Some((seq, doc)) = head else { return Ok(None) };
            let item: QueuedItem = decode("queue item", &doc)?;
            tx.execute("DELETE FROM queue_items WHERE session_key = ?1 AND seq = ?2", params![key, seq]).map_err(backend)?;
            let msg = item.to_message();
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
}
