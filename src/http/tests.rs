//! Router tests through `tower::ServiceExt::oneshot`: auth, body limits, JSON errors.

#![allow(clippy::unwrap_used)]

use crate::channels::Channels;
use crate::config::Env;
use crate::http::{HttpState, router};
use crate::test_support::TestApp;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use secrecy::SecretString;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

fn state() -> Arc<HttpState> {
    let home = std::env::temp_dir().join("hz-router-none");
    let t = TestApp::new(chrono::Utc::now()).home(home).env(Env::from_pairs([("TELEGRAM_WEBHOOK_SECRET", "s3cret")]));
    let channels = Arc::new(Channels::from_config(&t.loaded()));
    let app = t.delivery(channels.clone()).build();
    Arc::new(HttpState { app, channels, api_key: Some(SecretString::from("k1".to_string())), provider: "builtin".into() })
}

async fn call(req: Request<Body>) -> (StatusCode, Value) {
    let resp = router(state()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn post(path: &str, auth: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post(path).header("content-type", "application/json");
    if let Some(a) = auth {
        b = b.header("authorization", a);
    }
    b.body(body.into()).unwrap()
}

#[tokio::test]
async fn healthz_reports_store_and_provider() {
    let (s, v) = call(Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["store"], "sqlite");
    assert_eq!(v["provider"], "builtin");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn api_requires_the_bearer_key() {
    let body = r#"{"chat_id":"c","user_id":"u","text":"hi"}"#;
    for auth in [None, Some("Bearer nope"), Some("k1"), Some("Basic k1")] {
        let (s, v) = call(post("/api/messages", auth, body)).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(v["error"], "unauthorized");
    }
    let (s, _) = call(Request::get("/api/sessions").body(Body::empty()).unwrap()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, v) = call(post("/api/messages", Some("Bearer k1"), body)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["reply"].as_str().unwrap().starts_with("[offline]"));
}

#[tokio::test]
async fn bad_json_and_missing_fields_are_400_with_json_error() {
    for body in [
        "{",
        "[]",
        r#"{"chat_id":"c","user_id":"u"}"#,
        r#"{"chat_id":"c:x","user_id":"u","text":"t"}"#,
        r#"{"chat_id":"c","user_id":"u","text":"  "}"#,
        r#"{"chat_id":"c","user_id":"u","text":"t","chat_type":"room"}"#,
    ] {
        let (s, v) = call(post("/api/messages", Some("Bearer k1"), body)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert!(v["error"].is_string(), "{body}");
    }
}

#[tokio::test]
async fn bodies_over_one_mib_are_413() {
    let big = format!(r#"{{"chat_id":"c","user_id":"u","text":"{}"}}"#, "x".repeat(1024 * 1024 + 10));
    let (s, v) = call(post("/api/messages", Some("Bearer k1"), big.clone())).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(v["error"].as_str().unwrap().contains("1 MiB"));
    let (s, _) = call(post("/webhooks/telegram", None, big)).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn telegram_webhook_checks_secret_and_ignores_non_text() {
    let upd = r#"{"update_id":1,"message":{"message_id":1,"chat":{"id":5,"type":"private"},"from":{"id":5,"is_bot":false},"text":"hi"}}"#;
    let mut r = post("/webhooks/telegram", None, upd);
    r.headers_mut().insert("x-telegram-bot-api-secret-token", "wrong".parse().unwrap());
    assert_eq!(call(r).await.0, StatusCode::UNAUTHORIZED);
    let mut r = post("/webhooks/telegram", None, r#"{"update_id":2}"#);
    r.headers_mut().insert("x-telegram-bot-api-secret-token", "s3cret".parse().unwrap());
    let (s, v) = call(r).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["ignored"], "no message");
    let mut r = post("/webhooks/telegram", None, r#"{"nope":true}"#);
    r.headers_mut().insert("x-telegram-bot-api-secret-token", "s3cret".parse().unwrap());
    assert_eq!(call(r).await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn unknown_paths_and_sessions_are_json_404() {
    let (s, v) = call(Request::get("/nope").body(Body::empty()).unwrap()).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(v["error"], "not found");
    let r = Request::get("/api/sessions/20260101_000000_abcdef12").header("authorization", "Bearer k1").body(Body::empty()).unwrap();
    assert_eq!(call(r).await.0, StatusCode::NOT_FOUND);
    let r = Request::get("/api/sessions/..%2Fetc").header("authorization", "Bearer k1").body(Body::empty()).unwrap();
    assert_eq!(call(r).await.0, StatusCode::BAD_REQUEST);
}
