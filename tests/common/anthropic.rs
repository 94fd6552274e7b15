//! A fake Anthropic Messages API (`POST /v1/messages`) that checks requests as the API
//! documents them — `x-api-key` and `anthropic-version` headers, `model` and `max_tokens`,
//! a user message first, alternating roles, no `system` role inside `messages`, every
//! `tool_result` answering a `tool_use` of the assistant message just before it, at most four
//! `cache_control` breakpoints — and answers from a script: text, one `tool_use`, an error
//! status (with `retry-after`), as JSON or, when `stream: true`, as the documented SSE events.
//! Without a script it echoes the last user text as `echo: <text>`.

use super::spawn_server;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the fake answers next.
#[derive(Clone, Debug)]
pub enum AReply {
    /// A final text answer.
    Text(String),
    /// One `tool_use` block.
    Tool { name: String, input: Value },
    /// An error status, with an optional `retry-after` (seconds).
    Status(u16, Option<u64>),
}

/// One recorded request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub body: Value,
    pub api_key: String,
    pub version: String,
    pub at: Instant,
}

#[derive(Default)]
pub struct AInner {
    pub requests: Vec<Seen>,
    pub script: VecDeque<AReply>,
}

/// The fake; `url` is the base URL to configure (the client appends `/v1/messages`).
#[derive(Clone)]
pub struct FakeAnthropic {
    pub url: String,
    pub inner: Arc<Mutex<AInner>>,
}

impl FakeAnthropic {
    pub async fn start() -> Self {
        let inner = Arc::new(Mutex::new(AInner::default()));
        let router = axum::Router::new().route("/v1/messages", post(handler)).with_state(inner.clone());
        Self { url: spawn_server(router).await, inner }
    }
    pub fn push(&self, r: AReply) {
        self.inner.lock().unwrap().script.push_back(r);
    }
    pub fn requests(&self) -> Vec<Seen> {
        self.inner.lock().unwrap().requests.clone()
    }
    pub fn calls(&self) -> usize {
        self.inner.lock().unwrap().requests.len()
    }
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap();
    (code, Json(json!({"type": "error", "error": {"type": kind, "message": message}}))).into_response()
}

/// The documented shape rules; the first broken one, if any.
pub fn check_request(b: &Value) -> Result<(), String> {
    if !b["model"].is_string() || !b["max_tokens"].is_u64() {
        return Err("model and max_tokens are required".into());
    }
    let msgs = b["messages"].as_array().filter(|m| !m.is_empty()).ok_or("messages: at least one message is required")?;
    if msgs[0]["role"] != "user" {
        return Err("messages: first message must use the \"user\" role".into());
    }
    let mut marks = b["system"].as_array().map_or(0, |s| s.iter().filter(|x| x.get("cache_control").is_some()).count());
    let mut prev_tool_uses: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!("messages.{i}.role: unexpected value {role:?}"));
        }
        if i > 0 && msgs[i - 1]["role"] == m["role"] {
            return Err(format!("messages.{i}: roles must alternate between \"user\" and \"assistant\""));
        }
        let blocks = m["content"].as_array().ok_or(format!("messages.{i}.content: expected a list of blocks"))?;
        let mut uses = Vec::new();
        for blk in blocks {
            marks += usize::from(blk.get("cache_control").is_some());
            match blk["type"].as_str() {
                Some("text") if blk["text"].as_str().is_some_and(|t| !t.is_empty()) => {}
                Some("text") => return Err(format!("messages.{i}: text content blocks must be non-empty")),
                Some("tool_use") if role == "assistant" && blk["input"].is_object() => {
                    uses.push(blk["id"].as_str().unwrap_or("").to_string())
                }
                Some("tool_result") if role == "user" => {
                    let id = blk["tool_use_id"].as_str().unwrap_or_default();
                    if !prev_tool_uses.iter().any(|u| u == id) {
                        return Err(format!("messages.{i}: unexpected tool_use_id {id:?} in tool_result blocks"));
                    }
                }
                other => return Err(format!("messages.{i}: unexpected block {other:?} for role {role}")),
            }
        }
        prev_tool_uses = uses;
    }
    if marks > 4 {
        return Err(format!("A maximum of 4 blocks with cache_control may be provided. Found {marks}."));
    }
    Ok(())
}

