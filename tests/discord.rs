//! Black-box tests of the Discord interactions endpoint: the real `serve` binary, a real
//! Ed25519 key pair (fixed seed), a fake model and a fake Discord REST API that records
//! interaction follow-ups and bot channel messages.

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{patch, post};
use common::sse::SseModel;
use common::*;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SEED: [u8; 32] = [0x11; 32];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn public_hex(seed: [u8; 32]) -> String {
    hex(&SigningKey::from_bytes(&seed).verifying_key().to_bytes())
}

fn sign(seed: [u8; 32], ts: &str, body: &[u8]) -> String {
    hex(&SigningKey::from_bytes(&seed).sign(&[ts.as_bytes(), body].concat()).to_bytes())
}

fn now_ts() -> String {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs().to_string()
}

/// One recorded call: the path kind (`followup`, `edit`, `channel`), its ids, the edited
/// message's id (edits), and the JSON body.
#[derive(Clone, Debug)]
struct Post {
    kind: &'static str,
    ids: (String, String),
    msg: String,
    body: Value,
}

type Posts = Arc<Mutex<Vec<Post>>>;

/// The fake's state: what it received, the next message id, and whether edits fail.
#[derive(Clone, Default)]
struct DcState {
    posts: Posts,
    next_id: Arc<Mutex<u64>>,
    fail_edits: bool,
}

impl DcState {
    fn record(&self, kind: &'static str, ids: (String, String), msg: String, body: Value) -> String {
        let mut n = self.next_id.lock().unwrap();
        *n += 1;
        let id = if kind == "edit" { msg.clone() } else { format!("m{n}") };
        self.posts.lock().unwrap().push(Post { kind, ids, msg: if kind == "edit" { msg } else { id.clone() }, body });
        id
    }
}

/// `POST /webhooks/{app}/{token}`: a follow-up. Like Discord's execute webhook, only
/// `?wait=true` answers with the created message (its id); otherwise 204 and no body.
async fn followup(
    State(st): State<DcState>,
    Path((app, token)): Path<(String, String)>,
    RawQuery(q): RawQuery,
    Json(body): Json<Value>,
) -> Response {
    let content = body["content"].clone();
    let id = st.record("followup", (app, token), String::new(), body);
    if !q.unwrap_or_default().split('&').any(|kv| kv == "wait=true") {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(json!({"id": id, "content": content})).into_response()
}

/// `PATCH /webhooks/{app}/{token}/messages/{id}`: edits a follow-up (a 400 when edits fail).
async fn edit_followup(
    State(st): State<DcState>,
    Path((app, token, msg)): Path<(String, String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let content = body["content"].clone();
    let id = st.record("edit", (app, token), msg, body);
    if st.fail_edits {
        return (StatusCode::BAD_REQUEST, Json(json!({"message": "Cannot edit this message", "code": 50005}))).into_response();
    }
    Json(json!({"id": id, "content": content})).into_response()
}

async fn channel(State(st): State<DcState>, Path(id): Path<String>, Json(body): Json<Value>) -> Json<Value> {
    let id = st.record("channel", (id, String::new()), String::new(), body);
    Json(json!({"id": id}))
}

/// A fake Discord REST API.
#[derive(Clone)]
struct FakeDiscord {
    url: String,
    posts: Posts,
}

impl FakeDiscord {
    async fn start() -> Self {
        Self::start_with(false).await
    }
    async fn start_with(fail_edits: bool) -> Self {
        let st = DcState { fail_edits, ..DcState::default() };
        let router = axum::Router::new()
            .route("/webhooks/{app}/{token}", post(followup))
            .route("/webhooks/{app}/{token}/messages/{id}", patch(edit_followup))
            .route("/channels/{id}/messages", post(channel))
            .with_state(st.clone());
        Self { url: spawn_server(router).await, posts: st.posts }
    }
    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }
    fn of(&self, kind: &str) -> Vec<Post> {
        self.posts().into_iter().filter(|p| p.kind == kind).collect()
    }
    fn followups(&self) -> Vec<String> {
        self.of("followup").iter().map(|p| p.body["content"].as_str().unwrap_or("").to_string()).collect()
    }
    /// Each follow-up's text as the channel shows it now (its last accepted edit), in order.
    fn shown(&self, edits_fail: bool) -> Vec<String> {
        let posts = self.posts();
        let followups = posts.iter().filter(|p| p.kind == "followup");
        followups
            .map(|f| {
                let last = posts.iter().rfind(|p| p.kind == "edit" && p.msg == f.msg && !edits_fail).unwrap_or(f);
                last.body["content"].as_str().unwrap_or("").to_string()
            })
            .collect()
    }
    /// Waits (bounded) until at least `n` POSTs arrived.
    async fn wait_for(&self, n: usize, secs: u64) -> Vec<Post> {
        wait_until(secs, || self.posts().len() >= n).await;
        self.posts()
    }
}

struct Setup {
    llm: FakeLlm,
    discord: FakeDiscord,
    gw: Gateway,
    _home: TempHome,
}

async fn setup(tag: &str, extra_env: &[(&str, &str)]) -> Setup {
    let llm = FakeLlm::start().await;
    let discord = FakeDiscord::start().await;
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(&llm), None, &format!("platforms:\n  discord:\n    api_base: {}\n", discord.url)));
    let key = public_hex(SEED);
    let mut env = vec![("DISCORD_PUBLIC_KEY", key.as_str()), ("DISCORD_ALLOWED_USERS", "42")];
    env.extend_from_slice(extra_env);
    let gw = Gateway::start(home.path(), &env);
    Setup { llm, discord, gw, _home: home }
}

