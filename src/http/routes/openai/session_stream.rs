//! The SSE answer of `POST /api/sessions/{session_id}/chat/stream`, as Hermes 0.19.0's
//! `_handle_session_chat_stream` writes it: `event: <name>\ndata: <json>\n\n` frames —
//! `run.started`, `message.started`, `assistant.delta` as the model streams, `tool.started`
//! and `tool.completed` around each tool call, `assistant.completed`, `run.completed` (this
//! turn's assistant and tool messages and the usage), or `error`, and always `done` last —
//! each payload with `session_id`, `run_id`, `seq` and `ts`; `: keepalive` comments after
//! 30 s of silence. Like Hermes, a failed tool is a `tool.completed` (its `tool.failed` is
//! never sent by 0.19.0's agent).

use crate::app::{App, AppError, Outcome};
use crate::core::session::Message;
use crate::core::tool_preview::preview;
use crate::http::routes::openai::live::{self, Frame, KEEPALIVE, Next, ToolStep};
use crate::http::routes::openai::session_chat::{Prepared, session_usage};
use crate::http::routes::openai::{OpenAiError, answer_text, not_run, random_id};
use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;

/// A tool step as Hermes' session event (its name in `event`, taken out when written).
fn tool_event(t: ToolStep<'_>) -> Value {
    if t.done {
        return json!({"event": "tool.completed", "tool_name": t.tool, "preview": null, "args": null});
    }
    let args: Value = serde_json::from_str(t.args).unwrap_or_else(|_| Value::String(t.args.to_string()));
    json!({"event": "tool.started", "tool_name": t.tool, "preview": preview(t.tool, &args), "args": args})
}

/// Starts the prepared turn with a live sink and answers with its event stream.
pub fn start(app: App, p: Prepared) -> Response {
    let rx = live::start(app.api_server(), p.turn.clone(), tool_event);
    let (asked, key) = (p.asked.clone(), p.turn.session_key.clone());
    live::response(events(app, p, rx, KEEPALIVE), &asked, key.as_deref())
}

/// Where the stream is.
#[derive(PartialEq, Eq)]
enum Phase {
    Start,
    Running,
    Done,
}

/// One run's stream: what every event repeats, and the frames of its turn.
struct Run {
    app: App,
    p: Prepared,
    rx: mpsc::UnboundedReceiver<Frame>,
    keepalive: Duration,
    run_id: String,
    message_id: String,
    seq: u64,
    phase: Phase,
}

impl Run {
    /// One `event:` frame, with Hermes' defaults (`session_id`, `run_id`, `seq`, `ts`).
    fn event(&mut self, name: &str, mut payload: Value) -> Vec<u8> {
        self.seq += 1;
        let ts = self.app.now().timestamp_millis() as f64 / 1000.0;
        if let Some(o) = payload.as_object_mut() {
            o.entry("session_id").or_insert_with(|| json!(self.p.asked));
            o.entry("run_id").or_insert_with(|| json!(self.run_id));
            o.entry("seq").or_insert_with(|| json!(self.seq));
            o.entry("ts").or_insert_with(|| json!(ts));
        }
        format!("event: {name}\ndata: {payload}\n\n").into_bytes()
    }

    /// The frames of one step of the stream; `None` once `done` went out.
    async fn step(&mut self) -> Option<Vec<u8>> {
        match self.phase {
            Phase::Done => None,
            Phase::Start => {
                self.phase = Phase::Running;
                let mut out = self.event("run.started", json!({"user_message": {"role": "user", "content": self.p.turn.text}}));
                let started = json!({"message": {"id": self.message_id, "role": "assistant"}});
                out.extend(self.event("message.started", started));
                Some(out)
            }
            Phase::Running => Some(match live::next(&mut self.rx, self.keepalive).await {
                Next::Idle => live::KEEPALIVE_COMMENT.to_vec(),
                Next::Frame(Frame::Delta(t)) => self.event("assistant.delta", json!({"message_id": self.message_id, "delta": t})),
                Next::Frame(Frame::Tool(mut v)) => {
                    let name = v.as_object_mut().and_then(|o| o.remove("event")).and_then(|n| n.as_str().map(str::to_string));
                    v["message_id"] = json!(self.message_id);
                    self.event(name.as_deref().unwrap_or("tool.progress"), v)
                }
                Next::Frame(Frame::End(r)) => self.finish(r).await,
                Next::Closed => {
                    let lost = crate::ports::LlmError::BadResponse("the turn ended without an answer".into());
                    self.finish(Err(AppError::Model(lost))).await
                }
            }),
        }
    }

    /// The end of the run: `assistant.completed` and `run.completed`, or `error`; then `done`.
    async fn finish(&mut self, r: Result<Outcome, AppError>) -> Vec<u8> {
        self.phase = Phase::Done;
        let mut out = match r {
            Ok(o) => match not_run(&o) {
                Some(e) => self.event("error", json!({"message": e.message_text()})),
                None => self.completed(&o).await,
            },
            Err(e) => self.event("error", json!({"message": OpenAiError::from(e).message_text()})),
        };
        out.extend(self.event("done", json!({})));
        out
    }

    async fn completed(&mut self, o: &Outcome) -> Vec<u8> {
        let mut out = Vec::new();
        let text = answer_text(o);
        if !o.streamed && !text.is_empty() {
            out.extend(self.event("assistant.delta", json!({"message_id": self.message_id, "delta": text})));
        }
        let session_id = self.p.effective(o);
        let messages = match self.app.api_server().turn_messages(&o.session_id, &self.p.turn.text).await {
            Ok(m) => m.iter().map(message_view).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "the turn's messages could not be read for run.completed");
                Vec::new()
            }
        };
        let (id, usage) = (self.message_id.clone(), session_usage(o));
        let done = json!({"session_id": session_id, "message_id": id, "content": text,
            "completed": true, "partial": false, "interrupted": false});
        out.extend(self.event("assistant.completed", done));
        let run = json!({"session_id": session_id, "message_id": id, "completed": true, "messages": messages, "usage": usage});
        out.extend(self.event("run.completed", run));
        out
    }
}

/// One message of the turn as Hermes' `_message_response` shows an agent message.
fn message_view(m: &Message) -> Value {
    let mut v = json!({"role": m.role.as_str(), "content": m.content});
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        v["tool_calls"] = Value::Array(calls);
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// The event stream of one run, from the frames of its turn.
fn events(
    app: App,
    p: Prepared,
    rx: mpsc::UnboundedReceiver<Frame>,
    keepalive: Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send {
    let run = Run { app, p, rx, keepalive, run_id: random_id("run_", 32), message_id: random_id("msg_", 32), seq: 0, phase: Phase::Start };
    futures_util::stream::unfold(run, |mut run| async move {
        let bytes = run.step().await?;
        Some((Ok(Bytes::from(bytes)), run))
    })
}
