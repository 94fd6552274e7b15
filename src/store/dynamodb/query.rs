//! Reads: strongly consistent `GetItem`, and `Query` that follows `LastEvaluatedKey` until
//! the wanted number of items is read or the key range is exhausted (pages end at 1 MB).

use super::items::{Item, PK, SK};
use super::{DynamoStore, sdk};
use crate::ports::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, Select};

/// One key-condition query.
pub(super) struct Query {
    /// Global secondary index, or the base table (then reads are strongly consistent).
    pub index: Option<&'static str>,
    /// Key condition; `#pk`/`#sk`/`#<attr>` name attributes, `:p`/`:a`/`:b` are values.
    pub cond: &'static str,
    /// The values of the condition.
    pub values: Vec<(&'static str, AttributeValue)>,
    /// Ascending sort-key order.
    pub forward: bool,
    /// Stop after this many items.
    pub limit: Option<usize>,
    /// Read only the key attributes (`pk`, `sk`).
    pub keys_only: bool,
}

impl Query {
    /// All items of partition `pk` whose sort key starts with `prefix`, in key order.
    pub fn prefix(pk: String, prefix: &str) -> Self {
        Self {
            index: None,
            cond: "#pk = :p AND begins_with(#sk, :a)",
            values: vec![(":p", AttributeValue::S(pk)), (":a", AttributeValue::S(prefix.to_string()))],
            forward: true,
            limit: None,
            keys_only: false,
        }
    }

    /// Items of an index partition, optionally with `range <= upper`.
    pub fn index(index: &'static str, pk: &str, upper: Option<i64>) -> Self {
        let (cond, mut values) = match upper {
            Some(u) => ("#hk = :p AND #rk <= :b", vec![(":b", AttributeValue::N(u.to_string()))]),
            None => ("#hk = :p", vec![]),
        };
        values.push((":p", AttributeValue::S(pk.to_string())));
        Self { index: Some(index), cond, values, forward: true, limit: None, keys_only: false }
    }

    /// Descending order.
    pub fn newest_first(mut self) -> Self {
        self.forward = false;
        self
    }

    /// At most `n` items.
    pub fn take(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
}

/// The attribute names of an index's hash and range keys.
fn index_keys(index: &str) -> (&'static str, &'static str) {
    match index {
        super::table::GSI_RECENT => ("recent_pk", "recent_at"),
        super::table::GSI_KEY => ("key_pk", "key_at"),
        super::table::GSI_DUE => ("due_pk", "due_at"),
        _ => ("wake_pk", "wake_at"),
    }
}

impl DynamoStore {
    /// Runs `q`, following pages.
    pub(super) async fn query(&self, q: Query) -> Result<Vec<Item>, StoreError> {
        let mut out: Vec<Item> = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let want = q.limit.map(|l| l.saturating_sub(out.len()));
            if want == Some(0) {
                break;
            }
            let mut b = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(q.cond)
                .scan_index_forward(q.forward)
                .set_exclusive_start_key(start.take());
            b = match q.index {
                Some(i) => {
                    let (hk, rk) = index_keys(i);
                    let b = b.index_name(i).expression_attribute_names("#hk", hk);
                    if q.cond.contains("#rk") { b.expression_attribute_names("#rk", rk) } else { b }
                }
                None => b.consistent_read(true).expression_attribute_names("#pk", PK).expression_attribute_names("#sk", SK),
            };
            for (k, v) in &q.values {
                b = b.expression_attribute_values(*k, v.clone());
            }
            if q.keys_only {
                b = b.select(Select::SpecificAttributes).projection_expression("#pk, #sk");
                if q.index.is_some() {
                    b = b.expression_attribute_names("#pk", PK).expression_attribute_names("#sk", SK);
                }
            }
            let page = match (want, self.page_size) {
                (Some(w), Some(p)) => Some(i32::try_from(w).unwrap_or(i32::MAX).min(p)),
                (Some(w), None) => Some(i32::try_from(w).unwrap_or(i32::MAX)),
                (None, p) => p,
            };
            let resp = b.set_limit(page).send().await.map_err(sdk("Query"))?;
            out.extend(resp.items.unwrap_or_default());
            match resp.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        if let Some(l) = q.limit {
            out.truncate(l);
        }
        Ok(out)
    }

    /// One item by key, strongly consistent.
    pub(super) async fn get(&self, key: Item) -> Result<Option<Item>, StoreError> {
        let resp =
            self.client.get_item().table_name(&self.table).set_key(Some(key)).consistent_read(true).send().await.map_err(sdk("GetItem"))?;
        Ok(resp.item)
    }
}
