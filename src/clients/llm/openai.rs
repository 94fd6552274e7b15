//! OpenAI-compatible `/chat/completions` client: tool calls, timeouts, and retries with
//! backoff on 429/5xx/timeouts that honour `Retry-After`; streamed answers (`stream: true`)
//! are folded by `openai_stream`.

use super::openai_stream::ChunkAccumulator;
use super::retry::{Failure, check_status, retry_delay, with_retries};
use super::sse::SseDecoder;
use crate::clients::{describe, http_client};
use crate::config::models::Endpoint;
use crate::core::session::{Message, Role, ToolCall};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, TextSink, ToolSpec};
use async_trait::async_trait;
use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// The OpenAI-compatible adapter.
pub struct OpenAiLlm {
    http: reqwest::Client,
    url: String,
    model: String,
    key: Option<SecretString>,
    attempts: u32,
    backoff: Duration,
}

impl OpenAiLlm {
    /// Builds the client once for `ep`, with a per-request `timeout` and `attempts` tries
    /// per completion (`agent.api_max_retries`).
    pub fn new(ep: &Endpoint, timeout: Duration, attempts: u32) -> Self {
        Self {
            http: http_client(timeout),
            url: format!("{}/chat/completions", ep.base_url.trim_end_matches('/')),
            model: ep.model.clone(),
            key: ep.api_key.clone(),
            attempts,
            backoff: Duration::from_millis(500),
        }
    }

    /// The request body as bytes, serialized once per call straight from `req` (no `Value`
    /// tree of every tool's schema per turn: docs/design/scale.md, "Start-up and memory"), shared
    /// by the retries.
    fn body(&self, req: &ChatRequest, stream: bool) -> Result<Bytes, LlmError> {
        let body = WireBody {
            model: req.model.as_deref().unwrap_or(&self.model),
            messages: req.messages.iter().map(wire_message).collect(),
            tools: req.tools.iter().map(|t| WireTool { kind: "function", function: t }).collect(),
            stream: stream.then_some(true),
            stream_options: stream.then_some(StreamOptions { include_usage: true }),
        };
        serde_json::to_vec(&body).map(Bytes::from).map_err(|e| LlmError::BadResponse(format!("cannot encode the request: {e}")))
    }

    fn post(&self, body: &Bytes) -> reqwest::RequestBuilder {
        let mut rq = self.http.post(&self.url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone());
        if let Some(k) = &self.key {
            rq = rq.bearer_auth(k.expose_secret());
        }
        rq
    }

    async fn attempt(&self, body: &Bytes) -> Result<ChatResponse, Failure> {
        let resp = self.post(body).send().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        let resp = check_status(resp).await?;
        let text = resp.text().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        parse_response(&text).map_err(|e| (e, None))
    }

    /// One streamed attempt. A failure after a text delta was handed to `on_text` is final
    /// (no wait hint): a retry would show that text twice.
    async fn attempt_stream(&self, body: &Bytes, on_text: &mut TextSink<'_>) -> Result<ChatResponse, Failure> {
        let resp = self.post(body).send().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        let mut resp = check_status(resp).await?;
        let (mut dec, mut acc, mut shown) = (SseDecoder::default(), ChunkAccumulator::default(), false);
        let retry = |shown: bool| (!shown).then_some(0);
        loop {
            let chunk = match resp.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err((LlmError::Unreachable(describe(e)), retry(shown))),
            };
            for ev in dec.feed_bytes(&chunk) {
                if let Some(t) = acc.apply(&ev).map_err(|e| (e, None))? {
                    shown = true;
                    on_text(&t);
                }
            }
        }
        acc.finish().map_err(|e| (e, retry(shown)))
    }
}

/// The wire shape of a request body (OpenAI chat completions), borrowed from the request.
#[derive(Serialize)]
struct WireBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolSpec,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's `content`: text, `null` (an assistant turn of tool calls only), or parts.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Null,
    Parts(Vec<WirePart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

#[derive(Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

fn wire_message(m: &Message) -> WireMessage<'_> {
    let tool_calls: Vec<WireCall<'_>> = m
        .tool_calls
        .iter()
        .map(|c| WireCall { id: &c.id, kind: "function", function: WireCallFunction { name: &c.name, arguments: &c.arguments } })
        .collect();
    let content = if !m.images.is_empty() {
        // A photo for this call (docs/design.md#media): a content array, text first.
        let text = (!m.content.trim().is_empty()).then_some(WirePart::Text { text: &m.content });
        let images =
            m.images.iter().map(|i| WirePart::ImageUrl { image_url: ImageUrl { url: format!("data:{};base64,{}", i.mime, i.base64) } });
        WireContent::Parts(text.into_iter().chain(images).collect())
    } else if !tool_calls.is_empty() && m.content.is_empty() {
        WireContent::Null
    } else {
        WireContent::Text(&m.content)
    };
    let tool_call_id = (m.role == Role::Tool).then(|| m.tool_call_id.as_deref().unwrap_or(""));
    WireMessage { role: m.role.as_str(), content, tool_calls, tool_call_id }
}

