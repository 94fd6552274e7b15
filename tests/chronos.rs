//! Black-box tests of the Chronos provider: `serve` against the real `chronos-dev` emulator
//! (signed fire callbacks, duplicates, retries), a NAS that is down, and a crash right
//! after the claim.

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use common::*;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Setup {
    _dev: KillOnDrop,
    dev_url: String,
    agent_port: u16,
    home: TempHome,
    _dev_home: TempHome,
}

fn chronos_config(llm: &FakeLlm, tg: &FakeTelegram, dev_url: &str, agent_port: u16) -> String {
    config(
        Some(llm),
        Some(tg),
        &format!(
            "cron:\n  provider: chronos\n  tick_interval_seconds: 1\n  chronos:\n    portal_url: {dev_url}\n    callback_url: http://127.0.0.1:{agent_port}/api/cron/fire\n    jwks_url: {dev_url}/.well-known/jwks.json\n"
        ),
    )
}

/// chronos-dev firing timers `early` seconds before their time (so `every 1m` jobs fire
/// within seconds; the agent accepts fires up to 60 s early).
fn setup(llm: &FakeLlm, tg: &FakeTelegram, duplicates: &str, early: &str) -> Setup {
    let dev_home = TempHome::new("chronos-dev");
    let (child, addr) = spawn_listening(
        &[
            "--home",
            dev_home.path().to_str().unwrap(),
            "chronos-dev",
            "--listen",
            "127.0.0.1:0",
            "--duplicates",
            duplicates,
            "--fire-early-secs",
            early,
        ],
        &[],
        "chronos-dev listening on ",
    );
    let dev_url = addr.to_string();
    let agent_port = free_port();
    let home = TempHome::new("chronos-agent");
    home.write("config.yaml", &chronos_config(llm, tg, &dev_url, agent_port));
    Setup { _dev: KillOnDrop(child), dev_url, agent_port, home, _dev_home: dev_home }
}

fn start_agent(s: &Setup) -> Gateway {
    Gateway::start_on(s.home.path(), &format!("127.0.0.1:{}", s.agent_port), &[("NOUS_ACCESS_TOKEN", "nous-dev-token")])
}

