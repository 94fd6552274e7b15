//! Fenced writes (docs/design.md#lease): a transcript append or queue pop fenced by a lease
//! epoch lands only while the session entry still holds that epoch, in one atomic write.

use super::{entry, item};
use crate::core::session::{Lease, Message, Role};
use crate::ports::{Store, StoreError};
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

fn lease() -> Lease {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    Lease { token: "t".into(), epoch: 0, owner: "h:1".into(), started_at: now, expires_at: now + Duration::minutes(11) }
}

/// Appends and pops under the held epoch land; after a new grant (or a release) the old
/// epoch writes nothing and gets `Fenced`; a missing entry fences too.
pub(crate) async fn fenced_writes(s: Arc<dyn Store>) {
    let mut e = entry(40);
    let k = e.session_key.clone();
    let at = e.created_at;
    let msg = |t: &str| Message::text(Role::Assistant, t, at);
    let missing = crate::core::session::Fence { key: k.clone(), epoch: 1 };
    assert!(matches!(s.append_fenced(&e.session_id, &[msg("none")], &missing).await, Err(StoreError::Fenced(_))));
    e.grant(lease());
    let e = s.put_entry(&e, &[]).await.unwrap();
    let old = e.fence().unwrap();
    assert_eq!(old.epoch, 1);
    s.append_fenced(&e.session_id, &[msg("a1"), msg("a2")], &old).await.unwrap();
    s.queue_push(&k, &item("q0"), 10, None).await.unwrap();
    s.queue_push(&k, &item("q1"), 10, None).await.unwrap();
    assert_eq!(s.queue_pop_into(&k, &e.session_id, Some(&old)).await.unwrap().unwrap().text, "q0");
    // A new holder takes over: the old epoch can no longer write or pop.
    let mut next = e.clone();
    next.grant(lease());
    let next = s.put_entry(&next, &[]).await.unwrap();
    assert_eq!(next.lease.as_ref().unwrap().epoch, 2);
    assert!(matches!(s.append_fenced(&e.session_id, &[msg("stale")], &old).await, Err(StoreError::Fenced(_))));
    assert!(matches!(s.queue_pop_into(&k, &e.session_id, Some(&old)).await, Err(StoreError::Fenced(_))));
    assert_eq!(s.queue_list(&k).await.unwrap().len(), 1, "a fenced pop leaves the item queued");
    s.append_fenced(&e.session_id, &[msg("fresh")], &next.fence().unwrap()).await.unwrap();
    // Released: no epoch may write.
    let mut released = next.clone();
    released.lease = None;
    s.put_entry(&released, &[]).await.unwrap();
    assert!(matches!(s.append_fenced(&e.session_id, &[msg("late")], &next.fence().unwrap()).await, Err(StoreError::Fenced(_))));
    let texts: Vec<String> = s.recent_messages(&e.session_id, 10).await.unwrap().into_iter().map(|m| m.content).collect();
    assert_eq!(texts, ["a1", "a2", "q0", "fresh"]);
}
