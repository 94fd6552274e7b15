//! Transcripts and inbound ids: messages under `SESSION#<id>` with sequence numbers taken
//! from the session's `SEQ` counter in the same transaction (compare-and-set on its old
//! value, so two concurrent appenders can never take the same number). The old value comes
//! from the process's hint when it has one (`turn::SeqHints`), else from a read.

use super::items::{ENTRY_SK, Item, MSG_PREFIX, SEQ_SK, doc, get_n, key, ms, msg_sk, n, s};
use super::query::Query;
use super::tx::{ATTEMPTS, Cond, MAX_ITEMS, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore};
use crate::core::ids::SessionId;
use crate::core::session::{Fence, Message};
use crate::ports::{Appended, InboundId, StoreError};
use crate::store::encode;
use chrono::{DateTime, Utc};

/// The inbound-seen marker of `d`, stamped `at` (the message's time, as in SQLite).
pub(super) fn inbound_item(st: &DynamoStore, d: &InboundId, at: DateTime<Utc>) -> Item {
    let mut it = st.keys.inbound_key(d);
    it.insert("seen_at".into(), n(ms(at)));
    it
}

/// Adds to `tx` the inbound marker of `d`; it fails the write if `d` was seen before.
pub(super) fn plan_inbound(st: &DynamoStore, tx: &mut Tx, d: &InboundId, at: DateTime<Utc>) -> Result<(), StoreError> {
    tx.put(&st.table, Part::Inbound, inbound_item(st, d, at), Some(Cond::absent()))
}

/// Adds to `tx` the messages `msgs` after the transcript's current end, and the counter's
/// advance guarded by its current value.
pub(super) async fn plan_append(st: &DynamoStore, tx: &mut Tx, id: &SessionId, msgs: &[Message]) -> Result<(), StoreError> {
    if msgs.is_empty() {
        return Ok(());
    }
    // The process's hint saves the counter read; a stale one fails the condition and is dropped.
    let pk = st.keys.session_pk(id);
    let cur: u64 = match st.seqs.get(&pk) {
        Some(hint) => hint,
        None => st.get(key(pk, SEQ_SK)).await?.and_then(|it| get_n(&it, "n")).unwrap_or(0),
    };
    plan_append_at(st, tx, id, msgs, cur)
}

/// [`plan_append`] with the counter's value known to the caller (`cur`, 0 for a new
/// transcript): no read; a wrong `cur` fails the write on [`Part::Seq`].
pub(super) fn plan_append_at(st: &DynamoStore, tx: &mut Tx, id: &SessionId, msgs: &[Message], cur: u64) -> Result<(), StoreError> {
    if msgs.is_empty() {
        return Ok(());
    }
    let needed = tx.len() + 1 + msgs.len();
    if needed > MAX_ITEMS {
        return Err(DynamoError::TooManyItems(needed).into());
    }
    let pk = st.keys.session_pk(id);
    let mut counter = key(pk.clone(), SEQ_SK);
    counter.insert("n".into(), n(cur + msgs.len() as u64));
    let cond = if cur == 0 { Cond::absent() } else { Cond::new("#n = :n").val(":n", n(cur)) };
    tx.put(&st.table, Part::Seq, counter, Some(cond))?;
    tx.seqs.push((pk.clone(), cur + msgs.len() as u64));
    for (i, m) in msgs.iter().enumerate() {
        let mut it = key(pk.clone(), msg_sk(cur + 1 + i as u64));
        it.insert("doc".into(), s(encode("message", m)?));
        if let Some(text) = super::search::text_of(m) {
            it.insert(super::search::TEXT.into(), text);
        }
        tx.put(&st.table, Part::Message, it, Some(Cond::absent()))?;
    }
    Ok(())
}

/// `SessionStore::append_messages`.
pub(super) async fn append(st: &DynamoStore, id: &SessionId, msgs: &[Message], dedupe: Option<&InboundId>) -> Result<Appended, StoreError> {
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        if let Some(d) = dedupe {
            plan_inbound(st, &mut tx, d, msgs.first().map_or(DateTime::UNIX_EPOCH, |m| m.at))?;
        }
        plan_append(st, &mut tx, id, msgs).await?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(Appended::Stored),
            o if o.lost(Part::Inbound) => return Ok(Appended::Duplicate),
            // Another appender took our sequence numbers: re-read the counter and retry.
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("append_messages").into())
}

