//! Anthropic's streaming answer: the fold of
//! the Messages events (`message_start`, `content_block_start`, `content_block_delta` with
//! `text_delta` / `input_json_delta`, `content_block_stop`, `message_delta`, `message_stop`,
//! `ping`, `error`) into one [`ChatResponse`], yielding each text delta as it arrives. The
//! event-stream decoder is the shared [`super::sse`] one.

use super::anthropic::apply_usage;
pub use super::sse::{SseDecoder, SseEvent};
use crate::core::session::ToolCall;
use crate::ports::{ChatResponse, LlmError};
use serde_json::Value;

#[derive(Debug)]
enum Block {
    Text,
    Tool { id: String, name: String, json: String },
    Other,
}

/// Folds Messages stream events into one answer.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    resp: ChatResponse,
    blocks: Vec<(usize, Block)>,
    stopped: bool,
}

fn bad(what: &str) -> LlmError {
    LlmError::BadResponse(format!("stream: {what}"))
}

impl StreamAccumulator {
    /// Applies one event; returns the text it added, if any.
    pub fn apply(&mut self, ev: &SseEvent) -> Result<Option<String>, LlmError> {
        if ev.event == "ping" || ev.data.is_empty() {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(&ev.data).map_err(|e| bad(&format!("event data is not JSON: {e}")))?;
        let kind = if ev.event.is_empty() { v["type"].as_str().unwrap_or_default() } else { ev.event.as_str() };
        let index = v["index"].as_u64().unwrap_or(0) as usize;
        match kind {
            "message_start" => {
                self.resp.model = v["message"]["model"].as_str().unwrap_or_default().to_string();
                apply_usage(&mut self.resp, &v["message"]["usage"]);
            }
            "content_block_start" => {
                let b = &v["content_block"];
                let block = match b["type"].as_str() {
                    Some("text") => Block::Text,
                    Some("tool_use") => Block::Tool {
                        id: b["id"].as_str().unwrap_or_default().into(),
                        name: b["name"].as_str().unwrap_or_default().into(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
                if let Some(t) = b["text"].as_str().filter(|t| !t.is_empty()) {
                    self.resp.content.push_str(t);
                    return Ok(Some(t.to_string()));
                }
            }
            "content_block_delta" => return self.delta(index, &v["delta"]),
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.resp.stop_reason = r.to_string();
                }
                apply_usage(&mut self.resp, &v["usage"]);
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let detail = v["error"]["message"].as_str().unwrap_or_default().to_string();
                let status = if v["error"]["type"] == "overloaded_error" { 529 } else { 500 };
                return Err(LlmError::Status { status, detail });
            }
            _ => {}
        }
        Ok(None)
    }

    fn delta(&mut self, index: usize, d: &Value) -> Result<Option<String>, LlmError> {
        let block = self.blocks.iter_mut().rev().find(|(i, _)| *i == index).map(|(_, b)| b);
        match (d["type"].as_str(), block) {
            (Some("text_delta"), Some(Block::Text)) => {
                let t = d["text"].as_str().unwrap_or_default();
                self.resp.content.push_str(t);
                Ok(Some(t.to_string()))
            }
            (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                json.push_str(d["partial_json"].as_str().unwrap_or_default());
                Ok(None)
            }
            (Some("text_delta" | "input_json_delta"), _) => Err(bad(&format!("delta for unknown block {index}"))),
            _ => Ok(None),
        }
    }

    /// The folded answer; an error if the stream ended before `message_stop`.
    pub fn finish(mut self) -> Result<ChatResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::Unreachable("stream ended before message_stop".into()));
        }
        for (_, b) in self.blocks {
            if let Block::Tool { id, name, json } = b {
                let arguments = if json.trim().is_empty() { "{}".to_string() } else { json };
                serde_json::from_str::<Value>(&arguments).map_err(|e| bad(&format!("tool input is not JSON: {e}")))?;
                self.resp.tool_calls.push(ToolCall { id, name, arguments });
            }
        }
        Ok(self.resp)
    }
}

/// Folds a whole event-stream body (tests and non-incremental callers).
pub fn parse_stream(body: &str) -> Result<(ChatResponse, Vec<String>), LlmError> {
    let (mut dec, mut acc, mut texts) = (SseDecoder::default(), StreamAccumulator::default(), Vec::new());
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

    const STREAM: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"current_time\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"tz\\\": \"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"UTC\\\"}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

    #[test]
    fn folds_text_and_tool_use_deltas_in_any_chunking() {
        let (r, texts) = parse_stream(STREAM).unwrap();
        assert_eq!((r.content.as_str(), r.stop_reason.as_str(), r.model.as_str()), ("Hello", "tool_use", "claude-x"));
        assert_eq!(texts, vec!["Hel", "lo"]);
        assert_eq!((r.tool_calls[0].name.as_str(), r.tool_calls[0].arguments.as_str()), ("current_time", "{\"tz\": \"UTC\"}"));
        assert_eq!((r.input_tokens, r.output_tokens), (7, 15));
        // Byte-by-byte with CRLF line ends gives the same answer.
        let crlf = STREAM.replace('\n', "\r\n");
        let (mut dec, mut acc) = (SseDecoder::default(), StreamAccumulator::default());
        for c in crlf.chars() {
            for ev in dec.feed(&c.to_string()) {
                acc.apply(&ev).unwrap();
            }
        }
        let r2 = acc.finish().unwrap();
        assert_eq!((r2.content, r2.tool_calls), (r.content, r.tool_calls));
    }

    #[test]
    fn a_cut_stream_or_an_error_event_fails() {
        let cut = &STREAM[..STREAM.find("event: message_delta").unwrap()];
        assert!(matches!(parse_stream(cut), Err(LlmError::Unreachable(_))));
        let err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert!(matches!(parse_stream(err), Err(LlmError::Status { status: 529, .. })));
        assert!(matches!(parse_stream("event: message_start\ndata: {oops\n\n"), Err(LlmError::BadResponse(_))));
    }
}
