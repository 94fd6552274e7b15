//! One behaviour suite every [`Store`] adapter must pass (SQLite always; DynamoDB when a
//! local server is running), one named test per check. An adapter's tests invoke
//! [`conformance_tests!`] once per way of building an empty store (a [`Fixture`]); a failing
//! check shows its own name, e.g. `store::sqlite::tests::on_file::claim_race`.
//!
//! The checks live by concern, as the port is split: `sessions` (session entries, records,
//! transcripts, wake candidates), `queue`, `fence` (writes fenced by a lease epoch), `jobs` (jobs, claims, runs, ledger, once keys),
//! `rewind` (`/undo` and `/title`), `search` (`session_search`), `fire` (the fire path's folded writes), `pairing` (compare-and-set meta records), `session_delete` (a conversation deleted whole) and, here, the meta
//! round trip.

#![allow(clippy::unwrap_used)]

mod fence;
mod fire;
mod jobs;
mod pairing;
mod queue;
mod rewind;
mod search;
mod session_delete;
mod sessions;
mod turn;

pub(crate) use fence::fenced_writes;
pub(crate) use fire::{fire_finish_retention, fire_writes, skipped_occurrences};
pub(crate) use jobs::{claim_race, claims_are_never_readmitted, jobs_cas_and_due_index, runs_ledger_and_once};
pub(crate) use pairing::{meta_swap, pairing_approve_race};
pub(crate) use queue::{queue_empty_condition, queue_fifo_cap_and_dedupe};
pub(crate) use rewind::{record_title, truncate_transcript};
pub(crate) use search::search_messages;
pub(crate) use session_delete::session_delete;
pub(crate) use sessions::{atomic_entry_changes, cas_race, entry_cas, session_records, transcript_order_and_dedupe, wake_candidates};
pub(crate) use turn::{stale_counter_hints, turn_read_and_once};

use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::Job;
use crate::core::session::{SessionEntry, SessionRecord};
use crate::ports::{QueuedItem, Store};
use chrono::{TimeZone, Utc};
use std::sync::Arc;

/// An empty backing store prepared by an adapter's tests, reachable through one or two
/// handles, and cleaned up (temporary files) when dropped.
pub(crate) trait Fixture {
    /// A handle on the store.
    fn store(&self) -> Arc<dyn Store>;

    /// A second handle on the same backing store, as independent as the adapter allows (its
    /// own connection or client): two processes sharing one state.
    async fn second(&self) -> Arc<dyn Store>;
}

/// Expands to a module `$name` with one `#[tokio::test]` per conformance check. `$fixture`
/// is an expression, evaluated inside that module (which `use`s its parent's items), of a
/// future yielding `Option<impl Fixture>`: a fresh, empty store for each test, or `None` to
/// skip (a local server that is not running).
macro_rules! conformance_tests {
    ($name:ident, $fixture:expr $(,)?) => {
        mod $name {
            use super::*;

            $crate::store::conformance::conformance_tests!(@one $fixture;
                entry_cas, session_records, transcript_order_and_dedupe, meta_round_trip, counters_add_up,
                queue_fifo_cap_and_dedupe, queue_empty_condition, atomic_entry_changes, wake_candidates,
                jobs_cas_and_due_index, claims_are_never_readmitted, runs_ledger_and_once, fenced_writes,
                search_messages, turn_read_and_once, fire_writes, fire_finish_retention, meta_swap,
                truncate_transcript, record_title, skipped_occurrences);
            $crate::store::conformance::conformance_tests!(@one $fixture; session_delete);
            $crate::store::conformance::conformance_tests!(@two $fixture; cas_race, claim_race, stale_counter_hints, pairing_approve_race);
        }
    };
    (@one $fixture:expr; $($check:ident),+) => {$(
        #[tokio::test]
        async fn $check() {
            let Some(f) = $fixture.await else { return };
            $crate::store::conformance::$check($crate::store::conformance::Fixture::store(&f)).await;
        }
    )+};
    (@two $fixture:expr; $($check:ident),+) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $check() {
            let Some(f) = $fixture.await else { return };
            let a = $crate::store::conformance::Fixture::store(&f);
            let b = $crate::store::conformance::Fixture::second(&f).await;
            $crate::store::conformance::$check(a, b).await;
        }
    )+};
}
pub(crate) use conformance_tests;

fn entry(n: u32) -> SessionEntry {
    let origin = Origin::new("api", &format!("c{n}"), ChatType::Dm, Some("u"), None).unwrap();
    let key = SessionKey::derive(&origin, Default::default());
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, n).unwrap();
    SessionEntry::new(key, SessionId::generate(now, &Utc), origin, now)
}

fn record(e: &SessionEntry) -> SessionRecord {
    SessionRecord {
        session_id: e.session_id.clone(),
        session_key: e.session_key.clone(),
        platform: e.origin.platform.clone(),
        title: None,
        started_at: e.created_at,
        ended_at: None,
        end_reason: None,
    }
}

fn item(t: &str) -> QueuedItem {
    QueuedItem { text: t.into(), message_id: None, at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(), attachments: Vec::new() }
}

/// A job `id` every hour, due at `next`.
pub(crate) fn sample_job(id: &str, next: Option<chrono::DateTime<Utc>>) -> Job {
    let created = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let spec =
        crate::core::jobfile::parse_job(&serde_json::json!({"id": id, "schedule": "every 1h", "prompt": "p"}), created, chrono_tz::UTC)
            .unwrap();
    Job { next_run_at: next, ..Job::from_spec(&spec, false, created, chrono_tz::UTC) }
}

/// Counter records: absent is empty, deltas add up (concurrent adds too), records are apart
/// from each other and from the meta record of the same name.
pub(crate) async fn counters_add_up(s: Arc<dyn Store>) {
    let keys = ["usage:2026-03-01".to_string(), "usage:2026-03-02".to_string()];
    assert!(s.get_counts(&keys).await.unwrap().iter().all(|c| c.is_empty()));
    s.add_counts(&keys[0], &[("turns", 2), ("input_tokens", 100)]).await.unwrap();
    let adds = (0..8).map(|_| s.add_counts(&keys[0], &[("turns", 1)]));
    for r in futures_util::future::join_all(adds).await {
        r.unwrap();
    }
    s.add_counts(&keys[1], &[("job_runs", -1), ("job_runs", 3)]).await.unwrap();
    let got = s.get_counts(&keys).await.unwrap();
    assert_eq!(got[0].get("turns"), Some(&10));
    assert_eq!(got[0].get("input_tokens"), Some(&100));
    assert_eq!(got[1].get("job_runs"), Some(&2));
    assert_eq!(got[1].get("turns"), None);
    assert_eq!(s.get_meta(&keys[0]).await.unwrap(), None, "counters are not meta records");
}

/// Meta records: absent, written, overwritten, deleted.
pub(crate) async fn meta_round_trip(s: Arc<dyn Store>) {
    assert_eq!(s.get_meta("k").await.unwrap(), None);
    s.put_meta("k", "v1").await.unwrap();
    s.put_meta("k", "v2").await.unwrap();
    assert_eq!(s.get_meta("k").await.unwrap().as_deref(), Some("v2"));
    s.delete_meta("k").await.unwrap();
    assert_eq!(s.get_meta("k").await.unwrap(), None);
}
