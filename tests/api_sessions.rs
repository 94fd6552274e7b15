//! `/api/sessions` in Hermes' shapes (CONTRACT §15, `gateway/platforms/api_server.py`)
//! through the real binary: a session created over the API is the one a later
//! `/v1/chat/completions` with `X-Hermes-Session-Id` continues; get and list show its
//! messages; patch, fork (the transcript carried, the source `branched`), delete; a delete
//! while a turn runs; and the refusals, each with nothing stored and no turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FakeLlm, Gateway, TempHome, config};
use serde_json::{Value, json};
use std::time::Duration;

async fn gateway(tag: &str) -> (TempHome, FakeLlm, Gateway) {
    let home = TempHome::new(tag);
    let llm = FakeLlm::start().await;
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    (home, llm, gw)
}

/// `method path` with the key (or `auth`), and a raw body; status and JSON.
async fn call(gw: &Gateway, method: &str, path: &str, auth: Option<&str>, body: Option<String>) -> (u16, Value) {
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = gw.http.request(m, format!("{}{path}", gw.base)).header("authorization", auth.unwrap_or(&format!("Bearer {}", gw.key)));
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b);
    }
    let r = req.send().await.unwrap();
    let s = r.status().as_u16();
    (s, r.json().await.unwrap_or(Value::Null))
}

async fn send(gw: &Gateway, method: &str, path: &str, body: Value) -> (u16, Value) {
    call(gw, method, path, None, Some(body.to_string())).await
}

/// One chat completion in Hermes session `sid`; the answer's text.
async fn chat(gw: &Gateway, sid: &str, text: &str) -> String {
    chat_at(&gw.http, &gw.base, &gw.key, sid, text).await
}

async fn chat_at(http: &reqwest::Client, base: &str, key: &str, sid: &str, text: &str) -> String {
    let body = json!({"model": "hermes-agent", "messages": [{"role": "user", "content": text}]});
    let r = http
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key)
        .header("X-Hermes-Session-Id", sid)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    v["choices"][0]["message"]["content"].as_str().unwrap().to_string()
}

