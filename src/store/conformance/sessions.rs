//! The [`SessionStore`] checks: entry compare-and-set, conversation records, transcripts
//! and their dedupe, changes applied atomically with an entry, wake candidates, and the
//! two-handle compare-and-set race.

use super::{entry, item, record};
use crate::core::ids::SessionId;
use crate::core::session::{Lease, Message, PendingMessage, Role};
use crate::ports::{Appended, InboundId, SessionChange, Store, StoreError};
use chrono::{TimeZone, Utc};
use std::sync::Arc;

/// Entry compare-and-set: create once, stale writers lose and change nothing.
pub(crate) async fn entry_cas(s: Arc<dyn Store>) {
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

/// Conversation records: first end reason wins; a lost compare-and-set starts nothing.
pub(crate) async fn session_records(s: Arc<dyn Store>) {
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

/// Transcripts keep order across appends and batches; a seen inbound id writes nothing.
pub(crate) async fn transcript_order_and_dedupe(s: Arc<dyn Store>) {
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

/// Changes ride with their entry write: all applied, or none (duplicate id, lost CAS).
pub(crate) async fn atomic_entry_changes(s: Arc<dyn Store>) {
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

/// Sweeps find expired leases, pending slots and queued keys; at startup, every lease.
pub(crate) async fn wake_candidates(s: Arc<dyn Store>) {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
    let mk = |n: u32, exp: Option<i64>| {
        let mut e = entry(n);
        e.lease = exp.map(|m| Lease {
            token: "t".into(),
            epoch: 1,
            owner: "h:1".into(),
            started_at: now,
            expires_at: now + chrono::Duration::minutes(m),
        });
        e
    };
    let expired = mk(10, Some(-1));
    let live = mk(11, Some(5));
    let idle = mk(12, None);
    let mut pending = mk(13, None);
    pending.pending.push(PendingMessage { text: "p".into(), message_id: None, at: now, attachments: Vec::new() });
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

/// Two handles on one backing store race compare-and-set writes on one key: every
/// increment that reports success is kept, none is lost.
pub(crate) async fn cas_race(a: Arc<dyn Store>, b: Arc<dyn Store>) {
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
