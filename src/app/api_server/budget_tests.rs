//! Store cost of an API server turn (issue #32): a non-streaming `/v1/chat/completions`
//! turn costs no more store requests than the same turn through `/api/messages`.

use super::ApiTurn;
use crate::app::budget_tests::{TURN_BUDGET, assert_within};
use crate::app::{App, Inbound, ReplyPath};
use crate::core::ids::{ChatType, Origin};
use crate::ports::ManualClock;
use crate::store::counting::{CountingStore, Counts};
use crate::test_support::{CountingLlm, TestApp};
use chrono::{Duration, Utc};
use std::sync::Arc;

fn api_message(text: &str) -> Inbound {
    Inbound {
        origin: Origin::new("api", "c1", ChatType::Dm, Some("u1"), None).unwrap(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Caller,
        attachments: Vec::new(),
    }
}

fn chat(text: &str) -> ApiTurn {
    ApiTurn { session_id: "api-0123456789abcdef".into(), session_key: None, text: text.into(), system: None }
}

fn total(c: &Counts) -> u64 {
    c.values().sum()
}

#[tokio::test]
async fn a_chat_completion_turn_costs_no_more_store_requests_than_api_messages() {
    let counting = Arc::new(CountingStore::new(Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())));
    let now = Utc::now();
    let clock = Arc::new(ManualClock::new(now));
    let app: App = TestApp::new(now).clock(clock.clone()).store(counting.clone()).llm(CountingLlm::new("ok")).build();
    // Each measured turn is the second of its session (the session exists), as /api/messages' budget.
    app.handle_inbound(api_message("hello")).await.unwrap();
    clock.advance(Duration::seconds(5));
    counting.take();
    let out = app.handle_inbound(api_message("again")).await.unwrap();
    let messages = counting.take();
    assert_eq!(out.reply.as_deref(), Some("ok"));
    app.api_turn(chat("hello"), None).await.unwrap();
    clock.advance(Duration::seconds(5));
    counting.take();
    let out = app.api_turn(chat("again"), None).await.unwrap();
    let completion = counting.take();
    assert_eq!(out.reply.as_deref(), Some("ok"));
    assert_within("chat completion turn (sqlite)", &completion, TURN_BUDGET);
    assert!(total(&completion) <= total(&messages), "chat completion {completion:?} vs /api/messages {messages:?}");
}
