//! One behaviour suite every [`Store`] adapter must pass (SQLite always; DynamoDB when a
//! local server is running). Adapters call [`run_all`] with a factory of empty stores.

#![allow(clippy::unwrap_used)]

use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::{Job, JobState, Occurrence, RunOutcome, RunRecord};
use crate::core::session::{Lease, Message, PendingMessage, Role, SessionEntry, SessionRecord};
use crate::ports::{Appended, Claim, InboundId, QueuedItem, SessionChange, Store, StoreError};
use chrono::{TimeZone, Utc};
use std::future::Future;
use std::sync::Arc;

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

/// Runs every single-handle check against fresh stores from `make`.
pub async fn run_all<F, Fut>(make: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    entry_cas(make().await).await;
    session_records(make().await).await;
    transcript_order_and_dedupe(make().await).await;
    meta_round_trip(make().await).await;
    queue_fifo_cap_and_dedupe(make().await).await;
    atomic_entry_changes(make().await).await;
    wake_candidates(make().await).await;
    jobs_cas_and_due_index(make().await).await;
    claims_are_never_readmitted(make().await).await;
    runs_ledger_and_once(make().await).await;
}

pub(crate) fn sample_job(id: &str, next: Option<chrono::DateTime<Utc>>) -> Job {
    let created = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let spec =
        crate::core::jobfile::parse_job(&serde_json::json!({"id": id, "schedule": "every 1h", "prompt": "p"}), created, chrono_tz::UTC)
            .unwrap();
    Job { next_run_at: next, ..Job::from_spec(&spec, false, created, chrono_tz::UTC) }
}

async fn jobs_cas_and_due_index(s: Arc<dyn Store>) {
    let t = |h| Utc.with_ymd_and_hms(2026, 1, 1, h, 0, 0).unwrap();
    let a = s.put_job(&sample_job("a", Some(t(1)))).await.unwrap();
    assert_eq!(a.version, 1);
    assert!(matches!(s.put_job(&sample_job("a", None)).await, Err(StoreError::Conflict(_))));
    s.put_job(&sample_job("b", Some(t(3)))).await.unwrap();
    let mut paused = sample_job("c", Some(t(0)));
    paused.state = JobState::Paused;
    s.put_job(&paused).await.unwrap();
    let mut disabled = sample_job("d", Some(t(0)));
    disabled.enabled = false;
    s.put_job(&disabled).await.unwrap();
    let due: Vec<String> = s.due_jobs(t(2), 10).await.unwrap().into_iter().map(|j| j.id).collect();
    assert_eq!(due, ["a"]);
    assert_eq!(s.list_jobs().await.unwrap().len(), 4);
    let mut upd = a.clone();
    upd.next_run_at = Some(t(5));
    let a2 = s.put_job(&upd).await.unwrap();
    assert!(matches!(s.put_job(&a).await, Err(StoreError::Conflict(_))), "stale version");
    assert_eq!(s.get_job("a").await.unwrap().unwrap(), a2);
    assert!(s.delete_job("a").await.unwrap());
    assert!(!s.delete_job("a").await.unwrap());
}

async fn claims_are_never_readmitted(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let j = s.put_job(&sample_job("j", Some(at))).await.unwrap();
    let occ = Occurrence::new("j", at);
    let mut adv = j.clone();
    adv.next_run_at = Some(at + chrono::Duration::hours(1));
    let Claim::Claimed(written) = s.claim_occurrence(&occ, &adv, at).await.unwrap() else { panic!("first claim") };
    assert_eq!(written.version, 2);
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("claimed"));
    // Retried with the new version, after a failure, or from a stale copy: still duplicate.
    assert!(matches!(s.claim_occurrence(&occ, &written, at).await.unwrap(), Claim::Duplicate));
    let run = RunRecord {
        run_id: "r1".into(),
        job_id: "j".into(),
        fire_at: at,
        trigger: "ticker".into(),
        started_at: at,
        finished_at: Some(at),
        status: RunOutcome::Error,
        output: String::new(),
        error: Some("boom".into()),
        deliveries: vec![],
        session_id: String::new(),
    };
    s.finish_run(&run, 50).await.unwrap();
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("error"));
    assert!(matches!(s.claim_occurrence(&occ, &written, at).await.unwrap(), Claim::Duplicate));
    // A lost job CAS leaves no claim behind.
    let occ2 = Occurrence::new("j", at + chrono::Duration::hours(1));
    assert!(matches!(s.claim_occurrence(&occ2, &adv, at).await, Err(StoreError::Conflict(_))));
    assert_eq!(s.claim_status(&occ2).await.unwrap(), None);
}

