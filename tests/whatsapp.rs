//! Black-box tests of the WhatsApp Cloud API channel: the real `serve` binary, webhooks signed
//! as Meta documents (`X-Hub-Signature-256: sha256=` + hex HMAC-SHA256 of the raw body with the
//! app secret), a fake model, and a fake Graph API recording every `/messages` call.

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
use std::time::{Duration, Instant};

const SECRET: &str = "wa-app-secret";
const VERIFY: &str = "wa-verify-token";
const TOKEN: &str = "wa-access-token";
const PHONE_ID: &str = "106540352242922";
const ANN: &str = "4915100000001";
const BOB: &str = "4915100000002";

/// One `/messages` call as the fake Graph API saw it.
#[derive(Clone, Debug)]
struct Call {
    phone_id: String,
    auth: String,
    body: Value,
    accepted: bool,
}

#[derive(Default)]
struct GraphInner {
    calls: Vec<Call>,
    /// Statuses to answer with before accepting (e.g. one 429).
    script: VecDeque<u16>,
}

/// A fake Graph API: `POST /v21.0/{phone-number-id}/messages`.
#[derive(Clone)]
struct FakeGraph {
    url: String,
    inner: Arc<Mutex<GraphInner>>,
}

async fn messages(
    State(inner): State<Arc<Mutex<GraphInner>>>,
    Path(phone_id): Path<String>,
    h: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let mut g = inner.lock().unwrap();
    let status = g.script.pop_front().unwrap_or(200);
    let auth = h.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let n = g.calls.len();
    g.calls.push(Call { phone_id, auth, body, accepted: status == 200 });
    match status {
        200 => Json(json!({"messaging_product": "whatsapp", "contacts": [{"input": "x", "wa_id": "x"}], "messages": [{"id": format!("wamid.out{n}")}]}))
            .into_response(),
        429 => (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], Json(json!({"error": {"message": "(#130429) Rate limit hit", "type": "OAuthException", "code": 130429}})))
            .into_response(),
        s => (StatusCode::from_u16(s).unwrap(), Json(json!({"error": {"message": "fake", "code": 1}}))).into_response(),
    }
}

impl FakeGraph {
    async fn start() -> Self {
        let inner = Arc::new(Mutex::new(GraphInner::default()));
        let router = axum::Router::new().route("/v21.0/{phone_id}/messages", post(messages)).with_state(inner.clone());
        Self { url: spawn_server(router).await, inner }
    }
    fn calls(&self) -> Vec<Call> {
        self.inner.lock().unwrap().calls.clone()
    }
    /// The accepted messages, as (to, body text).
    fn delivered(&self) -> Vec<(String, String)> {
        self.calls()
            .iter()
            .filter(|c| c.accepted)
            .map(|c| (c.body["to"].as_str().unwrap().to_string(), c.body["text"]["body"].as_str().unwrap().to_string()))
            .collect()
    }
    async fn wait_delivered(&self, n: usize, secs: u64) -> Vec<(String, String)> {
        wait_until(secs, || self.delivered().len() >= n).await;
        self.delivered()
    }
}

struct Setup {
    llm: FakeLlm,
    graph: FakeGraph,
    gw: Gateway,
    home: TempHome,
}

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("WHATSAPP_CLOUD_APP_SECRET", SECRET),
        ("WHATSAPP_CLOUD_VERIFY_TOKEN", VERIFY),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", TOKEN),
        ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", PHONE_ID),
        ("WHATSAPP_CLOUD_ALLOWED_USERS", ANN),
        ("WHATSAPP_CLOUD_HOME_CHANNEL", BOB),
    ]
}

async fn setup(tag: &str) -> Setup {
    let llm = FakeLlm::start().await;
    let graph = FakeGraph::start().await;
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(&llm), None, &format!("platforms:\n  whatsapp:\n    api_base: {}\n", graph.url)));
    let gw = Gateway::start(home.path(), &env());
    Setup { llm, graph, gw, home }
}

fn sign(body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, SECRET.as_bytes()), body);
    format!("sha256={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A notification as Meta sends it, with `messages` for our number.
fn notification(messages: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550783881", "phone_number_id": PHONE_ID},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": ANN}, {"profile": {"name": "Bob"}, "wa_id": BOB}],
        "messages": messages}}]}]})
}

fn text(from: &str, id: &str, body: &str) -> Value {
    json!({"from": from, "id": id, "timestamp": "1749416383", "type": "text", "text": {"body": body}})
}

