//! Profiles on one DynamoDB table (docs/design.md#profiles), against moto: two handles on
//! one table scoped to two profiles (`main` and `b`, and `b` and `bb` to catch a prefix
//! that matches a longer name) write the same ids, and each sees only its own sessions,
//! transcripts, queue, memory, counters, jobs, due jobs, claims, runs, ledger rows, once
//! keys, inbound ids, wake candidates and search hits; `main`'s items keep the layout of
//! tables written before profiles.

use super::DynamoStore;
use super::items::{ENTRY_SK, Keys, get_s, key};
use super::tests::{endpoint, fresh};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::{Occurrence, RunOutcome, RunRecord};
use crate::core::profile::Profile;
use crate::core::search::SearchTerms;
use crate::core::session::{Lease, Message, Role, SessionEntry, SessionRecord};
use crate::ports::{Claim, InboundId, JobStore, LedgerStore, MetaStore, QueueStore, QueuedItem, SessionChange, SessionStore};
use crate::store::conformance::sample_job;
use chrono::{DateTime, Duration, TimeZone, Utc};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()
}

fn profile(name: &str) -> Profile {
    Profile::parse(name).unwrap()
}

fn inbound() -> InboundId {
    InboundId { platform: "api".into(), chat_id: "c1".into(), message_id: "m1".into() }
}

/// Chat `c1` in `s`'s profile: an entry with a held lease that has expired by `t0 + 1 min`,
/// its conversation with one searchable message (deduplicated by [`inbound`]), a queued item.
async fn chat(s: &DynamoStore, word: &str) -> SessionEntry {
    let origin = Origin::new("api", "c1", ChatType::Dm, None, None).unwrap();
    let k = SessionKey::derive_in(s.keys.profile(), &origin, Default::default());
    let mut e = SessionEntry::new(k.clone(), SessionId::generate(t0(), &Utc), origin, t0());
    e.lease = Some(Lease { token: "t".into(), epoch: 1, owner: "h:1".into(), started_at: t0(), expires_at: t0() });
    let rec = SessionRecord {
        session_id: e.session_id.clone(),
        session_key: k.clone(),
        platform: "api".into(),
        title: None,
        started_at: t0(),
        ended_at: None,
        end_reason: None,
    };
    let msg = Message::text(Role::User, format!("tell me about {word}"), t0());
    let changes = [
        SessionChange::Start(rec),
        SessionChange::Inbound(inbound()),
        SessionChange::Append { session_id: e.session_id.clone(), messages: vec![msg] },
    ];
    let e = s.put_entry(&e, &changes).await.unwrap();
    let item = QueuedItem { text: word.into(), message_id: Some("m2".into()), at: t0(), attachments: Vec::new() };
    let dedupe = InboundId { message_id: "m2".into(), ..inbound() };
    assert_eq!(s.queue_push(&k, &item, 5, Some(&dedupe)).await.unwrap(), 1, "the same id is new in each profile");
    e
}

/// Job `j` (due at `t0`) with a claimed occurrence, a run, a ledger row; a once key, memory
/// and usage counters.
async fn work(s: &DynamoStore, word: &str) {
    let job = s.put_job(&sample_job("j", Some(t0()))).await.unwrap();
    let occ = Occurrence::new("j", t0());
    let mut adv = job.clone();
    adv.next_run_at = Some(t0() + Duration::hours(1));
    assert!(matches!(s.claim_occurrence(&occ, &adv, t0()).await.unwrap(), Claim::Claimed(_)), "the same occurrence is new in each");
    // Due again, so each profile's due index holds its `j`.
    let mut due = s.get_job("j").await.unwrap().unwrap();
    due.next_run_at = Some(t0());
    s.put_job(&due).await.unwrap();
    let run = RunRecord {
        run_id: format!("r-{word}"),
        job_id: "j".into(),
        fire_at: t0(),
        trigger: "t".into(),
        started_at: t0(),
        finished_at: Some(t0()),
        status: RunOutcome::Ok,
        output: word.into(),
        error: None,
        deliveries: vec![],
        session_id: String::new(),
        attempt: 1,
    };
    s.finish_run(&run, 10).await.unwrap();
    assert!(s.ledger_begin(&occ, "telegram:1", t0()).await.unwrap(), "the same ledger row is new in each");
    assert!(s.use_once("jti-1", t0() + Duration::hours(1), t0()).await.unwrap(), "the same once key is new in each");
    s.put_meta("memory", word).await.unwrap();
    s.add_counts("day:2026-03-01", &[("turns", i64::try_from(word.len()).unwrap())]).await.unwrap();
}

