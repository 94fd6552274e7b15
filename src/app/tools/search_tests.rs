//! Tests of the `session_search` tool through real turns: transcripts written by
//! `handle_inbound` on the real SQLite store, time moved by the manual clock.

use super::*;
use crate::core::ids::ChatType;
use crate::core::session::ToolCall;
use crate::ports::ManualClock;
use crate::test_support::{CountingLlm, TestApp};
use serde_json::json;

const NOW: &str = "2026-03-01T12:00:00Z";

fn kit() -> (App, Arc<ManualClock>) {
    let now = NOW.parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let app = TestApp::new(now)
        .yaml("timezone: Europe/Berlin\nsession_reset: {mode: idle, idle_minutes: 1440}\n")
        .clock(clock.clone())
        .llm(CountingLlm::new("noted"))
        .build();
    (app, clock)
}

fn origin(chat: &str) -> Origin {
    Origin::new("api", chat, ChatType::Dm, Some("u1"), None).unwrap()
}

/// One chat turn; the conversation it ran in.
async fn say(app: &App, chat: &str, text: &str) -> SessionId {
    crate::test_support::say(app, &origin(chat), text).await
}

async fn search(app: &App, sid: &SessionId, args: Value) -> (bool, Value) {
    let o = origin("c1");
    let c = ToolCtx { app, session_id: sid, origin: Some(&o), kind: TurnKind::Chat, deadline: None, call_id: None, turn: None };
    let call = ToolCall { id: "c".into(), name: "session_search".into(), arguments: args.to_string() };
    let r = app.inner.tools.toolset(&c).execute(&c, &call).await;
    (r.is_error, serde_json::from_str(&r.content).unwrap_or(Value::String(r.content)))
}

#[tokio::test]
async fn finds_a_message_from_a_week_old_session() {
    let (app, clock) = kit();
    let old = say(&app, "c1", "my favourite tea is Lapsang Souchong").await;
    clock.advance(chrono::Duration::days(7));
    let new = say(&app, "c1", "what was that tea again?").await;
    assert_ne!(old, new, "a week later the chat is in a new session");
    let (err, v) = search(&app, &new, json!({"query": "lapsang"})).await;
    assert!(!err, "{v}");
    assert_eq!(v["count"], 1, "{v}");
    let hit = &v["results"][0];
    assert_eq!(hit["session_id"], old.as_str());
    assert_eq!(hit["role"], "user");
    assert_eq!(hit["when"], "2026-03-01T13:00:00+01:00", "the message's time in the configured zone");
    assert!(hit["snippet"].as_str().unwrap().contains(">>>Lapsang<<<"), "{hit}");
    assert_eq!(v["searched"], "all past sessions");
    // The current session's own words are not results: they are already in context.
    let (_, v) = search(&app, &new, json!({"query": "tea again"})).await;
    assert_eq!(v["count"], 0, "{v}");
}

#[tokio::test]
async fn newest_first_limited_and_garbage_is_not_an_error() {
    let (app, clock) = kit();
    for chat in ["c1", "c2", "c3", "c4"] {
        say(&app, chat, &format!("deploy notes from {chat}")).await;
        clock.advance(chrono::Duration::hours(1));
    }
    let me = SessionId::named("elsewhere".into());
    let (err, v) = search(&app, &me, json!({"query": "DEPLOY notes", "limit": 2})).await;
    assert!(!err, "{v}");
    let from: Vec<&str> = v["results"].as_array().unwrap().iter().map(|h| h["snippet"].as_str().unwrap()).collect();
    assert_eq!(from.len(), 2);
    assert!(from[0].ends_with("c4") && from[1].ends_with("c3"), "newest first: {from:?}");
    // The default limit is 3, the cap 10; a numeric string is read.
    assert_eq!(search(&app, &me, json!({"query": "deploy"})).await.1["count"], 3);
    assert_eq!(search(&app, &me, json!({"query": "deploy", "limit": 500})).await.1["count"], 4);
    assert_eq!(search(&app, &me, json!({"query": "deploy", "limit": "1"})).await.1["count"], 1);
    // FTS5 syntax garbage is text, not an error.
    for q in [r#""foo AND ("#, "deploy) OR (", "NEAR(", "*", "c1:deploy", "-deploy"] {
        let (err, v) = search(&app, &me, json!({"query": q})).await;
        assert!(!err || v["error"].as_str().unwrap().contains("no words"), "{q}: {v}");
    }
    assert_eq!(search(&app, &me, json!({"query": "\"deploy notes\" c2)"})).await.1["count"], 1);
    // No query, or nothing searchable in it: a tool error.
    for args in [json!({}), json!({"query": "  "}), json!({"query": "( * )"})] {
        let (err, v) = search(&app, &me, args).await;
        assert!(err, "{v}");
    }
}
