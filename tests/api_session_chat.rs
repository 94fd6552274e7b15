//! The session chat of the API server (`POST /api/sessions/{id}/chat` and `/chat/stream`,
//! Hermes 0.19.0's `_handle_session_chat*`) through the real binary and plain HTTP (neither
//! the `openai` SDK nor `hermes-agent-api-client` has an API for these routes): a chat
//! continues an API session's stored history, its `system_message` reaches the model for that
//! turn only and is never stored, the stream's events come in Hermes' order with their
//! fields and tool progress, and the refusals (401, 404, 400, 409) run no turn and store
//! nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Gateway, Reply, api_gateway};
use serde_json::{Value, json};

fn auth() -> String {
    format!("Bearer {}", common::API_KEY)
}

/// One turn of `/v1/chat/completions` in Hermes session `id`.
async fn completion(gw: &Gateway, id: &str, text: &str) -> Value {
    let body = json!({"messages": [{"role": "user", "content": text}]}).to_string();
    let (s, b, _) = gw.post_raw("/v1/chat/completions", &[("authorization", &auth()), ("X-Hermes-Session-Id", id)], body).await;
    assert_eq!(s, 200, "{b}");
    b
}

/// The system prompt and the user texts of a recorded model request.
fn seen(req: &Value) -> (String, Vec<String>) {
    let msgs = req["messages"].as_array().unwrap();
    let system = msgs.iter().filter(|m| m["role"] == "system").filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n");
    let users = msgs.iter().filter(|m| m["role"] == "user").map(|m| m["content"].as_str().unwrap_or("").to_string()).collect();
    (system, users)
}

