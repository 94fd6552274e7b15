//! Item codec: attribute-value helpers and the key of every item type (the layout table in
//! the module docs of [`super`]).

use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::Occurrence;
use crate::ports::{InboundId, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// One DynamoDB item.
pub(super) type Item = HashMap<String, AttributeValue>;

/// Partition and sort key attribute names.
pub(super) const PK: &str = "pk";
pub(super) const SK: &str = "sk";
/// The TTL attribute (epoch seconds).
pub(super) const TTL: &str = "ttl";

/// How long claims and ledger rows are kept after their occurrence. Why 90 days: a claim is
/// only consulted while its occurrence can still be fired (timers, retries, the ticker's
/// grace window), which is hours; a stale fire for an older occurrence is refused by the
/// fire path because the job's `next_run_at` has moved on.
pub(super) const CLAIM_TTL_DAYS: i64 = 90;

/// A string value.
pub(super) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number value.
pub(super) fn n(v: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// Milliseconds since the epoch.
pub(super) fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The inverse of [`ms`].
pub(super) fn from_ms(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(v).unwrap_or_default()
}

/// An item holding only its key.
pub(super) fn key(pk: String, sk: impl Into<String>) -> Item {
    HashMap::from([(PK.to_string(), s(pk)), (SK.to_string(), s(sk))])
}

/// A string attribute.
pub(super) fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    item.get(name).and_then(|v| v.as_s().ok()).map(String::as_str)
}

/// A numeric attribute.
pub(super) fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Option<T> {
    item.get(name).and_then(|v| v.as_n().ok()).and_then(|v| v.parse().ok())
}

/// A string attribute that must be there.
pub(super) fn req_s<'a>(item: &'a Item, name: &str, what: &str) -> Result<&'a str, StoreError> {
    get_s(item, name).ok_or_else(|| StoreError::Corrupt { what: what.to_string(), reason: format!("missing attribute `{name}`") })
}

/// The JSON document (`doc`) of an item.
pub(super) fn doc<T: serde::de::DeserializeOwned>(item: &Item, what: &str) -> Result<T, StoreError> {
    crate::store::decode(what, req_s(item, "doc", what)?)
}

/// Escapes a key component so `#` separates components unambiguously.
fn esc(v: &str) -> String {
    v.replace('%', "%25").replace('#', "%23")
}

pub(super) const ENTRY_SK: &str = "ENTRY";
pub(super) const QUEUE_SK: &str = "QUEUE";
pub(super) const QITEM_PREFIX: &str = "Q#";
pub(super) const RECORD_SK: &str = "RECORD";
pub(super) const SEQ_SK: &str = "SEQ";
pub(super) const MSG_PREFIX: &str = "MSG#";
pub(super) const JOBS_PK: &str = "JOBS";
pub(super) const JOB_PREFIX: &str = "JOB#";
pub(super) const CLAIM_SK: &str = "CLAIM";
pub(super) const RUN_PREFIX: &str = "RUN#";
const KEY_PREFIX: &str = "KEY#";

/// Partition of a session key (entry, queue head, queue items).
pub(super) fn key_pk(k: &SessionKey) -> String {
    format!("{KEY_PREFIX}{}", k.as_str())
}

/// The session key of a [`key_pk`] partition.
pub(super) fn key_of_pk(pk: &str) -> Result<SessionKey, StoreError> {
    let raw = pk.strip_prefix(KEY_PREFIX).unwrap_or(pk);
    SessionKey::parse(raw).map_err(|e| StoreError::Corrupt { what: pk.to_string(), reason: e.to_string() })
}

/// Sort key of queue item `seq`.
pub(super) fn qitem_sk(seq: u64) -> String {
    format!("{QITEM_PREFIX}{seq:012}")
}

/// Partition of a conversation (record, counter, messages).
pub(super) fn session_pk(id: &SessionId) -> String {
    format!("SESSION#{}", id.as_str())
}

/// Sort key of transcript message `seq`.
pub(super) fn msg_sk(seq: u64) -> String {
    format!("{MSG_PREFIX}{seq:012}")
}

/// Key of an inbound-seen marker.
pub(super) fn inbound_key(d: &InboundId) -> Item {
    key(format!("INBOUND#{}#{}#{}", esc(&d.platform), esc(&d.chat_id), esc(&d.message_id)), "SEEN")
}

/// Key of a job.
pub(super) fn job_key(id: &str) -> Item {
    key(JOBS_PK.to_string(), format!("{JOB_PREFIX}{id}"))
}

/// Partition of an occurrence (claim and ledger rows).
pub(super) fn occ_pk(o: &Occurrence) -> String {
    format!("OCC#{}#{}", esc(&o.job_id), o.fire_at.timestamp())
}

/// Partition of a job's runs.
pub(super) fn runs_pk(job_id: &str) -> String {
    format!("RUNS#{}", esc(job_id))
}

/// Sort key of a run: newest last in key order, so a descending query is newest first
/// (ties broken by run id, as SQLite does).
pub(super) fn run_sk(started_at: DateTime<Utc>, run_id: &str) -> String {
    format!("{RUN_PREFIX}{:015}#{run_id}", ms(started_at).max(0))
}

/// Key of a once key.
pub(super) fn once_key(k: &str) -> Item {
    key(format!("ONCE#{k}"), "ONCE")
}

/// Key of a meta record.
pub(super) fn meta_key(k: &str) -> Item {
    key(format!("META#{k}"), "META")
}

/// Key of a delivery ledger row.
pub(super) fn ledger_key(o: &Occurrence, target: &str) -> Item {
    key(occ_pk(o), format!("DELIVERY#{target}"))
}

/// The `ttl` of claims and ledger rows of an occurrence.
pub(super) fn occ_ttl(o: &Occurrence, now: DateTime<Utc>) -> AttributeValue {
    n(o.fire_at.max(now).timestamp() + CLAIM_TTL_DAYS * 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unambiguous_and_ordered() {
        let a = InboundId { platform: "x".into(), chat_id: "a#b".into(), message_id: "c".into() };
        let b = InboundId { platform: "x".into(), chat_id: "a".into(), message_id: "b#c".into() };
        assert_ne!(inbound_key(&a), inbound_key(&b));
        assert!(msg_sk(9) < msg_sk(10) && qitem_sk(99) < qitem_sk(100));
        let t = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        assert!(run_sk(t(5), "z") < run_sk(t(6), "a"));
    }
}
