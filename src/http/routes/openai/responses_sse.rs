//! The SSE answer of `POST /v1/responses` with `stream: true`, as Hermes writes it
//! (`_write_sse_responses`): `response.created` (in progress), then as the turn runs
//! `response.output_item.added` for the assistant message, `response.output_text.delta`s and
//! a `function_call` item added and done around each tool call; at the end
//! `response.output_text.done`, `response.output_item.done` and `response.completed` (or
//! `response.failed`) with the whole response, stored first when `store` is on, as the
//! non-streaming answer is. Every event carries a growing `sequence_number`; silence gets
//! Hermes' keepalive comment. Beyond Hermes, OpenAI's `response.content_part.added`/`.done`
//! frame the text (the SDK's `responses.stream` helper needs them). The turn's live side is
//! `live.rs`.

use crate::app::api_server::{ApiTurn, StoredResponse};
use crate::app::{ApiServer, AppError, Outcome};
use crate::http::routes::openai::live::{self, Frame, KEEPALIVE, Next, ToolStep};
use crate::http::routes::openai::{OpenAiError, answer_text, not_run, random_id};
use axum::body::Bytes;
use axum::response::Response;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;

/// What the stored and streamed response repeats, and where it is kept.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// `resp_…`.
    pub id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// The model the request named.
    pub model: String,
    /// `store` of the request.
    pub store: bool,
    /// The instructions the chain carries forward.
    pub instructions: Option<String>,
}

/// A tool step as the frame the stream turns into `function_call` items.
fn tool_frame(t: ToolStep<'_>) -> Value {
    json!({"call_id": t.call_id, "name": t.tool, "arguments": t.args, "done": t.done})
}

/// Starts `turn` with a live sink and answers with its Responses SSE stream.
pub fn responses_stream(api: ApiServer, turn: ApiTurn, env: Envelope) -> Response {
    let (session_id, key) = (turn.session_id.clone(), turn.session_key.clone());
    let rx = live::start(api.clone(), turn, tool_frame);
    let st = St::new(rx, api, env, session_id.clone(), KEEPALIVE);
    live::response(body_stream(st), &session_id, key.as_deref())
}

/// One open `function_call` item: call id, item id, name, arguments, output index.
type OpenCall = (String, String, String, String, usize);

struct St {
    rx: mpsc::UnboundedReceiver<Frame>,
    api: ApiServer,
    env: Envelope,
    session_id: String,
    keepalive: Duration,
    seq: u64,
    msg_id: String,
    msg_index: Option<usize>,
    next_index: usize,
    text: String,
    items: Vec<Value>,
    open: Vec<OpenCall>,
    started: bool,
    done: bool,
}

impl St {
    fn new(rx: mpsc::UnboundedReceiver<Frame>, api: ApiServer, env: Envelope, session_id: String, keepalive: Duration) -> Self {
        let msg_id = random_id("msg_", 24);
        Self {
            rx,
            api,
            env,
            session_id,
            keepalive,
            seq: 0,
            msg_id,
            msg_index: None,
            next_index: 0,
            text: String::new(),
            items: Vec::new(),
            open: Vec::new(),
            started: false,
            done: false,
        }
    }

