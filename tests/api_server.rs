//! The OpenAI-compatible API server (CONTRACT §15) through the real binary, driven by the
//! real clients Hermes users point at it: the official `openai` Python SDK and
//! `hermes-agent-api-client` from PyPI (tests/common/api_sdk.rs: a venv made by
//! scripts/test.sh, `HZ_API_SDK_PY`; under CI=true a missing venv fails; tests/lambda.rs runs
//! the same checks through the Lambda entry). Plus the refusals: wrong key before the body,
//! malformed messages, unsupported parts, bad session headers, oversized bodies — each with
//! no turn and nothing stored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::api_sdk::{check_hermes_client, check_openai_sdk, sdk_python};
use common::{FakeLlm, Gateway, Reply, TempHome, config};
use serde_json::{Value, json};

async fn gateway(tag: &str) -> (TempHome, FakeLlm, Gateway) {
    let home = TempHome::new(tag);
    let llm = FakeLlm::start().await;
    llm.stream_when_asked();
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    (home, llm, gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_sdk_works_unchanged() {
    let Some(python) = sdk_python() else { return };
    let (_home, llm, gw) = gateway("api-openai").await;
    check_openai_sdk(&python, &gw.base, &llm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_agent_api_client_probes_and_streams_tool_progress() {
    let Some(python) = sdk_python() else { return };
    let (_home, llm, gw) = gateway("api-hermes-client").await;
    check_hermes_client(&python, &gw.base, &llm).await;
}

/// Extra headers, body, expected status and error message.
type Case<'a> = (Vec<(&'a str, &'a str)>, String, u16, &'a str);

async fn post_raw(
    gw: &Gateway,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, Value, reqwest::header::HeaderMap) {
    let mut req = gw.http.post(format!("{}{path}", gw.base)).header("content-type", "application/json").body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let (status, h) = (r.status().as_u16(), r.headers().clone());
    (status, r.json().await.unwrap_or(Value::Null), h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_openai_errors_and_run_no_turn() {
    let (_home, llm, gw) = gateway("api-bad").await;
    let auth = format!("Bearer {}", common::API_KEY);
    let ok = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
    // Wrong or missing key: 401 before the body is read (this body is not JSON).
    for h in [vec![], vec![("authorization", "Bearer nope")]] {
        let (s, b, _) = post_raw(&gw, "/v1/chat/completions", &h, "{not json").await;
        assert_eq!((s, &b["error"]["code"]), (401, &json!("invalid_api_key")), "{b}");
    }
    let (long_id, long_key) = ("x".repeat(300), "k".repeat(300));
    let cases: Vec<Case> = vec![
        (vec![], "{not json".into(), 400, "Invalid JSON in request body"),
        (vec![], json!({"messages": "hi"}).to_string(), 400, "Missing or invalid 'messages' field"),
        (vec![], json!({"messages": [{"role": "system", "content": "s"}]}).to_string(), 400, "No user message found in messages"),
        (
            vec![],
            json!({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}).to_string(),
            400,
            "Unsupported content part type 'input_audio'. Only text and image_url/input_image parts are supported.",
        ),
        (vec![("X-Hermes-Session-Id", "../etc/passwd")], ok.clone(), 400, "Invalid session ID"),
        (vec![("X-Hermes-Session-Id", &long_id)], ok.clone(), 400, "Session ID too long"),
        (vec![("X-Hermes-Session-Key", &long_key)], ok.clone(), 400, "Session key too long"),
    ];
    for (extra, body, status, message) in cases {
        let mut h = vec![("authorization", auth.as_str())];
        h.extend(extra);
        let (s, b, _) = post_raw(&gw, "/v1/chat/completions", &h, body).await;
        assert_eq!((s, b["error"]["message"].as_str()), (status, Some(message)), "{b}");
        assert_eq!(b["error"]["type"], "invalid_request_error", "{b}");
    }
    let big = format!(r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#, "x".repeat(1_100_000));
    // On a connection of its own: the server answers before reading the body and closes it.
    let once = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let r = once.post(format!("{}/v1/chat/completions", gw.base)).header("authorization", &auth).body(big).send().await.unwrap();
    let (s, b) = (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null));
    assert_eq!((s, &b["error"]["code"]), (413, &json!("body_too_large")), "{b}");
    let (s, b, _) =
        post_raw(&gw, "/v1/responses", &[("authorization", &auth)], json!({"input": "x", "previous_response_id": "resp_nope"}).to_string())
            .await;
    assert_eq!((s, b["error"]["message"].as_str()), (404, Some("Previous response not found: resp_nope")), "{b}");
    assert_eq!(llm.calls(), 0, "no request ran a turn");
    let (_, sessions) = gw.get("/api/sessions").await;
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 0, "nothing stored: {sessions}");
    // A good request with an explicit session id: echoed, and its session continues.
    let h = [("authorization", auth.as_str()), ("X-Hermes-Session-Id", "agent:main:webui x"), ("X-Hermes-Session-Key", "scope-1")];
    let (s, b, headers) = post_raw(&gw, "/v1/chat/completions", &h, ok.clone()).await;
    assert_eq!((s, b["choices"][0]["message"]["content"].as_str()), (200, Some("echo: hi")), "{b}");
    assert_eq!(headers["x-hermes-session-id"], "agent:main:webui x");
    assert_eq!(headers["x-hermes-session-key"], "scope-1");
    let (_, health) = gw.get("/health").await;
    assert_eq!((health["status"].as_str(), health["platform"].as_str()), (Some("ok"), Some("hermes-agent")));
    let r = gw.http.get(format!("{}/v1/health", gw.base)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "no key needed for health");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_is_agent_incomplete_and_a_stream_ends_in_error() {
    let (_home, llm, gw) = gateway("api-fail").await;
    let auth = format!("Bearer {}", common::API_KEY);
    for _ in 0..8 {
        llm.push(Reply::Status(400));
    }
    let body = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
    let (s, b, headers) = post_raw(&gw, "/v1/chat/completions", &[("authorization", &auth)], body).await;
    assert_eq!((s, b["error"]["code"].as_str(), b["error"]["type"].as_str()), (502, Some("agent_incomplete"), Some("server_error")), "{b}");
    assert_eq!(b["error"]["hermes"]["failed"], true, "{b}");
    assert_eq!(headers["x-hermes-completed"], "false");
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true}).to_string();
    let r = gw.http.post(format!("{}/v1/chat/completions", gw.base)).header("authorization", &auth).body(body).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    assert!(text.contains(r#""finish_reason":"error""#) && text.ends_with("data: [DONE]\n\n"), "{text}");
}
