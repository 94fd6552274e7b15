//! Tests of the `memory` tool (limits, substring edits, disabled stores, the frozen
//! snapshot) and of the `cronjob` tool's chat scope (`cron.admin_users`).

use super::*;
use crate::core::ids::ChatType;
use crate::core::session::ToolCall;
use crate::test_support::{CountingLlm, TestApp};
use serde_json::json;

const NOW: &str = "2025-03-01T12:00:00Z";

fn app(yaml: &str) -> App {
    TestApp::new(NOW.parse().unwrap()).yaml(yaml).llm(CountingLlm::new("ok")).build()
}

fn chat(id: &str, user: &str) -> Origin {
    Origin::new("telegram", id, ChatType::Dm, Some(user), None).unwrap()
}

async fn run(app: &App, origin: &Origin, name: &str, args: Value) -> (bool, Value) {
    let sid = SessionId::named("s1".into());
    let c = ToolCtx { app, session_id: &sid, origin: Some(origin), kind: TurnKind::Chat, deadline: None, call_id: None };
    let call = ToolCall { id: "c".into(), name: name.into(), arguments: args.to_string() };
    let r = app.inner.tools.toolset(&c).execute(&c, &call).await;
    (r.is_error, serde_json::from_str(&r.content).unwrap_or(Value::String(r.content)))
}

#[tokio::test]
async fn memory_add_shows_usage_and_a_full_store_refuses_with_it() {
    let app = app("memory: {memory_char_limit: 40}\n");
    let o = chat("1", "u1");
    let (err, v) = run(&app, &o, "memory", json!({"action": "add", "target": "memory", "content": "user runs NixOS"})).await;
    assert!(!err, "{v}");
    assert_eq!(v["usage"], "37% — 15/40 chars");
    assert_eq!(v["entry_count"], 1);
    let (err, v) = run(&app, &o, "memory", json!({"action": "add", "target": "memory", "content": "x".repeat(30)})).await;
    assert!(err);
    assert!(v["error"].as_str().unwrap().contains("Memory at 15/40 chars"), "{v}");
    assert_eq!(app.memory().show().await.unwrap()["memory"]["entries"], json!(["user runs NixOS"]));
}

#[tokio::test]
async fn memory_replace_and_remove_match_by_substring() {
    let app = app("");
    let o = chat("1", "u1");
    for c in ["likes tea", "likes jazz", "lives in Oslo"] {
        assert!(!run(&app, &o, "memory", json!({"action": "add", "target": "user", "content": c})).await.0);
    }
    let (err, v) = run(&app, &o, "memory", json!({"action": "remove", "target": "user", "old_text": "likes"})).await;
    assert!(err && v["error"].as_str().unwrap().contains("Multiple entries matched"), "{v}");
    let (err, v) =
        run(&app, &o, "memory", json!({"action": "replace", "target": "user", "old_text": "Oslo", "content": "lives in Bergen"})).await;
    assert!(!err, "{v}");
    let (err, v) = run(&app, &o, "memory", json!({"action": "remove", "target": "user", "old_text": "nothing"})).await;
    assert!(err && v["error"].as_str().unwrap().contains("No entry matched 'nothing'"), "{v}");
    assert!(!run(&app, &o, "memory", json!({"action": "remove", "target": "user", "old_text": "jazz"})).await.0);
    assert_eq!(app.memory().show().await.unwrap()["user"]["entries"], json!(["likes tea", "lives in Bergen"]));
    let (err, _) = run(&app, &o, "memory", json!({"action": "forget", "target": "user"})).await;
    assert!(err);
}

#[tokio::test]
async fn disabled_stores_are_not_offered_or_written() {
    let app1 = app("memory: {memory_enabled: false, user_profile_enabled: false}\n");
    let o = chat("1", "u1");
    let (err, v) = run(&app1, &o, "memory", json!({"action": "add", "target": "memory", "content": "x"})).await;
    assert!(err && v["error"].as_str().unwrap().contains("unknown tool"), "{v}");
    let app2 = app("memory: {user_profile_enabled: false}\n");
    let (err, v) = run(&app2, &o, "memory", json!({"action": "add", "target": "user", "content": "x"})).await;
    assert!(err && v["error"].as_str().unwrap().contains("memory.user_profile_enabled"), "{v}");
}

#[tokio::test]
async fn the_snapshot_is_frozen_for_the_session() {
    let app = app("");
    let o = chat("1", "u1");
    run(&app, &o, "memory", json!({"action": "add", "target": "memory", "content": "first fact"})).await;
    let s1 = SessionId::named("sess-a".into());
    let p1 = app.chat_system_prompt(&s1).await;
    assert!(p1.contains("MEMORY (your personal notes) [0% — 10/2,200 chars]\n") && p1.contains("first fact"), "{p1}");
    run(&app, &o, "memory", json!({"action": "add", "target": "memory", "content": "second fact"})).await;
    assert_eq!(app.chat_system_prompt(&s1).await, p1, "frozen mid-session");
    let p2 = app.chat_system_prompt(&SessionId::named("sess-b".into())).await;
    assert!(p2.contains("second fact"), "a new session sees the new entry");
}

async fn make_job(app: &App, origin: &Origin, name: &str) {
    let (err, v) = run(app, origin, "cronjob", json!({"action": "create", "name": name, "schedule": "every 1h", "prompt": "p"})).await;
    assert!(!err, "{v}");
}

fn job_names(v: &Value) -> Vec<String> {
    v["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn cronjob_sees_only_its_chats_jobs_unless_admin() {
    let app = app("cron: {admin_users: ['boss']}\n");
    let (a, b, boss) = (chat("A", "ann"), chat("B", "bob"), chat("C", "boss"));
    make_job(&app, &a, "job-a").await;
    make_job(&app, &b, "job-b").await;
    let (_, v) = run(&app, &a, "cronjob", json!({"action": "list"})).await;
    assert_eq!(job_names(&v), ["job-a"]);
    for action in ["remove", "pause", "run", "update"] {
        let (err, v) = run(&app, &a, "cronjob", json!({"action": action, "job_id": "job-b", "prompt": "stolen"})).await;
        assert!(err && v["error"].as_str().unwrap().contains("no job `job-b` in this chat"), "{action}: {v}");
    }
    let (_, v) = run(&app, &boss, "cronjob", json!({"action": "list"})).await;
    assert_eq!(job_names(&v), ["job-a", "job-b"]);
    let (err, v) = run(&app, &boss, "cronjob", json!({"action": "remove", "job_id": "job-b"})).await;
    assert!(!err, "{v}");
    let (_, v) = run(&app, &b, "cronjob", json!({"action": "list"})).await;
    assert!(job_names(&v).is_empty());
}

#[tokio::test]
async fn an_update_cannot_move_a_job_to_another_chat() {
    let app = app("");
    let a = chat("A", "ann");
    make_job(&app, &a, "job-a").await;
    let (err, v) =
        run(&app, &a, "cronjob", json!({"action": "update", "job_id": "job-a", "origin": {"platform": "telegram", "chat_id": "B"}})).await;
    assert!(!err, "{v}");
    let (_, v) = run(&app, &a, "cronjob", json!({"action": "list"})).await;
    assert_eq!(job_names(&v), ["job-a"]);
}
