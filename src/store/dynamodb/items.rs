//! Item codec: attribute-value helpers and the key of every item type (the layout table in
//! the module docs of [`super`]), in one handle's key space ([`Keys`]).

use crate::core::ids::{SessionId, SessionKey};
use crate::core::job::Occurrence;
use crate::core::profile::Profile;
use crate::ports::{InboundId, StoreError};
use crate::store::scope::Scope;
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
const JOBS_PK: &str = "JOBS";
pub(super) const JOB_PREFIX: &str = "JOB#";
pub(super) const CLAIM_SK: &str = "CLAIM";
pub(super) const RUN_PREFIX: &str = "RUN#";
const KEY_PREFIX: &str = "KEY#";

/// One handle's key space (docs/design.md#profiles): every partition key and index base
/// is built here and goes through [`Keys::pk`], the one place that applies the profile's
/// [`Scope`] (`@<profile>/` in front for a named profile; `main`'s keys are the layout of
/// tables written before profiles, byte for byte). Partitions are matched exactly and sort
/// keys only within a partition, so nothing of another profile can be read or listed. The
/// shard record (`shards.rs`) is the one item outside every key space.
#[derive(Debug, Clone, Default)]
pub(super) struct Keys {
    scope: Scope,
}

impl Keys {
    /// The key space of `profile`.
    pub fn new(profile: Profile) -> Self {
        Self { scope: Scope::new(profile) }
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        self.scope.profile()
    }

    /// The stored partition key of `raw`: the one place the scope is applied.
    fn pk(&self, raw: &str) -> String {
        self.scope.key(raw)
    }

    /// The base of an index partition (`ENTRIES`, `SESSIONS`, `DUE`, `WAKE`), before its
    /// shard suffix.
    pub fn base(&self, base: &str) -> String {
        self.pk(base)
    }

    /// Partition of a session key (entry, queue head, queue items).
    pub fn key_pk(&self, k: &SessionKey) -> String {
        self.pk(&format!("{KEY_PREFIX}{}", k.as_str()))
    }

    /// The session key of a [`Keys::key_pk`] partition.
    pub fn key_of_pk(&self, pk: &str) -> Result<SessionKey, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt { what: pk.to_string(), reason };
        let raw = self.scope.strip(pk).ok_or_else(|| corrupt(format!("not in profile {}", self.profile())))?;
        let raw = raw.strip_prefix(KEY_PREFIX).unwrap_or(raw);
        SessionKey::parse(raw).map_err(|e| corrupt(e.to_string()))
    }

    /// `gsi_key`'s partition of a session key (its session records).
    pub fn key_sessions_pk(&self, k: &SessionKey) -> String {
        self.pk(&format!("KS#{}", k.as_str()))
    }

    /// Partition of a conversation (record, counter, messages).
    pub fn session_pk(&self, id: &SessionId) -> String {
        self.pk(&format!("SESSION#{}", id.as_str()))
    }

    /// Key of an inbound-seen marker.
    pub fn inbound_key(&self, d: &InboundId) -> Item {
        key(self.pk(&format!("INBOUND#{}#{}#{}", esc(&d.platform), esc(&d.chat_id), esc(&d.message_id))), "SEEN")
    }

    /// The partition of every job.
    pub fn jobs_pk(&self) -> String {
        self.pk(JOBS_PK)
    }

    /// Key of a job.
    pub fn job_key(&self, id: &str) -> Item {
        key(self.jobs_pk(), format!("{JOB_PREFIX}{id}"))
    }

    /// Partition of an occurrence (claim and ledger rows).
    pub fn occ_pk(&self, o: &Occurrence) -> String {
        self.pk(&format!("OCC#{}#{}", esc(&o.job_id), o.fire_at.timestamp()))
    }

    /// Partition of a job's runs.
    pub fn runs_pk(&self, job_id: &str) -> String {
        self.pk(&format!("RUNS#{}", esc(job_id)))
    }

    /// Key of a once key.
    pub fn once_key(&self, k: &str) -> Item {
        key(self.pk(&format!("ONCE#{k}")), "ONCE")
    }

    /// Key of a meta record (also the usage counters, `counts:<key>`).
    pub fn meta_key(&self, k: &str) -> Item {
        key(self.pk(&format!("META#{k}")), "META")
    }

    /// Key of a delivery ledger row.
    pub fn ledger_key(&self, o: &Occurrence, target: &str) -> Item {
        key(self.occ_pk(o), format!("DELIVERY#{target}"))
    }
}

/// Sort key of queue item `seq`.
pub(super) fn qitem_sk(seq: u64) -> String {
    format!("{QITEM_PREFIX}{seq:012}")
}

/// Sort key of transcript message `seq`.
pub(super) fn msg_sk(seq: u64) -> String {
    format!("{MSG_PREFIX}{seq:012}")
}

/// Sort key of a run: newest last in key order, so a descending query is newest first
/// (ties broken by run id, as SQLite does).
pub(super) fn run_sk(started_at: DateTime<Utc>, run_id: &str) -> String {
    format!("{RUN_PREFIX}{:015}#{run_id}", ms(started_at).max(0))
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
        let k = Keys::default();
        assert_ne!(k.inbound_key(&a), k.inbound_key(&b));
        assert!(msg_sk(9) < msg_sk(10) && qitem_sk(99) < qitem_sk(100));
        let t = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        assert!(run_sk(t(5), "z") < run_sk(t(6), "a"));
    }
}