async fn runs_ledger_and_once(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    for i in 0..5 {
        let run = RunRecord {
            run_id: format!("r{i}"),
            job_id: "k".into(),
            fire_at: at,
            trigger: "t".into(),
            started_at: at + chrono::Duration::minutes(i),
            finished_at: None,
            status: RunOutcome::Ok,
            output: format!("out {i}"),
            error: None,
            deliveries: vec![],
            session_id: String::new(),
        };
        s.finish_run(&run, 3).await.unwrap();
    }
    let runs = s.list_runs("k", 10).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["r4", "r3", "r2"]);
    let occ = Occurrence::new("k", at);
    assert!(s.ledger_begin(&occ, "telegram:1", at).await.unwrap());
    assert!(!s.ledger_begin(&occ, "telegram:1", at).await.unwrap());
    assert!(s.ledger_begin(&occ, "discord:2", at).await.unwrap());
    s.ledger_finish(&occ, "telegram:1", "sent", at).await.unwrap();
    // Expiry is judged by the caller's clock only: the same key is refused until then,
    // whatever the wall clock says, and accepted again once `now` has passed it.
    let until = at + chrono::Duration::minutes(2);
    assert!(s.use_once("jti-1", until, at).await.unwrap());
    assert!(!s.use_once("jti-1", until, at).await.unwrap());
    assert!(!s.use_once("jti-1", until, until).await.unwrap(), "still live at its expiry instant");
    let later = until + chrono::Duration::seconds(1);
    assert!(s.use_once("jti-1", later + chrono::Duration::minutes(2), later).await.unwrap(), "expired keys are free again");
}

/// Many concurrent claimers (through two handles) of one occurrence: exactly one wins.
pub async fn claim_race(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let j = a.put_job(&sample_job("race", Some(at))).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        let mut adv = j.clone();
        adv.next_run_at = Some(at + chrono::Duration::hours(1));
        tasks.push(tokio::spawn(async move {
            match s.claim_occurrence(&Occurrence::new("race", at), &adv, at).await {
                Ok(Claim::Claimed(_)) => 1,
                Ok(Claim::Duplicate) | Err(StoreError::Conflict(_)) => 0,
                Err(e) => panic!("{e}"),
            }
        }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += t.await.unwrap();
    }
    assert_eq!(wins, 1);
}

fn item(t: &str) -> QueuedItem {
    QueuedItem { text: t.into(), message_id: None, at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() }
}

async fn queue_fifo_cap_and_dedupe(s: Arc<dyn Store>) {
    let e = entry(3);
    let k = &e.session_key;
    for i in 0..3 {
        assert_eq!(s.queue_push(k, &item(&format!("q{i}")), 3, None).await.unwrap(), i + 1);
    }
    assert!(matches!(s.queue_push(k, &item("q3"), 3, None).await, Err(StoreError::QueueFull(3))));
    let d = InboundId { platform: "api".into(), chat_id: "c".into(), message_id: "m".into() };
    let other = entry(4);
    s.queue_push(&other.session_key, &item("x"), 3, Some(&d)).await.unwrap();
    assert!(matches!(s.queue_push(&other.session_key, &item("x"), 3, Some(&d)).await, Err(StoreError::DuplicateInbound)));
    assert_eq!(s.queue_list(&other.session_key).await.unwrap().len(), 1);
    // Pops move items into the transcript, in order.
    assert_eq!(s.queue_pop_into(k, &e.session_id).await.unwrap().unwrap().text, "q0");
    assert_eq!(s.queue_pop_into(k, &e.session_id).await.unwrap().unwrap().text, "q1");
    let t = s.recent_messages(&e.session_id, 10).await.unwrap();
    assert_eq!(t.iter().map(|m| (m.role, m.content.as_str())).collect::<Vec<_>>(), [(Role::User, "q0"), (Role::User, "q1")]);
    assert_eq!(s.queue_list(k).await.unwrap().iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), ["q2"]);
    assert_eq!(s.queue_clear(k).await.unwrap(), 1);
    assert!(s.queue_pop_into(k, &e.session_id).await.unwrap().is_none());
}

