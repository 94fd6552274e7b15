//! Webhook routes through the real router (`oneshot`): each check in Hermes' order with its
//! status and body, the run after the 202 reaching the delivery port once, `deliver_only`
//! with no model call, and the store-request budget of one delivery (docs/api.md#webhook-routes).

#![allow(clippy::unwrap_used)]

use crate::http::router;
use crate::ports::{ManualClock, SessionStore, Store};
use crate::store::counting::{CountingStore, breakdown};
use crate::store::sqlite::SqliteStore;
use crate::test_support::{EchoLlm, Outbox, TestApp, http_state};
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// Most store requests one accepted delivery may make, answer delivered (the delivery id,
/// the session with its prompt, the answer with the session's end; the home channel read
/// when no chat is named).
const WEBHOOK_BUDGET: u64 = 5;

const YAML: &str = "platforms:
  telegram: {home_channel: '-100home'}
  webhook:
    extra:
      routes:
        gh:
          secret: s3cret
          events: [push]
          prompt: 'Push to {repository.full_name} by {pusher.name}'
          deliver: telegram
          deliver_extra: {chat_id: '{repository.owner.id}'}
        alert:
          secret: s3cret
          deliver: telegram
          deliver_only: true
          prompt: 'ALERT {msg}'
        slow:
          secret: s3cret
          rate_limit: 2
        off:
          secret: s3cret
          enabled: false
";

struct Rig {
    router: axum::Router,
    outbox: Arc<Outbox>,
    llm: Arc<EchoLlm>,
    store: Arc<CountingStore>,
}

fn rig() -> Rig {
    let now = chrono::Utc::now();
    let (outbox, llm) = (Arc::new(Outbox::default()), Arc::new(EchoLlm::default()));
    let store = Arc::new(CountingStore::new(Arc::new(SqliteStore::in_memory().unwrap())));
    let app = TestApp::new(now)
        .yaml(YAML)
        .clock(Arc::new(ManualClock::new(now)))
        .store(store.clone() as Arc<dyn Store>)
        .llm(llm.clone())
        .delivery(outbox.clone())
        .build();
    Rig { router: router(http_state(app, Some("k1"), "builtin")), outbox, llm, store }
}

fn github(path: &str, body: &str, secret: &str, delivery: &str) -> Request<Body> {
    let sig = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()), body.as_bytes());
    let hex: String = sig.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Request::post(path)
        .header("content-type", "application/json")
        .header("X-GitHub-Event", "push")
        .header("X-GitHub-Delivery", delivery)
        .header("X-Hub-Signature-256", format!("sha256={hex}"))
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn call(r: &axum::Router, req: Request<Body>) -> (StatusCode, Value) {
    let resp = r.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn wait_sent(outbox: &Outbox, n: usize) -> Vec<(crate::ports::Target, String)> {
    for _ in 0..200 {
        if outbox.all().len() >= n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    outbox.all()
}

const PUSH: &str = r#"{"repository":{"full_name":"o/r","owner":{"id":-100777}},"pusher":{"name":"ann"}}"#;

#[tokio::test]
async fn a_signed_push_runs_once_and_its_answer_reaches_the_chat() {
    let r = rig();
    let (s, v) = call(&r.router, github("/webhooks/gh", PUSH, "s3cret", "d-1")).await;
    assert_eq!((s, &v), (StatusCode::ACCEPTED, &json!({"status": "accepted", "route": "gh", "event": "push", "delivery_id": "d-1"})));
    let sent = wait_sent(&r.outbox, 1).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!((sent[0].0.platform.as_str(), sent[0].0.chat_id.as_str()), ("telegram", "-100777"), "deliver_extra rendered");
    assert_eq!(sent[0].1, "echo: Push to o/r by ann", "the template went to the model, its answer to the chat");
    // GitHub retries the same delivery: a duplicate, no second run.
    let (s, v) = call(&r.router, github("/webhooks/gh", PUSH, "s3cret", "d-1")).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "duplicate", "delivery_id": "d-1"})));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!((r.outbox.all().len(), r.llm.requests().len()), (1, 1));
}

