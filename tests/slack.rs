//! Black-box tests of Slack over the Events API: the real `serve` binary, requests signed
//! exactly as Slack documents (v0 HMAC-SHA256 of `v0:{timestamp}:{body}`), a fake model and a
//! fake Slack Web API that records `chat.postMessage` and `chat.update` calls.

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::*;
use ring::hmac;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const TOKEN: &str = "xoxb-test-token";

fn sign(ts: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, SECRET.as_bytes());
    let tag = hmac::sign(&key, &[format!("v0:{ts}:").as_bytes(), body].concat());
    format!("v0={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// One recorded Web API call.
#[derive(Clone, Debug)]
struct Call {
    method: String,
    auth: String,
    body: Value,
}

#[derive(Default)]
struct SlackState {
    calls: Vec<Call>,
    /// Answers to give before the normal `ok` (status, Retry-After, body).
    script: VecDeque<(u16, Option<&'static str>, Value)>,
}

type Shared = Arc<Mutex<SlackState>>;

async fn web_api(State(s): State<Shared>, Path(method): Path<String>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let mut g = s.lock().unwrap();
    g.calls.push(Call { method: method.clone(), auth, body: body.clone() });
    if let Some((status, wait, v)) = g.script.pop_front() {
        let mut resp = (StatusCode::from_u16(status).unwrap(), Json(v)).into_response();
        if let Some(w) = wait {
            resp.headers_mut().insert("retry-after", w.parse().unwrap());
        }
        return resp;
    }
    let n = g.calls.len();
    Json(json!({"ok": true, "channel": body["channel"], "ts": format!("9000.{n:06}")})).into_response()
}

/// A fake Slack Web API (`/api/{method}`).
struct FakeSlack {
    url: String,
    state: Shared,
}

impl FakeSlack {
    async fn start() -> Self {
        let state: Shared = Arc::default();
        let router = axum::Router::new().route("/api/{method}", post(web_api)).with_state(state.clone());
        Self { url: spawn_server(router).await, state }
    }
    fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }
    /// Successful `chat.postMessage` bodies.
    fn posts(&self) -> Vec<Value> {
        self.calls().into_iter().filter(|c| c.method == "chat.postMessage").map(|c| c.body).collect()
    }
    async fn wait_posts(&self, n: usize, secs: u64) -> Vec<Value> {
        wait_until(secs, || self.posts().len() >= n).await;
        self.posts()
    }
}

struct Setup {
    llm: FakeLlm,
    slack: FakeSlack,
    gw: Gateway,
    _home: TempHome,
}

async fn setup(tag: &str) -> Setup {
    setup_with(tag, "").await
}

/// `slack_extra`: more lines of the `platforms.slack` block (indented four spaces).
async fn setup_with(tag: &str, slack_extra: &str) -> Setup {
    let llm = FakeLlm::start().await;
    let slack = FakeSlack::start().await;
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(&llm), None, &format!("platforms:\n  slack:\n    api_base: {}/api\n{slack_extra}", slack.url)));
    let env = [("SLACK_SIGNING_SECRET", SECRET), ("SLACK_BOT_TOKEN", TOKEN), ("SLACK_ALLOWED_USERS", "U1,U2")];
    let gw = Gateway::start(home.path(), &env);
    Setup { llm, slack, gw, _home: home }
}