/// Adds to `tx` the check that the entry of `fence.key` still holds a lease of `fence.epoch`.
pub(super) fn plan_fence(st: &DynamoStore, tx: &mut Tx, fence: &Fence) -> Result<(), StoreError> {
    tx.check(&st.table, Part::Fence, key(st.keys.key_pk(&fence.key), ENTRY_SK), Cond::new("#fence = :fence").val(":fence", n(fence.epoch)))
}

/// `SessionStore::append_fenced`.
pub(super) async fn append_fenced(st: &DynamoStore, id: &SessionId, msgs: &[Message], fence: &Fence) -> Result<(), StoreError> {
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        plan_fence(st, &mut tx, fence)?;
        plan_append(st, &mut tx, id, msgs).await?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(()),
            o if o.lost(Part::Fence) => return Err(StoreError::Fenced(fence.key.as_str().to_string())),
            // Another appender took our sequence numbers: re-read the counter and retry.
            _ => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended("append_fenced").into())
}

/// `SessionStore::truncate_messages`: the messages after `keep` are deleted newest first,
/// each batch with the fence's check, and the counter comes down to `keep` in the last
/// batch (conditioned on its value). A crash between batches leaves the counter above the
/// messages that remain, which an append tolerates (its numbers are still unused); the
/// reverse order could leave an old message where the next append must write.
pub(super) async fn truncate(st: &DynamoStore, id: &SessionId, keep: u64, fence: &Fence) -> Result<u64, StoreError> {
    let pk = st.keys.session_pk(id);
    for attempt in 0..ATTEMPTS {
        let cur: u64 = st.get(key(pk.clone(), SEQ_SK)).await?.and_then(|it| get_n(&it, "n")).unwrap_or(0);
        if cur <= keep {
            return Ok(0);
        }
        let seqs: Vec<u64> = (keep + 1..=cur).rev().collect();
        // Room in each write for the fence check and the counter.
        let batches: Vec<&[u64]> = seqs.chunks(MAX_ITEMS - 2).collect();
        let mut lost_seq = false;
        for (i, batch) in batches.iter().enumerate() {
            let mut tx = Tx::default();
            plan_fence(st, &mut tx, fence)?;
            for seq in *batch {
                tx.delete(&st.table, Part::Message, key(pk.clone(), msg_sk(*seq)), None)?;
            }
            if i + 1 == batches.len() {
                let was = Cond::new("#n = :n").val(":n", n(cur));
                // An emptied transcript has no counter, as a new one (an append at 0 expects none).
                if keep == 0 {
                    tx.delete(&st.table, Part::Seq, key(pk.clone(), SEQ_SK), Some(was))?;
                } else {
                    let mut counter = key(pk.clone(), SEQ_SK);
                    counter.insert("n".into(), n(keep));
                    tx.put(&st.table, Part::Seq, counter, Some(was))?;
                }
            }
            match st.transact(tx).await? {
                Outcome::Done => {}
                o if o.lost(Part::Fence) => return Err(StoreError::Fenced(fence.key.as_str().to_string())),
                _ => {
                    lost_seq = true;
                    break;
                }
            }
        }
        if !lost_seq {
            st.seqs.set(pk, keep);
            return Ok(cur - keep);
        }
        // An unfenced append moved the counter: read it again.
        st.seqs.forget(&pk);
        backoff(attempt).await;
    }
    Err(DynamoError::Contended("truncate_messages").into())
}

/// `SessionStore::recent_messages`.
pub(super) async fn recent(st: &DynamoStore, id: &SessionId, limit: usize) -> Result<Vec<Message>, StoreError> {
    let items = st.query(Query::prefix(st.keys.session_pk(id), MSG_PREFIX).newest_first().take(limit)).await?;
    let mut out = items.iter().map(|it| doc(it, "message")).collect::<Result<Vec<Message>, _>>()?;
    out.reverse();
    Ok(out)
}

/// `SessionStore::count_messages`: the counter is the last sequence number.
pub(super) async fn count(st: &DynamoStore, id: &SessionId) -> Result<u64, StoreError> {
    Ok(st.get(key(st.keys.session_pk(id), SEQ_SK)).await?.and_then(|it| get_n(&it, "n")).unwrap_or(0))
}

/// `SessionStore::seen_inbound`.
pub(super) async fn seen_inbound(st: &DynamoStore, d: &InboundId) -> Result<bool, StoreError> {
    Ok(st.get(st.keys.inbound_key(d)).await?.is_some())
}