/// What `s` sees of its own data, each field checked against `word`.
async fn sees_only_its_own(s: &DynamoStore, e: &SessionEntry, word: &str) {
    let p = s.keys.profile().to_string();
    let entries = s.list_entries(100).await.unwrap();
    assert_eq!(entries.iter().map(|e| &e.session_key).collect::<Vec<_>>(), [&e.session_key], "{p}: entries");
    assert!(e.session_key.as_str().starts_with(&format!("agent:{p}:")));
    let sessions = s.list_sessions(None, 100).await.unwrap();
    assert_eq!(sessions.iter().map(|r| &r.session_id).collect::<Vec<_>>(), [&e.session_id], "{p}: sessions");
    assert_eq!(s.list_sessions(Some(&e.session_key), 100).await.unwrap().len(), 1, "{p}: sessions of the key");
    let msgs = s.recent_messages(&e.session_id, 10).await.unwrap();
    assert_eq!(msgs.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), [format!("tell me about {word}")], "{p}");
    assert_eq!(s.count_messages(&e.session_id).await.unwrap(), 1);
    assert!(s.seen_inbound(&inbound()).await.unwrap());
    let q = s.queue_list(&e.session_key).await.unwrap();
    assert_eq!(q.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), [word], "{p}: queue");
    let wake = s.wake_candidates(t0() + Duration::minutes(1), false).await.unwrap();
    assert_eq!(wake.iter().collect::<Vec<_>>(), [&e.session_key], "{p}: wake");
    let hits = s.search_messages(&SearchTerms::parse("about").unwrap(), None, None, 10).await.unwrap();
    assert_eq!(hits.iter().map(|h| &h.session_id).collect::<Vec<_>>(), [&e.session_id], "{p}: search");
    assert_eq!(s.list_jobs().await.unwrap().len(), 1, "{p}: jobs");
    assert_eq!(s.due_jobs(t0(), 10).await.unwrap().len(), 1, "{p}: due jobs");
    let occ = Occurrence::new("j", t0());
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("ok"), "{p}: claim");
    let runs = s.list_runs("j", 10).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.output.as_str()).collect::<Vec<_>>(), [word], "{p}: runs");
    assert!(!s.ledger_begin(&occ, "telegram:1", t0()).await.unwrap(), "{p}: ledger");
    assert!(!s.use_once("jti-1", t0() + Duration::hours(1), t0()).await.unwrap(), "{p}: once key");
    assert_eq!(s.get_meta("memory").await.unwrap().as_deref(), Some(word), "{p}: memory");
    let counts = s.get_counts(&["day:2026-03-01".to_string()]).await.unwrap();
    assert_eq!(counts[0].get("turns").copied(), Some(i64::try_from(word.len()).unwrap()), "{p}: usage");
}

/// Everything of `x` is invisible to `y` (before `y` writes anything), then both write the
/// same ids and each sees only its own.
async fn apart(x: DynamoStore, y: DynamoStore) {
    let ex = chat(&x, "walruses").await;
    work(&x, "walruses").await;
    assert!(y.list_entries(100).await.unwrap().is_empty());
    assert!(y.list_sessions(None, 100).await.unwrap().is_empty());
    assert!(y.get_session(&ex.session_id).await.unwrap().is_none(), "another profile's conversation is not there");
    assert!(y.recent_messages(&ex.session_id, 10).await.unwrap().is_empty());
    assert!(y.get_entry(&ex.session_key).await.unwrap().is_none());
    assert!(!y.seen_inbound(&inbound()).await.unwrap());
    assert!(y.wake_candidates(t0() + Duration::minutes(1), true).await.unwrap().is_empty());
    assert!(y.search_messages(&SearchTerms::parse("walruses").unwrap(), None, None, 10).await.unwrap().is_empty());
    assert!(y.list_jobs().await.unwrap().is_empty() && y.get_job("j").await.unwrap().is_none());
    assert!(y.due_jobs(t0() + Duration::days(1), 10).await.unwrap().is_empty());
    assert_eq!(y.claim_status(&Occurrence::new("j", t0())).await.unwrap(), None);
    assert!(y.list_runs("j", 10).await.unwrap().is_empty());
    assert_eq!(y.get_meta("memory").await.unwrap(), None);
    assert!(y.get_counts(&["day:2026-03-01".to_string()]).await.unwrap()[0].is_empty());

    let ey = chat(&y, "otters").await;
    work(&y, "otters").await;
    assert_ne!(ex.session_key, ey.session_key, "the same chat id gets a session in each profile");
    sees_only_its_own(&x, &ex, "walruses").await;
    sees_only_its_own(&y, &ey, "otters").await;
    // Deleting and clearing in one profile leaves the other's alone.
    assert!(y.delete_job("j").await.unwrap());
    y.delete_meta("memory").await.unwrap();
    assert_eq!(y.queue_clear(&ey.session_key).await.unwrap(), 1);
    assert!(x.get_job("j").await.unwrap().is_some());
    assert_eq!(x.get_meta("memory").await.unwrap().as_deref(), Some("walruses"));
    assert_eq!(x.queue_list(&ex.session_key).await.unwrap().len(), 1);
}