async fn atomic_entry_changes(s: Arc<dyn Store>) {
    let e = entry(5);
    let v1 = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    let d = InboundId { platform: "telegram".into(), chat_id: "5".into(), message_id: "1".into() };
    let msgs = vec![Message::text(Role::User, "a", e.created_at), Message::text(Role::User, "b", e.created_at)];
    let append = SessionChange::Append { session_id: e.session_id.clone(), messages: msgs };
    let v2 = s.put_entry(&v1, &[SessionChange::Inbound(d.clone()), append.clone()]).await.unwrap();
    assert_eq!(s.count_messages(&e.session_id).await.unwrap(), 2);
    // A repeated inbound id fails the whole write: no version bump, no messages.
    assert!(matches!(s.put_entry(&v2, &[SessionChange::Inbound(d), append.clone()]).await, Err(StoreError::DuplicateInbound)));
    assert_eq!(s.get_entry(&e.session_key).await.unwrap().unwrap().version, 2);
    assert_eq!(s.count_messages(&e.session_id).await.unwrap(), 2);
    // A lost compare-and-set appends nothing either.
    assert!(matches!(s.put_entry(&v1, &[append]).await, Err(StoreError::Conflict(_))));
    assert_eq!(s.count_messages(&e.session_id).await.unwrap(), 2);
    // End then Reopen.
    let at = e.created_at;
    let v3 =
        s.put_entry(&v2, &[SessionChange::End { session_id: e.session_id.clone(), reason: "session_switch".into(), at }]).await.unwrap();
    assert!(s.get_session(&e.session_id).await.unwrap().unwrap().ended_at.is_some());
    s.put_entry(&v3, &[SessionChange::Reopen(e.session_id.clone())]).await.unwrap();
    assert!(s.get_session(&e.session_id).await.unwrap().unwrap().ended_at.is_none());
}

async fn wake_candidates(s: Arc<dyn Store>) {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
    let mk = |n: u32, exp: Option<i64>| {
        let mut e = entry(n);
        e.lease =
            exp.map(|m| Lease { token: "t".into(), owner: "h:1".into(), started_at: now, expires_at: now + chrono::Duration::minutes(m) });
        e
    };
    let expired = mk(10, Some(-1));
    let live = mk(11, Some(5));
    let idle = mk(12, None);
    let mut pending = mk(13, None);
    pending.pending.push(PendingMessage { text: "p".into(), message_id: None, at: now });
    let queued = mk(14, None);
    for e in [&expired, &live, &idle, &pending, &queued] {
        s.put_entry(e, &[]).await.unwrap();
    }
    s.queue_push(&queued.session_key, &item("q"), 5, None).await.unwrap();
    let mut got = s.wake_candidates(now, false).await.unwrap();
    got.sort();
    let mut want = vec![expired.session_key.clone(), pending.session_key.clone(), queued.session_key.clone()];
    want.sort();
    assert_eq!(got, want);
    let all = s.wake_candidates(now, true).await.unwrap();
    assert!(all.contains(&live.session_key) && !all.contains(&idle.session_key));
}

async fn entry_cas(s: Arc<dyn Store>) {
    let e = entry(1);
    assert!(s.get_entry(&e.session_key).await.unwrap().is_none());
    let v1 = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    assert_eq!(v1.version, 1);
    // Creating again from version 0 loses.
    assert!(matches!(s.put_entry(&e, &[]).await, Err(StoreError::Conflict(_))));
    let mut upd = v1.clone();
    upd.input_tokens = 7;
    let v2 = s.put_entry(&upd, &[]).await.unwrap();
    assert_eq!(v2.version, 2);
    // A stale writer loses and changes nothing.
    let mut stale = v1.clone();
    stale.input_tokens = 99;
    assert!(matches!(s.put_entry(&stale, &[]).await, Err(StoreError::Conflict(_))));
    assert_eq!(s.get_entry(&e.session_key).await.unwrap().unwrap(), v2);
    assert_eq!(s.list_entries(10).await.unwrap().len(), 1);
}