#[tokio::test]
async fn bad_deliveries_get_hermes_errors_and_change_nothing() {
    let r = rig();
    let cases = [
        (github("/webhooks/nope", PUSH, "s3cret", "x1"), StatusCode::NOT_FOUND, "Unknown route: nope"),
        (github("/webhooks/off", PUSH, "s3cret", "x2"), StatusCode::FORBIDDEN, "Route disabled: off"),
        (github("/webhooks/gh", PUSH, "wrong", "x3"), StatusCode::UNAUTHORIZED, "Invalid signature"),
        (github("/webhooks/gh", &format!("{{\"a\":\"{}\"}}", "x".repeat(1_100_000)), "s3cret", "x4"), StatusCode::PAYLOAD_TOO_LARGE, ""),
    ];
    for (req, status, error) in cases {
        let (s, v) = call(&r.router, req).await;
        assert_eq!(s, status, "{v}");
        if !error.is_empty() {
            assert_eq!(v["error"], error);
        }
    }
    // A signed body that is neither JSON nor UTF-8 text.
    let bytes = [b'{', 0xff, 0xfe];
    let sig = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"s3cret"), &bytes);
    let hex: String = sig.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    let req =
        Request::post("/webhooks/gh").header("X-Hub-Signature-256", format!("sha256={hex}")).body(Body::from(bytes.to_vec())).unwrap();
    assert_eq!(call(&r.router, req).await, (StatusCode::BAD_REQUEST, json!({"error": "Cannot parse body"})));
    let mut unsigned = github("/webhooks/gh", PUSH, "s3cret", "x6");
    unsigned.headers_mut().remove("X-Hub-Signature-256");
    assert_eq!(call(&r.router, unsigned).await.0, StatusCode::UNAUTHORIZED);
    // Another event type than the route's `events`: ignored, as Hermes answers.
    let mut other = github("/webhooks/gh", PUSH, "s3cret", "x7");
    other.headers_mut().insert("X-GitHub-Event", "issues".parse().unwrap());
    assert_eq!(call(&r.router, other).await, (StatusCode::OK, json!({"status": "ignored", "event": "issues"})));
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(r.outbox.all().is_empty() && r.llm.requests().is_empty(), "no turn, nothing sent");
    let sessions = r.store.list_entries(10).await.unwrap();
    assert!(sessions.is_empty(), "no session stored: {sessions:?}");
}

#[tokio::test]
async fn deliver_only_sends_the_template_with_no_model_call() {
    let r = rig();
    let (s, v) = call(&r.router, github("/webhooks/alert", r#"{"msg":"disk full"}"#, "s3cret", "a-1")).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "delivered", "route": "alert", "target": "telegram", "delivery_id": "a-1"})));
    let sent = r.outbox.all();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].0.chat_id.as_str(), sent[0].1.as_str()), ("-100home", "ALERT disk full"), "home channel, rendered text");
    assert!(r.llm.requests().is_empty(), "no model call");
}

#[tokio::test]
async fn the_rate_limit_answers_429_per_route() {
    let r = rig();
    for (i, want) in [StatusCode::ACCEPTED, StatusCode::ACCEPTED, StatusCode::TOO_MANY_REQUESTS].into_iter().enumerate() {
        let (s, v) = call(&r.router, github("/webhooks/slow", "{}", "s3cret", &format!("r-{i}"))).await;
        assert_eq!(s, want, "{i}: {v}");
        if want == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(v["error"], "Rate limit exceeded");
        }
    }
    let (s, _) = call(&r.router, github("/webhooks/gh", PUSH, "s3cret", "other-route")).await;
    assert_eq!(s, StatusCode::ACCEPTED, "another route has its own window");
}

#[tokio::test]
async fn one_delivery_stays_within_its_store_budget() {
    let r = rig();
    r.store.take();
    let (s, _) = call(&r.router, github("/webhooks/gh", PUSH, "s3cret", "b-1")).await;
    assert_eq!(s, StatusCode::ACCEPTED);
    assert_eq!(wait_sent(&r.outbox, 1).await.len(), 1);
    // The closing write happens before the send: once sent, every request was made.
    let counts = r.store.take();
    let total: u64 = counts.values().sum();
    assert!(total <= WEBHOOK_BUDGET, "{total} store requests: {}", breakdown(&counts));
    let entries = r.store.list_entries(10).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].origin.chat_id, "webhook:gh:b-1");
    assert!(entries[0].session_key.as_str().ends_with(":webhook:gh:b-1"), "{}", entries[0].session_key);
    let msgs = r.store.recent_messages(&entries[0].session_id, 10).await.unwrap();
    assert_eq!(msgs.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["Push to o/r by ann", "echo: Push to o/r by ann"]);
    let rec = r.store.get_session(&entries[0].session_id).await.unwrap().unwrap();
    assert_eq!(rec.end_reason.as_deref(), Some("webhook_complete"));
}

#[tokio::test]
async fn a_webhook_session_reads_back_in_hermes_message_shape() {
    let r = rig();
    assert_eq!(call(&r.router, github("/webhooks/gh", PUSH, "s3cret", "m-1")).await.0, StatusCode::ACCEPTED);
    assert_eq!(wait_sent(&r.outbox, 1).await.len(), 1);
    let sid = r.store.list_entries(10).await.unwrap()[0].session_id.clone();
    let get = |path: String, auth: &str| Request::get(path).header("authorization", auth).body(Body::empty()).unwrap();
    let (s, v) = call(&r.router, get(format!("/api/sessions/{sid}/messages"), "Bearer k1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((v["object"].as_str(), v["session_id"].as_str()), (Some("list"), Some(sid.as_str())));
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(
        (data[0]["id"].as_i64(), data[0]["role"].as_str(), data[0]["content"].as_str()),
        (Some(1), Some("user"), Some("Push to o/r by ann"))
    );
    assert_eq!((data[1]["role"].as_str(), data[1]["content"].as_str()), (Some("assistant"), Some("echo: Push to o/r by ann")));
    assert!(data[1]["timestamp"].as_f64().is_some());
    let (s, v) = call(&r.router, get("/api/sessions/20260101_000000_deadbeef/messages".into(), "Bearer k1")).await;
    assert_eq!((s, v["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("session_not_found")));
    assert_eq!(call(&r.router, get(format!("/api/sessions/{sid}/messages"), "Bearer no")).await.0, StatusCode::UNAUTHORIZED);
}
