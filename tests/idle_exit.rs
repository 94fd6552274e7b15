//! Black-box tests of `serve --idle-exit SECS` and of wakes for stored chat work
//! (docs/design.md#wakes): the process stops by itself when idle, never under a running turn
//! or while the built-in ticker holds enabled jobs, and a stop that leaves a queued message
//! behind arms a one-shot wake at the timer provider (a fake NAS speaking the Chronos API).

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::extract::State;
use axum::routing::{get, post};
use common::*;
use serde_json::{Value, json};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The reserved timer id of a wake (CONTRACT: no job can take it).
const WAKE_ID: &str = "_hermes_zero_wake";

/// `serve --idle-exit SECS` on a free port with the test's env; returns the child and base URL.
fn serve_idle(home: &std::path::Path, secs: &str, envs: &[(&str, &str)]) -> (KillOnDrop, String) {
    let mut all = vec![("API_SERVER_KEY", API_KEY)];
    all.extend_from_slice(envs);
    let args = ["--home", home.to_str().unwrap(), "serve", "--listen", "127.0.0.1:0", "--idle-exit", secs];
    let (child, addr) = spawn_listening(&args, &all, "listening on ");
    (KillOnDrop(child), addr)
}

/// Waits (bounded) for the child to exit; its exit code, or None if it still runs.
fn exit_code_within(child: &mut Child, secs: u64) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn client() -> reqwest::Client {
    hermes_zero::clients::client_builder().timeout(Duration::from_secs(60)).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_serve_exits_zero_by_itself_and_health_checks_do_not_keep_it_up() {
    let home = TempHome::new("idle-exit");
    let (mut child, base) = serve_idle(home.path(), "2", &[]);
    // Health checks (Fly's, every few seconds) are not activity.
    for _ in 0..3 {
        let r = client().get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let code = tokio::task::block_in_place(|| exit_code_within(&mut child.0, 15));
    assert_eq!(code, Some(0), "serve --idle-exit 2 did not exit cleanly by itself");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_exit_waits_for_a_running_turn() {
    let llm = FakeLlm::start().await;
    llm.set_delay(4000);
    let home = TempHome::new("idle-turn");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let (mut child, base) = serve_idle(home.path(), "1", &[]);
    let url = format!("{base}/api/messages");
    let turn = tokio::spawn(async move {
        let body = json!({"chat_id": "c1", "user_id": "u1", "text": "take your time"});
        let r = client().post(url).bearer_auth(API_KEY).json(&body).send().await.unwrap();
        (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
    });
    assert!(wait_until(10, || llm.calls() == 1).await, "the turn did not reach the model");
    // Well past the idle time, the turn still runs and so does the process.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(child.0.try_wait().unwrap().is_none(), "serve exited while a turn was running");
    let (status, body) = turn.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], json!("echo: take your time"));
    let code = tokio::task::block_in_place(|| exit_code_within(&mut child.0, 15));
    assert_eq!(code, Some(0), "serve did not exit once the turn was done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_exit_stays_up_while_the_builtin_ticker_holds_enabled_jobs() {
    let home = TempHome::new("idle-ticker");
    let added = tokio::task::block_in_place(|| cli(home.path(), &["cron", "add", "every 1h", "hourly note", "--deliver", "local"], &[]));
    assert!(added.status.success(), "{}", stderr(&added));
    let (mut child, _base) = serve_idle(home.path(), "1", &[]);
    let code = tokio::task::block_in_place(|| exit_code_within(&mut child.0, 4));
    assert_eq!(code, None, "serve exited though only its ticker can run the enabled job");
}

/// A NAS recording every provision call (the Chronos timer API: provision, cancel, list).
#[derive(Default)]
struct Nas {
    provisions: Mutex<Vec<Value>>,
}

async fn nas_provision(State(n): State<Arc<Nas>>, Json(body): Json<Value>) -> Json<Value> {
    n.provisions.lock().unwrap().push(body);
    Json(json!({"ok": true}))
}

async fn start_nas() -> (String, Arc<Nas>) {
    let nas = Arc::new(Nas::default());
    let app = axum::Router::new()
        .route("/api/agent-cron/provision", post(nas_provision))
        .route("/api/agent-cron/cancel", post(|| async { Json(json!({"ok": true})) }))
        .route("/api/agent-cron/list", get(|| async { Json(json!({"armed": []})) }))
        .with_state(nas.clone());
    (spawn_server(app).await, nas)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_with_a_queued_message_arms_a_one_shot_wake_at_chronos() {
    let llm = FakeLlm::start().await;
    llm.set_delay(20_000);
    let (nas_url, nas) = start_nas().await;
    let callback = "http://127.0.0.1:9/api/cron/fire";
    let home = TempHome::new("idle-wake");
    let extra = format!(
        "busy_input_mode: queue\nrestart_drain_timeout: 1\ncron:\n  provider: chronos\n  chronos:\n    portal_url: {nas_url}\n    callback_url: {callback}\n    instance_id: wake\n    public_key_pem: {JWT_FIXTURES}rsa_public.pem\n"
    );
    home.write("config.yaml", &config(Some(&llm), None, &extra));
    let (mut child, base) = serve_idle(home.path(), "600", &[("NOUS_ACCESS_TOKEN", "nous-token")]);
    let url = format!("{base}/api/messages");
    let first = url.clone();
    tokio::spawn(async move {
        let body = json!({"chat_id": "c1", "user_id": "u1", "text": "a long task"});
        client().post(first).bearer_auth(API_KEY).json(&body).send().await.ok();
    });
    assert!(wait_until(10, || llm.calls() == 1).await, "the first turn did not reach the model");
    let body = json!({"chat_id": "c1", "user_id": "u1", "text": "and then this"});
    let r = client().post(&url).bearer_auth(API_KEY).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 202, "the second message is queued behind the running turn");
    let before = chrono::Utc::now();
    // SIGTERM: the drain (1 s) cannot finish the turn; the queued message stays stored.
    Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status().unwrap();
    let code = tokio::task::block_in_place(|| exit_code_within(&mut child.0, 20));
    assert_eq!(code, Some(0));
    let wakes: Vec<Value> = nas.provisions.lock().unwrap().iter().filter(|p| p["job_id"] == json!(WAKE_ID)).cloned().collect();
    assert_eq!(wakes.len(), 1, "one wake armed for the stored work: {:?}", nas.provisions.lock().unwrap());
    assert_eq!(wakes[0]["agent_callback_url"], json!(callback));
    let at = chrono::DateTime::parse_from_rfc3339(wakes[0]["fire_at"].as_str().unwrap()).unwrap();
    let lead = at.signed_duration_since(before).num_seconds();
    assert!((0..=60).contains(&lead), "the wake is soon, not at the lease's expiry: {lead} s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wake_callback_runs_a_sweep_instead_of_a_fire() {
    let home = TempHome::new("wake-callback");
    home.write("config.yaml", &pinned_key_chronos("wakecb"));
    let (_child, base) = serve_idle(home.path(), "600", &[]);
    let token = rsa_fire_token(WAKE_ID, "wakecb", 0);
    let r = client().post(format!("{base}/api/cron/fire")).bearer_auth(token).json(&json!({"job_id": WAKE_ID})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ok", "woken": 0}));
    // No job can take the reserved id.
    let r = client()
        .post(format!("{base}/api/jobs"))
        .bearer_auth(API_KEY)
        .json(&json!({"id": WAKE_ID, "schedule": "every 1h", "prompt": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400, "{:?}", r.text().await);
}