    /// One `event:`/`data:` pair, numbered.
    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.extend_from_slice(format!("event: {kind}\ndata: {data}\n\n").as_bytes());
    }

    fn envelope(&self, status: &str) -> Value {
        json!({"id": self.env.id, "object": "response", "status": status, "created_at": self.env.created_at, "model": self.env.model})
    }

    fn delta(&mut self, out: &mut Vec<u8>, t: &str) {
        if t.is_empty() {
            return;
        }
        let index = match self.msg_index {
            Some(i) => i,
            None => {
                let i = self.next_index;
                self.next_index += 1;
                self.msg_index = Some(i);
                let item = json!({"id": self.msg_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []});
                self.event(out, "response.output_item.added", json!({"output_index": i, "item": item}));
                // Not in Hermes' stream: OpenAI's content part events, which the SDK's
                // `responses.stream` helper needs before the first delta.
                let part = json!({"type": "output_text", "text": "", "annotations": []});
                let data = json!({"item_id": self.msg_id, "output_index": i, "content_index": 0, "part": part});
                self.event(out, "response.content_part.added", data);
                i
            }
        };
        self.text.push_str(t);
        let data = json!({"item_id": self.msg_id, "output_index": index, "content_index": 0, "delta": t, "logprobs": []});
        self.event(out, "response.output_text.delta", data);
    }

    fn tool(&mut self, out: &mut Vec<u8>, v: &Value) {
        let call_id = v["call_id"].as_str().unwrap_or_default().to_string();
        let (name, args) = (v["name"].as_str().unwrap_or_default().to_string(), v["arguments"].as_str().unwrap_or("{}").to_string());
        if v["done"] == json!(true) {
            let Some(pos) = self.open.iter().position(|c| c.0 == call_id) else { return };
            let (call_id, item_id, name, args, index) = self.open.remove(pos);
            let item =
                json!({"id": item_id, "type": "function_call", "status": "completed", "name": name, "call_id": call_id, "arguments": args});
            self.event(out, "response.output_item.done", json!({"output_index": index, "item": item}));
            return;
        }
        let (item_id, index) = (random_id("fc_", 24), self.next_index);
        self.next_index += 1;
        let item =
            json!({"id": item_id, "type": "function_call", "status": "in_progress", "name": name, "call_id": call_id, "arguments": args});
        self.items.push(json!({"type": "function_call", "name": name, "arguments": args, "call_id": call_id}));
        self.open.push((call_id, item_id, name, args, index));
        self.event(out, "response.output_item.added", json!({"output_index": index, "item": item}));
    }

    /// The end: what was not streamed, the closing events, the stored response, the
    /// terminal event.
    async fn finish(&mut self, out: &mut Vec<u8>, r: Result<Outcome, AppError>) {
        let (result, usage) = match r {
            Ok(o) => match not_run(&o) {
                Some(e) => (Err(e.message_text()), o.usage),
                None => {
                    if self.text.is_empty() {
                        self.delta(out, &answer_text(&o));
                    }
                    (Ok(()), o.usage)
                }
            },
            Err(e) => (Err(OpenAiError::from(e).message_text()), (0, 0)),
        };
        if let Some(index) = self.msg_index {
            let data = json!({"item_id": self.msg_id, "output_index": index, "content_index": 0, "text": self.text, "logprobs": []});
            self.event(out, "response.output_text.done", data);
            let part = json!({"type": "output_text", "text": self.text, "annotations": []});
            let data = json!({"item_id": self.msg_id, "output_index": index, "content_index": 0, "part": part});
            self.event(out, "response.content_part.done", data);
            let item = json!({"id": self.msg_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": self.text}]});
            self.event(out, "response.output_item.done", json!({"output_index": index, "item": item}));
        }
        let shown = match &result {
            Ok(()) => self.text.clone(),
            Err(m) if self.text.is_empty() => m.clone(),
            Err(_) => self.text.clone(),
        };
        let mut items = self.items.clone();
        items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": shown}]}));
        let (status, kind) = if result.is_ok() { ("completed", "response.completed") } else { ("failed", "response.failed") };
        let mut env = self.envelope(status);
        env["output"] = json!(items);
        env["usage"] = json!({"input_tokens": usage.0, "output_tokens": usage.1, "total_tokens": usage.0 + usage.1});
        if let Err(m) = &result {
            env["error"] = json!({"message": m, "type": "server_error"});
        }
        if self.env.store {
            let rec =
                StoredResponse { response: env.clone(), session_id: self.session_id.clone(), instructions: self.env.instructions.clone() };
            if let Err(e) = self.api.store_response(&self.env.id, &rec).await {
                tracing::warn!(response_id = %self.env.id, error = %e, "streamed response not stored");
            }
        }
        self.event(out, kind, json!({"response": env}));
    }
}

/// The SSE bytes of one streamed response, from the frames of its turn.
fn body_stream(st: St) -> impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send {
    futures_util::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        let mut out = Vec::new();
        if !st.started {
            st.started = true;
            let mut env = st.envelope("in_progress");
            env["output"] = json!([]);
            st.event(&mut out, "response.created", json!({"response": env}));
            return Some((Ok(Bytes::from(out)), st));
        }
        match live::next(&mut st.rx, st.keepalive).await {
            Next::Idle => out.extend_from_slice(live::KEEPALIVE_COMMENT),
            Next::Frame(Frame::Delta(t)) => st.delta(&mut out, &t),
            Next::Frame(Frame::Tool(v)) => st.tool(&mut out, &v),
            Next::Frame(Frame::End(r)) => {
                st.done = true;
                st.finish(&mut out, r).await;
            }
            Next::Closed => {
                st.done = true;
                let gone = AppError::Model(crate::ports::LlmError::BadResponse("the turn ended without an answer".into()));
                st.finish(&mut out, Err(gone)).await;
            }
        }
        Some((Ok(Bytes::from(out)), st))
    })
}
