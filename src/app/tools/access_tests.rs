//! Who sees what (docs/who-sees-what.md), through real turns on the real SQLite store: two
//! allowed Telegram users cannot read each other's sessions or memory profile, and
//! `send_message` and `cronjob` cannot reach a chat outside the delivery policy.

use super::*;
use crate::core::ids::ChatType;
use crate::core::session::ToolCall;
use crate::ports::{Delivery, DeliveryError, Target};
use crate::test_support::{CountingLlm, Outbox, TestApp, say};
use serde_json::json;

const NOW: &str = "2026-03-01T12:00:00Z";
const TWO_USERS: &str = "platforms: {telegram: {allowed_users: ['111', '222'], home_channel: '-100'}}\n";

/// Telegram and Discord, sending on Telegram: every message is recorded.
#[derive(Default)]
struct Sent(Outbox);

#[async_trait::async_trait]
impl Delivery for Sent {
    fn delivers_to(&self, platform: &str) -> bool {
        matches!(platform, "telegram" | "discord")
    }
    fn platforms(&self) -> Vec<String> {
        vec!["telegram".into()]
    }
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError> {
        self.0.send(target, text).await
    }
}

fn kit(yaml: &str) -> (App, Arc<Sent>) {
    let sent = Arc::new(Sent::default());
    let app = TestApp::new(NOW.parse().unwrap()).yaml(yaml).llm(CountingLlm::new("noted")).delivery(sent.clone()).build();
    (app, sent)
}

fn dm(user: &str) -> Origin {
    Origin::new("telegram", user, ChatType::Dm, Some(user), None).unwrap()
}

async fn tool(app: &App, sid: &SessionId, origin: &Origin, name: &str, args: Value) -> (bool, Value) {
    let c = ToolCtx { app, session_id: sid, origin: Some(origin), kind: TurnKind::Chat, deadline: None, call_id: Some("c1"), turn: None };
    let call = ToolCall { id: "c1".into(), name: name.into(), arguments: args.to_string() };
    let r = app.inner.tools.toolset(&c).execute(&c, &call).await;
    (r.is_error, serde_json::from_str(&r.content).unwrap_or(Value::String(r.content)))
}

#[tokio::test]
async fn a_user_cannot_search_another_users_dm() {
    let (app, _) = kit(TWO_USERS);
    let (ann, bob) = (dm("111"), dm("222"));
    let bob_sid = say(&app, &bob, "my password is hunter2").await;
    let ann_old = say(&app, &ann, "my password rules are strict").await;
    let ann_sid = SessionId::named("ann-now".into());
    let (err, v) = tool(&app, &ann_sid, &ann, "session_search", json!({"query": "password", "limit": 10})).await;
    assert!(!err, "{v}");
    assert_eq!(v["count"], 1, "only ann's own session: {v}");
    assert_eq!(v["results"][0]["session_id"], ann_old.as_str());
    assert!(!v.to_string().contains("hunter2"), "{v}");
    // Bob finds his own; an admin finds both.
    let (_, v) = tool(&app, &SessionId::named("bob-now".into()), &bob, "session_search", json!({"query": "hunter2"})).await;
    assert_eq!(v["results"][0]["session_id"], bob_sid.as_str(), "{v}");
    let (app, _) = kit(&format!("{TWO_USERS}admin_users: ['telegram:111']\n"));
    say(&app, &bob, "my password is hunter2").await;
    let (_, v) = tool(&app, &ann_sid, &ann, "session_search", json!({"query": "hunter2"})).await;
    assert_eq!(v["count"], 1, "an admin searches everything: {v}");
}

#[tokio::test]
async fn linked_identities_search_across_platforms() {
    let yaml = format!("{TWO_USERS}identities: {{ann: ['telegram:111', 'discord:D1']}}\n");
    let (app, _) = kit(&yaml);
    let group = Origin::new("telegram", "-5", ChatType::Group, Some("111"), None).unwrap();
    say(&app, &dm("111"), "walrus plans").await;
    say(&app, &group, "walrus in the group").await;
    say(&app, &dm("222"), "walrus secrets").await;
    let discord = Origin::new("discord", "D1", ChatType::Dm, Some("D1"), None).unwrap();
    let (_, v) = tool(&app, &SessionId::named("x".into()), &discord, "session_search", json!({"query": "walrus", "limit": 10})).await;
    assert_eq!(v["count"], 2, "ann's DM and her per-user group session, not bob's: {v}");
    assert!(!v.to_string().contains("secrets"), "{v}");
}