#[tokio::test]
async fn main_and_a_named_profile_share_a_table_apart() {
    let Some(ep) = endpoint().await else { return };
    let table = fresh(&ep).await.with_page_size(2);
    apart(table.clone().scoped(Profile::main()), table.scoped(profile("b"))).await;
}

#[tokio::test]
async fn a_profile_whose_name_extends_another_is_apart() {
    let Some(ep) = endpoint().await else { return };
    let table = fresh(&ep).await.with_shards(1);
    apart(table.clone().scoped(profile("b")), table.scoped(profile("bb"))).await;
}

/// `main` writes exactly the items of a table written before profiles: raw keys read back
/// by their pre-profile `pk`s, index partitions by their bare bases.
#[tokio::test]
async fn main_keeps_the_layout_written_before_profiles() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await.with_shards(1).scoped(Profile::main());
    let e = chat(&s, "walruses").await;
    work(&s, "walruses").await;
    let raw = |pk: String, sk: &str| {
        let s = s.clone();
        let sk = sk.to_string();
        async move { s.get(key(pk.clone(), sk.clone())).await.unwrap().unwrap_or_else(|| panic!("no item {pk} / {sk}")) }
    };
    let entry = raw(format!("KEY#{}", e.session_key.as_str()), ENTRY_SK).await;
    assert_eq!(get_s(&entry, "recent_pk"), Some("ENTRIES"));
    assert_eq!(get_s(&entry, "wake_pk"), Some("WAKE"));
    let rec = raw(format!("SESSION#{}", e.session_id.as_str()), "RECORD").await;
    assert_eq!(
        (get_s(&rec, "recent_pk"), get_s(&rec, "key_pk")),
        (Some("SESSIONS"), Some(format!("KS#{}", e.session_key.as_str())).as_deref())
    );
    raw(format!("SESSION#{}", e.session_id.as_str()), "MSG#000000000001").await;
    raw("INBOUND#api#c1#m1".into(), "SEEN").await;
    let job = raw("JOBS".into(), "JOB#j").await;
    assert_eq!(get_s(&job, "due_pk"), Some("DUE"));
    let fire = t0().timestamp();
    raw(format!("OCC#j#{fire}"), "CLAIM").await;
    raw(format!("OCC#j#{fire}"), "DELIVERY#telegram:1").await;
    raw("RUNS#j".into(), &format!("RUN#{:015}#r-walruses", t0().timestamp_millis())).await;
    raw("ONCE#jti-1".into(), "ONCE").await;
    raw("META#memory".into(), "META").await;
    raw("META#counts:day:2026-03-01".into(), "META").await;
    raw("TABLE".into(), "SHARDS").await;
}

/// A named profile's keys are `main`'s behind `@<name>/`, and read back only in it.
#[test]
fn named_keys_are_mains_behind_the_profile() {
    let (main, b) = (Keys::default(), Keys::new(profile("b")));
    let k = SessionKey::parse("agent:b:api:dm:c1").unwrap();
    assert_eq!(b.key_pk(&k), format!("@b/{}", main.key_pk(&k)));
    assert_eq!(b.base("WAKE"), "@b/WAKE");
    assert_eq!(b.jobs_pk(), "@b/JOBS");
    assert_eq!(b.key_of_pk(&b.key_pk(&k)).unwrap(), k);
    assert!(b.key_of_pk(&main.key_pk(&k)).is_err() && main.key_of_pk(&b.key_pk(&k)).is_err());
    assert!(Keys::new(profile("bb")).key_of_pk(&b.key_pk(&k)).is_err());
    let occ = Occurrence::new("j", t0());
    assert_eq!(get_s(&b.ledger_key(&occ, "x"), "pk"), Some(format!("@b/{}", main.occ_pk(&occ)).as_str()));
}