/// POSTs raw bytes with an optional signature header; returns the status and the elapsed time.
async fn post_raw(gw: &Gateway, body: &[u8], sig: Option<&str>) -> (u16, String, Duration) {
    let mut req = gw.http.post(format!("{}/webhooks/whatsapp", gw.base)).header("content-type", "application/json").body(body.to_vec());
    if let Some(s) = sig {
        req = req.header("X-Hub-Signature-256", s);
    }
    let start = Instant::now();
    let r = req.send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.text().await.unwrap_or_default(), start.elapsed())
}

async fn deliver(gw: &Gateway, v: &Value) -> u16 {
    let body = serde_json::to_vec(v).unwrap();
    post_raw(gw, &body, Some(&sign(&body))).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verify_handshake_echoes_the_challenge_only_for_the_right_token() {
    let s = setup("wa-verify").await;
    let get = |q: String| {
        let url = format!("{}/webhooks/whatsapp?{q}", s.gw.base);
        let http = s.gw.http.clone();
        async move {
            let r = http.get(url).send().await.unwrap();
            let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
            (r.status().as_u16(), ct, r.text().await.unwrap())
        }
    };
    let (status, ct, body) = get(format!("hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token={VERIFY}")).await;
    assert_eq!((status, body.as_str()), (200, "1158201444"));
    assert!(ct.starts_with("text/plain"), "{ct}");
    for q in [
        "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=wrong",
        "hub.mode=other&hub.challenge=1&hub.verify_token=wa-verify-token",
        "hub.challenge=1",
    ] {
        let (status, _, body) = get(q.into()).await;
        assert_eq!(status, 401, "{q}");
        assert!(!body.contains("1158201444") && !body.contains("token"), "no detail: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_text_gets_one_reply_to_its_sender() {
    let s = setup("wa-text").await;
    let v = notification(json!([text(ANN, "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", "hello there")]));
    let body = serde_json::to_vec(&v).unwrap();
    let (status, _, took) = post_raw(&s.gw, &body, Some(&sign(&body))).await;
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(3), "answered before the turn: {took:?}");
    assert_eq!(s.graph.wait_delivered(1, 10).await, [(ANN.to_string(), "echo: hello there".to_string())]);
    let call = &s.graph.calls()[0];
    assert_eq!(call.phone_id, PHONE_ID);
    assert_eq!(call.auth, format!("Bearer {TOKEN}"));
    assert_eq!((call.body["messaging_product"].as_str(), call.body["type"].as_str()), (Some("whatsapp"), Some("text")));
    assert_eq!(s.llm.calls(), 1);
    let (_, sessions) = s.gw.get("/api/sessions").await;
    assert!(sessions.to_string().contains(&format!("agent:main:whatsapp:dm:{ANN}")), "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_unsigned_and_replayed_deliveries_start_no_turn() {
    let s = setup("wa-forged").await;
    let v = notification(json!([text(ANN, "wamid.A", "first")]));
    let body = serde_json::to_vec(&v).unwrap();
    // Forged: signed with another secret, a tampered body, no header, a garbage header.
    let other = {
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, b"not-the-secret"), &body);
        format!("sha256={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
    };
    let tampered = serde_json::to_vec(&notification(json!([text(ANN, "wamid.A", "firsT")]))).unwrap();
    for (b, sig) in [(&body, Some(other.as_str())), (&tampered, Some(sign(&body).as_str())), (&body, None), (&body, Some("sha256=00"))] {
        let (status, text, _) = post_raw(&s.gw, b, sig).await;
        assert_eq!(status, 401);
        assert!(!text.contains("signature") && !text.contains("secret"), "no detail: {text}");
    }
    // The genuine delivery, then Meta's redelivery of the same message id: one turn.
    assert_eq!(deliver(&s.gw, &v).await, 200);
    assert_eq!(s.graph.wait_delivered(1, 10).await.len(), 1);
    assert_eq!(deliver(&s.gw, &v).await, 200);
    assert_eq!(deliver(&s.gw, &notification(json!([text(ANN, "wamid.B", "second")]))).await, 200);
    let got = s.graph.wait_delivered(2, 10).await;
    assert_eq!(got, [(ANN.to_string(), "echo: first".to_string()), (ANN.to_string(), "echo: second".to_string())]);
    assert_eq!(s.llm.calls(), 2, "the forged calls and the redelivery ran no turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_callbacks_are_answered_and_ignored() {
    let s = setup("wa-status").await;
    let v = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "1", "phone_number_id": PHONE_ID},
        "statuses": [{"id": "wamid.out0", "status": "read", "timestamp": "1749416383", "recipient_id": ANN}]}}]}]});
    assert_eq!(deliver(&s.gw, &v).await, 200);
    // A message after it is answered; the status before it ran nothing.
    assert_eq!(deliver(&s.gw, &notification(json!([text(ANN, "wamid.C", "after")]))).await, 200);
    assert_eq!(s.graph.wait_delivered(1, 10).await, [(ANN.to_string(), "echo: after".to_string())]);
    assert_eq!(s.llm.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_answer_is_split_at_4096_on_line_boundaries() {
    let s = setup("wa-long").await;
    let lines: Vec<String> = (0..150).map(|i| format!("{i:03} {}", "x".repeat(56))).collect();
    let long = lines.join("\n");
    assert!(long.chars().count() > 2 * 4096);
    s.llm.push(Reply::Text(long.clone()));
    assert_eq!(deliver(&s.gw, &notification(json!([text(ANN, "wamid.L", "essay please")]))).await, 200);
    let got = s.graph.wait_delivered(3, 10).await;
    assert_eq!(got.len(), 3, "{} parts", got.len());
    let parts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
    assert!(parts.iter().all(|p| p.chars().count() <= 4096));
    // Each part but the last ends at a line end, so every line arrives whole.
    assert!(parts[..2].iter().all(|p| p.ends_with('\n')));
    assert_eq!(parts[0].lines().count(), 4096 / 61, "as many whole 61-char lines as fit");
    assert_eq!(parts.concat(), long);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_reply_is_delivered_once_after_the_wait() {
    let s = setup("wa-429").await;
    s.graph.inner.lock().unwrap().script.push_back(429);
    assert_eq!(deliver(&s.gw, &notification(json!([text(ANN, "wamid.R", "hi")]))).await, 200);
    let got = s.graph.wait_delivered(1, 15).await;
    assert_eq!(got, [(ANN.to_string(), "echo: hi".to_string())]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = s.graph.calls();
    assert_eq!(calls.len(), 2, "one refused, one accepted: {calls:?}");
    assert_eq!(s.graph.delivered().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_off_the_allow_list_gets_one_refusal_and_no_turn() {
    let s = setup("wa-allow").await;
    assert_eq!(deliver(&s.gw, &notification(json!([text(BOB, "wamid.X", "let me in")]))).await, 200);
    let got = s.graph.wait_delivered(1, 10).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, BOB);
    assert!(got[0].1.contains("allow list"), "{}", got[0].1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.graph.delivered().len(), 1);
    assert_eq!(s.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_messages_in_one_notification_are_each_answered_in_order() {
    let s = setup("wa-batch").await;
    let v = notification(json!([text(ANN, "wamid.M1", "one"), text(ANN, "wamid.M2", "two"), text(BOB, "wamid.M3", "three")]));
    assert_eq!(deliver(&s.gw, &v).await, 200);
    let got = s.graph.wait_delivered(3, 15).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], (ANN.to_string(), "echo: one".to_string()));
    assert_eq!(got[1], (ANN.to_string(), "echo: two".to_string()));
    assert_eq!(got[2].0, BOB, "Bob is not allowed: his answer is the refusal");
    assert_eq!(s.llm.calls(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_delivered_to_whatsapp_goes_to_the_home_channel() {
    let s = setup("wa-home").await;
    let envs = env();
    let o = cli(s.home.path(), &["cron", "add", "every 1h", "daily summary", "--name", "sum", "--deliver", "whatsapp"], &envs);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cli(s.home.path(), &["cron", "run", "sum"], &envs);
    assert!(stdout(&o).contains(": ok"), "{} {}", stdout(&o), stderr(&o));
    let got = s.graph.delivered();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, BOB, "WHATSAPP_CLOUD_HOME_CHANNEL");
    let o = cli(s.home.path(), &["cron", "add", "every 1h", "x", "--name", "direct", "--deliver", &format!("whatsapp:{ANN}")], &envs);
    assert!(o.status.success(), "{}", stderr(&o));
    cli(s.home.path(), &["cron", "run", "direct"], &envs);
    assert_eq!(s.graph.delivered().last().unwrap().0, ANN);
}
