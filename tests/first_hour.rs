//! A Hermes user's first hour (issue 28), with the real binary: `model.provider: auto` with a
//! local base URL reaches that local server over the OpenAI protocol while a cloud key sits in
//! the environment, and `serve` says which provider it chose; the first `serve` on a fresh home
//! logs a first start, not an unclean exit. Every wait is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use common::anthropic::FakeAnthropic;
use common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `serve` with its info log captured: the child, its base URL and the log lines so far.
struct Logged {
    child: Child,
    base: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Logged {
    fn start(home: &std::path::Path, envs: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bin());
        cmd.args(["--home", home.to_str().unwrap(), "serve", "--listen", "127.0.0.1:0"])
            .env_remove("HERMES_HOME")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .env("API_SERVER_KEY", API_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for k in ["HERMES_MODEL_PROVIDER", "HERMES_MODEL_BASE_URL", "HERMES_MODEL", "OPENROUTER_API_KEY", "OPENAI_API_KEY"] {
            cmd.env_remove(k);
        }
        cmd.envs(envs.iter().copied());
        let mut child = cmd.spawn().expect("spawn hermes-zero");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (err, keep) = (child.stderr.take().unwrap(), lines.clone());
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                keep.lock().unwrap().push(l);
            }
        });
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(rest) = l.split("listening on ").nth(1) {
                    tx.send(rest.trim().to_string()).ok();
                }
            }
        });
        let base = rx.recv_timeout(Duration::from_secs(20)).expect("no listening line");
        Self { child, base, lines }
    }

    fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// SIGTERM and wait (bounded) for the exit.
    fn stop(mut self) -> String {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().ok();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().ok();
        self.child.wait().ok();
        std::thread::sleep(Duration::from_millis(100));
        self.log()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// One request seen by the local OpenAI-compatible server: its `Authorization` and body.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

async fn local_chat(State(seen): State<Seen>, headers: HeaderMap, Json(body): Json<Value>) -> Json<Value> {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    seen.lock().unwrap().push((auth, body));
    let message = json!({"role": "assistant", "content": "hello from llama3"});
    Json(
        json!({"id": "c1", "object": "chat.completion", "model": "llama3", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_with_a_local_base_url_reaches_the_local_server_not_the_cloud_key_s_provider() {
    let seen: Seen = Arc::default();
    let local = spawn_server(axum::Router::new().route("/v1/chat/completions", post(local_chat)).with_state(seen.clone())).await;
    // Where the Anthropic key would go if `auto` followed it (never the real cloud in a test).
    let cloud = FakeAnthropic::start().await;
    let home = TempHome::new("auto-local");
    home.write("config.yaml", &format!("model:\n  provider: auto\n  default: llama3\n  base_url: {local}/v1\n  timeout_seconds: 10\n"));
    let env = [("ANTHROPIC_API_KEY", "sk-ant-cloud-key"), ("ANTHROPIC_BASE_URL", cloud.url.as_str())];
    let gw = Logged::start(home.path(), &env);
    let http = hermes_zero::clients::client_builder().timeout(Duration::from_secs(30)).build().unwrap();
    let r = http
        .post(format!("{}/api/messages", gw.base))
        .bearer_auth(API_KEY)
        .json(&json!({"chat_id": "c1", "user_id": "u1", "text": "hi"}))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["reply"], "hello from llama3", "{v}");
    assert_eq!(cloud.calls(), 0, "nothing went to the cloud key's provider");
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1["model"], "llama3");
    assert!(!got[0].0.contains("sk-ant"), "the cloud key was sent to the local server: {}", got[0].0);
    let log = gw.stop();
    assert!(log.contains(r#"provider="custom""#) && log.contains(r#"wire="openai-chat""#), "{log}");
    assert!(!log.contains("sk-ant-cloud-key"), "a secret in the log: {log}");
}

/// The `previous_exit` the startup sweep logged, once it has (bounded wait).
async fn previous_exit(gw: &Logged) -> String {
    wait_until(10, || gw.log().contains("startup recovery sweep")).await;
    let log = gw.log();
    let line = log.lines().find(|l| l.contains("startup recovery sweep")).unwrap_or_default().to_string();
    line.split("previous_exit=").nth(1).and_then(|r| r.split('"').nth(1)).unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_serve_on_a_fresh_home_logs_a_first_start_not_an_unclean_exit() {
    let home = TempHome::new("first-start");
    let gw = Logged::start(home.path(), &[]);
    assert_eq!(previous_exit(&gw).await, "none (first start)", "{}", gw.log());
    gw.stop();
    let gw = Logged::start(home.path(), &[]);
    assert_eq!(previous_exit(&gw).await, "clean", "{}", gw.log());
    drop(gw); // SIGKILL: no drain, no marker
    let gw = Logged::start(home.path(), &[]);
    assert_eq!(previous_exit(&gw).await, "unclean", "a crash after the first start is still one: {}", gw.log());
}