/// POSTs raw bytes with the given signature headers (None: header left out).
async fn post_raw(gw: &Gateway, body: &[u8], sig: Option<&str>, ts: Option<&str>) -> (u16, Value) {
    let mut req = gw.http.post(format!("{}/webhooks/discord", gw.base)).header("content-type", "application/json").body(body.to_vec());
    if let Some(s) = sig {
        req = req.header("X-Signature-Ed25519", s);
    }
    if let Some(t) = ts {
        req = req.header("X-Signature-Timestamp", t);
    }
    let r = req.send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

/// POSTs an interaction signed with the test key and a fresh timestamp.
async fn interact(gw: &Gateway, v: &Value) -> (u16, Value) {
    let body = serde_json::to_vec(v).unwrap();
    let ts = now_ts();
    post_raw(gw, &body, Some(&sign(SEED, &ts, &body)), Some(&ts)).await
}

/// A slash command from `user` in a DM channel.
fn command(id: &str, user: &str, name: &str, options: Value) -> Value {
    json!({
        "id": id, "type": 2, "application_id": "app1", "token": format!("tok-{id}"), "version": 1,
        "channel_id": "c100", "user": {"id": user, "username": "ann"},
        "data": {"id": "cmd1", "name": name, "type": 1, "options": options}
    })
}

fn ask(id: &str, user: &str, text: &str) -> Value {
    command(id, user, "ask", json!([{"name": "text", "type": 3, "value": text}]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_answers_pong_with_a_valid_signature() {
    let t = setup("dc-ping", &[]).await;
    let (s, v) = interact(&t.gw, &json!({"id": "p1", "type": 1, "application_id": "app1", "token": "tp", "version": 1})).await;
    assert_eq!((s, v), (200, json!({"type": 1})));
    assert!(t.discord.posts().is_empty());
}

/// A signature case: name, body, signature header, timestamp header, expected status.
type Case<'a> = (&'a str, Vec<u8>, Option<&'a str>, Option<&'a str>, u16);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signature_checks_refuse_without_saying_which_failed() {
    let t = setup("dc-sig", &[]).await;
    let body = br#"{"id":"p1","type":1}"#.to_vec();
    let ts = now_ts();
    let good = sign(SEED, &ts, &body);
    let wrong_key = sign([0x22; 32], &ts, &body);
    let stale = (ts.parse::<i64>().unwrap() - 301).to_string();
    let stale_sig = sign(SEED, &stale, &body);
    let future = (ts.parse::<i64>().unwrap() + 600).to_string();
    let future_sig = sign(SEED, &future, &body);
    let tampered = br#"{"id":"p2","type":1}"#.to_vec();
    let cases: Vec<Case> = vec![
        ("valid", body.clone(), Some(&good), Some(&ts), 200),
        ("wrong key", body.clone(), Some(&wrong_key), Some(&ts), 401),
        ("tampered body", tampered, Some(&good), Some(&ts), 401),
        ("other timestamp", body.clone(), Some(&good), Some(&stale), 401),
        ("stale timestamp", body.clone(), Some(&stale_sig), Some(&stale), 401),
        ("future timestamp", body.clone(), Some(&future_sig), Some(&future), 401),
        ("missing signature", body.clone(), None, Some(&ts), 401),
        ("missing timestamp", body.clone(), Some(&good), None, 401),
        ("no headers", body.clone(), None, None, 401),
        ("garbage signature", body.clone(), Some("not-hex"), Some(&ts), 401),
        ("short signature", body.clone(), Some(&good[..64]), Some(&ts), 401),
        ("unsigned garbage body", b"not json".to_vec(), None, Some(&ts), 401),
    ];
    for (name, b, sig, t_s, want) in cases {
        let (s, v) = post_raw(&t.gw, &b, sig, t_s).await;
        assert_eq!(s, want, "{name}: {v}");
        if want == 401 {
            assert_eq!(v, json!({"error": "unauthorized"}), "{name}");
        }
    }
    // Without DISCORD_PUBLIC_KEY every request is refused.
    let home = TempHome::new("dc-nokey");
    let gw = Gateway::start(home.path(), &[]);
    let (s, v) = post_raw(&gw, &body, Some(&good), Some(&ts)).await;
    assert_eq!((s, v), (401, json!({"error": "unauthorized"})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_and_unknown_interactions_are_rejected() {
    let t = setup("dc-bad", &[]).await;
    let ts = now_ts();
    let garbage = b"{not json".to_vec();
    let (s, v) = post_raw(&t.gw, &garbage, Some(&sign(SEED, &ts, &garbage)), Some(&ts)).await;
    assert_eq!(s, 400, "{v}");
    assert!(v["error"].is_string());
    let (s, v) = interact(&t.gw, &json!({"id": "x1", "type": 3, "application_id": "app1", "token": "t"})).await;
    assert_eq!(s, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("type 3"));
    let (s, v) = interact(&t.gw, &command("x2", "42", "dance", json!([]))).await;
    assert_eq!(s, 200);
    assert_eq!(v["type"], 4);
    assert!(v["data"]["content"].as_str().unwrap().starts_with("Unknown command"), "{v}");
    let big = vec![b' '; 1024 * 1024 + 10];
    let (s, v) = post_raw(&t.gw, &big, Some(&sign(SEED, &ts, &big)), Some(&ts)).await;
    assert_eq!(s, 413, "{v}");
    assert!(v["error"].is_string());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(t.discord.posts().is_empty());
    assert_eq!(t.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_is_deferred_then_answered_by_one_follow_up() {
    let t = setup("dc-ask", &[]).await;
    let (s, v) = interact(&t.gw, &ask("i1", "42", "hello")).await;
    assert_eq!((s, v), (200, json!({"type": 5})));
    let posts = t.discord.wait_for(1, 15).await;
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0].kind, "followup");
    assert_eq!(posts[0].ids, ("app1".to_string(), "tok-i1".to_string()));
    assert_eq!(posts[0].body["content"], "echo: hello");
    assert_eq!(t.llm.calls(), 1);
    assert_eq!(last_user(&t.llm.requests()[0]), "hello");
    let (_, list) = t.gw.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["session_key"], "agent:main:discord:dm:c100", "{list}");
    // Nothing else arrives later (no second delivery through the bot API).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(t.discord.posts().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_reply_is_split_into_follow_ups_of_at_most_2000_chars() {
    let t = setup("dc-long", &[]).await;
    let line = format!("{}\n", "é".repeat(999));
    let long = line.repeat(5);
    t.llm.push(Reply::Text(long.clone()));
    let (s, _) = interact(&t.gw, &ask("i1", "42", "write a lot")).await;
    assert_eq!(s, 200);
    t.discord.wait_for(3, 15).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let parts = t.discord.followups();
    assert_eq!(parts.len(), 3, "{:?}", parts.iter().map(|p| p.chars().count()).collect::<Vec<_>>());
    assert!(parts.iter().all(|p| p.chars().count() <= 2000));
    assert_eq!(parts.concat(), long);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_not_on_the_allow_list_gets_one_refusal_and_no_turn() {
    let t = setup("dc-deny", &[]).await;
    let (s, v) = interact(&t.gw, &ask("i1", "666", "let me in")).await;
    assert_eq!((s, v), (200, json!({"type": 5})));
    t.discord.wait_for(1, 15).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let parts = t.discord.followups();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert!(parts[0].contains("allow list"), "{parts:?}");
    assert_eq!(t.discord.posts().len(), 1);
    assert_eq!(t.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_commands_are_answered_without_a_model_call() {
    let t = setup("dc-cmd", &[]).await;
    let (s, v) = interact(&t.gw, &command("i1", "42", "status", json!([]))).await;
    assert_eq!((s, v), (200, json!({"type": 5})));
    t.discord.wait_for(1, 15).await;
    let (s, _) = interact(&t.gw, &command("i2", "42", "new", json!([{"name": "title", "type": 3, "value": "Trip"}]))).await;
    assert_eq!(s, 200);
    t.discord.wait_for(2, 15).await;
    let (s, _) = interact(&t.gw, &command("i3", "42", "help", json!([]))).await;
    assert_eq!(s, 200);
    t.discord.wait_for(3, 15).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let parts = t.discord.followups();
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert!(parts[0].starts_with("Session "), "{parts:?}");
    assert!(parts[0].contains("Running: no"), "{parts:?}");
    assert_eq!(parts[1], "✨ New session started: Trip");
    assert!(parts[2].starts_with("Commands:"), "{parts:?}");
    assert_eq!(t.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_interaction_id_runs_no_second_turn() {
    let t = setup("dc-dup", &[]).await;
    let first = ask("i1", "42", "once only");
    let (s, _) = interact(&t.gw, &first).await;
    assert_eq!(s, 200);
    t.discord.wait_for(1, 15).await;
    let (s, v) = interact(&t.gw, &first).await;
    assert_eq!((s, v), (200, json!({"type": 5})));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(t.llm.calls(), 1);
    assert_eq!(t.discord.followups(), vec!["echo: once only".to_string()]);
}

/// Needs the Discord channel's slash commands to reach the app with `ReplyPath::Caller`
/// (see `channels::discord::interaction`); without it the bot token path posts the reply a
/// second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_bot_token_the_reply_is_not_posted_twice() {
    let t = setup("dc-bot", &[("DISCORD_BOT_TOKEN", "bot-token")]).await;
    let (s, _) = interact(&t.gw, &ask("i1", "42", "hello")).await;
    assert_eq!(s, 200);
    let (s, _) = interact(&t.gw, &ask("i2", "666", "let me in")).await;
    assert_eq!(s, 200);
    t.discord.wait_for(2, 15).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let posts = t.discord.posts();
    assert!(posts.iter().all(|p| p.kind == "followup"), "{posts:?}");
    assert_eq!(posts.len(), 2, "{posts:?}");
}

const CURSOR: &str = " ▉";

/// A gateway with streaming on (`edit_interval` 0.3 s, `buffer_threshold` 10) against the
/// SSE model fake, answering one `/ask` with `answer`.
async fn streamed_ask(tag: &str, fail_edits: bool, chunk: usize, answer: &str) -> (FakeDiscord, SseModel, Gateway, TempHome) {
    let model = SseModel::start(chunk, 40).await;
    model.answers.lock().unwrap().push(answer.to_string());
    let discord = FakeDiscord::start_with(fail_edits).await;
    let home = TempHome::new(tag);
    home.write(
        "config.yaml",
        &format!(
            "model:\n  provider: openai\n  base_url: {}\n  name: sse-model\n  timeout_seconds: 20\n\
platforms:\n  discord:\n    api_base: {}\n\
streaming:\n  enabled: true\n  transport: edit\n  edit_interval: 0.3\n  buffer_threshold: 10\n  cursor: \"{CURSOR}\"\n",
            model.url, discord.url
        ),
    );
    let key = public_hex(SEED);
    let gw = Gateway::start(home.path(), &[("DISCORD_PUBLIC_KEY", key.as_str()), ("DISCORD_ALLOWED_USERS", "42")]);
    let (s, v) = interact(&gw, &ask("s1", "42", "tell me")).await;
    assert_eq!((s, v), (200, json!({"type": 5})));
    (discord, model, gw, home)
}

fn words(n: usize) -> String {
    (0..n).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_ask_grows_in_its_follow_up_and_ends_whole() {
    let answer = words(40);
    let (dc, model, _gw, _home) = streamed_ask("dc-stream", false, 6, &answer).await;
    assert!(wait_until(20, || dc.of("edit").last().is_some_and(|e| e.body["content"] == answer.as_str())).await, "{:#?}", dc.posts());
    // Nothing more after the turn: the outcome says the reply was streamed.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(model.requests.lock().unwrap()[0]["stream"], true);
    let (followups, edits) = (dc.of("followup"), dc.of("edit"));
    assert_eq!(followups.len(), 1, "one follow-up, never a second one from the outcome: {:#?}", dc.posts());
    assert!(followups[0].body["content"].as_str().unwrap().ends_with(CURSOR), "the first follow-up grows with the cursor");
    assert_eq!(followups[0].ids, ("app1".to_string(), "tok-s1".to_string()));
    assert!(edits.len() >= 2, "at least two edits: {edits:#?}");
    assert!(edits.iter().all(|e| e.msg == followups[0].msg && e.ids == followups[0].ids), "{edits:#?}");
    assert_eq!(edits.last().unwrap().body["content"], answer.as_str(), "the final edit is the whole answer");
    assert_eq!(dc.shown(false), vec![answer]);
    assert!(dc.of("channel").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_ask_past_2000_chars_continues_in_a_new_follow_up() {
    let lines: Vec<String> = (0..30).map(|i| format!("line {i:02} {}", "x".repeat(90))).collect();
    let answer = lines.join("\n");
    assert!(answer.len() > 2000 && answer.len() < 4000);
    let (dc, _model, _gw, _home) = streamed_ask("dc-stream-long", false, 200, &answer).await;
    assert!(wait_until(20, || dc.shown(false).concat() == answer).await, "{:#?}", dc.posts());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let shown = dc.shown(false);
    assert_eq!(shown.len(), 2, "{:#?}", dc.posts());
    assert!(shown.iter().all(|t| t.chars().count() <= 2000 && !t.contains(CURSOR)), "{shown:#?}");
    assert_eq!(shown.concat(), answer, "both follow-ups together are the whole answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_follow_up_edit_falls_back_to_one_final_follow_up() {
    let answer = words(30);
    let (dc, _model, _gw, _home) = streamed_ask("dc-stream-fail", true, 6, &answer).await;
    assert!(wait_until(20, || dc.of("followup").len() >= 2).await, "{:#?}", dc.posts());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let followups = dc.followups();
    assert_eq!(dc.of("edit").len(), 1, "no edit after one failed: {:#?}", dc.posts());
    assert_eq!(followups.len(), 2, "the growing follow-up and one final follow-up: {followups:#?}");
    assert!(followups[0].ends_with(CURSOR));
    assert_eq!(followups[1], answer, "the fallback is the whole answer, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_streamed_ask_is_one_follow_up_and_no_edit() {
    let (dc, _model, _gw, _home) = streamed_ask("dc-stream-short", false, 3, "Hi there.").await;
    assert!(wait_until(20, || !dc.followups().is_empty()).await);
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(dc.followups(), vec!["Hi there.".to_string()], "{:#?}", dc.posts());
    assert!(dc.of("edit").is_empty());
}
