//! The message turn's folded operations (docs/design.md#store-cost): the one read of the
//! transcript tail, count and session notes, the once key written with an entry update, and
//! appends from two processes whose counter hints go stale.

use super::{entry, record};
use crate::core::session::{Message, Role};
use crate::ports::{SessionChange, Store, StoreError};
use chrono::Duration;
use std::sync::Arc;

fn texts(m: &[Message]) -> Vec<String> {
    m.iter().map(|m| m.content.clone()).collect()
}

/// `turn_read` returns the newest messages, the count and the asked-for notes in one read;
/// a `Once` change lands with its entry write, and a taken key fails the whole write.
pub(crate) async fn turn_read_and_once(s: Arc<dyn Store>) {
    let e = entry(50);
    let at = e.created_at;
    let msg = |t: &str| Message::text(Role::User, t, at);
    let id = e.session_id.clone();
    let append = |ts: &[&str]| SessionChange::Append { session_id: id.clone(), messages: ts.iter().map(|t| msg(t)).collect() };
    let e = s.put_entry(&e, &[SessionChange::Start(record(&e)), append(&["a", "b", "c"])]).await.unwrap();
    let names = ["memory_snapshot", "summary"];
    let r = s.turn_read(&id, 2, &names).await.unwrap();
    assert_eq!((texts(&r.messages), r.count, r.notes.len()), (vec!["b".to_string(), "c".to_string()], 3, 0));
    s.turn_put_note(&id, "memory_snapshot", Some("snap")).await.unwrap();
    s.turn_put_note(&id, "summary", Some("{}")).await.unwrap();
    s.turn_put_note(&id, "other", Some("x")).await.unwrap();
    let r = s.turn_read(&id, 10, &names).await.unwrap();
    assert_eq!(texts(&r.messages), ["a", "b", "c"]);
    assert_eq!(r.notes.get("memory_snapshot").map(String::as_str), Some("snap"));
    assert_eq!(r.notes.get("summary").map(String::as_str), Some("{}"));
    assert!(!r.notes.contains_key("other"), "only the asked-for notes");
    let r = s.turn_read(&id, 0, &["memory_snapshot"]).await.unwrap();
    assert!(r.messages.is_empty() && r.count == 3 && r.notes.len() == 1);
    s.turn_put_note(&id, "memory_snapshot", None).await.unwrap();
    assert!(!s.turn_read(&id, 1, &names).await.unwrap().notes.contains_key("memory_snapshot"), "deleted");
    // The once key with the answer: the first write lands whole, a second with the same key
    // writes nothing (not the entry, not the message).
    let once = |now| SessionChange::Once { key: "reply:k:1:reply".into(), expires_at: at + Duration::days(1), now };
    let e = s.put_entry(&e, &[append(&["answer"]), once(at)]).await.unwrap();
    assert!(matches!(s.put_entry(&e, &[append(&["twice"]), once(at)]).await, Err(StoreError::OnceUsed(_))));
    assert!(!s.use_once("reply:k:1:reply", at + Duration::days(1), at).await.unwrap(), "the key is taken");
    let r = s.turn_read(&id, 10, &[]).await.unwrap();
    assert_eq!((texts(&r.messages).last().cloned(), r.count), (Some("answer".to_string()), 4));
    // The entry was not written either: its version still matches. An expired key is free.
    s.put_entry(&e, &[append(&["later"]), once(at + Duration::days(2))]).await.unwrap();
    assert_eq!(s.count_messages(&id).await.unwrap(), 5);
}

/// Two processes append to one conversation in turns, each with a counter hint the other
/// made stale: every message lands once, in order.
pub(crate) async fn stale_counter_hints(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let e = entry(51);
    let at = e.created_at;
    let id = e.session_id.clone();
    let msg = |t: &str| vec![Message::text(Role::User, t, at)];
    a.put_entry(&e, &[SessionChange::Start(record(&e))]).await.unwrap();
    for i in 0..3 {
        a.append_messages(&id, &msg(&format!("a{i}")), None).await.unwrap();
        b.append_messages(&id, &msg(&format!("b{i}")), None).await.unwrap();
        // An entry write that appends, on a's stale hint.
        let cur = a.get_entry(&e.session_key).await.unwrap().unwrap();
        a.put_entry(&cur, &[SessionChange::Append { session_id: id.clone(), messages: msg(&format!("e{i}")) }]).await.unwrap();
    }
    let want = ["a0", "b0", "e0", "a1", "b1", "e1", "a2", "b2", "e2"];
    for s in [&a, &b] {
        let r = s.turn_read(&id, 20, &[]).await.unwrap();
        assert_eq!(texts(&r.messages), want);
        assert_eq!(r.count, 9);
    }
}
