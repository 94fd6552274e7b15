//! Small records: the delivery ledger, once keys (JWT `jti` replay) and meta records.

use super::items::{TTL, get_s, ms, n, occ_ttl, s};
use super::tx::{ATTEMPTS, Cond, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore, sdk};
use crate::core::job::Occurrence;
use crate::ports::StoreError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use chrono::{DateTime, Utc};

/// Writes one marker item if its condition holds; false if it does not.
async fn insert_marker(st: &DynamoStore, item: super::items::Item, cond: impl Fn() -> Cond, op: &'static str) -> Result<bool, StoreError> {
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        tx.put(&st.table, Part::Marker, item.clone(), Some(cond()))?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(true),
            Outcome::Failed(_) => return Ok(false),
            Outcome::Contended => backoff(attempt).await,
        }
    }
    Err(DynamoError::Contended(op).into())
}

/// A new ledger row of `(occ, target)`, `sending` since `now`.
pub(super) fn ledger_item(st: &DynamoStore, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> super::items::Item {
    let mut it = st.keys.ledger_key(occ, target);
    it.insert("status".into(), s("sending"));
    it.insert("at".into(), n(ms(now)));
    it.insert(TTL.into(), occ_ttl(occ, now));
    it
}

/// `LedgerStore::ledger_begin`.
pub(super) async fn ledger_begin(st: &DynamoStore, occ: &Occurrence, target: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
    insert_marker(st, ledger_item(st, occ, target, now), Cond::absent, "ledger_begin").await
}

/// `LedgerStore::ledger_finish`: updates an existing row only, as in SQLite.
pub(super) async fn ledger_finish(
    st: &DynamoStore,
    occ: &Occurrence,
    target: &str,
    status: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let res = st
        .client
        .update_item()
        .table_name(&st.table)
        .set_key(Some(st.keys.ledger_key(occ, target)))
        .update_expression("SET #status = :s, #at = :a")
        .condition_expression("attribute_exists(#pk)")
        .expression_attribute_names("#status", "status")
        .expression_attribute_names("#at", "at")
        .expression_attribute_names("#pk", "pk")
        .expression_attribute_values(":s", s(status))
        .expression_attribute_values(":a", n(ms(now)))
        .send()
        .await;
    match res {
        Err(e) if matches!(e.as_service_error(), Some(UpdateItemError::ConditionalCheckFailedException(_))) => Ok(()),
        other => other.map(|_| ()).map_err(sdk("UpdateItem")),
    }
}

/// A once key's item and its condition: an expired key counts as absent even before TTL
/// removes it.
fn once_put(st: &DynamoStore, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> (super::items::Item, impl Fn() -> Cond) {
    let mut it = st.keys.once_key(key);
    it.insert("expires_at".into(), n(ms(expires_at)));
    // TTL removal is lazy (it can take days); the condition below is what enforces expiry.
    it.insert(TTL.into(), n(expires_at.timestamp() + 1));
    (it, move || Cond::new("attribute_not_exists(#pk) OR #expires_at < :now").val(":now", n(ms(now))))
}

/// `LedgerStore::use_once`.
pub(super) async fn use_once(st: &DynamoStore, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<bool, StoreError> {
    let (it, cond) = once_put(st, key, expires_at, now);
    insert_marker(st, it, cond, "use_once").await
}

/// Adds to `tx` the once key `key` (`SessionChange::Once`); its condition fails as
/// [`Part::Marker`].
pub(super) fn plan_once(st: &DynamoStore, tx: &mut Tx, key: &str, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), StoreError> {
    let (it, cond) = once_put(st, key, expires_at, now);
    tx.put(&st.table, Part::Marker, it, Some(cond()))
}

/// `MetaStore::get_meta`.
pub(super) async fn get_meta(st: &DynamoStore, key: &str) -> Result<Option<String>, StoreError> {
    Ok(st.get(st.keys.meta_key(key)).await?.and_then(|it| get_s(&it, "value").map(str::to_string)))
}

/// `MetaStore::put_meta`.
pub(super) async fn put_meta(st: &DynamoStore, key: &str, value: &str) -> Result<(), StoreError> {
    let mut it = st.keys.meta_key(key);
    it.insert("value".into(), s(value));
    st.client.put_item().table_name(&st.table).set_item(Some(it)).send().await.map_err(sdk("PutItem"))?;
    Ok(())
}

/// `MetaStore::swap_meta`: one conditional `PutItem` (absent, or `value` still `expected`).
pub(super) async fn swap_meta(st: &DynamoStore, key: &str, expected: Option<&str>, new: &str) -> Result<bool, StoreError> {
    let mut it = st.keys.meta_key(key);
    it.insert("value".into(), s(new));
    let mut req = st.client.put_item().table_name(&st.table).set_item(Some(it));
    req = match expected {
        None => req.condition_expression("attribute_not_exists(#v)"),
        Some(old) => req.condition_expression("#v = :old").expression_attribute_values(":old", s(old)),
    };
    match req.expression_attribute_names("#v", "value").send().await {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.as_service_error(), Some(PutItemError::ConditionalCheckFailedException(_))) => Ok(false),
        Err(e) => Err(sdk("PutItem")(e)),
    }
}

/// Key of a counter record (its own key space next to the meta records).
fn counts_key(st: &DynamoStore, key: &str) -> super::items::Item {
    st.keys.meta_key(&format!("counts:{key}"))
}

/// `MetaStore::add_counts`: one `UpdateItem` with `ADD c_<name> :delta` per counter, which
/// DynamoDB applies atomically (creating the item and the attributes at zero).
pub(super) async fn add_counts(st: &DynamoStore, key: &str, deltas: &[(&str, i64)]) -> Result<(), StoreError> {
    if deltas.is_empty() {
        return Ok(());
    }
    // One ADD per counter: DynamoDB refuses two paths to the same attribute.
    let mut merged: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for (name, delta) in deltas {
        *merged.entry(name).or_insert(0) += delta;
    }
    let mut req = st.client.update_item().table_name(&st.table).set_key(Some(counts_key(st, key)));
    let mut adds = Vec::with_capacity(merged.len());
    for (i, (name, delta)) in merged.iter().enumerate() {
        adds.push(format!("#c{i} :d{i}"));
        req =
            req.expression_attribute_names(format!("#c{i}"), format!("c_{name}")).expression_attribute_values(format!(":d{i}"), n(*delta));
    }
    req.update_expression(format!("ADD {}", adds.join(", "))).send().await.map_err(sdk("UpdateItem"))?;
    Ok(())
}

/// `MetaStore::get_counts`: one `BatchGetItem` (≤ 100 keys; unprocessed keys are asked again).
pub(super) async fn get_counts(st: &DynamoStore, keys: &[String]) -> Result<Vec<crate::ports::Counts>, StoreError> {
    use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
    let mut found: std::collections::HashMap<String, crate::ports::Counts> = std::collections::HashMap::new();
    for chunk in keys.chunks(100) {
        let mut pending: Vec<super::items::Item> = chunk.iter().map(|k| counts_key(st, k)).collect();
        for _ in 0..ATTEMPTS {
            if pending.is_empty() {
                break;
            }
            let ka = KeysAndAttributes::builder().set_keys(Some(std::mem::take(&mut pending))).build().map_err(crate::store::backend)?;
            let out = st.client.batch_get_item().request_items(&st.table, ka).send().await.map_err(sdk("BatchGetItem"))?;
            for it in out.responses.and_then(|mut r| r.remove(&st.table)).unwrap_or_default() {
                let Some(pk) = get_s(&it, "pk").map(str::to_string) else { continue };
                let counts = it
                    .iter()
                    .filter_map(|(k, v)| match (k.strip_prefix("c_"), v) {
                        (Some(name), AttributeValue::N(x)) => x.parse::<i64>().ok().map(|x| (name.to_string(), x)),
                        _ => None,
                    })
                    .collect();
                found.insert(pk, counts);
            }
            pending = out.unprocessed_keys.and_then(|mut u| u.remove(&st.table)).map(|ka| ka.keys).unwrap_or_default();
        }
    }
    Ok(keys
        .iter()
        .map(|k| {
            let pk = get_s(&counts_key(st, k), "pk").map(str::to_string).unwrap_or_default();
            found.remove(&pk).unwrap_or_default()
        })
        .collect())
}

/// `MetaStore::delete_meta`.
pub(super) async fn delete_meta(st: &DynamoStore, key: &str) -> Result<(), StoreError> {
    st.client.delete_item().table_name(&st.table).set_key(Some(st.keys.meta_key(key))).send().await.map_err(sdk("DeleteItem"))?;
    Ok(())
}
