//! The flush turn before an automatic (idle) reset, in process with a manual clock: it runs
//! once, with only `memory`, when the ending session had ≥ `memory.flush_min_turns` user
//! turns, and a failing flush never blocks the reset.

use crate::app::{App, Inbound, ReplyPath};
use crate::core::ids::{ChatType, Origin};
use crate::core::session::ToolCall;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ManualClock};
use crate::test_support::TestApp;
use async_trait::async_trait;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Answers from a script (then `ok`), recording every request.
#[derive(Default)]
struct Scripted {
    script: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    seen: Mutex<Vec<ChatRequest>>,
}

#[async_trait]
impl Llm for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(req.clone());
        self.script.lock().unwrap().pop_front().unwrap_or_else(|| Ok(ChatResponse { content: "ok".into(), ..ChatResponse::default() }))
    }
}

fn setup() -> (App, Arc<Scripted>, Arc<ManualClock>) {
    let now = "2025-03-01T12:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let llm = Arc::new(Scripted::default());
    let app = TestApp::new(now).yaml("session_reset: {mode: idle, idle_minutes: 60}\n").clock(clock.clone()).llm(llm.clone()).build();
    (app, llm, clock)
}

async fn say(app: &App, chat: &str, text: &str) {
    let origin = Origin::new("api", chat, ChatType::Dm, Some("u1"), None).unwrap();
    let msg = Inbound { origin, text: text.into(), message_id: None, user_name: None, reply: ReplyPath::Caller, attachments: Vec::new() };
    app.sessions().handle_inbound(msg).await.unwrap();
}

fn is_flush(r: &ChatRequest) -> bool {
    r.messages.last().is_some_and(|m| m.content.starts_with("[System: This session is about to be reset"))
}

#[tokio::test]
async fn an_idle_reset_flushes_once_after_enough_turns() {
    let (app, llm, clock) = setup();
    for i in 0..6 {
        say(&app, "c1", &format!("m{i}")).await;
    }
    let add = ToolCall {
        id: "f1".into(),
        name: "memory".into(),
        arguments: r#"{"action":"add","target":"user","content":"likes brevity"}"#.into(),
    };
    llm.script.lock().unwrap().push_back(Ok(ChatResponse { tool_calls: vec![add], ..ChatResponse::default() }));
    clock.advance(chrono::Duration::hours(2));
    say(&app, "c1", "back again").await;
    let seen = llm.seen.lock().unwrap().clone();
    let flushes: Vec<&ChatRequest> = seen.iter().filter(|r| is_flush(r)).collect();
    assert_eq!(flushes.len(), 1, "one flush model call (its answer had a tool call, the next one none)");
    assert_eq!(flushes[0].tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["memory"]);
    assert!(flushes[0].messages.iter().any(|m| m.content == "m5"));
    let last = seen.last().unwrap();
    assert_eq!(last.messages.last().unwrap().content, "back again");
    assert_eq!(last.messages.iter().filter(|m| m.role == crate::core::session::Role::User).count(), 1, "a fresh session");
    assert!(last.messages[0].content.contains("likes brevity"), "the new session's snapshot has the flushed memory");
}

#[tokio::test]
async fn fewer_turns_no_flush_and_a_failing_flush_does_not_block_the_reset() {
    let (app, llm, clock) = setup();
    for i in 0..5 {
        say(&app, "few", &format!("m{i}")).await;
    }
    clock.advance(chrono::Duration::hours(2));
    say(&app, "few", "back").await;
    assert!(!llm.seen.lock().unwrap().iter().any(is_flush), "5 user turns: no flush");

    for i in 0..6 {
        say(&app, "many", &format!("m{i}")).await;
    }
    llm.script.lock().unwrap().push_back(Err(LlmError::Unreachable("down".into())));
    clock.advance(chrono::Duration::hours(2));
    say(&app, "many", "back").await;
    let seen = llm.seen.lock().unwrap().clone();
    assert!(is_flush(&seen[seen.len() - 2]), "the flush was tried");
    assert_eq!(seen.last().unwrap().messages.last().unwrap().content, "back", "and the turn ran in the new session");
}
