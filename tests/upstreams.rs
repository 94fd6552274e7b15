//! Black-box tests of slow and failing upstreams (issue 7), with the real binary: Telegram
//! 429 with `retry_after`, Telegram 400 and 500, a model that times out, and a model that
//! answers 429 with `Retry-After`. Each fake records the arrival time of every attempt, so
//! the tests check the retry schedule, that nothing is delivered twice, and that no turn is
//! lost. Every wait is bounded.

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::*;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One scripted upstream answer; unscripted requests get the default success.
#[derive(Clone, Debug)]
struct Step {
    status: u16,
    body: Value,
    retry_after: Option<&'static str>,
    delay_ms: u64,
}

impl Step {
    fn status(status: u16, body: Value) -> Self {
        Self { status, body, retry_after: None, delay_ms: 0 }
    }
}

/// One request as the fake saw it.
#[derive(Clone, Debug)]
struct Attempt {
    at: Instant,
    body: Value,
    status: u16,
}

#[derive(Default)]
struct Script {
    steps: VecDeque<Step>,
    /// Delay of unscripted answers.
    delay_ms: u64,
    attempts: Vec<Attempt>,
}

/// A fake upstream (Telegram `sendMessage` or OpenAI chat completions) that follows a script.
#[derive(Clone)]
struct Scripted {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl Scripted {
    async fn start(route: &str, handler: fn(&Value) -> Value) -> Self {
        let script = Arc::new(Mutex::new(Script::default()));
        let s = script.clone();
        let router = axum::Router::new().route(route, post(move |Json(body): Json<Value>| answer(s.clone(), body, handler)));
        Self { url: spawn_server(router).await, script }
    }

    /// A Telegram Bot API whose unscripted answers are `{"ok": true}`.
    async fn telegram() -> Self {
        Self::start("/{bot}/sendMessage", |_| json!({"ok": true, "result": {"message_id": 1}})).await
    }

    /// An OpenAI-compatible model whose unscripted answers echo the last user message.
    async fn model() -> Self {
        let mut m = Self::start("/v1/chat/completions", |req| {
            let text = format!("echo: {}", last_user(req));
            json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        })
        .await;
        m.url.push_str("/v1");
        m
    }

    fn push(&self, step: Step) {
        self.script.lock().unwrap().steps.push_back(step);
    }

    fn set_delay(&self, ms: u64) {
        self.script.lock().unwrap().delay_ms = ms;
    }

    fn attempts(&self) -> Vec<Attempt> {
        self.script.lock().unwrap().attempts.clone()
    }

    fn successes(&self) -> Vec<Attempt> {
        self.attempts().into_iter().filter(|a| a.status == 200).collect()
    }

    /// Waits (bounded) until `n` attempts arrived; returns them.
    async fn wait_attempts(&self, n: usize, secs: u64) -> Vec<Attempt> {
        wait_until(secs, || self.attempts().len() >= n).await;
        self.attempts()
    }
}

async fn answer(script: Arc<Mutex<Script>>, body: Value, ok: fn(&Value) -> Value) -> Response {
    let at = Instant::now();
    let step = {
        let mut s = script.lock().unwrap();
        let delay = s.delay_ms;
        s.steps.pop_front().unwrap_or_else(|| Step { status: 200, body: ok(&body), retry_after: None, delay_ms: delay })
    };
    script.lock().unwrap().attempts.push(Attempt { at, body, status: step.status });
    if step.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
    }
    let mut resp = (StatusCode::from_u16(step.status).unwrap(), Json(step.body)).into_response();
    if let Some(s) = step.retry_after {
        resp.headers_mut().insert("retry-after", s.parse().unwrap());
    }
    resp
}

fn home_for(tag: &str, model: &Scripted, tg: &Scripted, model_timeout: u64) -> TempHome {
    let home = TempHome::new(tag);
    home.write(
        "config.yaml",
        &format!(
            "model:\n  provider: openai\n  base_url: {}\n  name: fake-model\n  timeout_seconds: {model_timeout}\nplatforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n",
            model.url, tg.url
        ),
    );
    home
}

