//! Native Anthropic Messages client (`POST {base_url}/v1/messages`): the system prompt as
//! top-level `system`, tools and tool results in Anthropic's shape (consecutive same-role
//! messages merged, as the API requires), prompt caching as Hermes does it (`system_and_3`:
//! `cache_control` on the system prompt and the last three messages), `stop_reason` and usage,
//! and retries on 429/529/5xx/timeouts that honour `retry-after`.

use super::anthropic_stream::{SseDecoder, StreamAccumulator};
use super::retry::{Failure, check_status, retry_delay, with_retries};
use crate::clients::{describe, http_client};
use crate::config::models::Endpoint;
use crate::core::session::{Message, Role, ToolCall};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, TextSink};
use async_trait::async_trait;
use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Duration;

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` sent (the API requires one; Hermes also picks it internally).
pub const MAX_TOKENS: u32 = 8192;
/// Cache breakpoints Anthropic allows per request.
const CACHE_BREAKPOINTS: usize = 4;

/// The Anthropic adapter.
pub struct AnthropicLlm {
    http: reqwest::Client,
    url: String,
    model: String,
    key: Option<SecretString>,
    attempts: u32,
    backoff: Duration,
    cache_ttl_1h: bool,
}

impl AnthropicLlm {
    /// Builds the client once for `ep`: per-request `timeout`, `attempts` tries per completion,
    /// and the prompt-cache TTL (`5m` or `1h`).
    pub fn new(ep: &Endpoint, timeout: Duration, attempts: u32, cache_ttl: &str) -> Self {
        Self {
            http: http_client(timeout),
            url: format!("{}/v1/messages", ep.base_url.trim_end_matches('/')),
            model: ep.model.clone(),
            key: ep.api_key.clone(),
            attempts,
            backoff: Duration::from_millis(500),
            cache_ttl_1h: cache_ttl.trim() == "1h",
        }
    }

    /// The request body for `req` as bytes, serialized once per call (the tool schemas are
    /// borrowed, not copied into a `Value` tree: docs/design/scale.md, "Start-up and memory") and shared by retries.
    pub fn body(&self, req: &ChatRequest, stream: bool) -> Result<Bytes, LlmError> {
        let marker = if self.cache_ttl_1h { json!({"type": "ephemeral", "ttl": "1h"}) } else { json!({"type": "ephemeral"}) };
        let mut body = wire_body(req, req.model.as_deref().unwrap_or(&self.model), &marker);
        body.stream = stream.then_some(true);
        serde_json::to_vec(&body).map(Bytes::from).map_err(|e| LlmError::BadResponse(format!("cannot encode the request: {e}")))
    }

    fn post(&self, body: &Bytes) -> reqwest::RequestBuilder {
        let mut rq = self
            .http
            .post(&self.url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        if let Some(k) = &self.key {
            rq = rq.header("x-api-key", k.expose_secret());
        }
        rq
    }

    async fn attempt(&self, body: &Bytes) -> Result<ChatResponse, Failure> {
        let resp = self.post(body).send().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        let resp = check_status(resp).await?;
        let text = resp.text().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        parse_response(&text).map_err(|e| (e, None))
    }

    /// One streamed completion (`stream: true`): `on_text` sees each text delta as it arrives;
    /// the folded answer is returned. Retried like [`Llm::complete`] only before the first
    /// delta ([`Llm::complete_streamed`]).
    pub async fn stream(&self, req: &ChatRequest, mut on_text: impl FnMut(&str) + Send) -> Result<ChatResponse, LlmError> {
        self.complete_streamed(req, &mut on_text).await
    }

    /// One streamed attempt. A failure after a text delta was handed to `on_text` is final
    /// (no wait hint): a retry would show that text twice.
    async fn attempt_stream(&self, body: &Bytes, on_text: &mut TextSink<'_>) -> Result<ChatResponse, Failure> {
        let resp = self.post(body).send().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        let mut resp = check_status(resp).await?;
        let (mut dec, mut acc, mut shown) = (SseDecoder::default(), StreamAccumulator::default(), false);
        let retry = |shown: bool| (!shown).then_some(0);
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err((LlmError::Unreachable(describe(e)), retry(shown))),
            };
            for ev in dec.feed_bytes(&chunk) {
                match acc.apply(&ev) {
                    Ok(Some(t)) => {
                        shown = true;
                        on_text(&t);
                    }
                    Ok(None) => {}
                    // An `error` event (overloaded, …) is as retryable as its status, before any text.
                    Err(e @ LlmError::Status { .. }) => return Err((e, retry(shown))),
                    Err(e) => return Err((e, None)),
                }
            }
        }
        acc.finish().map_err(|e| (e, retry(shown)))
    }
}

/// A Messages request body: the transcript as JSON values (it carries cache markers), the
/// tools borrowed from the request.
#[derive(Serialize)]
pub struct WireBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Value>,
    messages: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

/// A tool in Anthropic's shape.
#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// Builds the Messages body: `system`, merged `messages`, `tools`, cache markers.
pub fn wire_body<'a>(req: &'a ChatRequest, model: &'a str, marker: &Value) -> WireBody<'a> {
    let system: Vec<&str> =
        req.messages.iter().filter(|m| m.role == Role::System && !m.content.is_empty()).map(|m| m.content.as_str()).collect();
    let mut messages = wire_messages(&req.messages);
    let system = (!system.is_empty()).then(|| json!([{ "type": "text", "text": system.join("\n\n"), "cache_control": marker }]));
    let used = usize::from(system.is_some());
    let n = messages.len();
    for m in messages.iter_mut().skip(n.saturating_sub(CACHE_BREAKPOINTS - used)) {
        if let Some(last) = m["content"].as_array_mut().and_then(|c| c.last_mut()) {
            last["cache_control"] = marker.clone();
        }
    }
    let tools = req.tools.iter().map(|t| WireTool { name: &t.name, description: &t.description, input_schema: &t.parameters }).collect();
    WireBody { model, max_tokens: MAX_TOKENS, system, messages, tools, stream: None }
}

fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    match m.role {
        Role::Tool => {
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            ("user", vec![json!({"type": "tool_result", "tool_use_id": id, "content": m.content})])
        }
        Role::Assistant => {
            let mut b: Vec<Value> = Vec::new();
            if !m.content.trim().is_empty() {
                b.push(json!({"type": "text", "text": m.content}));
            }
            for c in &m.tool_calls {
                let input = serde_json::from_str::<Value>(&c.arguments).ok().filter(Value::is_object).unwrap_or_else(|| json!({}));
                b.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            ("assistant", b)
        }
        _ => {
            // Photos for this call (docs/design.md#media) go before the text, as Anthropic advises.
            let mut b: Vec<Value> = m
                .images
                .iter()
                .map(|i| json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.base64}}))
                .collect();
            if !m.content.trim().is_empty() {
                b.push(json!({"type": "text", "text": m.content}));
            }
            ("user", b)
        }
    }
}

/// The transcript as Anthropic messages: system messages left out (they go to `system`),
/// tool results as user `tool_result` blocks, same-role neighbours merged, empty messages
/// dropped, and a user message first (the API requires it).
pub fn wire_messages(msgs: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in msgs.iter().filter(|m| m.role != Role::System) {
        let (role, b) = blocks(m);
        if b.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(c) = prev["content"].as_array_mut() {
                    c.extend(b);
                }
            }
            _ => out.push(json!({"role": role, "content": b})),
        }
    }
    if out.first().is_some_and(|m| m["role"] != "user") {
        out.insert(0, json!({"role": "user", "content": [{"type": "text", "text": "(earlier conversation trimmed)"}]}));
    }
    out
}

/// Folds Anthropic `usage` into a response (prompt tokens include cache reads and writes).
pub fn apply_usage(r: &mut ChatResponse, usage: &Value) {
    let n = |k: &str| usage[k].as_u64();
    if let Some(i) = n("input_tokens") {
        r.cache_read_tokens = n("cache_read_input_tokens").unwrap_or(r.cache_read_tokens);
        r.cache_creation_tokens = n("cache_creation_input_tokens").unwrap_or(r.cache_creation_tokens);
        r.input_tokens = i + r.cache_read_tokens + r.cache_creation_tokens;
    }
    if let Some(o) = n("output_tokens") {
        r.output_tokens = o;
    }
}

/// Parses a Messages response body.
pub fn parse_response(text: &str) -> Result<ChatResponse, LlmError> {
    let v: Value = serde_json::from_str(text).map_err(|e| LlmError::BadResponse(format!("not JSON: {e}")))?;
    let content = v["content"].as_array().ok_or_else(|| LlmError::BadResponse("no content".into()))?;
    let mut r = ChatResponse {
        stop_reason: v["stop_reason"].as_str().unwrap_or_default().to_string(),
        model: v["model"].as_str().unwrap_or_default().to_string(),
        ..ChatResponse::default()
    };
    for b in content {
        match b["type"].as_str() {
            Some("text") => r.content.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => r.tool_calls.push(ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_string(),
                name: b["name"].as_str().unwrap_or_default().to_string(),
                arguments: b["input"].to_string(),
            }),
            _ => {}
        }
    }
    apply_usage(&mut r, &v["usage"]);
    Ok(r)
}

#[async_trait]
impl Llm for AnthropicLlm {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.body(req, false)?;
        let r = with_retries(self.attempts, self.backoff, || self.attempt(&body)).await?;
        Ok(super::retry::answered_by(r, req.model.as_ref(), &self.model))
    }

    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        let body = self.body(req, true)?;
        let mut n = 0;
        let r = loop {
            match self.attempt_stream(&body, on_text).await {
                Ok(r) => break r,
                Err(f) => match retry_delay(n, self.attempts, self.backoff, &f) {
                    Some(d) => {
                        tokio::time::sleep(d).await;
                        n += 1;
                    }
                    None => return Err(f.0),
                },
            }
        };
        Ok(super::retry::answered_by(r, req.model.as_ref(), &self.model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn msg(role: Role, c: &str) -> Message {
        Message::text(role, c, Utc::now())
    }

    #[test]
    fn tool_round_trip_is_in_anthropic_shape_and_merged() {
        let mut call = msg(Role::Assistant, "");
        call.tool_calls = vec![ToolCall { id: "t1".into(), name: "current_time".into(), arguments: "{}".into() }];
        let mut result = msg(Role::Tool, "12:00");
        result.tool_call_id = Some("t1".into());
        let msgs = vec![msg(Role::System, "be nice"), msg(Role::User, "a"), msg(Role::User, "b"), call, result, msg(Role::User, "c")];
        let tool =
            crate::ports::ToolSpec { name: "current_time".into(), description: "Now.".into(), parameters: json!({"type": "object"}) };
        let req = ChatRequest { messages: msgs, tools: vec![std::sync::Arc::new(tool)], model: None, route: None };
        let b = serde_json::to_value(wire_body(&req, "m", &json!({"type": "ephemeral"}))).unwrap();
        assert_eq!(b["tools"], json!([{"name": "current_time", "description": "Now.", "input_schema": {"type": "object"}}]));
        assert_eq!((&b["model"], &b["max_tokens"], b.get("stream")), (&json!("m"), &json!(MAX_TOKENS), None));
        assert_eq!(b["system"][0]["text"], "be nice");
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(m[0]["content"].as_array().unwrap().len(), 2, "two user texts merged");
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[1]["content"][0]["input"], json!({}));
        assert_eq!((m[2]["content"][0]["type"].as_str(), m[2]["content"][1]["type"].as_str()), (Some("tool_result"), Some("text")));
        let marked = m.iter().filter(|x| x["content"].as_array().unwrap().last().unwrap().get("cache_control").is_some()).count();
        assert_eq!(marked, 3, "system + last three messages carry cache_control");
    }

    #[test]
    fn a_photo_is_an_image_block_before_its_caption() {
        let mut m = msg(Role::User, "[photo] what is this?");
        m.images.push(crate::core::session::Image { mime: "image/png".into(), base64: "iVBORw==".into() });
        let wire = wire_messages(&[m]);
        assert_eq!(
            wire[0]["content"][0],
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}})
        );
        assert_eq!(wire[0]["content"][1]["text"], "[photo] what is this?");
        let stored = serde_json::to_value(msg(Role::User, "x")).unwrap();
        assert!(stored.get("images").is_none(), "image bytes are never serialized for the store");
    }

    #[test]
    fn parses_text_tool_use_stop_reason_and_usage() {
        let r = parse_response(r#"{"id":"m","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t","name":"n","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":2,"cache_read_input_tokens":10,"cache_creation_input_tokens":1}}"#).unwrap();
        assert_eq!((r.content.as_str(), r.stop_reason.as_str(), r.model.as_str()), ("hi", "tool_use", "claude-x"));
        assert_eq!(r.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!((r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_creation_tokens), (16, 2, 10, 1));
        assert!(matches!(parse_response("{}"), Err(LlmError::BadResponse(_))));
    }

    #[test]
    fn a_transcript_starting_with_the_assistant_gets_a_user_turn_first() {
        let m = wire_messages(&[msg(Role::Assistant, "x"), msg(Role::User, "")]);
        assert_eq!((m.len(), m[0]["role"].as_str()), (2, Some("user")));
    }
}
