//! Rewriting a conversation after the fact (`/undo`, `/retry`, `/title`): a fenced
//! truncation of the transcript, and a record's title set in an entry write.

use super::{entry, record};
use crate::core::search::SearchTerms;
use crate::core::session::{Lease, Message, Role};
use crate::ports::{SessionChange, Store, StoreError};
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

fn lease() -> Lease {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    Lease { token: "t".into(), epoch: 0, owner: "h:1".into(), started_at: now, expires_at: now + Duration::minutes(11) }
}

/// A truncation keeps the first `keep` messages only under the held epoch (a stale or
/// missing lease removes nothing), drops the removed text from search, and later appends
/// continue right after what was kept; a long tail (more than one DynamoDB write) goes whole.
pub(crate) async fn truncate_transcript(s: Arc<dyn Store>) {
    let mut e = entry(50);
    let id = e.session_id.clone();
    let at = e.created_at;
    let e0 = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    e.version = e0.version;
    let msg = |t: &str, role| Message::text(role, t, at);
    let texts = |v: Vec<Message>| v.into_iter().map(|m| m.content).collect::<Vec<_>>();
    s.append_messages(&id, &[msg("q1", Role::User), msg("a1", Role::Assistant)], None).await.unwrap();
    s.append_messages(&id, &[msg("q2 zebracorn", Role::User), msg("a2", Role::Assistant), msg("a2b", Role::Assistant)], None)
        .await
        .unwrap();
    let stale = crate::core::session::Fence { key: e.session_key.clone(), epoch: 1 };
    assert!(matches!(s.truncate_messages(&id, 2, &stale).await, Err(StoreError::Fenced(_))), "no lease, no truncation");
    e.grant(lease());
    let e = s.put_entry(&e, &[]).await.unwrap();
    let fence = e.fence().unwrap();
    assert_eq!(s.truncate_messages(&id, 9, &fence).await.unwrap(), 0, "nothing past the end");
    assert_eq!(s.truncate_messages(&id, 2, &fence).await.unwrap(), 3);
    assert_eq!(texts(s.recent_messages(&id, 10).await.unwrap()), ["q1", "a1"]);
    assert_eq!(s.count_messages(&id).await.unwrap(), 2);
    let hits = s.search_messages(&SearchTerms::parse("zebracorn").unwrap(), None, None, 10).await.unwrap();
    assert!(hits.is_empty(), "removed text is not found: {hits:?}");
    s.append_fenced(&id, &[msg("q3", Role::User)], &fence).await.unwrap();
    s.append_messages(&id, &[msg("a3", Role::Assistant)], None).await.unwrap();
    assert_eq!(texts(s.recent_messages(&id, 10).await.unwrap()), ["q1", "a1", "q3", "a3"]);
    assert_eq!(s.turn_read(&id, 10, &[]).await.unwrap().count, 4);
    // A long tail, then everything.
    for chunk in 0..3 {
        let batch: Vec<Message> = (0..45).map(|i| msg(&format!("m{chunk}-{i}"), Role::Tool)).collect();
        s.append_messages(&id, &batch, None).await.unwrap();
    }
    assert_eq!(s.truncate_messages(&id, 3, &fence).await.unwrap(), 136);
    assert_eq!(texts(s.recent_messages(&id, 200).await.unwrap()), ["q1", "a1", "q3"]);
    // A new holder: the old epoch removes nothing.
    let mut next = e.clone();
    next.grant(lease());
    let next = s.put_entry(&next, &[]).await.unwrap();
    assert!(matches!(s.truncate_messages(&id, 0, &fence).await, Err(StoreError::Fenced(_))));
    assert_eq!(s.count_messages(&id).await.unwrap(), 3);
    assert_eq!(s.truncate_messages(&id, 0, &next.fence().unwrap()).await.unwrap(), 3);
    assert!(s.recent_messages(&id, 10).await.unwrap().is_empty());
    s.append_messages(&id, &[msg("again", Role::User)], None).await.unwrap();
    assert_eq!(texts(s.recent_messages(&id, 10).await.unwrap()), ["again"]);
}

/// A title change rides on an entry write: set, replaced, cleared; the other record fields
/// stay, an ended record keeps its end.
pub(crate) async fn record_title(s: Arc<dyn Store>) {
    let e = entry(51);
    let id = e.session_id.clone();
    let e = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    let title = |t: Option<&str>| SessionChange::Title { session_id: id.clone(), title: t.map(str::to_string) };
    let e = s.put_entry(&e, &[title(Some("Trip plans"))]).await.unwrap();
    assert_eq!(s.get_session(&id).await.unwrap().unwrap().title.as_deref(), Some("Trip plans"));
    let e = s.put_entry(&e, &[title(Some("Trip, day 2"))]).await.unwrap();
    let listed = s.list_sessions(Some(&e.session_key), 5).await.unwrap();
    assert_eq!(listed.iter().map(|r| r.title.as_deref()).collect::<Vec<_>>(), [Some("Trip, day 2")]);
    let end = SessionChange::End { session_id: id.clone(), reason: "session_reset".into(), at: e.created_at };
    let e = s.put_entry(&e, &[end]).await.unwrap();
    s.put_entry(&e, &[title(None)]).await.unwrap();
    let r = s.get_session(&id).await.unwrap().unwrap();
    assert_eq!((r.title, r.end_reason.as_deref(), r.started_at), (None, Some("session_reset"), e.created_at));
}
