//! The SSE answer of `/v1/chat/completions` with `stream: true`, as Hermes writes it: a role
//! chunk, `chat.completion.chunk` deltas as the model streams (the turn hands them to a
//! live [`StreamTarget`]), `event: hermes.tool.progress` events around each tool call,
//! `: keepalive` comments after 30 s of silence, a finish chunk (`stop`, or `error` with
//! Hermes' `error` and `hermes` objects) with the usage, and `data: [DONE]`.

use crate::app::api_server::ApiTurn;
use crate::app::{ApiServer, AppError, Outcome};
use crate::http::routes::openai::chat::echo;
use crate::http::routes::openai::{OpenAiError, answer_text, not_run, usage};
use crate::ports::{DeliveryError, StreamTarget};
use async_trait::async_trait;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// Silence after which a keepalive comment goes out (Hermes'
/// `CHAT_COMPLETIONS_SSE_KEEPALIVE_SECONDS`).
pub const KEEPALIVE: Duration = Duration::from_secs(30);

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

/// One thing for the stream to write.
enum Frame {
    Delta(String),
    Tool(Value),
    End(Result<Outcome, AppError>),
}

/// The turn's live stream target: each model delta becomes a content chunk.
struct SseSink {
    tx: mpsc::UnboundedSender<Frame>,
    /// What each streamed message has shown so far (the editor sends whole texts).
    shown: Mutex<HashMap<String, String>>,
    next: AtomicU64,
}

impl SseSink {
    fn emit(&self, t: &str) {
        if !t.is_empty() {
            let _ = self.tx.send(Frame::Delta(t.to_string()));
        }
    }
}

#[async_trait]
impl StreamTarget for SseSink {
    fn parts(&self, text: &str) -> Vec<String> {
        vec![text.to_string()]
    }

    async fn send_one(&self, part: &str) -> Result<Option<String>, DeliveryError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed).to_string();
        self.shown.lock().map_err(|_| DeliveryError::Permanent("poisoned".into()))?.insert(id.clone(), part.to_string());
        self.emit(part);
        Ok(Some(id))
    }

    async fn edit(&self, message_id: &str, text: &str) -> Result<(), DeliveryError> {
        let rest = {
            let mut shown = self.shown.lock().map_err(|_| DeliveryError::Permanent("poisoned".into()))?;
            let prev = shown.entry(message_id.to_string()).or_default();
            // Only growth can be streamed; a rewrite keeps what was shown.
            let rest = text.strip_prefix(prev.as_str()).map(str::to_string);
            if rest.is_some() {
                *prev = text.to_string();
            }
            rest
        };
        self.emit(rest.as_deref().unwrap_or(""));
        Ok(())
    }

    async fn send(&self, text: &str) -> Result<(), DeliveryError> {
        self.emit(text);
        Ok(())
    }

    fn live(&self) -> bool {
        true
    }

    fn tool_progress(&self, call_id: &str, tool: &str, _args: &str, done: bool) {
        // Hermes keeps internal tools (`_…`) and id-less calls off the wire.
        if call_id.is_empty() || tool.starts_with('_') {
            return;
        }
        let ev = if done {
            json!({"tool": tool, "toolCallId": call_id, "status": "completed"})
        } else {
            json!({"tool": tool, "emoji": "⚡", "label": tool, "toolCallId": call_id, "status": "running"})
        };
        let _ = self.tx.send(Frame::Tool(ev));
    }
}

/// Starts `turn` with a live sink and answers with its SSE stream.
pub fn chat_stream(api: ApiServer, turn: ApiTurn, chunk: Chunk) -> Response {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink = Arc::new(SseSink { tx: tx.clone(), shown: Mutex::new(HashMap::new()), next: AtomicU64::new(0) });
    let (session_id, key) = (turn.session_id.clone(), turn.session_key.clone());
    // The turn ends by the caller's deadline (a Lambda invocation's) though the answer is
    // already on its way.
    tokio::spawn(crate::app::budget::inherit(async move {
        let r = api.turn(turn, Some(sink)).await;
        let _ = tx.send(Frame::End(r));
    }));
    let mut resp = Response::new(Body::from_stream(body_stream(rx, chunk, KEEPALIVE)));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("X-Accel-Buffering", HeaderValue::from_static("no"));
    echo(h, &session_id, key.as_deref());
    resp
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
        let bytes = match tokio::time::timeout(st.keepalive, st.rx.recv()).await {
            Err(_) => Bytes::from_static(b": keepalive\n\n"),
            Ok(Some(Frame::Delta(t))) => data(&st.chunk, json!({"content": t}), Value::Null, None),
            Ok(Some(Frame::Tool(v))) => Bytes::from(format!("event: hermes.tool.progress\ndata: {v}\n\n")),
            Ok(Some(Frame::End(r))) => {
                st.done = true;
                finish(&st.chunk, r)
            }
            Ok(None) => {
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