/// POSTs `body` with the given signature headers and extra headers.
async fn post_raw(gw: &Gateway, body: &[u8], ts: &str, sig: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let mut req = gw
        .http
        .post(format!("{}/webhooks/slack", gw.base))
        .header("content-type", "application/json")
        .header("X-Slack-Request-Timestamp", ts)
        .header("X-Slack-Signature", sig)
        .body(body.to_vec());
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

/// POSTs `v` signed now.
async fn deliver(gw: &Gateway, v: &Value) -> (u16, Value) {
    let body = serde_json::to_vec(v).unwrap();
    let ts = now().to_string();
    post_raw(gw, &body, &ts, &sign(&ts, &body), &[]).await
}

fn callback(event: Value) -> Value {
    json!({"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": format!("Ev{}", rand::random::<u32>()),
           "event_time": now(), "authorizations": [{"enterprise_id": null, "team_id": "T1", "user_id": "UBOT", "is_bot": true}], "event": event})
}

fn dm(user: &str, ts: &str, text: &str) -> Value {
    callback(
        json!({"type": "message", "channel": "D1", "channel_type": "im", "user": user, "text": text, "ts": ts, "client_msg_id": format!("c-{ts}")}),
    )
}

fn dm_in_thread(ts: &str, thread_ts: &str, text: &str) -> Value {
    let mut v = dm("U1", ts, text);
    v["event"]["thread_ts"] = json!(thread_ts);
    v
}

/// The last model request's messages, as text (what the model saw of the session).
fn seen_by_model(llm: &FakeLlm) -> String {
    llm.requests().last().map(|r| r["messages"].to_string()).unwrap_or_default()
}

fn mention(ts: &str, thread_ts: Option<&str>, text: &str) -> Value {
    let mut e = json!({"type": "app_mention", "channel": "C1", "user": "U2", "text": text, "ts": ts, "event_ts": ts});
    if let Some(t) = thread_ts {
        e["thread_ts"] = json!(t);
    }
    callback(e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_dms_and_mentions_get_one_reply_each_in_their_thread() {
    let t = setup("slack-ok").await;
    let (s, v) = deliver(&t.gw, &json!({"token": "x", "challenge": "ch-42", "type": "url_verification"})).await;
    assert_eq!((s, v), (200, json!({"challenge": "ch-42"})));

    // A top-level DM: answered at once, in its own thread (Hermes' default).
    let (s, _) = deliver(&t.gw, &dm("U1", "1000.000100", "hello there")).await;
    assert_eq!(s, 200);
    let posts = t.slack.wait_posts(1, 20).await;
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!((posts[0]["channel"].as_str(), posts[0]["text"].as_str()), (Some("D1"), Some("echo: hello there")));
    assert_eq!(posts[0]["thread_ts"], "1000.000100", "a top-level DM is answered in its own thread");
    assert_eq!(t.slack.calls()[0].auth, format!("Bearer {TOKEN}"));

    // A mention in a channel: answered in the thread under the message, without the mention.
    assert_eq!(deliver(&t.gw, &mention("2000.000200", None, "<@UBOT> what is up")).await.0, 200);
    let posts = t.slack.wait_posts(2, 20).await;
    assert_eq!((posts[1]["channel"].as_str(), posts[1]["thread_ts"].as_str()), (Some("C1"), Some("2000.000200")));
    assert_eq!(posts[1]["text"], "echo: what is up");

    // A follow-up mention in that thread continues the same conversation there.
    assert_eq!(deliver(&t.gw, &mention("2000.000300", Some("2000.000200"), "<@UBOT> and then?")).await.0, 200);
    let posts = t.slack.wait_posts(3, 20).await;
    assert_eq!((posts[2]["thread_ts"].as_str(), posts[2]["text"].as_str()), (Some("2000.000200"), Some("echo: and then?")));
    let history = t.llm.requests()[2]["messages"].to_string();
    assert!(history.contains("what is up"), "the thread is one session: {history}");
    assert!(!t.llm.requests()[1]["messages"].to_string().contains("hello there"), "the DM is another session");
    assert_eq!(t.llm.calls(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_stale_replayed_and_retried_requests_run_no_second_turn() {
    let t = setup("slack-auth").await;
    let body = serde_json::to_vec(&dm("U1", "3000.000100", "once")).unwrap();
    let ts = now().to_string();
    let forged = sign(&ts, b"other body");
    assert_eq!(post_raw(&t.gw, &body, &ts, &forged, &[]).await, (401, json!({"error": "unauthorized"})));
    let old = (now() - 301).to_string();
    assert_eq!(post_raw(&t.gw, &body, &old, &sign(&old, &body), &[]).await.0, 401, "stale");
    assert_eq!(post_raw(&t.gw, &body, &ts, "v0=", &[]).await.0, 401);
    let sig = sign(&ts, &body);
    assert_eq!(post_raw(&t.gw, &body, &ts, &sig, &[]).await.0, 200);
    assert_eq!(post_raw(&t.gw, &body, &ts, &sig, &[]).await.0, 401, "the same signed request replayed");
    // Slack's retry of the same event: a new signature, the retry header.
    let ts2 = (now() + 1).to_string();
    let (s, v) =
        post_raw(&t.gw, &body, &ts2, &sign(&ts2, &body), &[("X-Slack-Retry-Num", "1"), ("X-Slack-Retry-Reason", "http_timeout")]).await;
    assert_eq!((s, v["duplicate"].as_bool()), (200, Some(true)));
    t.slack.wait_posts(1, 20).await;
    // The same message delivered again without the header: the message id dedupes it.
    let ts3 = (now() + 2).to_string();
    assert_eq!(post_raw(&t.gw, &body, &ts3, &sign(&ts3, &body), &[]).await.0, 200);

    // Unsupported events and the bot's own messages are answered and ignored.
    let (s, v) = deliver(&t.gw, &callback(json!({"type": "reaction_added", "user": "U1", "item": {}}))).await;
    assert_eq!((s, v["ignored"].as_str()), (200, Some("unsupported event type")));
    let own = callback(
        json!({"type": "message", "channel": "D1", "channel_type": "im", "user": "UBOT", "bot_id": "B1", "text": "echo: once", "ts": "3000.000200"}),
    );
    assert_eq!(deliver(&t.gw, &own).await.0, 200);
    let edit = callback(
        json!({"type": "message", "subtype": "message_changed", "channel": "D1", "channel_type": "im", "ts": "3000.000300", "message": {}}),
    );
    assert_eq!(deliver(&t.gw, &edit).await.0, 200);

    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    assert_eq!((t.llm.calls(), t.slack.posts().len()), (1, 1), "one turn, one reply: {:?}", t.slack.posts());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_answers_split_at_the_limit_and_a_rate_limit_is_waited_out() {
    let t = setup("slack-long").await;
    let line = format!("{}\n", "y".repeat(99));
    let answer = line.repeat(450); // 45,000 characters in lines of 100
    t.llm.push(Reply::Text(answer.clone()));
    t.slack.state.lock().unwrap().script.push_back((429, Some("1"), json!({"ok": false, "error": "ratelimited"})));
    assert_eq!(deliver(&t.gw, &dm("U1", "4000.000100", "write a lot")).await.0, 200);
    let posts = t.slack.wait_posts(3, 30).await;
    let calls = t.slack.calls();
    assert_eq!(calls.len(), 3, "one rate-limited attempt, then two parts: {}", calls.len());
    let parts: Vec<&str> = posts.iter().skip(1).map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(posts[0]["text"], posts[1]["text"], "the rate-limited part was sent again, once");
    assert!(parts[0].chars().count() <= 39_000 && parts[0].chars().count() > 38_000, "first part: {}", parts[0].len());
    assert!(parts[0].ends_with('y') || parts[0].ends_with('\n'), "split on a line boundary");
    assert_eq!(parts[0].len() % 100, if parts[0].ends_with('\n') { 0 } else { 99 });
    assert_eq!(parts.concat().replace('\n', ""), answer.replace('\n', ""), "nothing lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_off_the_allow_list_gets_one_refusal_and_no_turn() {
    let t = setup("slack-deny").await;
    assert_eq!(deliver(&t.gw, &dm("U9", "5000.000100", "let me in")).await.0, 200);
    let posts = t.slack.wait_posts(1, 20).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(t.slack.posts().len(), 1);
    assert!(posts[0]["text"].as_str().unwrap().contains("allow list"), "{posts:?}");
    assert_eq!(posts[0]["channel"], "D1");
    assert_eq!(t.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_top_level_dm_is_answered_in_its_own_thread_and_that_thread_is_its_session() {
    let t = setup("slack-dm-threads").await;
    assert_eq!(deliver(&t.gw, &dm("U1", "6000.000100", "first topic: cats")).await.0, 200);
    let posts = t.slack.wait_posts(1, 20).await;
    assert_eq!((posts[0]["channel"].as_str(), posts[0]["thread_ts"].as_str()), (Some("D1"), Some("6000.000100")));
    assert_eq!(deliver(&t.gw, &dm("U1", "6000.000200", "second topic: dogs")).await.0, 200);
    let posts = t.slack.wait_posts(2, 20).await;
    assert_eq!(posts[1]["thread_ts"], "6000.000200", "a second top-level DM opens a second thread");
    assert!(!seen_by_model(&t.llm).contains("cats"), "and a second session: {}", seen_by_model(&t.llm));
    // The user answers inside the first thread: that thread's session continues there.
    assert_eq!(deliver(&t.gw, &dm_in_thread("6000.000300", "6000.000100", "more on that")).await.0, 200);
    let posts = t.slack.wait_posts(3, 20).await;
    assert_eq!((posts[2]["thread_ts"].as_str(), posts[2]["text"].as_str()), (Some("6000.000100"), Some("echo: more on that")));
    let seen = seen_by_model(&t.llm);
    assert!(seen.contains("first topic: cats") && !seen.contains("dogs"), "{seen}");
    assert_eq!(t.llm.calls(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_legacy_keys_give_one_dm_session_and_flat_channel_replies() {
    let extra = "    extra:\n      dm_top_level_threads_as_sessions: false\n      reply_in_thread: false\n";
    let t = setup_with("slack-flat", extra).await;
    assert_eq!(deliver(&t.gw, &dm("U1", "7000.000100", "remember: blue")).await.0, 200);
    t.slack.wait_posts(1, 20).await;
    assert_eq!(deliver(&t.gw, &dm("U1", "7000.000200", "what colour?")).await.0, 200);
    let posts = t.slack.wait_posts(2, 20).await;
    assert!(posts.iter().all(|p| p.get("thread_ts").is_none()), "answered in the DM: {posts:?}");
    assert!(seen_by_model(&t.llm).contains("remember: blue"), "one DM-wide session");
    // A top-level mention is answered in the channel, and the channel is one session.
    assert_eq!(deliver(&t.gw, &mention("7100.000100", None, "<@UBOT> note: red")).await.0, 200);
    t.slack.wait_posts(3, 20).await;
    assert_eq!(deliver(&t.gw, &mention("7100.000200", None, "<@UBOT> which note?")).await.0, 200);
    let posts = t.slack.wait_posts(4, 20).await;
    assert!(posts[2].get("thread_ts").is_none() && posts[3].get("thread_ts").is_none(), "{posts:?}");
    let seen = seen_by_model(&t.llm);
    assert!(seen.contains("note: red") && !seen.contains("blue"), "{seen}");
    // A mention inside a thread is still answered in that thread.
    assert_eq!(deliver(&t.gw, &mention("7100.000300", Some("7100.000100"), "<@UBOT> in here")).await.0, 200);
    let posts = t.slack.wait_posts(5, 20).await;
    assert_eq!(posts[4]["thread_ts"], "7100.000100");
}
