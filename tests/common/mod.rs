//! Shared black-box test kit: the real binary on a free port with a temp home, and fake
//! upstreams that speak the real wire protocols (OpenAI chat completions, Telegram Bot API,
//! Discord REST). Every wait is bounded; processes are killed by pid on drop.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod anthropic;
pub mod api_sdk;
pub mod lambda;
pub mod mcp_server;
pub mod media_fakes;
#[cfg(feature = "aws")]
pub mod moto_proxy;
pub mod sse;
pub mod web_vendors;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path as FsPath, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A temporary directory removed on drop.
pub struct TempHome(pub PathBuf);

impl TempHome {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("hz-test-{tag}-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
    pub fn path(&self) -> &FsPath {
        &self.0
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Serves `router` on 127.0.0.1:0 in the background; returns the base URL.
pub async fn spawn_server(router: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(l, router).await.ok();
    });
    format!("http://{addr}")
}

/// What the fake model answers.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A final text answer.
    Text(String),
    /// One tool call.
    Tool { name: String, args: Value },
    /// One tool call with a fixed call id (a model repeating the very same call).
    ToolWithId { id: String, name: String, args: Value },
    /// An HTTP error status.
    Status(u16),
    /// 200 with a body that is not a chat completion.
    Garbage,
}

/// Picks a fake model's answer for a request ([`FakeLlm::route`]).
pub type LlmRouter = Arc<dyn Fn(&Value) -> Option<Reply> + Send + Sync>;
/// Says whether a request is one a gate holds ([`FakeLlm::hold_until`]).
pub type LlmMatcher = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

#[derive(Default)]
pub struct LlmInner {
    pub requests: Vec<Value>,
    /// The `Authorization` header of each request (None: none sent).
    pub auth: Vec<Option<String>>,
    pub script: VecDeque<Reply>,
    pub delay_ms: u64,
    pub spans: Vec<(Instant, Instant)>,
    /// Picks the answer of the requests it knows, before the script (see [`FakeLlm::route`]).
    pub router: Option<LlmRouter>,
    /// Holds the requests it matches until this many of them arrived (see [`FakeLlm::hold_until`]).
    pub gate: Option<(usize, LlmMatcher)>,
    /// Gated requests arrived, gated requests in flight now, and the most seen in flight.
    pub gated: (usize, usize, usize),
    /// Answer requests that ask for `stream: true` as OpenAI's SSE chunks (see
    /// [`FakeLlm::stream_when_asked`]).
    pub sse: bool,
    /// Delays the requests it matches by this many ms instead of `delay_ms` (see
    /// [`FakeLlm::slow_when`]).
    pub slow: Option<(u64, LlmMatcher)>,
}

/// A fake OpenAI-compatible `/v1/chat/completions`. Without a script it echoes the last
/// user message as `echo: <text>`.
#[derive(Clone)]
pub struct FakeLlm {
    pub url: String,
    pub inner: Arc<Mutex<LlmInner>>,
}

