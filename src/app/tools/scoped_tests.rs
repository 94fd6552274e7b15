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
    let c = ToolCtx { app, session_id: &sid, origin: Some(origin), kind: TurnKind::Chat, deadline: None, call_id: None, turn: None };
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
    for action in ["remove", "pause", "run", "update", "resume"] {
        // Another chat's job gets exactly the answer of a job that does not exist.
        let (err, v) = run(&app, &a, "cronjob", json!({"action": action, "job_id": "job-b", "prompt": "stolen"})).await;
        let (_, none) = run(&app, &a, "cronjob", json!({"action": action, "job_id": "job-zz", "prompt": "stolen"})).await;
        assert!(err, "{action}: {v}");
        assert_eq!(v["error"].as_str().unwrap().replace("job-b", "X"), none["error"].as_str().unwrap().replace("job-zz", "X"), "{action}");
    }
    // So does its id.
    let (_, v) = run(&app, &b, "cronjob", json!({"action": "list"})).await;
    let b_id = v["jobs"][0]["id"].as_str().unwrap().to_string();
    let (_, by_id) = run(&app, &a, "cronjob", json!({"action": "pause", "job_id": b_id})).await;
    assert_eq!(by_id["error"].as_str().unwrap(), format!("no job `{b_id}`"));
    let (_, v) = run(&app, &boss, "cronjob", json!({"action": "list"})).await;
    let mut all = job_names(&v);
    all.sort();
    assert_eq!(all, ["job-a", "job-b"]);
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

#[tokio::test]
async fn create_does_not_tell_that_another_chat_has_the_name() {
    let app = app("");
    let (a, b) = (chat("A", "ann"), chat("B", "bob"));
    make_job(&app, &b, "standup").await;
    let create = json!({"action": "create", "name": "standup", "schedule": "every 1h", "prompt": "p"});
    let (err, taken) = run(&app, &a, "cronjob", create.clone()).await;
    assert!(!err, "a name taken in another chat is free in this one: {taken}");
    let (err, v) = run(&app, &a, "cronjob", json!({"action": "create", "name": "fresh", "schedule": "every 1h", "prompt": "p"})).await;
    assert!(!err, "{v}");
    let id = |v: &Value| v["created"]["id"].as_str().unwrap().to_string();
    assert!(id(&taken) != "standup" && id(&v) != "fresh", "ids are never derived from the name in a chat: {taken} {v}");
    assert_eq!(id(&taken).len(), id(&v).len());
    let (err, again) = run(&app, &a, "cronjob", create).await;
    assert!(err && again["error"].as_str().unwrap().contains("already exists in this chat"), "{again}");
    let mut paused = Vec::new();
    for chat in [&a, &b] {
        let (err, v) = run(&app, chat, "cronjob", json!({"action": "pause", "job_id": "standup"})).await;
        assert!(!err && v["paused"]["name"] == "standup", "{v}");
        paused.push(v["paused"]["id"].as_str().unwrap().to_string());
    }
    assert!(paused[0] == id(&taken) && paused[0] != paused[1], "each chat reaches its own `standup`: {paused:?}");
}

#[tokio::test]
async fn a_chat_holds_every_schedule_form_to_a_minute() {
    let app = app("cron: {admin_users: ['boss'], min_interval_seconds: 10}\n");
    let (a, boss) = (chat("A", "ann"), chat("C", "boss"));
    let create = |s: &str| json!({"action": "create", "name": format!("j{}", s.len()), "schedule": s, "prompt": "p"});
    for schedule in ["* * * * * *", "*/30 * * * * *", "0,30 * * * * *", "every 30s", "*/10 * * * * *"] {
        let (err, v) = run(&app, &a, "cronjob", create(schedule)).await;
        assert!(err, "{schedule}: {v}");
    }
    for schedule in ["0 * * * * *", "* * * * *", "every 1m"] {
        let (err, v) = run(&app, &a, "cronjob", json!({"action": "create", "name": schedule, "schedule": schedule, "prompt": "p"})).await;
        assert!(!err, "{schedule}: {v}");
    }
    let (err, v) = run(&app, &a, "cronjob", json!({"action": "update", "job_id": "every 1m", "schedule": "* * * * * *"})).await;
    assert!(err && v["error"].as_str().unwrap().contains("at most once every 60 s"), "an update too: {v}");
    // An admin goes down to cron.min_interval_seconds, and no lower.
    let (err, v) = run(&app, &boss, "cronjob", create("*/10 * * * * *")).await;
    assert!(!err, "{v}");
    let (err, v) = run(&app, &boss, "cronjob", create("*/5 * * * * *")).await;
    assert!(err && v["error"].as_str().unwrap().contains("10 s"), "{v}");
    // The operator's doors keep their forms: the REST/CLI path takes a per-second cron.
    let spec = crate::core::jobfile::parse_job(
        &json!({"id": "op", "schedule": "* * * * * *", "prompt": "p"}),
        NOW.parse().unwrap(),
        app.inner.cfg.tz,
    )
    .unwrap();
    assert!(app.jobs().create(spec, false).await.is_ok());
}

#[tokio::test]
async fn a_chat_feeds_a_job_only_the_outputs_of_its_own_jobs() {
    let app = app("cron: {admin_users: ['boss']}\n");
    let (a, b, boss) = (chat("A", "ann"), chat("B", "bob"), chat("C", "boss"));
    make_job(&app, &a, "job-a").await;
    make_job(&app, &b, "job-b").await;
    let id_of = |v: &Value| v["jobs"][0]["id"].as_str().unwrap().to_string();
    let a_id = id_of(&run(&app, &a, "cronjob", json!({"action": "list"})).await.1);
    let b_id = id_of(&run(&app, &b, "cronjob", json!({"action": "list"})).await.1);
    let create = |from: &str| json!({"action": "create", "name": "digest", "schedule": "every 1h", "prompt": "p", "context_from": [from]});
    let (err, v) = run(&app, &a, "cronjob", create(&b_id)).await;
    assert!(err, "another chat's job is refused: {v}");
    assert_eq!(v["error"].as_str().unwrap(), format!("`context_from`: no job `{b_id}`"));
    let (err, v) = run(&app, &a, "cronjob", json!({"action": "update", "job_id": "job-a", "context_from": b_id})).await;
    assert!(err, "{v}");
    let (err, v) = run(&app, &a, "cronjob", create(&a_id)).await;
    assert!(!err, "its own job is fine: {v}");
    assert_eq!(v["created"]["context_from"], json!([a_id]));
    let (err, v) = run(&app, &boss, "cronjob", create(&b_id)).await;
    assert!(!err, "an admin sees every job: {v}");
}

#[tokio::test]
async fn cronjob_run_of_a_paused_job_answers_paused_as_the_fire_route_does() {
    let app = app("");
    let a = chat("A", "ann");
    make_job(&app, &a, "job-p").await;
    let (err, v) = run(&app, &a, "cronjob", json!({"action": "pause", "job_id": "job-p"})).await;
    assert!(!err, "{v}");
    let (err, v) = run(&app, &a, "cronjob", json!({"action": "run", "job_id": "job-p"})).await;
    assert!(!err, "{v}");
    assert_eq!(v, json!({"status": "paused"}), "the fire's JSON shape, not a Rust enum name");
}
