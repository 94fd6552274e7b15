//! The per-key FIFO and the wake index. The `QUEUE` head item holds `head..tail` (the
//! sequence numbers of the stored items); every push, pop and clear rewrites it with a
//! condition on the values it read, in the same transaction as the items it adds or
//! removes, so the cap check and the order are atomic.

use super::items::{Item, QITEM_PREFIX, QUEUE_SK, doc, get_n, get_s, key, ms, n, qitem_sk, s};
use super::query::Query;
use super::sessions::WAKE;
use super::table::GSI_WAKE;
use super::transcript::{plan_append, plan_fence, plan_inbound, seen_inbound};
use super::tx::{ATTEMPTS, Cond, MAX_ITEMS, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::session::Fence;
use crate::ports::{InboundId, QueuedItem, StoreError};
use crate::store::encode;
use chrono::{DateTime, Utc};
use std::collections::BTreeSet;

/// The stored `head..tail` of a key's FIFO.
#[derive(Debug, Clone, Copy)]
struct Head {
    head: u64,
    tail: u64,
    exists: bool,
}

impl Head {
    fn len(self) -> u64 {
        self.tail.saturating_sub(self.head)
    }

    /// The condition that the stored head is still this one.
    fn unchanged(self) -> Cond {
        if self.exists { Cond::new("#head = :h AND #tail = :t").val(":h", n(self.head)).val(":t", n(self.tail)) } else { Cond::absent() }
    }
}

async fn read_head(st: &DynamoStore, k: &SessionKey) -> Result<Head, StoreError> {
    Ok(match st.get(key(st.keys.key_pk(k), QUEUE_SK)).await? {
        Some(it) => Head { head: get_n(&it, "head").unwrap_or(0), tail: get_n(&it, "tail").unwrap_or(0), exists: true },
        None => Head { head: 0, tail: 0, exists: false },
    })
}

/// The head item for `head..tail`; a non-empty queue is in the wake index.
fn head_item(st: &DynamoStore, k: &SessionKey, head: u64, tail: u64) -> Item {
    let mut it = key(st.keys.key_pk(k), QUEUE_SK);
    it.insert("head".into(), n(head));
    it.insert("tail".into(), n(tail));
    if tail > head {
        it.insert("wake_pk".into(), st.index_value(WAKE, k.as_str()));
        it.insert("wake_at".into(), n(0));
    }
    it
}

/// `QueueStore::queue_push`.
pub(super) async fn push(
    st: &DynamoStore,
    k: &SessionKey,
    item: &QueuedItem,
    cap: usize,
    dedupe: Option<&InboundId>,
) -> Result<usize, StoreError> {
    st.check_shards().await?;
    let body = encode("queue item", item)?;
    for attempt in 0..ATTEMPTS {
        let h = read_head(st, k).await?;
        let len = usize::try_from(h.len()).unwrap_or(usize::MAX);
        if len >= cap {
            // As in SQLite, a repeated id is reported as a repeat even when the queue is full.
            if let Some(d) = dedupe
                && seen_inbound(st, d).await?
            {
                return Err(StoreError::DuplicateInbound);
            }
            return Err(StoreError::QueueFull(len));
        }
        let mut tx = Tx::default();
        if let Some(d) = dedupe {
            plan_inbound(st, &mut tx, d, item.at)?;
        }
        tx.put(&st.table, Part::QueueHead, head_item(st, k, h.head, h.tail + 1), Some(h.unchanged()))?;
        let mut it = key(st.keys.key_pk(k), qitem_sk(h.tail));
        it.insert("doc".into(), s(body.clone()));
        tx.put(&st.table, Part::QueueItem, it, Some(Cond::absent()))?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(len + 1),
            o if o.lost(Part::Inbound) => return Err(StoreError::DuplicateInbound),
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("queue_push").into())
}

/// `QueueStore::queue_pop_into`.
pub(super) async fn pop_into(
    st: &DynamoStore,
    k: &SessionKey,
    session: &SessionId,
    fence: Option<&Fence>,
) -> Result<Option<QueuedItem>, StoreError> {
    st.check_shards().await?;
    for attempt in 0..ATTEMPTS {
        let h = read_head(st, k).await?;
        if h.len() == 0 {
            return Ok(None);
        }
        let item_key = key(st.keys.key_pk(k), qitem_sk(h.head));
        // Missing: a concurrent pop took it after we read the head; re-read.
        let Some(stored) = st.get(item_key.clone()).await? else {
            backoff(attempt).await;
            continue;
        };
        let item: QueuedItem = doc(&stored, "queue item")?;
        let msg = item.to_message();
        let mut tx = Tx::default();
        if let Some(f) = fence {
            plan_fence(st, &mut tx, f)?;
        }
        tx.delete(&st.table, Part::QueueItem, item_key, Some(Cond::new("attribute_exists(#pk)")))?;
        tx.put(&st.table, Part::QueueHead, head_item(st, k, h.head + 1, h.tail), Some(h.unchanged()))?;
        plan_append(st, &mut tx, session, std::slice::from_ref(&msg)).await?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(Some(item)),
            o if o.lost(Part::Fence) => return Err(StoreError::Fenced(k.as_str().to_string())),
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("queue_pop_into").into())
}

/// `QueueStore::queue_list`.
pub(super) async fn list(st: &DynamoStore, k: &SessionKey) -> Result<Vec<QueuedItem>, StoreError> {
    let items = st.query(Query::prefix(st.keys.key_pk(k), QITEM_PREFIX)).await?;
    items.iter().map(|it| doc(it, "queue item")).collect()
}

/// `QueueStore::queue_clear`: removes the items present when called, in transactions of up to
/// 99 items (each advancing the head), so a concurrent push is never lost.
pub(super) async fn clear(st: &DynamoStore, k: &SessionKey) -> Result<usize, StoreError> {
    st.check_shards().await?;
    let mut removed = 0usize;
    let mut stop: Option<u64> = None;
    let mut attempt = 0;
    loop {
        let h = read_head(st, k).await?;
        let end = (*stop.get_or_insert(h.tail)).min(h.tail);
        if h.head >= end {
            return Ok(removed);
        }
        let upto = end.min(h.head + (MAX_ITEMS as u64 - 1));
        let mut tx = Tx::default();
        tx.put(&st.table, Part::QueueHead, head_item(st, k, upto, h.tail), Some(h.unchanged()))?;
        for seq in h.head..upto {
            tx.delete(&st.table, Part::QueueItem, key(st.keys.key_pk(k), qitem_sk(seq)), None)?;
        }
        match st.transact(tx).await? {
            Outcome::Done => removed += usize::try_from(upto - h.head).unwrap_or(0),
            _ if attempt + 1 >= ATTEMPTS => return Err(DynamoError::Contended("queue_clear").into()),
            _ => {
                backoff(attempt).await;
                attempt += 1;
            }
        }
    }
}

/// `SessionStore::wake_candidates`: one query of the sparse wake index.
pub(super) async fn wake_candidates(st: &DynamoStore, now: DateTime<Utc>, all_leases: bool) -> Result<Vec<SessionKey>, StoreError> {
    let upper = (!all_leases).then(|| ms(now));
    let items = st.query_shards(GSI_WAKE, WAKE, upper, false, None).await?;
    let keys: BTreeSet<SessionKey> =
        items.iter().filter_map(|it| get_s(it, "pk")).map(|pk| st.keys.key_of_pk(pk)).collect::<Result<_, _>>()?;
    Ok(keys.into_iter().collect())
}