impl FakeLlm {
    pub async fn start() -> Self {
        let inner = Arc::new(Mutex::new(LlmInner::default()));
        let router = axum::Router::new().route("/v1/chat/completions", post(llm_handler)).with_state(inner.clone());
        let url = spawn_server(router).await;
        Self { url: format!("{url}/v1"), inner }
    }
    pub fn push(&self, r: Reply) {
        self.inner.lock().unwrap().script.push_back(r);
    }
    /// From now on, a request with `stream: true` is answered as OpenAI's SSE chunks (text
    /// in small deltas, a tool call as one `tool_calls` delta) instead of one JSON body.
    pub fn stream_when_asked(&self) {
        self.inner.lock().unwrap().sse = true;
    }
    pub fn set_delay(&self, ms: u64) {
        self.inner.lock().unwrap().delay_ms = ms;
    }
    pub fn requests(&self) -> Vec<Value> {
        self.inner.lock().unwrap().requests.clone()
    }
    pub fn calls(&self) -> usize {
        self.inner.lock().unwrap().requests.len()
    }
    /// The `Authorization` header of each request, in order.
    pub fn auth(&self) -> Vec<Option<String>> {
        self.inner.lock().unwrap().auth.clone()
    }
    /// Answers the requests `f` returns a reply for (the script is not consumed by them).
    pub fn route(&self, f: impl Fn(&Value) -> Option<Reply> + Send + Sync + 'static) {
        self.inner.lock().unwrap().router = Some(Arc::new(f));
    }
    /// Holds every request `when` matches until `n` such requests have arrived (at most 10 s),
    /// so requests made one after another never overlap while concurrent ones all do; see
    /// [`FakeLlm::peak_in_flight`].
    pub fn hold_until(&self, n: usize, when: impl Fn(&Value) -> bool + Send + Sync + 'static) {
        self.inner.lock().unwrap().gate = Some((n, Arc::new(when)));
    }
    /// Answers the requests `when` matches only after `ms` (instead of the common delay), so
    /// one job's run can be slower than its period while every other request stays fast.
    pub fn slow_when(&self, ms: u64, when: impl Fn(&Value) -> bool + Send + Sync + 'static) {
        self.inner.lock().unwrap().slow = Some((ms, Arc::new(when)));
    }
    /// The most gated requests that were in flight at once.
    pub fn peak_in_flight(&self) -> usize {
        self.inner.lock().unwrap().gated.2
    }
}