fn last_user_text(b: &Value) -> String {
    let msgs = b["messages"].as_array().cloned().unwrap_or_default();
    msgs.iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default().into_iter().rev())
        .find_map(|blk| (blk["type"] == "text").then(|| blk["text"].as_str().unwrap_or("").to_string()))
        .unwrap_or_default()
}

async fn handler(State(inner): State<Arc<Mutex<AInner>>>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let h = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let next = {
        let mut g = inner.lock().unwrap();
        g.requests.push(Seen { body: body.clone(), api_key: h("x-api-key"), version: h("anthropic-version"), at: Instant::now() });
        g.script.pop_front()
    };
    if h("x-api-key").is_empty() {
        return error(401, "authentication_error", "x-api-key header is required");
    }
    if h("anthropic-version").is_empty() {
        return error(400, "invalid_request_error", "anthropic-version header is required");
    }
    if let Err(m) = check_request(&body) {
        return error(400, "invalid_request_error", &m);
    }
    let model = body["model"].as_str().unwrap_or_default().to_string();
    let (content, stop) = match next.unwrap_or_else(|| AReply::Text(format!("echo: {}", last_user_text(&body)))) {
        AReply::Text(t) => (json!([{"type": "text", "text": t}]), "end_turn"),
        AReply::Tool { name, input } => {
            let id = format!("toolu_{:016x}", rand::random::<u64>());
            (json!([{"type": "text", "text": "Let me check."}, {"type": "tool_use", "id": id, "name": name, "input": input}]), "tool_use")
        }
        AReply::Status(s, wait) => {
            let kind = if s == 529 {
                "overloaded_error"
            } else if s == 429 {
                "rate_limit_error"
            } else {
                "api_error"
            };
            let mut r = error(s, kind, "fake failure");
            if let Some(w) = wait {
                r.headers_mut().insert("retry-after", w.to_string().parse().unwrap());
            }
            return r;
        }
    };
    let usage = json!({"input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3});
    if body["stream"] == true {
        return ([("content-type", "text/event-stream")], sse(&model, &content, stop, &usage)).into_response();
    }
    Json(json!({"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage}))
        .into_response()
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The documented event sequence for `content`, text split into small deltas.
pub fn sse(model: &str, content: &Value, stop: &str, usage: &Value) -> String {
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1, "cache_read_input_tokens": usage["cache_read_input_tokens"]}}}),
    );
    out.push_str(&event("ping", json!({"type": "ping"})));
    for (i, blk) in content.as_array().cloned().unwrap_or_default().iter().enumerate() {
        if blk["type"] == "text" {
            out.push_str(&event(
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
            ));
            let text: Vec<char> = blk["text"].as_str().unwrap_or_default().chars().collect();
            for piece in text.chunks(4) {
                let piece: String = piece.iter().collect();
                out.push_str(&event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
        } else {
            let start = json!({"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": {}});
            out.push_str(&event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": start})));
            let input = blk["input"].to_string();
            let mid = (0..=input.len() / 2).rev().find(|&k| input.is_char_boundary(k)).unwrap_or(0);
            let (a, b) = input.split_at(mid);
            for part in [a, b] {
                out.push_str(&event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": part}}),
                ));
            }
        }
        out.push_str(&event("content_block_stop", json!({"type": "content_block_stop", "index": i})));
    }
    out.push_str(&event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": usage["output_tokens"]}})));
    out.push_str(&event("message_stop", json!({"type": "message_stop"})));
    out
}