/// Parses a chat-completions response body.
pub fn parse_response(text: &str) -> Result<ChatResponse, LlmError> {
    let v: Value = serde_json::from_str(text).map_err(|e| LlmError::BadResponse(format!("not JSON: {e}")))?;
    let msg = v["choices"].get(0).map(|c| &c["message"]).ok_or_else(|| LlmError::BadResponse("no choices".into()))?;
    let tool_calls = msg["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: c["id"].as_str().map_or_else(|| format!("call_{i}"), str::to_string),
                    name: c["function"]["name"].as_str().unwrap_or_default().to_string(),
                    arguments: match &c["function"]["arguments"] {
                        Value::String(s) => s.clone(),
                        Value::Null => "{}".into(),
                        other => other.to_string(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        content: msg["content"].as_str().unwrap_or_default().to_string(),
        tool_calls,
        input_tokens: v["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
        stop_reason: v["choices"][0]["finish_reason"].as_str().unwrap_or_default().to_string(),
        model: v["model"].as_str().unwrap_or_default().to_string(),
        ..ChatResponse::default()
    })
}

#[async_trait]
impl Llm for OpenAiLlm {
    fn name(&self) -> &'static str {
        "openai"
    }

    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = self.body(req, false)?;
        let r = with_retries(self.attempts, self.backoff, || self.attempt(&body)).await?;
        // Why: the transcript records the model that answered; some servers omit `model`.
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
    use serde_json::json;

    #[test]
    fn the_body_is_the_chat_completions_wire_shape() {
        let t0 = chrono::DateTime::UNIX_EPOCH;
        let mut call = Message::text(Role::Assistant, "", t0);
        call.tool_calls.push(ToolCall { id: "c1".into(), name: "current_time".into(), arguments: "{}".into() });
        let mut result = Message::text(Role::Tool, "12:00", t0);
        result.tool_call_id = Some("c1".into());
        let tool = std::sync::Arc::new(ToolSpec {
            name: "current_time".into(),
            description: "Now.".into(),
            parameters: json!({"type": "object"}),
        });
        let req = ChatRequest {
            messages: vec![Message::text(Role::User, "time?", t0), call, result],
            tools: vec![tool],
            model: None,
            route: None,
        };
        let ep = Endpoint {
            provider: "openai",
            wire: crate::config::models::Wire::OpenaiChat,
            base_url: "http://x/v1".into(),
            model: "m".into(),
            api_key: None,
            key_hint: String::new(),
            why: String::new(),
            oauth_line: None,
        };
        let llm = OpenAiLlm::new(&ep, Duration::from_secs(1), 1);
        let v: Value = serde_json::from_slice(&llm.body(&req, false).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"model": "m", "messages": [
                {"role": "user", "content": "time?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "current_time", "arguments": "{}"}}]},
                {"role": "tool", "content": "12:00", "tool_call_id": "c1"}],
              "tools": [{"type": "function", "function": {"name": "current_time", "description": "Now.", "parameters": {"type": "object"}}}]})
        );
        let v: Value = serde_json::from_slice(&llm.body(&ChatRequest { tools: vec![], ..req }, true).unwrap()).unwrap();
        assert_eq!((v.get("tools"), &v["stream"], &v["stream_options"]), (None, &json!(true), &json!({"include_usage": true})));
    }

    #[test]
    fn parses_tool_calls_and_usage() {
        let r = parse_response(r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"current_time","arguments":"{}"}}]}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#).unwrap();
        assert_eq!(r.tool_calls[0].name, "current_time");
        assert_eq!((r.input_tokens, r.output_tokens), (5, 2));
        assert!(matches!(parse_response("{}"), Err(LlmError::BadResponse(_))));
        assert!(matches!(parse_response("<html>"), Err(LlmError::BadResponse(_))));
    }

    #[test]
    fn a_photo_is_a_content_array_with_a_data_url() {
        let mut m = Message::text(Role::User, "[photo] a cat?", chrono::DateTime::UNIX_EPOCH);
        m.images.push(crate::core::session::Image { mime: "image/jpeg".into(), base64: "/9j/".into() });
        assert_eq!(
            serde_json::to_value(wire_message(&m)).unwrap()["content"],
            json!([{"type": "text", "text": "[photo] a cat?"}, {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}])
        );
        m.images.clear();
        assert_eq!(serde_json::to_value(wire_message(&m)).unwrap()["content"], "[photo] a cat?");
    }
}
