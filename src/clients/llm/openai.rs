//! OpenAI-compatible `/chat/completions` client: tool calls, timeouts, and retries with
//! backoff on 429/5xx/timeouts that honour `Retry-After`; streamed answers (`stream: true`)
//! are folded by `openai_stream`.

use super::openai_stream::ChunkAccumulator;
use super::retry::{Failure, check_status, retry_delay, with_retries};
use super::sse::SseDecoder;
use crate::clients::{describe, http_client};
use crate::config::models::Endpoint;
use crate::core::session::{Message, Role, ToolCall};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, TextSink};
use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
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

    fn body(&self, req: &ChatRequest) -> Value {
        let messages: Vec<Value> = req.messages.iter().map(wire_message).collect();
        let mut body = json!({ "model": req.model.as_deref().unwrap_or(&self.model), "messages": messages });
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(
                    |t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}),
                )
                .collect();
        }
        body
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut rq = self.http.post(&self.url).json(body);
        if let Some(k) = &self.key {
            rq = rq.bearer_auth(k.expose_secret());
        }
        rq
    }

    async fn attempt(&self, body: &Value) -> Result<ChatResponse, Failure> {
        let resp = self.post(body).send().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        let resp = check_status(resp).await?;
        let text = resp.text().await.map_err(|e| (LlmError::Unreachable(describe(e)), Some(0)))?;
        parse_response(&text).map_err(|e| (e, None))
    }

    /// One streamed attempt. A failure after a text delta was handed to `on_text` is final
    /// (no wait hint): a retry would show that text twice.
    async fn attempt_stream(&self, body: &Value, on_text: &mut TextSink<'_>) -> Result<ChatResponse, Failure> {
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

fn wire_message(m: &Message) -> Value {
    let mut v = json!({ "role": m.role.as_str(), "content": m.content });
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        if m.content.is_empty() {
            v["content"] = Value::Null;
        }
    }
    if m.role == Role::Tool {
        v["tool_call_id"] = json!(m.tool_call_id.as_deref().unwrap_or(""));
    }
    if !m.images.is_empty() {
        // A photo for this call (docs/design.md#media): a content array, text first.
        let text = (!m.content.trim().is_empty()).then(|| json!({"type": "text", "text": m.content}));
        let images =
            m.images.iter().map(|i| json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", i.mime, i.base64)}}));
        v["content"] = text.into_iter().chain(images).collect();
    }
    v
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
        let body = self.body(req);
        let r = with_retries(self.attempts, self.backoff, || self.attempt(&body)).await?;
        // Why: the transcript records the model that answered; some servers omit `model`.
        Ok(super::retry::answered_by(r, req.model.as_ref(), &self.model))
    }

    async fn complete_streamed(&self, req: &ChatRequest, on_text: &mut TextSink<'_>) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(req);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
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
            wire_message(&m)["content"],
            json!([{"type": "text", "text": "[photo] a cat?"}, {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}])
        );
        m.images.clear();
        assert_eq!(wire_message(&m)["content"], "[photo] a cat?");
    }
}
