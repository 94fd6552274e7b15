//! Store requests of DM pairing (issue #33's budget per kind of work): an unknown DM sender
//! who is sent a code costs one read and one compare-and-set write of the platform's pairing
//! record (plus, the first time a platform pairs anyone, the two of the platforms index); a
//! repeat message from the same pending sender writes nothing.

use crate::app::budget_tests::assert_within;
use crate::app::{Inbound, ReplyPath};
use crate::core::ids::{ChatType, Origin};
use crate::store::counting::CountingStore;
use crate::test_support::{CountingLlm, Outbox, TestApp};
use std::sync::Arc;

/// Most store requests of a code sent to a sender on a platform that already pairs others.
const PAIRING_CODE_BUDGET: u64 = 2;
/// The first code of a platform also lists the platform once.
const FIRST_PAIRING_CODE_BUDGET: u64 = 4;

fn dm(user: &str, id: &str) -> Inbound {
    Inbound {
        origin: Origin::new("telegram", user, ChatType::Dm, Some(user), None).unwrap(),
        text: "hi".into(),
        message_id: Some(id.into()),
        user_name: None,
        reply: ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn a_pairing_code_stays_within_its_store_budget() {
    let counting = Arc::new(CountingStore::new(Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())));
    let outbox = Arc::new(Outbox::default());
    let llm = CountingLlm::new("ok");
    let app = TestApp::new(chrono::Utc::now())
        .yaml("platforms: {telegram: {allowed_users: [owner]}}\nunauthorized_dm_behavior: pair")
        .store(counting.clone())
        .llm(llm.clone())
        .delivery(outbox.clone())
        .build();
    counting.take();
    app.handle_inbound(dm("u2", "1")).await.unwrap();
    assert_within("first pairing code of a platform", &counting.take(), FIRST_PAIRING_CODE_BUDGET);
    app.handle_inbound(dm("u3", "2")).await.unwrap();
    assert_within("pairing code", &counting.take(), PAIRING_CODE_BUDGET);
    let sent = outbox.sent();
    assert_eq!(sent.len(), 2, "each sender got its code: {sent:?}");
    assert!(sent.iter().all(|t| t.contains("Here's your pairing code: `")), "{sent:?}");
    assert_ne!(sent[0], sent[1], "two senders, two codes");
    assert_eq!(llm.calls(), 0, "no turn ran for an unknown sender");
}