/// Waits (≤ 10 s) until the gate's count of arrivals is reached, if `body` is gated; returns
/// whether it was (its in-flight count is then to be released).
async fn pass_gate(inner: &Arc<Mutex<LlmInner>>, body: &Value) -> bool {
    let n = {
        let mut g = inner.lock().unwrap();
        let Some((n, when)) = g.gate.clone() else { return false };
        if !when(body) {
            return false;
        }
        g.gated.0 += 1;
        g.gated.1 += 1;
        g.gated.2 = g.gated.2.max(g.gated.1);
        n
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while inner.lock().unwrap().gated.0 < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

async fn llm_handler(State(inner): State<Arc<Mutex<LlmInner>>>, headers: axum::http::HeaderMap, Json(body): Json<Value>) -> Response {
    let start = Instant::now();
    let gated = pass_gate(&inner, &body).await;
    let (reply, delay, sse) = {
        let mut g = inner.lock().unwrap();
        g.requests.push(body.clone());
        g.auth.push(headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string));
        let routed = g.router.clone().and_then(|f| f(&body));
        let delay = g.slow.as_ref().filter(|(_, when)| when(&body)).map_or(g.delay_ms, |(ms, _)| *ms);
        (routed.or_else(|| g.script.pop_front()), delay, g.sse && body["stream"] == true)
    };
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut g = inner.lock().unwrap();
    g.spans.push((start, Instant::now()));
    if gated {
        g.gated.1 -= 1;
    }
    drop(g);
    let last_user = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    // A prompt carrying FAIL_ONCE fails (503) the first time the model sees it: a job whose
    // first attempt fails and whose retry succeeds (the crash suite's workload).
    if reply.is_none() && last_user.contains(FAIL_ONCE) {
        let seen = inner.lock().unwrap().requests.iter().filter(|r| self::last_user(r) == last_user).count();
        if seen <= 1 {
            return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"error": {"message": "fake failure"}}))).into_response();
        }
    }
    let message = match reply.unwrap_or(Reply::Text(format!("echo: {last_user}"))) {
        Reply::Text(t) => json!({"role": "assistant", "content": t}),
        Reply::Tool { name, args } => {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{}", rand::random::<u16>()), "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
        }
        Reply::ToolWithId { id, name, args } => {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
        }
        Reply::Status(s) => return (StatusCode::from_u16(s).unwrap(), Json(json!({"error": {"message": "fake failure"}}))).into_response(),
        Reply::Garbage => return ([("content-type", "text/html")], "<html>not a completion</html>").into_response(),
    };
    if sse {
        return sse_answer(&message);
    }
    Json(json!({"id": "cmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})).into_response()
}

/// Marker of a prompt the fake model fails (503) the first time it sees it.
#[allow(dead_code)]
pub const FAIL_ONCE: &str = "[503-once]";

/// A fake Telegram Bot API recording `sendMessage` calls.
#[derive(Clone)]
pub struct FakeTelegram {
    pub url: String,
    pub sent: Arc<Mutex<Vec<Value>>>,
}

impl FakeTelegram {
    pub async fn start() -> Self {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let router = axum::Router::new().route("/{bot}/sendMessage", post(tg_handler)).with_state(sent.clone());
        Self { url: spawn_server(router).await, sent }
    }
    pub fn sent(&self) -> Vec<Value> {
        self.sent.lock().unwrap().clone()
    }
    /// Waits (bounded) until `n` messages were sent.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.sent();
            if s.len() >= n || Instant::now() > deadline {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn tg_handler(State(sent): State<Arc<Mutex<Vec<Value>>>>, Path(bot): Path<String>, Json(body): Json<Value>) -> Json<Value> {
    let mut b = body;
    b["_bot"] = json!(bot);
    sent.lock().unwrap().push(b);
    Json(json!({"ok": true, "result": {"message_id": 1}}))
}

/// The real binary, started with a temp home.
pub struct Gateway {
    pub child: Child,
    pub base: String,
    pub key: String,
    pub http: reqwest::Client,
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_hermes-zero")
}

/// A config.yaml pointing at the fakes.
pub fn config(llm: Option<&FakeLlm>, tg: Option<&FakeTelegram>, extra: &str) -> String {
    let mut c = String::new();
    if let Some(l) = llm {
        c.push_str(&format!("model:\n  provider: openai\n  base_url: {}\n  name: fake-model\n  timeout_seconds: 10\n", l.url));
    }
    if let Some(t) = tg {
        c.push_str(&format!("platforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n", t.url));
    }
    c.push_str(extra);
    c
}

pub const API_KEY: &str = "test-key-123";

/// A `serve` gateway with a fake model that streams when a request asks it to (the API
/// server's tests).
pub async fn api_gateway(tag: &str) -> (TempHome, FakeLlm, Gateway) {
    let home = TempHome::new(tag);
    let llm = FakeLlm::start().await;
    llm.stream_when_asked();
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    (home, llm, gw)
}

impl Gateway {
    /// Starts `serve` on a free port and waits (≤ 20 s) for its listening line.
    pub fn start(home: &FsPath, envs: &[(&str, &str)]) -> Self {
        Self::start_on(home, "127.0.0.1:0", envs)
    }

    /// Starts `serve` on `listen` and waits (≤ 20 s) for its listening line.
    pub fn start_on(home: &FsPath, listen: &str, envs: &[(&str, &str)]) -> Self {
        let mut all = vec![("API_SERVER_KEY", API_KEY), ("TELEGRAM_BOT_TOKEN", "123:abc"), ("TELEGRAM_WEBHOOK_SECRET", "tg-secret")];
        all.extend_from_slice(envs);
        let (child, base) = spawn_listening(&["--home", home.to_str().unwrap(), "serve", "--listen", listen], &all, "listening on ");
        Self {
            child,
            base,
            key: API_KEY.into(),
            http: hermes_zero::clients::client_builder().timeout(Duration::from_secs(30)).build().unwrap(),
        }
    }

    pub async fn post_message(&self, body: Value) -> (u16, Value) {
        let r = self.http.post(format!("{}/api/messages", self.base)).bearer_auth(&self.key).json(&body).send().await.unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    /// POSTs `body` (raw, as JSON) to `path` with `headers` and no key of its own: status,
    /// JSON body (`Null` if none) and headers (the API server's routes and their refusals).
    pub async fn post_raw(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let mut req = self.http.post(format!("{}{path}", self.base)).header("content-type", "application/json").body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let r = req.send().await.unwrap();
        let (status, h) = (r.status().as_u16(), r.headers().clone());
        (status, r.json().await.unwrap_or(Value::Null), h)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.key).send().await.unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn telegram(&self, secret: &str, update: Value) -> u16 {
        let r = self
            .http
            .post(format!("{}/webhooks/telegram", self.base))
            .header("X-Telegram-Bot-Api-Secret-Token", secret)
            .json(&update)
            .send()
            .await
            .unwrap();
        r.status().as_u16()
    }

    /// Posts a Telegram update in the background (for turns that will be interrupted).
    pub fn telegram_in_background(&self, update: Value) {
        let http = self.http.clone();
        let url = format!("{}/webhooks/telegram", self.base);
        tokio::spawn(async move { http.post(url).header("X-Telegram-Bot-Api-Secret-Token", "tg-secret").json(&update).send().await });
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }

    /// SIGTERM, then wait (bounded) for exit; returns whether it exited by itself.
    pub fn terminate(&mut self, secs: u64) -> bool {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().ok();
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        false
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn tg_update(update_id: i64, message_id: i64, user: i64, chat: i64, text: &str) -> Value {
    json!({"update_id": update_id, "message": {"message_id": message_id, "date": 0, "from": {"id": user, "is_bot": false, "first_name": "Ann"}, "chat": {"id": chat, "type": "private"}, "text": text}})
}

/// Polls `f` every 50 ms until it returns true or `secs` pass; returns the last result.
pub async fn wait_until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The last user message of a recorded model request.
pub fn last_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// The content of the newest tool message of a recorded model request.
pub fn last_tool_result(req: &Value) -> String {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

/// All user texts of a transcript returned by `GET /api/sessions/{id}`.
pub fn user_texts(show: &Value) -> Vec<String> {
    show["messages"]
        .as_array()
        .map(|a| a.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

/// Runs the binary with `args` on `home` (bounded by the test harness), returning its output.
pub fn cli(home: &FsPath, args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.arg("--home")
        .arg(home)
        .args(args)
        .env_remove("HERMES_HOME")
        .env("RUST_LOG", "warn")
        .env("TELEGRAM_BOT_TOKEN", "123:abc")
        .env("DISCORD_BOT_TOKEN", "dbot");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run hermes-zero")
}

pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// A fake Discord REST API recording channel messages.
#[derive(Clone)]
pub struct FakeDiscord {
    pub url: String,
    pub sent: Arc<Mutex<Vec<Value>>>,
}

impl FakeDiscord {
    pub async fn start() -> Self {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let router = axum::Router::new().route("/channels/{id}/messages", post(discord_handler)).with_state(sent.clone());
        Self { url: spawn_server(router).await, sent }
    }
    pub fn sent(&self) -> Vec<Value> {
        self.sent.lock().unwrap().clone()
    }
}

async fn discord_handler(
    State(sent): State<Arc<Mutex<Vec<Value>>>>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    Json(body): Json<Value>,
) -> Json<Value> {
    let mut b = body;
    b["_channel"] = json!(id);
    b["_auth"] = json!(headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or(""));
    sent.lock().unwrap().push(b);
    Json(json!({"id": "1"}))
}

/// The moto endpoint of `HZ_MOTO_ENDPOINT` (scripts/test.sh starts moto), or `None` after a
/// line saying that `what` is skipped without it.
#[allow(dead_code)]
pub fn moto_endpoint(what: &str) -> Option<String> {
    let e = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty());
    if e.is_none() {
        println!("{what} skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
    }
    e
}

/// The environment that puts a gateway or a CLI command on DynamoDB `table` at the moto
/// `endpoint`, with moto's test credentials.
#[allow(dead_code)]
pub fn moto_store_env<'a>(endpoint: &'a str, table: &'a str) -> [(&'static str, &'a str); 6] {
    [
        ("HERMES_STORE", "dynamodb"),
        ("HERMES_DYNAMODB_TABLE", table),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ]
}

/// A free local port (bound then released; fine for tests that must know a port up front).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the binary with `args`, waits (≤ 20 s) for a stdout line containing `marker`
/// followed by an address, and returns the child and that address.
pub fn spawn_listening(args: &[&str], envs: &[(&str, &str)], marker: &str) -> (Child, String) {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env_remove("HERMES_HOME")
        .env("RUST_LOG", std::env::var("HZ_TEST_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn hermes-zero");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let marker = marker.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(rest) = line.split(&marker).nth(1) {
                tx.send(rest.split_whitespace().next().unwrap_or("").to_string()).ok();
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(20)).expect("no listening line");
    (child, addr)
}

/// Kills a child on drop.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Test-only RSA key pair (tests/fixtures/jwt) for fire tokens.
pub const JWT_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");

/// config.yaml extra: fire tokens verified with the fixture RSA key, `iss`
/// `https://nas.test`, audience `agent:<instance>`.
pub fn pinned_key_chronos(instance: &str) -> String {
    format!(
        "cron:\n  chronos:\n    portal_url: https://nas.test\n    instance_id: {instance}\n    public_key_pem: {JWT_FIXTURES}rsa_public.pem\n"
    )
}

/// A valid RS256 fire token for `job` with `aud = agent:<instance>`, issued `offset` seconds
/// ahead of the wall clock (to match a gateway running with `HERMES_CLOCK_OFFSET_SECS`).
pub fn rsa_fire_token(job: &str, instance: &str, offset: i64) -> String {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let now = chrono::Utc::now().timestamp() + offset;
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{JWT_FIXTURES}rsa_private.pem")).unwrap()).unwrap();
    let c = json!({"iss": "https://nas.test", "aud": format!("agent:{instance}"), "iat": now, "exp": now + 120, "purpose": "cron_fire", "job_id": job, "jti": format!("{:x}", rand::random::<u128>())});
    encode(&Header::new(Algorithm::RS256), &c, &key).unwrap()
}

/// Fires `job` at `fire_at` `n` times concurrently (at most `in_flight` at once), spread over
/// `gws`; returns (ok, duplicate).
pub async fn fire_storm(
    gws: &[Gateway],
    job: &str,
    fire_at: &str,
    instance: &str,
    offset: i64,
    n: usize,
    in_flight: usize,
) -> (usize, usize) {
    let http = hermes_zero::clients::client_builder().pool_max_idle_per_host(64).timeout(Duration::from_secs(120)).build().unwrap();
    let gate = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let mut tasks = Vec::new();
    for i in 0..n {
        let url = format!("{}/api/cron/fire", gws[i % gws.len()].base);
        let (http, body, t) = (http.clone(), json!({"job_id": job, "fire_at": fire_at}), rsa_fire_token(job, instance, offset));
        let gate = gate.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            let r = http.post(url).bearer_auth(t).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }));
    }
    let (mut ok, mut dup) = (0, 0);
    for t in tasks {
        let (s, b) = t.await.unwrap();
        assert_eq!(s, 200, "{b}");
        match b["status"].as_str() {
            Some("ok") => ok += 1,
            Some("duplicate") => dup += 1,
            other => panic!("unexpected {other:?}: {b}"),
        }
    }
    (ok, dup)
}

/// `message` as OpenAI's SSE chunks: text in 4-character deltas, tool calls in one delta,
/// the finish, the usage, `[DONE]`.
fn sse_answer(message: &Value) -> Response {
    let frame = |v: Value| format!("data: {v}\n\n");
    let mut out = String::new();
    let finish = if let Some(calls) = message["tool_calls"].as_array() {
        let deltas: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"index": i, "id": c["id"], "type": "function", "function": c["function"]}))
            .collect();
        out.push_str(&frame(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": deltas}}]})));
        "tool_calls"
    } else {
        let text: Vec<char> = message["content"].as_str().unwrap_or("").chars().collect();
        for piece in text.chunks(4) {
            out.push_str(&frame(json!({"choices": [{"index": 0, "delta": {"content": piece.iter().collect::<String>()}}]})));
        }
        "stop"
    };
    out.push_str(&frame(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})));
    out.push_str(&frame(json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})));
    out.push_str("data: [DONE]\n\n");
    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], out).into_response()
}
