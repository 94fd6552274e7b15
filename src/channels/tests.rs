//! The seam end to end with a local fake channel: registering it adds its webhook route,
//! authentication runs before parsing, a retry header is answered without a turn, and replies
//! go out through its `send`, split at its limit.

use crate::channels::{Channel, ChannelError, Channels, RawRequest, Received, Route, Sent, Unauthenticated, WebReply};
use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Inbound, ReplyPath};
use crate::http::{HttpState, router};
use crate::ports::{DeliveryError, Target};
use crate::test_support::{CountingLlm, TestApp};
use async_trait::async_trait;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tower::ServiceExt;

/// A platform whose webhook body is the message text and whose key is a header.
#[derive(Default)]
struct Fake {
    parsed: Arc<AtomicUsize>,
    sent: Arc<Mutex<Vec<(String, String)>>>,
}

#[async_trait]
impl Channel for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn routes(&self) -> Vec<Route> {
        vec![Route::post("/webhooks/fake")]
    }
    fn authenticate(&self, req: &RawRequest<'_>) -> Result<(), Unauthenticated> {
        if req.header("x-fake-key") == Some("k") { Ok(()) } else { Err(Unauthenticated("bad key")) }
    }
    fn retry(&self, req: &RawRequest<'_>) -> Option<WebReply> {
        req.header("x-fake-retry").map(|_| WebReply::json(json!({"ok": true, "retry": true})))
    }
    fn receive(&self, req: &RawRequest<'_>) -> Result<Received, ChannelError> {
        self.parsed.fetch_add(1, Ordering::SeqCst);
        let text = std::str::from_utf8(req.body).map_err(|e| ChannelError::BadRequest(e.to_string()))?;
        let origin = Origin::new("fake", "room", ChatType::Dm, Some("u1"), None).map_err(|e| ChannelError::BadRequest(e.to_string()))?;
        Ok(Received::Turn(Inbound {
            origin,
            text: text.into(),
            message_id: None,
            user_name: None,
            reply: ReplyPath::Origin,
            attachments: Vec::new(),
        }))
    }
    fn limit(&self) -> usize {
        5
    }
    async fn send(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        self.sent.lock().unwrap().push((target.chat_id.clone(), text.to_string()));
        Ok(Sent::default())
    }
}

async fn call(state: &Arc<HttpState>, headers: &[(&str, &str)], body: &str) -> (StatusCode, Value) {
    let mut req = Request::post("/webhooks/fake");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = router(state.clone()).oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = resp.status();
    (status, serde_json::from_slice(&to_bytes(resp.into_body(), usize::MAX).await.unwrap()).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_registered_channel_gets_its_route_and_delivery() {
    let fake = Fake::default();
    let (parsed, sent) = (fake.parsed.clone(), fake.sent.clone());
    let llm = CountingLlm::new("hello world");
    let t = TestApp::new(chrono::Utc::now()).yaml("allow_all_users: true").llm(llm.clone());
    let channels = Arc::new(Channels::from_config(&t.loaded()).with(fake));
    let app = t.delivery(channels.clone()).build();
    let state = Arc::new(HttpState { app, channels, api_key: None, provider: "builtin".into() });

    assert_eq!(call(&state, &[("x-fake-key", "no")], "hi").await, (StatusCode::UNAUTHORIZED, json!({"error": "unauthorized"})));
    assert_eq!(parsed.load(Ordering::SeqCst), 0, "nothing is parsed before authentication");
    let (s, v) = call(&state, &[("x-fake-key", "k"), ("x-fake-retry", "1")], "hi").await;
    assert_eq!((s, v), (StatusCode::OK, json!({"ok": true, "retry": true})));
    assert_eq!((parsed.load(Ordering::SeqCst), llm.calls()), (0, 0), "a retry runs no turn");

    assert_eq!(call(&state, &[("x-fake-key", "k")], "hi").await, (StatusCode::OK, json!({"ok": true})));
    assert_eq!(llm.calls(), 1);
    let parts: Vec<(String, String)> = sent.lock().unwrap().clone();
    let want = [("room", "hello"), ("room", " worl"), ("room", "d")].map(|(c, t)| (c.to_string(), t.to_string()));
    assert_eq!(parts, want, "the reply goes out through the channel, split at its limit");
}

#[test]
fn a_registered_channel_denies_by_default() {
    let t = || TestApp::new(chrono::Utc::now()).yaml("{}").llm(CountingLlm::new("x"));
    let fake = Origin::new("fake", "room", ChatType::Dm, Some("u1"), None).unwrap();
    let api = Origin { platform: "api".into(), ..fake.clone() };
    assert!(t().build().sessions().is_allowed(&fake), "not a channel yet: authenticated elsewhere");
    let app = t().delivery(Arc::new(Channels::default().with(Fake::default()))).build();
    assert!(!app.sessions().is_allowed(&fake), "a chat platform without an allow list refuses everyone");
    assert!(app.sessions().is_allowed(&api));
}