async fn session_records(s: Arc<dyn Store>) {
    let e = entry(2);
    let v1 = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    let at = Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap();
    let end = |r: &str| SessionChange::End { session_id: e.session_id.clone(), reason: r.into(), at };
    let v2 = s.put_entry(&v1, &[end("session_reset")]).await.unwrap();
    s.put_entry(&v2, &[end("session_switch")]).await.unwrap();
    let r = s.get_session(&e.session_id).await.unwrap().unwrap();
    assert_eq!(r.end_reason.as_deref(), Some("session_reset"), "first end reason wins");
    assert_eq!(r.ended_at, Some(at));
    assert_eq!(s.list_sessions(Some(&e.session_key), 10).await.unwrap().len(), 1);
    assert_eq!(s.list_sessions(None, 10).await.unwrap()[0].session_id, e.session_id);
    // A failed CAS applies none of its changes.
    let other = SessionId::generate(at, &Utc);
    let mut rec = record(&e);
    rec.session_id = other.clone();
    assert!(s.put_entry(&v1, &[SessionChange::Start(rec)]).await.is_err());
    assert!(s.get_session(&other).await.unwrap().is_none());
}

async fn transcript_order_and_dedupe(s: Arc<dyn Store>) {
    let id = SessionId::generate(Utc::now(), &Utc);
    let t = Utc::now();
    for i in 0..30 {
        let m = Message::text(Role::User, format!("m{i}"), t);
        s.append_messages(&id, &[m], None).await.unwrap();
    }
    let batch: Vec<Message> = (30..35).map(|i| Message::text(Role::Assistant, format!("m{i}"), t)).collect();
    s.append_messages(&id, &batch, None).await.unwrap();
    let all = s.recent_messages(&id, 100).await.unwrap();
    assert_eq!(all.iter().map(|m| m.content.clone()).collect::<Vec<_>>(), (0..35).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let tail = s.recent_messages(&id, 3).await.unwrap();
    assert_eq!(tail.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["m32", "m33", "m34"]);
    assert_eq!(s.count_messages(&id).await.unwrap(), 35);
    let d = InboundId { platform: "telegram".into(), chat_id: "1".into(), message_id: "77".into() };
    assert!(!s.seen_inbound(&d).await.unwrap());
    let m = Message::text(Role::User, "once", t);
    assert_eq!(s.append_messages(&id, std::slice::from_ref(&m), Some(&d)).await.unwrap(), Appended::Stored);
    assert_eq!(s.append_messages(&id, &[m], Some(&d)).await.unwrap(), Appended::Duplicate);
    assert!(s.seen_inbound(&d).await.unwrap());
    assert_eq!(s.count_messages(&id).await.unwrap(), 36);
}

async fn meta_round_trip(s: Arc<dyn Store>) {
    assert_eq!(s.get_meta("k").await.unwrap(), None);
    s.put_meta("k", "v1").await.unwrap();
    s.put_meta("k", "v2").await.unwrap();
    assert_eq!(s.get_meta("k").await.unwrap().as_deref(), Some("v2"));
    s.delete_meta("k").await.unwrap();
    assert_eq!(s.get_meta("k").await.unwrap(), None);
}

/// Two handles on one backing store race compare-and-set writes on one key: every
/// increment that reports success is kept, none is lost.
pub async fn cas_race(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let e = entry(9);
    a.put_entry(&e, &[]).await.unwrap();
    let key = e.session_key.clone();
    let mut tasks = Vec::new();
    for (i, s) in [a.clone(), b.clone(), a.clone(), b.clone()].into_iter().enumerate() {
        let key = key.clone();
        tasks.push(tokio::spawn(async move {
            let mut wins = 0u64;
            for _ in 0..25 {
                loop {
                    let mut cur = s.get_entry(&key).await.unwrap().unwrap();
                    cur.input_tokens += 1;
                    match s.put_entry(&cur, &[]).await {
                        Ok(_) => break,
                        Err(StoreError::Conflict(_)) => tokio::task::yield_now().await,
                        Err(e) => panic!("writer {i}: {e}"),
                    }
                }
                wins += 1;
            }
            wins
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    let fin = b.get_entry(&key).await.unwrap().unwrap();
    assert_eq!(fin.input_tokens, total);
    assert_eq!(fin.version, total + 1);
}
