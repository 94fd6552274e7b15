//! The [`QueueStore`] checks: FIFO order, the cap, inbound dedupe, and pops that move items
//! into the transcript.

use super::{entry, item};
use crate::core::session::Role;
use crate::ports::{InboundId, SessionChange, Store, StoreError};
use std::sync::Arc;

/// The FIFO: order, the cap, inbound dedupe, pops into the transcript, clear.
pub(crate) async fn queue_fifo_cap_and_dedupe(s: Arc<dyn Store>) {
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
    assert_eq!(s.queue_pop_into(k, &e.session_id, None).await.unwrap().unwrap().text, "q0");
    assert_eq!(s.queue_pop_into(k, &e.session_id, None).await.unwrap().unwrap().text, "q1");
    let t = s.recent_messages(&e.session_id, 10).await.unwrap();
    assert_eq!(t.iter().map(|m| (m.role, m.content.as_str())).collect::<Vec<_>>(), [(Role::User, "q0"), (Role::User, "q1")]);
    assert_eq!(s.queue_list(k).await.unwrap().iter().map(|i| i.text.as_str()).collect::<Vec<_>>(), ["q2"]);
    assert_eq!(s.queue_clear(k).await.unwrap(), 1);
    assert!(s.queue_pop_into(k, &e.session_id, None).await.unwrap().is_none());
}

/// A write conditioned on an empty FIFO: passes with no queue (never pushed) and with a
/// drained one; fails whole with `QueueNotEmpty` while an item waits (the entry keeps its
/// version); the entry's own CAS is checked first.
pub(crate) async fn queue_empty_condition(s: Arc<dyn Store>) {
    let e = entry(5);
    let k = &e.session_key;
    let empty = || [SessionChange::QueueEmpty(k.clone())];
    let v1 = s.put_entry(&e, &empty()).await.unwrap();
    s.queue_push(k, &item("q"), 3, None).await.unwrap();
    assert!(matches!(s.put_entry(&v1, &empty()).await, Err(StoreError::QueueNotEmpty(_))));
    assert_eq!(s.get_entry(k).await.unwrap().unwrap().version, v1.version, "nothing was written");
    assert!(matches!(s.put_entry(&e, &empty()).await, Err(StoreError::Conflict(_))), "a stale version loses first");
    s.queue_pop_into(k, &e.session_id, None).await.unwrap().unwrap();
    let v2 = s.put_entry(&v1, &empty()).await.unwrap();
    assert_eq!(v2.version, v1.version + 1, "a drained queue is empty");
}