fn users(req: &Value) -> Vec<String> {
    req["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

fn roles_and_texts(list: &Value) -> Vec<(String, String)> {
    list["data"].as_array().unwrap().iter().map(|m| (m["role"].as_str().unwrap().into(), m["content"].as_str().unwrap().into())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_chat_patch_fork_delete() {
    let (_home, llm, gw) = gateway("api-sessions").await;
    // A capability probe finds the resource and the fork, as Hermes advertises them.
    let (_, caps) = gw.get("/v1/capabilities").await;
    assert_eq!((caps["features"]["session_resources"].as_bool(), caps["features"]["session_fork"].as_bool()), (Some(true), Some(true)));
    assert_eq!(caps["endpoints"]["session_fork"], json!({"method": "POST", "path": "/api/sessions/{session_id}/fork"}));
    let (s, older) = send(&gw, "POST", "/api/sessions", json!({"session_id": "older", "title": "Older"})).await;
    assert_eq!(s, 201, "{older}");
    let (s, v) = send(&gw, "POST", "/api/sessions", json!({"id": "my-chat", "title": "  Trip\nplans ", "model": "m1"})).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["object"], "hermes.session");
    let created = &v["session"];
    assert_eq!(
        (created["id"].as_str(), created["source"].as_str(), created["title"].as_str()),
        (Some("my-chat"), Some("api_server"), Some("Trip plans"))
    );
    assert_eq!(
        (created["message_count"].as_u64(), created["model"].as_str(), created["preview"].as_str()),
        (Some(0), Some("m1"), Some(""))
    );
    assert_eq!((created["has_system_prompt"].as_bool(), created["parent_session_id"].clone()), (Some(false), Value::Null));
    assert!(created["started_at"].as_f64().unwrap() > 1.0e9 && created["ended_at"].is_null(), "{created}");
    let (s, v) = send(&gw, "POST", "/api/sessions", json!({"id": "my-chat"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("session_exists")), "{v}");
    let (s, v) = send(&gw, "POST", "/api/sessions", json!({"title": "Trip plans"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("invalid_title")), "a title is one session's: {v}");

    // The created session is the one the header continues: its transcript was empty.
    assert_eq!(chat(&gw, "my-chat", "hello").await, "echo: hello");
    assert_eq!(users(&llm.requests()[0]), ["hello"]);
    let (s, v) = call(&gw, "GET", "/api/sessions/my-chat", None, None).await;
    assert_eq!(s, 200, "{v}");
    let got = &v["session"];
    assert_eq!((got["message_count"].as_u64(), got["preview"].as_str()), (Some(2), Some("hello")), "{got}");
    assert!(got["last_active"].as_f64().unwrap() >= got["started_at"].as_f64().unwrap());
    assert!(got["input_tokens"].as_u64().is_some(), "the current conversation's usage: {got}");
    let (_, list) = call(&gw, "GET", "/api/sessions", None, None).await;
    assert_eq!((list["object"].as_str(), list["limit"].as_u64(), list["has_more"].as_bool()), (Some("list"), Some(50), Some(false)));
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["my-chat", "older"], "most recently active first: {list}");
    assert_eq!(list["data"][0], *got, "the list shows what get shows");
    let (_, page) = call(&gw, "GET", "/api/sessions?limit=1&offset=1&source=api_server", None, None).await;
    assert_eq!((page["data"][0]["id"].as_str(), page["has_more"].as_bool()), (Some("older"), Some(true)), "{page}");
    let (_, none) = call(&gw, "GET", "/api/sessions?source=telegram", None, None).await;
    assert_eq!(none["data"], json!([]));

    let (s, v) = send(&gw, "PATCH", "/api/sessions/my-chat", json!({"title": "Renamed"})).await;
    assert_eq!((s, v["session"]["title"].as_str()), (200, Some("Renamed")), "{v}");
    let (s, v) = send(&gw, "PATCH", "/api/sessions/my-chat", json!({"title": "x", "model": "y", "id": "z"})).await;
    assert_eq!(
        (s, v["error"]["code"].as_str(), v["error"]["message"].as_str()),
        (400, Some("unsupported_session_field"), Some("Unsupported session fields: id, model"))
    );
    let (s, v) = send(&gw, "PATCH", "/api/sessions/my-chat", json!({"title": "Older"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("invalid_title")), "{v}");

    let (s, v) = send(&gw, "POST", "/api/sessions/my-chat/fork", json!({"id": "my-fork"})).await;
    assert_eq!(s, 201, "{v}");
    let fork = &v["session"];
    assert_eq!(
        (fork["id"].as_str(), fork["parent_session_id"].as_str(), fork["title"].as_str()),
        (Some("my-fork"), Some("my-chat"), Some("Renamed #2"))
    );
    assert_eq!(
        (fork["message_count"].as_u64(), fork["model"].as_str(), fork["source"].as_str()),
        (Some(2), Some("m1"), Some("api_server"))
    );
    let (_, src) = call(&gw, "GET", "/api/sessions/my-chat", None, None).await;
    assert_eq!(src["session"]["end_reason"], "branched");
    let (_, a) = call(&gw, "GET", "/api/sessions/my-chat/messages", None, None).await;
    let (_, b) = call(&gw, "GET", "/api/sessions/my-fork/messages", None, None).await;
    assert_eq!((a["session_id"].as_str(), b["session_id"].as_str()), (Some("my-chat"), Some("my-fork")));
    assert_eq!(roles_and_texts(&a), roles_and_texts(&b));
    assert_eq!(roles_and_texts(&b), [("user".to_string(), "hello".to_string()), ("assistant".into(), "echo: hello".into())]);
    // The fork continues with the carried history.
    assert_eq!(chat(&gw, "my-fork", "again").await, "echo: again");
    assert_eq!(users(llm.requests().last().unwrap()), ["hello", "again"]);

    let (s, v) = call(&gw, "DELETE", "/api/sessions/my-chat", None, None).await;
    assert_eq!((s, v), (200, json!({"object": "hermes.session.deleted", "id": "my-chat", "deleted": true})));
    for path in ["/api/sessions/my-chat", "/api/sessions/my-chat/messages"] {
        let (s, v) = call(&gw, "GET", path, None, None).await;
        assert_eq!((s, v["error"]["code"].as_str()), (404, Some("session_not_found")), "{path}: {v}");
    }
    let (s, v) = call(&gw, "DELETE", "/api/sessions/my-chat", None, None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("session_not_found")));
    let (_, list) = call(&gw, "GET", "/api/sessions", None, None).await;
    let ids: Vec<&str> = list["data"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["my-fork", "older"]);
    // The id is free again: a new conversation in its place starts empty.
    assert_eq!(chat(&gw, "my-chat", "fresh").await, "echo: fresh");
    assert_eq!(users(llm.requests().last().unwrap()), ["fresh"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_a_turn_is_not_deleted() {
    let (_home, llm, gw) = gateway("api-sessions-busy").await;
    assert_eq!(send(&gw, "POST", "/api/sessions", json!({"id": "busy"})).await.0, 201);
    llm.set_delay(2000);
    let (http, base, key) = (gw.http.clone(), gw.base.clone(), gw.key.clone());
    let turn = tokio::spawn(async move { chat_at(&http, &base, &key, "busy", "slow").await });
    assert!(common::wait_until(10, || llm.calls() == 1).await, "the turn reached the model");
    let (s, v) = call(&gw, "DELETE", "/api/sessions/busy", None, None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("session_busy")), "{v}");
    assert_eq!(turn.await.unwrap(), "echo: slow");
    let (_, v) = call(&gw, "GET", "/api/sessions/busy", None, None).await;
    assert_eq!(v["session"]["message_count"], 2, "nothing was deleted: {v}");
    assert_eq!(call(&gw, "DELETE", "/api/sessions/busy", None, None).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_and_store_nothing() {
    let (_home, llm, gw) = gateway("api-sessions-bad").await;
    let wrong = Some("Bearer nope");
    for (method, path) in [
        ("GET", "/api/sessions"),
        ("POST", "/api/sessions"),
        ("GET", "/api/sessions/x"),
        ("PATCH", "/api/sessions/x"),
        ("DELETE", "/api/sessions/x"),
        ("POST", "/api/sessions/x/fork"),
        ("GET", "/api/sessions/x/messages"),
    ] {
        let (s, v) = call(&gw, method, path, wrong, Some("{not json".into())).await;
        assert_eq!((s, v["error"]["code"].as_str()), (401, Some("invalid_api_key")), "{method} {path}: {v}");
    }
    let long = "a".repeat(257);
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        ("POST", "/api/sessions", "{not json".into(), 400, "Invalid JSON in request body"),
        ("POST", "/api/sessions", "[1]".into(), 400, "Invalid JSON in request body"),
        ("POST", "/api/sessions", json!({"id": "../etc"}).to_string(), 400, "Invalid session ID"),
        ("POST", "/api/sessions", json!({"id": "   "}).to_string(), 400, "Invalid session ID"),
        ("POST", "/api/sessions", json!({"id": long}).to_string(), 400, "Session ID too long"),
        ("POST", "/api/sessions", json!({"id": "ok", "system_prompt": 5}).to_string(), 400, "system_prompt must be a string"),
        ("POST", "/api/sessions", json!({"id": "ok", "title": "t".repeat(101)}).to_string(), 400, "Title too long (101 chars, max 100)"),
        ("PATCH", "/api/sessions/nope", json!({"title": "x"}).to_string(), 404, "Session not found: nope"),
        ("POST", "/api/sessions/nope/fork", "{}".into(), 404, "Session not found: nope"),
    ];
    for (method, path, body, status, message) in cases {
        let (s, v) = call(&gw, method, path, None, Some(body.clone())).await;
        assert_eq!((s, v["error"]["message"].as_str()), (status, Some(message)), "{method} {path} {body}: {v}");
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
    let (s, v) = call(&gw, "GET", "/api/sessions/..%2Fetc", None, None).await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("invalid_session_id")), "{v}");
    let (_, list) = call(&gw, "GET", "/api/sessions", None, None).await;
    assert_eq!(list["data"], json!([]), "nothing stored");
    // A good one, then the fork's checks against it.
    assert_eq!(send(&gw, "POST", "/api/sessions", json!({"id": "src"})).await.0, 201);
    let (s, v) = send(&gw, "POST", "/api/sessions/src/fork", json!({"id": "src"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("session_exists")));
    let (s, v) = send(&gw, "POST", "/api/sessions/src/fork", json!({"id": "a\u{0}b"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("invalid_session_id")));
    let (_, list) = call(&gw, "GET", "/api/sessions", None, None).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "no fork was stored: {list}");
    assert_eq!(list["data"][0]["end_reason"], Value::Null, "the source was not ended by a refused fork");
    let (_, limits) = call(&gw, "GET", "/api/sessions?limit=9999&offset=-3", None, None).await;
    assert_eq!((limits["limit"].as_u64(), limits["offset"].as_u64()), (Some(200), Some(0)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(llm.calls(), 0, "no turn ran");
}
