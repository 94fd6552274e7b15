//! The OpenAI-compatible streaming answer (`stream: true`): the fold of chat-completion
//! chunks — `choices[0].delta.content`, `delta.tool_calls` fragments assembled by `index`
//! (id, function name and arguments concatenated), `finish_reason`, the final `usage` chunk
//! (`stream_options.include_usage`), `data: [DONE]` — into one [`ChatResponse`], yielding
//! each text delta as it arrives. Events come from the shared [`super::sse`] decoder.

use super::sse::SseEvent;
use crate::core::session::ToolCall;
use crate::ports::{ChatResponse, LlmError};
use serde_json::Value;

/// One tool call as its fragments arrive.
#[derive(Debug, Default)]
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Folds chat-completion chunks into one answer.
#[derive(Debug, Default)]
pub struct ChunkAccumulator {
    resp: ChatResponse,
    calls: Vec<Call>,
    done: bool,
}

fn bad(what: &str) -> LlmError {
    LlmError::BadResponse(format!("stream: {what}"))
}

impl ChunkAccumulator {
    /// Applies one event; returns the text it added, if any.
    pub fn apply(&mut self, ev: &SseEvent) -> Result<Option<String>, LlmError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(None);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data).map_err(|e| bad(&format!("chunk is not JSON: {e}")))?;
        if v["error"].is_object() {
            let detail = v["error"]["message"].as_str().unwrap_or("error in stream").to_string();
            return Err(LlmError::Status { status: 500, detail });
        }
        if let Some(m) = v["model"].as_str().filter(|m| !m.is_empty()) {
            self.resp.model = m.to_string();
        }
        if v["usage"].is_object() {
            let u = &v["usage"];
            self.resp.input_tokens = u["prompt_tokens"].as_u64().unwrap_or(self.resp.input_tokens);
            self.resp.output_tokens = u["completion_tokens"].as_u64().unwrap_or(self.resp.output_tokens);
            self.resp.cache_read_tokens = u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(self.resp.cache_read_tokens);
        }
        let Some(choice) = v["choices"].get(0) else { return Ok(None) };
        if let Some(r) = choice["finish_reason"].as_str() {
            self.resp.stop_reason = r.to_string();
        }
        let delta = &choice["delta"];
        for (pos, frag) in delta["tool_calls"].as_array().into_iter().flatten().enumerate() {
            self.fragment(pos, frag);
        }
        match delta["content"].as_str().filter(|t| !t.is_empty()) {
            Some(t) => {
                self.resp.content.push_str(t);
                Ok(Some(t.to_string()))
            }
            None => Ok(None),
        }
    }

    /// Adds one `delta.tool_calls[]` fragment to the call of its `index`.
    fn fragment(&mut self, pos: usize, frag: &Value) {
        let index = frag["index"].as_u64().unwrap_or(pos as u64);
        let i = match self.calls.iter().position(|c| c.index == index) {
            Some(i) => i,
            None => {
                self.calls.push(Call { index, ..Call::default() });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[i];
        if let Some(id) = frag["id"].as_str().filter(|s| !s.is_empty()) {
            call.id = id.to_string();
        }
        if let Some(n) = frag["function"]["name"].as_str() {
            call.name.push_str(n);
        }
        if let Some(a) = frag["function"]["arguments"].as_str() {
            call.arguments.push_str(a);
        }
    }

    /// The folded answer; an error if the stream ended before `[DONE]` or a `finish_reason`.
    pub fn finish(mut self) -> Result<ChatResponse, LlmError> {
        if !self.done && self.resp.stop_reason.is_empty() {
            return Err(LlmError::Unreachable("stream ended before [DONE]".into()));
        }
        self.calls.sort_by_key(|c| c.index);
        for (i, c) in self.calls.into_iter().enumerate() {
            let arguments = if c.arguments.trim().is_empty() { "{}".to_string() } else { c.arguments };
            let id = if c.id.is_empty() { format!("call_{i}") } else { c.id };
            self.resp.tool_calls.push(ToolCall { id, name: c.name, arguments });
        }
        Ok(self.resp)
    }
}

/// Folds a whole event-stream body (tests and non-incremental callers).
pub fn parse_stream(body: &str) -> Result<(ChatResponse, Vec<String>), LlmError> {
    let (mut dec, mut acc, mut texts) = (super::sse::SseDecoder::default(), ChunkAccumulator::default(), Vec::new());
    for ev in dec.feed(body).into_iter().chain(dec.feed("\n\n")) {
        if let Some(t) = acc.apply(&ev)? {
            texts.push(t);
        }
    }
    Ok((acc.finish()?, texts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(v: &str) -> String {
        format!("data: {v}\n\n")
    }

    #[test]
    fn folds_text_deltas_finish_reason_and_usage() {
        let body = [
            chunk(r#"{"id":"c","model":"gpt-x","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#),
            chunk(r#"{"id":"c","model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hel"}}]}"#),
            chunk(r#"{"id":"c","model":"gpt-x","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#),
            chunk(r#"{"id":"c","model":"gpt-x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            chunk(r#"{"id":"c","model":"gpt-x","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let (r, texts) = parse_stream(&body).unwrap();
        assert_eq!((r.content.as_str(), r.stop_reason.as_str(), r.model.as_str()), ("Hello", "stop", "gpt-x"));
        assert_eq!(texts, vec!["Hel", "lo"]);
        assert_eq!((r.input_tokens, r.output_tokens, r.cache_read_tokens), (9, 2, 4));
        assert!(r.tool_calls.is_empty());
    }

    #[test]
    fn assembles_tool_call_fragments_by_index() {
        let body = [
            chunk(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"current_time","arguments":""}}]}}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"memory","arguments":"{\"act"}}]}}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"tz\":"}}]}}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"UTC\"}"}}]}}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"ion\": \"read\"}"}}]}}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        // Byte by byte with CRLF line ends gives the same answer as the whole body.
        let crlf = body.replace('\n', "\r\n");
        let (mut dec, mut acc) = (super::super::sse::SseDecoder::default(), ChunkAccumulator::default());
        for b in crlf.as_bytes() {
            for ev in dec.feed_bytes(std::slice::from_ref(b)) {
                acc.apply(&ev).unwrap();
            }
        }
        let r = acc.finish().unwrap();
        assert_eq!(r.stop_reason, "tool_calls");
        let calls: Vec<(&str, &str, &str)> = r.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, vec![("call_a", "current_time", "{\"tz\": \"UTC\"}"), ("call_b", "memory", "{\"action\": \"read\"}")]);
        assert_eq!(parse_stream(&body).unwrap().0.tool_calls, r.tool_calls);
    }

    #[test]
    fn a_cut_stream_an_error_chunk_or_garbage_fails() {
        let cut = chunk(r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#);
        assert!(matches!(parse_stream(&cut), Err(LlmError::Unreachable(_))));
        let err = chunk(r#"{"error":{"message":"overloaded","type":"server_error"}}"#);
        assert!(matches!(parse_stream(&err), Err(LlmError::Status { status: 500, .. })));
        assert!(matches!(parse_stream("data: {oops\n\n"), Err(LlmError::BadResponse(_))));
        // A tool call without an id gets a positional one; empty arguments become `{}`.
        let anon = [chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]},"finish_reason":"tool_calls"}]}"#)]
            .concat();
        let r = parse_stream(&anon).unwrap().0;
        assert_eq!((r.tool_calls[0].id.as_str(), r.tool_calls[0].arguments.as_str()), ("call_0", "{}"));
    }
}
