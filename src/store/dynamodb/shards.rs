//! Write sharding of the single-partition indexes (docs/design.md#shards). `gsi_recent`,
//! `gsi_due` and `gsi_wake` would otherwise hold every item under one partition value
//! (`ENTRIES`, `SESSIONS`, `DUE`, `WAKE`), capping their writes at one partition's throughput.
//! With N shards an item's value is `<base>#<k>`, k a stable hash of the item's own key mod
//! N (so a rewrite lands on the same shard and replaces, never duplicates); with N = 1 it is
//! the bare `<base>`, byte for byte the layout of tables written before sharding existed.
//! A listing queries all N shards at once, takes the first `limit` of each and merges them by
//! the index's sort key.
//!
//! N is fixed per table: the first writer records it in the table item `TABLE`/`SHARDS`, and
//! a process configured with another N refuses to use the table (items written under the old
//! N would sit on shards the new N never queries).

use super::items::{Item, get_n, key, n, s};
use super::query::Query;
use super::table::{GSI_DUE, GSI_RECENT, GSI_WAKE};
use super::tx::{Cond, Outcome, Part, Tx};
use super::{DynamoError, DynamoStore};
use crate::ports::StoreError;
use crate::store::shard::shard_of;

/// The index partition value of the item `key` under `base`.
pub(super) fn index_pk(base: &str, key: &str, n: u32) -> String {
    if n <= 1 { base.to_string() } else { format!("{base}#{}", shard_of(key, n)) }
}

/// Every index partition value of `base`, one per shard.
fn index_pks(base: &str, n: u32) -> Vec<String> {
    if n <= 1 { vec![base.to_string()] } else { (0..n).map(|k| format!("{base}#{k}")).collect() }
}

/// The range attribute of an index.
fn range_attr(index: &str) -> &'static str {
    match index {
        GSI_RECENT => "recent_at",
        GSI_DUE => "due_at",
        GSI_WAKE => "wake_at",
        _ => "key_at",
    }
}

/// The shard record's key: outside every profile's key space (never passed through
/// `items::Keys`), one per table.
fn shards_key() -> Item {
    key("TABLE".to_string(), "SHARDS")
}

impl DynamoStore {
    /// The index partition value of the item `key` under `base`, in this handle's key space
    /// (item builders).
    pub(super) fn index_value(&self, base: &str, key: &str) -> aws_sdk_dynamodb::types::AttributeValue {
        s(index_pk(&self.keys.base(base), key, self.shards))
    }

    /// Queries every shard of `base` (in this handle's key space) on `index` (optionally `range <= upper`) at once and
    /// merges: ascending by the range key, or descending with `newest_first`; at most `limit`.
    pub(super) async fn query_shards(
        &self,
        index: &'static str,
        base: &str,
        upper: Option<i64>,
        newest_first: bool,
        limit: Option<usize>,
    ) -> Result<Vec<Item>, StoreError> {
        self.check_shards().await?;
        let mut set = tokio::task::JoinSet::new();
        for (k, pk) in index_pks(&self.keys.base(base), self.shards).into_iter().enumerate() {
            let mut q = Query::index(index, &pk, upper);
            q.forward = !newest_first;
            q.limit = limit;
            let st = self.clone();
            set.spawn(async move { st.query(q).await.map(|items| (k, items)) });
        }
        let mut parts = Vec::new();
        while let Some(part) = set.join_next().await {
            parts.push(part.map_err(crate::store::backend)??);
        }
        // Shard order first, so the stable sort below breaks ties the same way every time.
        parts.sort_by_key(|(k, _)| *k);
        let mut all: Vec<Item> = parts.into_iter().flat_map(|(_, items)| items).collect();
        let attr = range_attr(index);
        // Stable: ties keep shard order, as a single partition keeps its own order.
        all.sort_by_key(|it| get_n::<i64>(it, attr).unwrap_or(0));
        if newest_first {
            all.reverse();
        }
        if let Some(l) = limit {
            all.truncate(l);
        }
        Ok(all)
    }

    /// Makes sure the table's recorded shard count is this process's, recording it on first
    /// use. Runs once per process (one `GetItem`; on a new table one more write).
    pub(super) async fn check_shards(&self) -> Result<(), StoreError> {
        self.shards_checked.get_or_try_init(|| self.verify_shards()).await.map(|_| ())
    }

    async fn verify_shards(&self) -> Result<(), StoreError> {
        let mismatch = |have: u32| -> StoreError {
            DynamoError::Table {
                table: self.table.clone(),
                reason: format!(
                    "it was written with store.dynamodb_shards = {have}, but this config says {}; set store.dynamodb_shards: {have} (changing it needs a migration, see docs/design.md#shards)",
                    self.shards
                ),
            }
            .into()
        };
        if let Some(have) = self.get(shards_key()).await?.and_then(|it| get_n::<u32>(&it, "n")) {
            return if have == self.shards { Ok(()) } else { Err(mismatch(have)) };
        }
        // No record: a new table, or one written before sharding (always one shard).
        if self.shards != 1 && self.has_unsharded_items().await? {
            return Err(mismatch(1));
        }
        let mut it = shards_key();
        it.insert("n".into(), n(self.shards));
        let mut tx = Tx::default();
        tx.put(&self.table, Part::Marker, it, Some(Cond::absent()))?;
        match self.transact(tx).await? {
            Outcome::Done => Ok(()),
            // Another process recorded it first: compare with what it wrote.
            _ => match self.get(shards_key()).await?.and_then(|it| get_n::<u32>(&it, "n")) {
                Some(have) if have == self.shards => Ok(()),
                Some(have) => Err(mismatch(have)),
                None => Err(DynamoError::Contended("recording store.dynamodb_shards").into()),
            },
        }
    }

    /// Whether any index item sits on the unsharded partitions of the old layout (written
    /// before sharding, so before profiles: `main`'s bare bases).
    async fn has_unsharded_items(&self) -> Result<bool, StoreError> {
        for (index, base) in [(GSI_RECENT, "ENTRIES"), (GSI_RECENT, "SESSIONS"), (GSI_DUE, "DUE"), (GSI_WAKE, "WAKE")] {
            let mut q = Query::index(index, base, None).take(1);
            q.keys_only = true;
            if !self.query(q).await?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_is_stable_and_one_shard_is_the_old_layout() {
        assert_eq!(index_pk("DUE", "job1", 1), "DUE");
        let a = index_pk("DUE", "job1", 8);
        assert_eq!(a, index_pk("DUE", "job1", 8), "the same item always lands on the same shard");
        assert!(a.starts_with("DUE#"));
        assert_eq!(index_pks("WAKE", 3), ["WAKE#0", "WAKE#1", "WAKE#2"]);
    }
}