/// The stored transcript of conversation `conv` (`GET /api/sessions/{id}/messages`).
async fn transcript(gw: &Gateway, conv: &str) -> Vec<Value> {
    let (s, b) = gw.get(&format!("/api/sessions/{conv}/messages")).await;
    assert_eq!(s, 200, "{b}");
    b["data"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_chat_continues_the_history_and_keeps_instructions_out_of_the_transcript() {
    let (_home, llm, gw) = api_gateway("sesschat-continue").await;
    // The place of Hermes session `webui-1`: an /api/messages DM of that chat is the same one.
    let (s, first) = gw.post_message(json!({"chat_id": "webui-1", "user_id": "u1", "text": "hello"})).await;
    assert_eq!(s, 200, "{first}");
    let conv = first["session_id"].as_str().unwrap().to_string();
    completion(&gw, "webui-1", "second").await;
    let body = json!({"message": "again", "system_message": "Answer like a pirate."}).to_string();
    let (s, b, h) =
        gw.post_raw("/api/sessions/webui-1/chat", &[("authorization", &auth()), ("X-Hermes-Session-Key", "scope-9")], body).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["object"], "hermes.session.chat.completion");
    assert_eq!((b["session_id"].as_str(), b["message"].clone()), (Some("webui-1"), json!({"role": "assistant", "content": "echo: again"})));
    assert_eq!(b["usage"]["total_tokens"], b["usage"]["input_tokens"].as_u64().unwrap() + b["usage"]["output_tokens"].as_u64().unwrap());
    assert!(b["usage"]["total_tokens"].as_u64().unwrap() > 0, "{b}");
    assert_eq!((h["x-hermes-session-id"].to_str().unwrap(), h["x-hermes-session-key"].to_str().unwrap()), ("webui-1", "scope-9"));
    let reqs = llm.requests();
    let (system, users) = seen(&reqs[2]);
    assert_eq!(users, ["hello", "second", "again"], "the model sees the earlier turns");
    assert!(system.ends_with("Answer like a pirate."), "the instructions reach the model: {system}");
    assert!(!seen(&reqs[1]).0.contains("pirate"));
    // Our conversation id names the same session; the instructions were for one turn only.
    let (s, b, h) =
        gw.post_raw(&format!("/api/sessions/{conv}/chat"), &[("authorization", &auth())], json!({"input": "third"}).to_string()).await;
    assert_eq!((s, b["session_id"].as_str(), b["message"]["content"].as_str()), (200, Some(conv.as_str()), Some("echo: third")), "{b}");
    assert_eq!(h["x-hermes-session-id"].to_str().unwrap(), conv);
    let (system, users) = seen(&llm.requests()[3]);
    assert_eq!(users, ["hello", "second", "again", "third"]);
    assert!(!system.contains("pirate"), "{system}");
    let stored = transcript(&gw, &conv).await;
    let texts: Vec<&str> = stored.iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(texts, ["hello", "echo: hello", "second", "echo: second", "again", "echo: again", "third", "echo: third"]);
    assert!(stored.iter().all(|m| m["role"] != "system"), "{stored:?}");
    let (_, caps) = gw.get("/v1/capabilities").await;
    assert_eq!(
        (caps["features"]["session_chat"].as_bool(), caps["features"]["session_chat_streaming"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(caps["endpoints"]["session_chat_stream"], json!({"method": "POST", "path": "/api/sessions/{session_id}/chat/stream"}));
}

/// The events of an SSE body: (name, payload), keepalive comments left out.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|b| !b.is_empty() && !b.starts_with(':'))
        .map(|b| {
            let (name, data) = b.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap_or_else(|| panic!("not an event: {b}"));
            (name.to_string(), serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_sends_hermes_events_in_order_with_tool_progress() {
    let (_home, llm, gw) = api_gateway("sesschat-stream").await;
    completion(&gw, "s-stream", "hello").await;
    llm.push(Reply::ToolWithId { id: "call_t1".into(), name: "current_time".into(), args: json!({"tz": "UTC"}) });
    llm.push(Reply::Text("it is now, the time you asked for".into()));
    let r = gw
        .http
        .post(format!("{}/api/sessions/s-stream/chat/stream", gw.base))
        .header("authorization", auth())
        .header("X-Hermes-Session-Key", "k1")
        .body(json!({"message": "what time is it", "instructions": "Be exact."}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(
        (r.headers()["x-hermes-session-id"].to_str().unwrap(), r.headers()["x-hermes-session-key"].to_str().unwrap()),
        ("s-stream", "k1")
    );
    let text = r.text().await.unwrap();
    let evs = events(&text);
    let mut names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "run.started",
            "message.started",
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "run.completed",
            "done"
        ],
        "{text}"
    );
    assert!(evs.iter().filter(|(n, _)| n == "assistant.delta").count() >= 2, "the answer streamed in pieces: {text}");
    let run_id = evs[0].1["run_id"].as_str().unwrap().to_string();
    let message_id = evs[1].1["message"]["id"].as_str().unwrap().to_string();
    for (i, (name, p)) in evs.iter().enumerate() {
        assert_eq!((p["session_id"].as_str(), p["run_id"].as_str()), (Some("s-stream"), Some(run_id.as_str())), "{name}: {p}");
        assert_eq!(p["seq"].as_u64(), Some(i as u64 + 1), "{name}: {p}");
        assert!(p["ts"].as_f64().unwrap() > 1.0e9, "{name}: {p}");
        if !matches!(name.as_str(), "run.started" | "message.started" | "done") {
            assert_eq!(p["message_id"].as_str(), Some(message_id.as_str()), "{name}: {p}");
        }
    }
    assert_eq!(evs[0].1["user_message"], json!({"role": "user", "content": "what time is it"}));
    assert_eq!(evs[1].1["message"]["role"], "assistant");
    let started = &evs.iter().find(|(n, _)| n == "tool.started").unwrap().1;
    assert_eq!((started["tool_name"].as_str(), &started["args"]), (Some("current_time"), &json!({"tz": "UTC"})), "{started}");
    let delta: String = evs.iter().filter(|(n, _)| n == "assistant.delta").filter_map(|(_, p)| p["delta"].as_str()).collect();
    assert_eq!(delta, "it is now, the time you asked for");
    let completed = &evs.iter().find(|(n, _)| n == "assistant.completed").unwrap().1;
    assert_eq!(completed["content"], "it is now, the time you asked for");
    assert_eq!(
        (completed["completed"].as_bool(), completed["partial"].as_bool(), completed["interrupted"].as_bool()),
        (Some(true), Some(false), Some(false))
    );
    let run = &evs.iter().find(|(n, _)| n == "run.completed").unwrap().1;
    let msgs = run["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["assistant", "tool", "assistant"], "{run}");
    assert_eq!(msgs[0]["tool_calls"][0]["function"]["name"], "current_time");
    assert_eq!(msgs[1]["tool_call_id"], "call_t1");
    assert_eq!(msgs[2]["content"], "it is now, the time you asked for");
    assert!(run["usage"]["input_tokens"].as_u64().unwrap() > 0, "{run}");
    // The model saw the earlier turn and the instructions on both calls of this turn.
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    for req in &reqs[1..] {
        let (system, users) = seen(req);
        assert_eq!(users, ["hello", "what time is it"]);
        assert!(system.ends_with("Be exact."), "{system}");
    }
}

/// Path, body and expected (status, code, message) of a refused chat.
type Case = (String, String, u16, &'static str, &'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_run_no_turn_and_store_nothing() {
    let (_home, llm, gw) = api_gateway("sesschat-bad").await;
    let (_, first) = gw.post_message(json!({"chat_id": "s-bad", "user_id": "u1", "text": "hello"})).await;
    let conv = first["session_id"].as_str().unwrap().to_string();
    // An /api/messages group is no API server session; a conversation ended by /new takes no turn.
    let (_, group) = gw.post_message(json!({"chat_id": "g1", "user_id": "u1", "chat_type": "group", "text": "hi all"})).await;
    let group = group["session_id"].as_str().unwrap().to_string();
    let (_, old) = gw.post_message(json!({"chat_id": "s-old", "user_id": "u1", "text": "hello"})).await;
    let old = old["session_id"].as_str().unwrap().to_string();
    let (s, b) = gw.post_message(json!({"chat_id": "s-old", "user_id": "u1", "text": "/new"})).await;
    assert_eq!(s, 200, "{b}");
    let calls = llm.calls();
    for route in ["chat", "chat/stream"] {
        // Wrong or missing key: 401 before the body is read.
        for h in [vec![], vec![("authorization", "Bearer nope")]] {
            let (s, b, _) = gw.post_raw(&format!("/api/sessions/s-bad/{route}"), &h, "{not json").await;
            assert_eq!((s, &b["error"]["code"]), (401, &json!("invalid_api_key")), "{b}");
        }
        let ok = json!({"message": "hi"}).to_string();
        let parts = json!({"message": [{"type": "text", "text": "x"}, {"type": "file", "file": {}}]}).to_string();
        let cases: Vec<Case> = vec![
            ("/api/sessions/nope".into(), ok.clone(), 404, "session_not_found", "Session not found: nope"),
            ("/api/sessions/s-bad".into(), "{not json".into(), 400, "", "Invalid JSON in request body"),
            ("/api/sessions/s-bad".into(), "[1]".into(), 400, "", "Request body must be a JSON object"),
            ("/api/sessions/s-bad".into(), "{}".into(), 400, "missing_message", "Missing 'message' field"),
            ("/api/sessions/s-bad".into(), json!({"message": "  "}).to_string(), 400, "missing_message", "Missing 'message' field"),
            (
                "/api/sessions/s-bad".into(),
                json!({"message": "x", "system_message": 5}).to_string(),
                400,
                "invalid_system_message",
                "system_message must be a string",
            ),
            ("/api/sessions/s-bad".into(), parts, 400, "unsupported_content_type", ""),
            (format!("/api/sessions/{group}"), ok.clone(), 409, "session_not_api", ""),
            (format!("/api/sessions/{old}"), ok.clone(), 409, "session_ended", ""),
        ];
        for (path, body, status, code, message) in cases {
            let (s, b, _) = gw.post_raw(&format!("{path}/{route}"), &[("authorization", &auth())], body).await;
            assert_eq!(s, status, "{path}/{route}: {b}");
            assert_eq!(b["error"]["type"], "invalid_request_error", "{b}");
            if !code.is_empty() {
                assert_eq!(b["error"]["code"], code, "{b}");
            }
            if !message.is_empty() {
                assert_eq!(b["error"]["message"], message, "{b}");
            }
        }
        let long = "k".repeat(300);
        let (s, b, _) =
            gw.post_raw(&format!("/api/sessions/s-bad/{route}"), &[("authorization", &auth()), ("X-Hermes-Session-Key", &long)], ok).await;
        assert_eq!((s, b["error"]["message"].as_str()), (400, Some("Session key too long")), "{b}");
    }
    assert_eq!(llm.calls(), calls, "no refusal ran a turn");
    assert_eq!(transcript(&gw, &conv).await.len(), 2, "nothing stored in the session");
    assert_eq!(transcript(&gw, &old).await.len(), 2, "nothing stored in the ended session");
}