async fn armed(dev_url: &str) -> Vec<Value> {
    let r = hermes_zero::clients::client_builder()
        .build()
        .unwrap()
        .get(format!("{dev_url}/api/agent-cron/list"))
        .bearer_auth("t")
        .send()
        .await
        .unwrap();
    r.json::<Value>().await.unwrap()["armed"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chronos_dev_fires_once_per_occurrence_despite_duplicates_and_arms_the_next() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let s = setup(&llm, &tg, "3", "55");
    let gw = start_agent(&s);
    let r = gw
        .http
        .post(format!("{}/api/jobs", gw.base))
        .bearer_auth(&gw.key)
        .json(&json!({"name": "pulse", "schedule": "every 1m", "prompt": "pulse check", "deliver": "telegram:42"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let job: Value = r.json().await.unwrap();
    let first = job["job"]["next_run_at"].as_str().unwrap().to_string();
    let list = armed(&s.dev_url).await;
    assert_eq!(list.len(), 1, "provisioned on create: {list:?}");
    let sent = tg.wait_for(1, 20).await;
    assert_eq!(sent.len(), 1, "the fire reached the agent and the reply reached Telegram");
    assert!(sent[0]["text"].as_str().unwrap().contains("echo: pulse check"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(llm.calls(), 1, "4 deliveries of the fire, one run");
    assert_eq!(tg.sent().len(), 1);
    let (_, runs) = gw.get("/api/jobs/pulse/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["trigger"], "chronos");
    let list = armed(&s.dev_url).await;
    assert_eq!(list.len(), 1);
    let next = list[0]["fire_at"].as_str().unwrap();
    assert!(next > first.as_str(), "next occurrence armed: {next} after {first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_right_after_the_claim_never_runs_the_occurrence_again() {
    let llm = FakeLlm::start().await;
    llm.set_delay(30_000);
    let tg = FakeTelegram::start().await;
    let s = setup(&llm, &tg, "0", "55");
    let mut gw = start_agent(&s);
    let r = gw
        .http
        .post(format!("{}/api/jobs", gw.base))
        .bearer_auth(&gw.key)
        .json(&json!({"name": "slow", "schedule": "every 1m", "prompt": "slow job", "deliver": "telegram:42"}))
        .send()
        .await
        .unwrap();
    let first = r.json::<Value>().await.unwrap()["job"]["next_run_at"].as_str().unwrap().to_string();
    assert!(wait_until(20, || llm.calls() == 1).await, "fired and claimed");
    gw.kill();
    llm.set_delay(0);
    let _gw2 = start_agent(&s);
    // chronos-dev retries the failed callback (1 s, 2 s, …): the agent answers duplicate.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(llm.calls(), 1, "not run again");
    let list = armed(&s.dev_url).await;
    assert_eq!(list.len(), 1);
    assert!(list[0]["fire_at"].as_str().unwrap() > first.as_str(), "the next occurrence is armed: {list:?}");
}

#[derive(Clone, Default)]
struct Nas {
    down: Arc<AtomicBool>,
    provisions: Arc<Mutex<Vec<Value>>>,
    calls: Arc<AtomicUsize>,
}

async fn nas_provision(State(n): State<Nas>, Json(b): Json<Value>) -> (StatusCode, Json<Value>) {
    n.calls.fetch_add(1, Ordering::SeqCst);
    if n.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": "maintenance"})));
    }
    n.provisions.lock().unwrap().push(b);
    (StatusCode::OK, Json(json!({"ok": true})))
}

async fn nas_list(State(n): State<Nas>) -> (StatusCode, Json<Value>) {
    if n.down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({})));
    }
    let armed: Vec<Value> =
        n.provisions.lock().unwrap().iter().map(|p| json!({"job_id": p["job_id"], "fire_at": p["fire_at"], "schedule_id": "s"})).collect();
    (StatusCode::OK, Json(json!({"armed": armed})))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nas_down_at_provision_is_retried_shown_in_status_and_fixed_by_reconcile() {
    let nas = Nas::default();
    nas.down.store(true, Ordering::SeqCst);
    let router = axum::Router::new()
        .route("/api/agent-cron/provision", post(nas_provision))
        .route("/api/agent-cron/cancel", post(|| async { Json(json!({"ok": true})) }))
        .route("/api/agent-cron/list", get(nas_list))
        .with_state(nas.clone());
    let nas_url = spawn_server(router).await;
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("nasdown");
    let port = free_port();
    home.write("config.yaml", &chronos_config(&llm, &tg, &nas_url, port).replace("tick_interval_seconds: 1", "tick_interval_seconds: 2"));
    let gw = Gateway::start_on(home.path(), &format!("127.0.0.1:{port}"), &[("NOUS_ACCESS_TOKEN", "tok")]);
    let r = gw
        .http
        .post(format!("{}/api/jobs", gw.base))
        .bearer_auth(&gw.key)
        .json(&json!({"name": "n1", "schedule": "every 1h", "prompt": "p"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "the job is stored even when the NAS is down");
    // A job made over the API has Hermes' id (12 hex digits), not its name.
    let id = r.json::<Value>().await.unwrap()["job"]["id"].as_str().unwrap().to_string();
    assert!(nas.calls.load(Ordering::SeqCst) >= 3, "provision was retried");
    let o = cli(home.path(), &["cron", "status"], &[("NOUS_ACCESS_TOKEN", "tok")]);
    let status: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(status["provider"], "chronos");
    assert!(status["last_timer_error"].as_str().unwrap_or("").contains("503"), "{status}");
    nas.down.store(false, Ordering::SeqCst);
    let provisions = nas.provisions.clone();
    assert!(wait_until(10, || provisions.lock().unwrap().iter().any(|p| p["job_id"] == id.as_str())).await, "the next reconcile armed it");
    let p = nas.provisions.lock().unwrap()[0].clone();
    assert_eq!(p["agent_callback_url"], format!("http://127.0.0.1:{port}/api/cron/fire"));
    assert_eq!(p["dedup_key"], format!("{id}:{}", p["fire_at"].as_str().unwrap()));
}
