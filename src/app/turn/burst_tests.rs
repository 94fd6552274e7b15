//! A burst in `interrupt` mode (issue 28): messages arriving within Hermes' batching delay
//! while a turn runs start no model call that would be thrown away — the drain waits for the
//! burst to settle, then one turn answers the latest with every message in the transcript.
//! Every decision reads the manual clock port, so what happens does not depend on how fast
//! the machine is; the drain's own waits are short tokio sleeps, bounded by the burst cap.

use crate::app::{App, Inbound, ReplyPath};
use crate::core::ids::{ChatType, Origin, SessionKey};
use crate::core::session::Role;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ManualClock};
use crate::test_support::{Outbox, TestApp};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A model that takes a minute to answer a last user message starting with `slow` (a turn
/// that is running when the burst comes) and answers everything else at once. Records each
/// request.
#[derive(Default)]
struct SlowFirst(Mutex<Vec<ChatRequest>>);

#[async_trait]
impl Llm for SlowFirst {
    fn name(&self) -> &'static str {
        "slow-first"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.lock().unwrap().push(req.clone());
        let last = req.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.clone()).unwrap_or_default();
        if last.starts_with("slow") {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Ok(ChatResponse { content: format!("echo: {last}"), ..ChatResponse::default() })
    }
}

impl SlowFirst {
    fn calls(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

fn inbound(text: &str) -> Inbound {
    Inbound {
        origin: Origin::new("telegram", "c1", ChatType::Dm, Some("u1"), None).unwrap(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

fn app(llm: Arc<SlowFirst>, outbox: Arc<Outbox>) -> (App, Arc<ManualClock>) {
    let base: DateTime<Utc> = "2026-01-01T10:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(base));
    let app =
        TestApp::new(base).yaml("allow_all_users: true").home("/nonexistent-home").clock(clock.clone()).llm(llm).delivery(outbox).build();
    (app, clock)
}

/// Waits (tokio time, bounded) until `f` holds.
async fn until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !f() {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    true
}

async fn user_texts(app: &App) -> Vec<String> {
    let key = SessionKey::derive(&inbound("x").origin, Default::default());
    let e = app.test_store().get_entry(&key).await.unwrap().unwrap();
    let msgs = app.test_store().recent_messages(&e.session_id, 100).await.unwrap();
    msgs.into_iter().filter(|m| m.role == Role::User).map(|m| m.content).collect()
}

#[tokio::test]
async fn two_messages_5_ms_apart_during_a_turn_cost_one_model_call_for_the_latest() {
    let (llm, outbox) = (Arc::new(SlowFirst::default()), Arc::new(Outbox::default()));
    let (app, clock) = app(llm.clone(), outbox.clone());
    let a = app.clone();
    let running = tokio::spawn(async move { a.handle_inbound(inbound("slow start")).await });
    assert!(until(5, || llm.calls() == 1).await);
    assert!(app.handle_inbound(inbound("m1")).await.unwrap().busy);
    clock.advance(chrono::Duration::milliseconds(5));
    assert!(app.handle_inbound(inbound("m2")).await.unwrap().busy);
    running.await.unwrap().unwrap();
    // The burst is quiet for 350 ms (Hermes' busy-text debounce) by the clock: the turn starts.
    assert_eq!(llm.calls(), 1, "no turn while the burst may go on");
    clock.advance(chrono::Duration::milliseconds(360));
    assert!(until(10, || outbox.sent().iter().any(|s| s == "echo: m2")).await, "{:?}", outbox.sent());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let reqs = llm.0.lock().unwrap().clone();
    assert_eq!(reqs.len(), 2, "the running turn and one for the latest: {:?}", outbox.sent());
    let seen: Vec<&str> = reqs[1].messages.iter().filter(|m| m.role == Role::User).map(|m| m.content.as_str()).collect();
    assert_eq!(seen, ["slow start", "m1", "m2"], "the model sees the whole burst");
    assert_eq!(user_texts(&app).await, ["slow start", "m1", "m2"]);
    assert!(!outbox.sent().iter().any(|s| s == "echo: slow start" || s == "echo: m1"), "{:?}", outbox.sent());
}

#[tokio::test]
async fn a_burst_is_answered_by_its_cap_and_a_clock_that_stands_still_holds_nothing() {
    let (llm, outbox) = (Arc::new(SlowFirst::default()), Arc::new(Outbox::default()));
    let (app, clock) = app(llm.clone(), outbox.clone());
    let a = app.clone();
    let running = tokio::spawn(async move { a.handle_inbound(inbound("slow start")).await });
    assert!(until(5, || llm.calls() == 1).await);
    // One message every 200 ms by the clock: never quiet for 350 ms, so only the 1 s cap
    // (from the first) lets the turn start, with all six.
    for i in 0..6 {
        if i > 0 {
            clock.advance(chrono::Duration::milliseconds(200));
        }
        app.handle_inbound(inbound(&format!("b{i}"))).await.unwrap();
    }
    running.await.unwrap().unwrap();
    assert!(until(10, || llm.calls() == 2).await);
    let seen = llm.0.lock().unwrap()[1].messages.iter().filter(|m| m.role == Role::User).count();
    assert_eq!(seen, 7, "start and the six of the burst");
    // The clock stands still: the drain's own bound (tokio time, the 1 s cap) still starts
    // the next turn, so a stuck clock cannot hold a chat.
    let a = app.clone();
    let running = tokio::spawn(async move { a.handle_inbound(inbound("slow again")).await });
    assert!(until(5, || llm.calls() == 3).await);
    let waited = tokio::time::Instant::now();
    assert!(app.handle_inbound(inbound("y")).await.unwrap().busy);
    running.await.unwrap().unwrap();
    assert!(until(10, || outbox.sent().iter().any(|s| s == "echo: y")).await, "{:?}", outbox.sent());
    assert!(waited.elapsed() < Duration::from_secs(5), "bounded");
    assert_eq!(llm.calls(), 4);
}
