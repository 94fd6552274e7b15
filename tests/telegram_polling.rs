//! Telegram long polling inside `serve` and the setup commands, black-box: the real binary
//! against a local Telegram Bot API fake that speaks `deleteWebhook`, `getUpdates` (long poll
//! with offset semantics), `sendMessage`, `setWebhook` and `getWebhookInfo`, and a Discord
//! fake for `register-commands`. Every wait is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use common::*;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the Telegram fake holds and saw.
#[derive(Default)]
struct TgState {
    /// Every update ever queued (the fake keeps them all: what the gateway asks for is what
    /// the test checks, so a gateway that forgot its offset would be seen asking from 0).
    updates: Vec<Value>,
    /// Every call: (method, body, when).
    calls: Vec<(String, Value, Instant)>,
    /// Answers to give to the next `getUpdates` calls instead of updates: (status, body).
    failures: VecDeque<(u16, Value)>,
}

#[derive(Clone)]
struct PollTelegram {
    url: String,
    state: Arc<Mutex<TgState>>,
}

impl PollTelegram {
    async fn start() -> Self {
        let state = Arc::new(Mutex::new(TgState::default()));
        let router = axum::Router::new().route("/{bot}/{method}", post(tg_call)).with_state(state.clone());
        Self { url: spawn_server(router).await, state }
    }
    /// Queues a text message from user 42 in chat 42; returns its update id.
    fn push(&self, text: &str) -> i64 {
        let mut s = self.state.lock().unwrap();
        let id = 1000 + s.updates.len() as i64;
        s.updates.push(tg_update(id, id + 5000, 42, 42, text));
        id
    }
    fn fail_next(&self, status: u16, body: Value) {
        self.state.lock().unwrap().failures.push_back((status, body));
    }
    fn calls(&self, method: &str) -> Vec<(Value, Instant)> {
        self.state.lock().unwrap().calls.iter().filter(|c| c.0 == method).map(|c| (c.1.clone(), c.2)).collect()
    }
    fn methods(&self) -> Vec<String> {
        self.state.lock().unwrap().calls.iter().map(|c| c.0.clone()).collect()
    }
    fn sent_texts(&self) -> Vec<String> {
        self.calls("sendMessage").iter().map(|(b, _)| b["text"].as_str().unwrap_or("").to_string()).collect()
    }
    /// Waits until some `getUpdates` asked from `offset` or later.
    async fn wait_offset(&self, offset: i64, secs: u64) -> bool {
        wait_until(secs, || self.calls("getUpdates").iter().any(|(b, _)| b["offset"].as_i64().unwrap_or(0) >= offset)).await
    }
    async fn wait_sent(&self, n: usize, secs: u64) -> Vec<String> {
        wait_until(secs, || self.sent_texts().len() >= n).await;
        self.sent_texts()
    }
}

async fn tg_call(
    State(state): State<Arc<Mutex<TgState>>>,
    Path((_bot, method)): Path<(String, String)>,
    body: Option<Json<Value>>,
) -> Response {
    let body = body.map(|Json(b)| b).unwrap_or(Value::Null);
    state.lock().unwrap().calls.push((method.clone(), body.clone(), Instant::now()));
    match method.as_str() {
        "getUpdates" => get_updates(&state, &body).await,
        "sendMessage" => Json(json!({"ok": true, "result": {"message_id": 1}})).into_response(),
        "deleteWebhook" => Json(json!({"ok": true, "result": true, "description": "Webhook was deleted"})).into_response(),
        "setWebhook" => Json(json!({"ok": true, "result": true, "description": "Webhook was set"})).into_response(),
        "setMyCommands" => Json(json!({"ok": true, "result": true})).into_response(),
        "getWebhookInfo" => Json(json!({"ok": true, "result": {"url": "", "pending_update_count": 0}})).into_response(),
        _ => (StatusCode::NOT_FOUND, Json(json!({"ok": false, "error_code": 404, "description": "Not Found"}))).into_response(),
    }
}

