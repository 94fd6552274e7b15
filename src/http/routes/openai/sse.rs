//! The SSE answer of `/v1/chat/completions` with `stream: true`, as Hermes writes it: a role
//! chunk, `chat.completion.chunk` deltas as the model streams (the turn hands them to a
//! live sink, `live.rs`), `event: hermes.tool.progress` events around each tool call,
//! `: keepalive` comments after 30 s of silence, a finish chunk (`stop`, or `error` with
//! Hermes' `error` and `hermes` objects) with the usage, and `data: [DONE]`.

use crate::app::api_server::ApiTurn;
use crate::app::{ApiServer, AppError, Outcome};
use crate::http::routes::openai::live::{self, Frame, KEEPALIVE, Next, ToolStep};
use crate::http::routes::openai::{OpenAiError, answer_text, not_run, usage};
use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;

/// What every chunk of one completion repeats.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: i64,
    /// The model the request named.
    pub model: String,
}

/// A tool step as Hermes' `hermes.tool.progress` event.
fn tool_event(t: ToolStep<'_>) -> Value {
    if t.done {
        json!({"tool": t.tool, "toolCallId": t.call_id, "status": "completed"})
    } else {
        json!({"tool": t.tool, "emoji": "⚡", "label": t.tool, "toolCallId": t.call_id, "status": "running"})
    }
}

/// Starts `turn` with a live sink and answers with its SSE stream.
pub fn chat_stream(api: ApiServer, turn: ApiTurn, chunk: Chunk) -> Response {
    let (session_id, key) = (turn.session_id.clone(), turn.session_key.clone());
    let rx = live::start(api, turn, tool_event);
    live::response(body_stream(rx, chunk, KEEPALIVE), &session_id, key.as_deref())
}

struct St {
    rx: mpsc::UnboundedReceiver<Frame>,
    chunk: Chunk,
    keepalive: Duration,
    role_sent: bool,
    done: bool,
}

/// The SSE bytes of one completion, from the frames of its turn.
fn body_stream(
    rx: mpsc::UnboundedReceiver<Frame>,
    chunk: Chunk,
    keepalive: Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send {
    let st = St { rx, chunk, keepalive, role_sent: false, done: false };
    futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        if !st.role_sent {
            st.role_sent = true;
            let role = data(&st.chunk, json!({"role": "assistant"}), Value::Null, None);
            return Some((Ok(role), st));
        }
        let bytes = match live::next(&mut st.rx, st.keepalive).await {
            Next::Idle => Bytes::from_static(live::KEEPALIVE_COMMENT),
            Next::Frame(Frame::Delta(t)) => data(&st.chunk, json!({"content": t}), Value::Null, None),
            Next::Frame(Frame::Tool(v)) => Bytes::from(format!("event: hermes.tool.progress\ndata: {v}\n\n")),
            Next::Frame(Frame::End(r)) => {
                st.done = true;
                finish(&st.chunk, r)
            }
            Next::Closed => {
                st.done = true;
                finish(&st.chunk, Err(AppError::Model(crate::ports::LlmError::BadResponse("the turn ended without an answer".into()))))
            }
        };
        Some((Ok(bytes), st))
    })
}

/// One `data:` line of a `chat.completion.chunk`.
fn data(c: &Chunk, delta: Value, finish_reason: Value, extra: Option<Value>) -> Bytes {
    let mut v = json!({"id": c.id, "object": "chat.completion.chunk", "created": c.created, "model": c.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]});
    if let Some(Value::Object(extra)) = extra {
        v.as_object_mut().into_iter().for_each(|o| o.extend(extra.clone()));
    }
    Bytes::from(format!("data: {v}\n\n"))
}

/// The end of the stream: what the turn did not stream, the finish chunk, `[DONE]`.
fn finish(c: &Chunk, r: Result<Outcome, AppError>) -> Bytes {
    let mut out = Vec::new();
    let failure = match r {
        Ok(o) => match not_run(&o) {
            Some(e) => Some((o.usage, e.message_text())),
            None => {
                let text = answer_text(&o);
                if !o.streamed && !text.is_empty() {
                    out.extend_from_slice(&data(c, json!({"content": text}), Value::Null, None));
                }
                out.extend_from_slice(&data(c, json!({}), json!("stop"), Some(json!({"usage": usage(&o)}))));
                None
            }
        },
        Err(e) => Some(((0, 0), OpenAiError::from(e).message_text())),
    };
    if let Some(((i, o), msg)) = failure {
        let hermes = json!({"completed": false, "partial": false, "failed": true, "error": msg, "error_code": "agent_error"});
        let extra = json!({"usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o},
            "error": {"message": msg, "type": "agent_error"}, "hermes": hermes});
        out.extend_from_slice(&data(c, json!({}), json!("error"), Some(extra)));
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    Bytes::from(out)
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
