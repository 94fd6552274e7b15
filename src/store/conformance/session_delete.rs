//! Deleting a conversation whole (`DELETE /api/sessions/{id}`): refused while its place's
//! entry holds a lease, then record, transcript (a long one: more than one DynamoDB write),
//! search rows, notes, entry and queue go, and nothing of another conversation does.

use super::{entry, item, record};
use crate::core::search::SearchTerms;
use crate::core::session::{Lease, Message, Role};
use crate::ports::{Deleted, SessionChange, Store};
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

fn lease() -> Lease {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    Lease { token: "t".into(), epoch: 0, owner: "h:1".into(), started_at: now, expires_at: now + Duration::minutes(11) }
}

fn msgs(word: &str, n: usize) -> Vec<Message> {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    (0..n).map(|i| Message::text(if i % 2 == 0 { Role::User } else { Role::Assistant }, format!("{word} {i}"), at)).collect()
}

/// Busy under a lease (nothing deleted); deleted whole once released; a second delete finds
/// nothing; an ended conversation goes without touching its place's current entry.
pub(crate) async fn session_delete(s: Arc<dyn Store>) {
    let mut e = entry(56);
    let id = e.session_id.clone();
    e.grant(lease());
    let e = s.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    for chunk in msgs("zebra", 130).chunks(60) {
        s.append_messages(&id, chunk, None).await.unwrap();
    }
    s.turn_put_note(&id, "memory_snapshot", Some("frozen")).await.unwrap();
    s.queue_push(&e.session_key, &item("later"), 10, None).await.unwrap();
    let other = entry(57);
    let other = s.put_entry(&other, &[SessionChange::Start(record(&other))]).await.unwrap();
    s.append_messages(&other.session_id, &msgs("zebra", 2), None).await.unwrap();
    s.turn_put_note(&other.session_id, "memory_snapshot", Some("kept")).await.unwrap();

    assert_eq!(s.delete_session(&id).await.unwrap(), Deleted::Busy);
    assert!(s.get_session(&id).await.unwrap().is_some());
    assert_eq!(s.count_messages(&id).await.unwrap(), 130);
    assert!(s.get_entry(&e.session_key).await.unwrap().is_some());

    let mut free = e.clone();
    free.lease = None;
    s.put_entry(&free, &[]).await.unwrap();
    assert_eq!(s.delete_session(&id).await.unwrap(), Deleted::Deleted);
    assert!(s.get_session(&id).await.unwrap().is_none());
    assert!(s.recent_messages(&id, 500).await.unwrap().is_empty());
    assert_eq!(s.count_messages(&id).await.unwrap(), 0);
    assert!(s.get_entry(&e.session_key).await.unwrap().is_none(), "the entry pointing at it goes");
    assert!(s.queue_list(&e.session_key).await.unwrap().is_empty(), "and its place's queue");
    assert!(s.turn_read(&id, 5, &["memory_snapshot"]).await.unwrap().notes.is_empty());
    let hits = s.search_messages(&SearchTerms::parse("zebra").unwrap(), None, None, 500).await.unwrap();
    assert!(hits.iter().all(|h| h.session_id == other.session_id) && !hits.is_empty(), "{hits:?}");
    assert_eq!(s.delete_session(&id).await.unwrap(), Deleted::NotFound);
    assert_eq!(s.count_messages(&other.session_id).await.unwrap(), 2);
    let notes = s.turn_read(&other.session_id, 5, &["memory_snapshot"]).await.unwrap().notes;
    assert_eq!(notes.get("memory_snapshot").map(String::as_str), Some("kept"));

    // The place starts over from nothing: a new entry is a create (version 0).
    let again = entry(56);
    s.put_entry(&again, &[SessionChange::Start(record(&again))]).await.unwrap();

    // An ended conversation of `other`'s place: deleted, the place's entry stays.
    let mut old = record(&other);
    old.session_id = crate::core::ids::SessionId::named("20250101_000000_0000dead".into());
    old.ended_at = Some(other.created_at);
    let other = s.put_entry(&other, &[SessionChange::Start(old.clone())]).await.unwrap();
    assert_eq!(s.delete_session(&old.session_id).await.unwrap(), Deleted::Deleted);
    assert!(s.get_session(&old.session_id).await.unwrap().is_none());
    assert_eq!(s.get_entry(&other.session_key).await.unwrap().unwrap().session_id, other.session_id);
}
