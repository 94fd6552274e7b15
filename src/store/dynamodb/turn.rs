//! DynamoDB bodies of [`TurnStore`] and the transcript counter hints (docs/design.md#store-cost).
//!
//! Session notes live in the conversation's own partition (`SESSION#<id>`, sort key
//! `NOTE#<name>`), between its messages (`MSG#…`) and its counter (`SEQ`) in key order, so
//! one descending `Query` over `MSG#`..`SEQ` returns the counter, the notes and the newest
//! messages.
//!
//! An append must know the counter's current value: its write is conditioned on it, which
//! is what keeps two appenders from taking the same sequence numbers. [`SeqHints`] keeps the
//! last value this process saw per conversation (from its own appends, the folded read, and
//! the `seq` attribute every entry write stores for the entry's conversation), so an append
//! does not read the counter first. A wrong hint only fails the condition: nothing is
//! written, the hint is dropped and the append re-reads the counter and retries.

use super::items::{MSG_PREFIX, SEQ_SK, SK, doc, get_n, get_s, key, s};
use super::query::Query;
use super::{DynamoStore, sdk};
use crate::core::ids::SessionId;
use crate::core::session::Message;
use crate::ports::{MAX_SESSION_NOTES, StoreError, TurnRead, TurnStore};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Sort-key prefix of a session note.
const NOTE_PREFIX: &str = "NOTE#";
/// Hints kept before the map is emptied (a hint is only a saved read).
const MAX_HINTS: usize = 4096;

/// Last known transcript counter per conversation partition (see the module doc).
#[derive(Debug, Clone, Default)]
pub(super) struct SeqHints(Arc<Mutex<HashMap<String, u64>>>);

impl SeqHints {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The hint of partition `pk`.
    pub fn get(&self, pk: &str) -> Option<u64> {
        self.lock().get(pk).copied()
    }

    /// Records that the counter of `pk` is `n` (it was just written or read).
    pub fn set(&self, pk: String, n: u64) {
        let mut m = self.lock();
        if m.len() >= MAX_HINTS && !m.contains_key(&pk) {
            m.clear();
        }
        m.insert(pk, n);
    }

    /// Records `n` from a possibly older source (an entry's `seq`): the counter only grows,
    /// so the larger value is the fresher.
    pub fn raise(&self, pk: String, n: u64) {
        if self.get(&pk).is_none_or(|cur| cur < n) {
            self.set(pk, n);
        }
    }

    /// Drops the hint of `pk` (a write planned on it did not land).
    pub fn forget(&self, pk: &str) {
        self.lock().remove(pk);
    }
}

#[async_trait]
impl TurnStore for DynamoStore {
    async fn turn_read(&self, id: &SessionId, limit: usize, names: &[&str]) -> Result<TurnRead, StoreError> {
        let pk = self.keys.session_pk(id);
        let q = Query {
            index: None,
            cond: "#pk = :p AND #sk BETWEEN :a AND :b",
            values: vec![(":p", s(pk.clone())), (":a", s(MSG_PREFIX)), (":b", s(SEQ_SK))],
            forward: false,
            // The counter, the record and the notes come first, then the newest messages.
            limit: Some(limit + 2 + MAX_SESSION_NOTES),
            keys_only: false,
        };
        let mut out = TurnRead::default();
        for it in self.query(q).await? {
            let sk = get_s(&it, SK).unwrap_or_default();
            if sk == SEQ_SK {
                out.count = get_n(&it, "n").unwrap_or(0);
            } else if let Some(name) = sk.strip_prefix(NOTE_PREFIX) {
                if let Some(v) = get_s(&it, "value").filter(|_| names.contains(&name)) {
                    out.notes.insert(name.to_string(), v.to_string());
                }
            } else if sk.starts_with(MSG_PREFIX) && out.messages.len() < limit {
                out.messages.push(doc::<Message>(&it, "message")?);
            }
        }
        out.messages.reverse();
        if out.count > 0 {
            self.seqs.raise(pk, out.count);
        }
        Ok(out)
    }

    async fn turn_put_note(&self, id: &SessionId, name: &str, value: Option<&str>) -> Result<(), StoreError> {
        let mut it = key(self.keys.session_pk(id), format!("{NOTE_PREFIX}{name}"));
        match value {
            Some(v) => {
                it.insert("value".into(), AttributeValue::S(v.to_string()));
                self.client.put_item().table_name(&self.table).set_item(Some(it)).send().await.map_err(sdk("PutItem"))?;
            }
            None => {
                self.client.delete_item().table_name(&self.table).set_key(Some(it)).send().await.map_err(sdk("DeleteItem"))?;
            }
        }
        Ok(())
    }
}