/// Updates with `update_id ≥ offset`, held up to `timeout` (≤ 30 s) until there is one.
async fn get_updates(state: &Arc<Mutex<TgState>>, body: &Value) -> Response {
    if let Some((status, b)) = state.lock().unwrap().failures.pop_front() {
        return (StatusCode::from_u16(status).unwrap(), Json(b)).into_response();
    }
    let offset = body["offset"].as_i64().unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(30));
    loop {
        let found: Vec<Value> =
            state.lock().unwrap().updates.iter().filter(|u| u["update_id"].as_i64().unwrap() >= offset).cloned().collect();
        if !found.is_empty() || Instant::now() >= deadline {
            return Json(json!({"ok": true, "result": found})).into_response();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `serve` with only TELEGRAM_BOT_TOKEN set (no webhook secret): polling.
fn start_polling(home: &TempHome, envs: &[(&str, &str)]) -> KillOnDrop {
    start_polling_at(home, envs).0
}

/// [`start_polling`], with the base URL.
fn start_polling_at(home: &TempHome, envs: &[(&str, &str)]) -> (KillOnDrop, String) {
    let mut all = vec![("API_SERVER_KEY", API_KEY), ("TELEGRAM_BOT_TOKEN", "123:abc")];
    all.extend_from_slice(envs);
    let (child, addr) =
        spawn_listening(&["--home", home.path().to_str().unwrap(), "serve", "--listen", "127.0.0.1:0"], &all, "listening on ");
    (KillOnDrop(child), addr)
}

/// Waits until no session has a running turn (its lease released).
async fn wait_idle(base: &str, secs: u64) -> bool {
    let http = hermes_zero::clients::client_builder().build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        let r = http.get(format!("{base}/api/sessions")).bearer_auth(API_KEY).send().await.unwrap();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if v["sessions"].as_array().is_some_and(|s| !s.is_empty() && s.iter().all(|e| e["running"] == json!(false))) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn setup(home: &TempHome, llm: &FakeLlm, tg: &PollTelegram, extra: &str) {
    let c = format!(
        "model:\n  provider: openai\n  base_url: {}\n  name: fake-model\n  timeout_seconds: 10\nplatforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n{extra}",
        llm.url, tg.url
    );
    home.write("config.yaml", &c);
}

/// SIGTERM, then wait (bounded) for the exit status.
fn terminate(child: &mut Child, secs: u64) -> Option<std::process::ExitStatus> {
    std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn polling_answers_without_a_public_url_and_a_restart_neither_loses_nor_repeats() {
    let (llm, tg, home) = (FakeLlm::start().await, PollTelegram::start().await, TempHome::new("tgpoll"));
    setup(&home, &llm, &tg, "");
    let first = tg.push("hello");
    let (mut gw, base) = start_polling_at(&home, &[]);
    assert_eq!(tg.wait_sent(1, 20).await, ["echo: hello"]);
    assert_eq!(tg.methods().first().map(String::as_str), Some("deleteWebhook"), "deleteWebhook comes first");
    assert_eq!(tg.calls("deleteWebhook")[0].0["drop_pending_updates"], json!(false), "pending updates are kept");
    let asked = &tg.calls("getUpdates")[0].0;
    assert_eq!((asked["offset"].as_i64(), asked["timeout"].as_u64()), (Some(0), Some(30)), "a long poll from the start");
    assert!(tg.wait_offset(first + 1, 10).await, "the offset moves past the answered update");

    // Down hard once the turn is over (a kill inside a turn is the crash suite's business);
    // a message arrives meanwhile.
    assert!(wait_idle(&base, 10).await, "the turn ends");
    gw.0.kill().unwrap();
    gw.0.wait().unwrap();
    let polls_before = tg.calls("getUpdates").len();
    let second = tg.push("sent while down");
    let _gw = start_polling(&home, &[]);
    assert_eq!(tg.wait_sent(2, 20).await, ["echo: hello", "echo: sent while down"]);
    let restarted = &tg.calls("getUpdates")[polls_before].0;
    assert_eq!(restarted["offset"].as_i64(), Some(first + 1), "the restarted gateway asks from the stored offset");
    assert!(tg.wait_offset(second + 1, 10).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(tg.sent_texts().len(), 2, "one answer per update: {:?}", tg.sent_texts());
    assert_eq!(llm.calls(), 2, "one turn per update");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_updates_errors_back_off_and_recover() {
    let (llm, tg, home) = (FakeLlm::start().await, PollTelegram::start().await, TempHome::new("tgpoll-err"));
    setup(&home, &llm, &tg, "");
    tg.fail_next(502, json!({"ok": false, "error_code": 502, "description": "Bad Gateway"}));
    tg.fail_next(
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 2", "parameters": {"retry_after": 2}}),
    );
    tg.push("after the storm");
    let _gw = start_polling(&home, &[]);
    assert_eq!(tg.wait_sent(1, 20).await, ["echo: after the storm"]);
    let polls = tg.calls("getUpdates");
    assert!(polls.len() >= 3, "{}", polls.len());
    let gap = |i: usize| polls[i + 1].1.duration_since(polls[i].1);
    assert!(gap(0) >= Duration::from_millis(900), "backs off after a 5xx: {:?}", gap(0));
    assert!(gap(1) >= Duration::from_millis(1900), "waits retry_after after a 429: {:?}", gap(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_stops_polling_instead_of_looping() {
    let (llm, tg, home) = (FakeLlm::start().await, PollTelegram::start().await, TempHome::new("tgpoll-401"));
    setup(&home, &llm, &tg, "");
    for _ in 0..5 {
        tg.fail_next(401, json!({"ok": false, "error_code": 401, "description": "Unauthorized"}));
    }
    let mut gw = start_polling(&home, &[]);
    assert!(tg.wait_offset(0, 10).await, "polls once");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(tg.calls("getUpdates").len(), 1, "no retry after 401");
    assert!(terminate(&mut gw.0, 15).is_some_and(|s| s.success()), "serve itself keeps running and stops cleanly");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_polling_and_finishes_the_running_turn() {
    let (llm, tg, home) = (FakeLlm::start().await, PollTelegram::start().await, TempHome::new("tgpoll-term"));
    setup(&home, &llm, &tg, "");
    llm.set_delay(1500);
    let first = tg.push("slow one");
    let mut gw = start_polling(&home, &[]);
    assert!(wait_until(20, || llm.calls() == 1).await, "the turn started");
    // The poll goes on while the turn runs.
    assert!(tg.wait_offset(first + 1, 5).await, "a long turn does not hold up the poll");
    let status = terminate(&mut gw.0, 15).expect("exits within the bound after SIGTERM");
    assert!(status.success(), "{status:?}");
    // The drain notice to the running session, then the turn's answer.
    let sent = tg.sent_texts();
    assert_eq!(sent.last().map(String::as_str), Some("echo: slow one"), "the running turn finished before the exit: {sent:?}");
    assert_eq!(sent.iter().filter(|t| t.starts_with("echo:")).count(), 1, "{sent:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn webhook_mode_does_not_poll() {
    let (llm, tg, home) = (FakeLlm::start().await, PollTelegram::start().await, TempHome::new("tgpoll-hook"));
    setup(&home, &llm, &tg, "");
    let _gw = start_polling(&home, &[("TELEGRAM_WEBHOOK_SECRET", "s3cret")]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(tg.methods().is_empty(), "with a webhook secret nothing is polled: {:?}", tg.methods());
    // `mode: polling` polls even with the secret set.
    let home2 = TempHome::new("tgpoll-forced");
    setup(&home2, &llm, &tg, "    mode: polling\n");
    let _gw2 = start_polling(&home2, &[("TELEGRAM_WEBHOOK_SECRET", "s3cret")]);
    assert!(tg.wait_offset(0, 10).await, "platforms.telegram.mode: polling polls");
}

#[tokio::test(flavor = "multi_thread")]
async fn telegram_set_webhook_registers_the_url_with_the_secret() {
    let tg = PollTelegram::start().await;
    let home = TempHome::new("tg-setwebhook");
    home.write("config.yaml", &format!("platforms:\n  telegram:\n    api_base: {}\n", tg.url));
    let o = cli(home.path(), &["telegram", "set-webhook", "https://bot.example.com/"], &[("TELEGRAM_WEBHOOK_SECRET", "hook-secret")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Telegram answered"), "{}", stdout(&o));
    let set = tg.calls("setWebhook");
    assert_eq!(set.len(), 1);
    assert_eq!(set[0].0["url"], "https://bot.example.com/webhooks/telegram");
    assert_eq!(set[0].0["secret_token"], "hook-secret");
    // The command menu: every chat command, Telegram's shape (1-32 lowercase chars, a description).
    let menu = tg.calls("setMyCommands");
    assert_eq!(menu.len(), 1);
    let names: Vec<&str> = menu[0].0["commands"].as_array().unwrap().iter().map(|c| c["command"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "new", "reset", "stop", "queue", "retry", "undo", "title", "compress", "model", "status", "resume", "sessions", "usage",
            "sethome", "whoami", "help"
        ]
    );
    for c in menu[0].0["commands"].as_array().unwrap() {
        let (name, desc) = (c["command"].as_str().unwrap(), c["description"].as_str().unwrap());
        assert!(name.len() <= 32 && name.chars().all(|ch| ch.is_ascii_lowercase()) && (1..=256).contains(&desc.len()), "{c}");
    }

    // Refusals: no secret, plain http to a public host. Nothing reaches Telegram.
    let o = cli(home.path(), &["telegram", "set-webhook", "https://bot.example.com"], &[("TELEGRAM_WEBHOOK_SECRET", "")]);
    assert_eq!(o.status.code(), Some(78), "{}", stderr(&o));
    assert!(stderr(&o).contains("TELEGRAM_WEBHOOK_SECRET"), "{}", stderr(&o));
    let o = cli(home.path(), &["telegram", "set-webhook", "http://bot.example.com"], &[("TELEGRAM_WEBHOOK_SECRET", "hook-secret")]);
    assert_eq!(o.status.code(), Some(78), "{}", stderr(&o));
    let o = cli(
        home.path(),
        &["telegram", "set-webhook", "https://bot.example.com"],
        &[("TELEGRAM_BOT_TOKEN", ""), ("TELEGRAM_WEBHOOK_SECRET", "s")],
    );
    assert_eq!(o.status.code(), Some(78), "{}", stderr(&o));
    assert_eq!(tg.calls("setWebhook").len(), 1);

    let o = cli(home.path(), &["telegram", "delete-webhook"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cli(home.path(), &["telegram", "info"], &[]);
    assert!(o.status.success() && stdout(&o).contains("pending_update_count"), "{}", stdout(&o));
    assert_eq!((tg.calls("deleteWebhook").len(), tg.calls("getWebhookInfo").len()), (1, 1));
}

type Puts = Arc<Mutex<Vec<(String, String, Value)>>>;

async fn discord_put(State(puts): State<Puts>, Path(rest): Path<String>, headers: HeaderMap, Json(body): Json<Value>) -> Json<Value> {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    puts.lock().unwrap().push((rest, auth, body.clone()));
    Json(body)
}

#[tokio::test(flavor = "multi_thread")]
async fn discord_register_commands_puts_the_handled_commands() {
    let puts: Puts = Arc::default();
    let router = axum::Router::new()
        .route("/applications/@me", get(|| async { Json(json!({"id": "app77", "name": "hz"})) }))
        .route("/applications/{*rest}", put(discord_put))
        .with_state(puts.clone());
    let url = spawn_server(router).await;
    let home = TempHome::new("discord-reg");
    home.write("config.yaml", &format!("platforms:\n  discord:\n    api_base: {url}\n"));
    let o = cli(home.path(), &["discord", "register-commands"], &[("DISCORD_APPLICATION_ID", "")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("app77") && stdout(&o).contains("/ask"), "{}", stdout(&o));
    let o = cli(home.path(), &["discord", "register-commands", "--guild", "g5"], &[("DISCORD_APPLICATION_ID", "app9")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let puts = puts.lock().unwrap().clone();
    assert_eq!(puts.len(), 2);
    assert_eq!((puts[0].0.as_str(), puts[0].1.as_str()), ("app77/commands", "Bot dbot"));
    assert_eq!(puts[1].0, "app9/guilds/g5/commands");
    let names: Vec<&str> = puts[0].2.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ask", "new", "reset", "stop", "queue", "retry", "undo", "title", "compress", "model", "status", "resume", "sessions", "usage",
            "sethome", "whoami", "help"
        ]
    );
    let ask = &puts[0].2[0];
    assert_eq!(
        (ask["type"].as_u64(), ask["options"][0]["name"].as_str(), ask["options"][0]["required"].as_bool()),
        (Some(1), Some("text"), Some(true))
    );

    let o = cli(home.path(), &["discord", "register-commands"], &[("DISCORD_BOT_TOKEN", "")]);
    assert_eq!(o.status.code(), Some(78), "{}", stderr(&o));
}