#[tokio::test]
async fn send_message_outside_the_policy_is_refused_and_nothing_is_sent() {
    let (app, sent) = kit(&format!("{TWO_USERS}delivery: {{allow_targets: ['telegram:-777']}}\n"));
    let (ann, sid) = (dm("111"), SessionId::named("s".into()));
    let (err, v) = tool(&app, &sid, &ann, "send_message", json!({"target": "telegram:999", "message": "spam"})).await;
    assert!(err, "{v}");
    assert!(v.to_string().contains("not allowed"), "{v}");
    assert!(sent.0.all().is_empty(), "nothing sent");
    for target in ["telegram:222", "telegram:111", "telegram", "telegram:-777", "origin"] {
        let (err, v) = tool(&app, &sid, &ann, "send_message", json!({"target": target, "message": format!("hi {target}")})).await;
        assert!(!err, "{target}: {v}");
    }
    assert_eq!(sent.0.all().len(), 5);
}

#[tokio::test]
async fn cronjob_deliver_to_a_non_allowed_user_is_refused() {
    let (app, _) = kit(TWO_USERS);
    let (ann, sid) = (dm("111"), SessionId::named("s".into()));
    let job = json!({"action": "create", "name": "nag", "schedule": "every 1h", "prompt": "p", "deliver": "telegram:999"});
    let (err, v) = tool(&app, &sid, &ann, "cronjob", job).await;
    assert!(err && v.to_string().contains("not allowed"), "{v}");
    assert!(app.inner.store.list_jobs().await.unwrap().is_empty(), "no job made");
    let ok = json!({"action": "create", "name": "ok", "schedule": "every 1h", "prompt": "p", "deliver": "telegram:222"});
    let (err, v) = tool(&app, &sid, &ann, "cronjob", ok).await;
    assert!(!err, "{v}");
    let (err, v) = tool(&app, &sid, &ann, "cronjob", json!({"action": "update", "job_id": "ok", "deliver": "telegram:998"})).await;
    assert!(err && v.to_string().contains("not allowed"), "{v}");
    assert_eq!(app.inner.store.list_jobs().await.unwrap()[0].deliver, ["telegram:222"]);
}

/// The `cronjob` tool takes Hermes' `script`, `no_agent` and `workdir` arguments; a script path
/// that leaves `$HERMES_HOME/scripts/` and a `no_agent` job without a script are tool errors
/// that make nothing.
#[tokio::test]
async fn cronjob_makes_script_jobs_and_refuses_paths_outside_the_scripts_folder() {
    let (app, _) = kit(TWO_USERS);
    let (ann, sid) = (dm("111"), SessionId::named("s".into()));
    for (args, needle) in [
        (json!({"script": "../../.env", "prompt": "p"}), "traversal"),
        (json!({"script": "/etc/passwd", "prompt": "p"}), "must be relative"),
        (json!({"no_agent": true}), "no_agent=True requires a script"),
    ] {
        let mut job = json!({"action": "create", "name": "s", "schedule": "every 1h"});
        job.as_object_mut().unwrap().extend(args.as_object().unwrap().clone());
        let (err, v) = tool(&app, &sid, &ann, "cronjob", job).await;
        assert!(err && v.to_string().contains(needle), "{needle}: {v}");
    }
    assert!(app.inner.store.list_jobs().await.unwrap().is_empty(), "no job made");
    let job = json!({"action": "create", "name": "watch", "schedule": "every 1h", "script": "disk.sh", "no_agent": true});
    let (err, v) = tool(&app, &sid, &ann, "cronjob", job).await;
    assert!(!err, "{v}");
    assert_eq!((v["created"]["script"].as_str(), v["created"]["no_agent"].as_bool()), (Some("disk.sh"), Some(true)), "{v}");
    let id = v["created"]["id"].as_str().unwrap().to_string();
    let (err, v) = tool(&app, &sid, &ann, "cronjob", json!({"action": "update", "job_id": id, "script": ""})).await;
    assert!(err && v.to_string().contains("requires a script"), "clearing the script of a no_agent job: {v}");
    let (err, v) =
        tool(&app, &sid, &ann, "cronjob", json!({"action": "update", "job_id": id, "no_agent": false, "prompt": "Read it."})).await;
    assert!(!err && v["updated"]["no_agent"] == false, "{v}");
}