/// The transcript of the only session of `platform`, as (role, content) pairs.
async fn transcript(gw: &Gateway, platform: &str) -> Vec<(String, String)> {
    let (_, list) = gw.get("/api/sessions").await;
    let sessions: Vec<&Value> = list["sessions"].as_array().unwrap().iter().filter(|s| s["platform"] == platform).collect();
    assert_eq!(sessions.len(), 1, "{list}");
    let (_, show) = gw.get(&format!("/api/sessions/{}", sessions[0]["session_id"].as_str().unwrap())).await;
    show["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap_or("").to_string(), m["content"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter().map(|(r, c)| (r.to_string(), c.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_429_is_retried_after_retry_after_and_delivered_once() {
    let model = Scripted::model().await;
    let tg = Scripted::telegram().await;
    tg.push(Step::status(
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}}),
    ));
    let home = home_for("tg429", &model, &tg, 10);
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 42, 42, "hello")).await, 200);
    let attempts = tg.wait_attempts(2, 15).await;
    assert_eq!(attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [429, 200]);
    let gap = attempts[1].at - attempts[0].at;
    assert!(gap >= Duration::from_secs(1), "retried {gap:?} after the 429, before retry_after");
    assert!(gap < Duration::from_secs(5), "retry took {gap:?}");
    assert_eq!(attempts[1].body["text"], "echo: hello");
    assert_eq!(attempts[1].body["chat_id"], "42");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(tg.attempts().len(), 2, "no further attempts");
    assert_eq!(tg.successes().len(), 1, "delivered exactly once");
    assert_eq!(transcript(&gw, "telegram").await, pairs(&[("user", "hello"), ("assistant", "echo: hello")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_timeout_is_a_clear_502_the_message_is_kept_and_the_next_turn_works() {
    let model = Scripted::model().await;
    model.set_delay(3000);
    let tg = Scripted::telegram().await;
    let home = home_for("llmtimeout", &model, &tg, 1);
    let gw = Gateway::start(home.path(), &[]);
    let started = Instant::now();
    let (status, body) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "are you there?"})).await;
    let took = started.elapsed();
    assert_eq!(status, 502, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("model") && error.contains("timed out") && error.contains("saved"), "{error}");
    assert!(!error.contains("127.0.0.1"), "no upstream URL in the error: {error}");
    // Three attempts of 1 s each with 0.5 s and 1 s backoff in between.
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(10), "answered after {took:?}");
    assert_eq!(model.attempts().len(), 3, "one call and two retries");
    assert_eq!(transcript(&gw, "api").await, pairs(&[("user", "are you there?")]));
    model.set_delay(0);
    let (status, body) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "now?"})).await;
    assert_eq!((status, body["reply"].as_str()), (200, Some("echo: now?")), "{body}");
    let t = transcript(&gw, "api").await;
    assert_eq!(t.first(), Some(&("user".to_string(), "are you there?".to_string())), "{t:?}");
    assert_eq!(t.last(), Some(&("assistant".to_string(), "echo: now?".to_string())), "{t:?}");
    assert!(tg.attempts().is_empty(), "an API chat is never sent to Telegram");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_429_waits_for_retry_after_then_answers_once() {
    let model = Scripted::model().await;
    model.push(Step { retry_after: Some("1"), ..Step::status(429, json!({"error": {"message": "slow down"}})) });
    let tg = Scripted::telegram().await;
    let home = home_for("llm429", &model, &tg, 10);
    let gw = Gateway::start(home.path(), &[]);
    let (status, body) = gw.post_message(json!({"chat_id": "c2", "user_id": "u1", "text": "hi"})).await;
    assert_eq!((status, body["reply"].as_str()), (200, Some("echo: hi")), "{body}");
    let attempts = model.attempts();
    assert_eq!(attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [429, 200]);
    let gap = attempts[1].at - attempts[0].at;
    assert!(gap >= Duration::from_secs(1), "retried {gap:?} after the 429, before Retry-After");
    assert_eq!(transcript(&gw, "api").await, pairs(&[("user", "hi"), ("assistant", "echo: hi")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_400_is_not_retried_and_the_turn_is_kept() {
    let model = Scripted::model().await;
    let tg = Scripted::telegram().await;
    tg.push(Step::status(400, json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"})));
    let home = home_for("tg400", &model, &tg, 10);
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 42, 42, "hello")).await, 200);
    tg.wait_attempts(1, 10).await;
    // Longer than the first retry backoff (0.5 s): a retry would have arrived by now.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let attempts = tg.attempts();
    assert_eq!(attempts.len(), 1, "a permanent error is not retried: {attempts:?}");
    assert_eq!(model.attempts().len(), 1);
    assert_eq!(transcript(&gw, "telegram").await, pairs(&[("user", "hello"), ("assistant", "echo: hello")]));
    // The chat still works afterwards.
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 11, 42, 42, "again")).await, 200);
    assert_eq!(tg.wait_attempts(2, 10).await[1].body["text"], "echo: again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_delivery_to_a_failing_telegram_is_recorded_as_delivery_failed() {
    let model = Scripted::model().await;
    let tg = Scripted::telegram().await;
    for _ in 0..3 {
        tg.push(Step::status(500, json!({"ok": false, "error_code": 500, "description": "Internal Server Error"})));
    }
    let home = home_for("job500", &model, &tg, 10);
    let path = home.path().to_path_buf();
    let run = move |args: &'static [&'static str]| {
        let p = path.clone();
        tokio::task::spawn_blocking(move || cli(&p, args, &[]))
    };
    let o = run(&["cron", "add", "every 1h", "report", "--name", "rep", "--deliver", "telegram:42"]).await.unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["cron", "run", "rep"]).await.unwrap();
    assert!(o.status.success(), "{} {}", stdout(&o), stderr(&o));
    // The failed delivery starts the job's failing streak: its one alert goes to the job's own
    // target after the chunk's attempts (no failure_deliver), and is no attempt of the chunk.
    let (alerts, attempts): (Vec<_>, Vec<_>) =
        tg.attempts().into_iter().partition(|a| a.body["text"].as_str().is_some_and(|t| t.contains("is failing")));
    assert_eq!(alerts.len(), 1, "one failure alert: {alerts:?}");
    assert_eq!(attempts.len(), 3, "three attempts of the one chunk: {attempts:?}");
    assert!(attempts.iter().all(|a| a.body == attempts[0].body && a.body["chat_id"] == "42"), "{attempts:?}");
    // Backoff 0.5 s, then 1 s.
    assert!(attempts[1].at - attempts[0].at >= Duration::from_millis(500), "{attempts:?}");
    assert!(attempts[2].at - attempts[1].at >= Duration::from_millis(1000), "{attempts:?}");
    let o = run(&["cron", "runs", "rep", "--json"]).await.unwrap();
    let runs: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &runs[0];
    assert_eq!(r["status"], "delivery_failed", "{r}");
    assert_eq!(r["output"], "echo: report", "{r}");
    let d = &r["deliveries"][0];
    assert_eq!((d["target"].as_str(), d["status"].as_str()), (Some("telegram:42"), Some("failed")), "{r}");
    let error = d["error"].as_str().unwrap();
    assert!(error.contains("500") && error.contains("Internal Server Error"), "{error}");
    assert!(!error.contains("123:abc"), "no bot token in the error: {error}");
    let o = run(&["cron", "list", "--all", "--json"]).await.unwrap();
    let jobs: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(jobs[0]["last_status"], "delivery_failed", "{jobs}");
}
