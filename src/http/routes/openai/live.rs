//! The live side of a streamed API server turn, shared by `/v1/chat/completions` with
//! `stream: true` (`sse.rs`) and the session chat stream (`session_stream.rs`): the
//! [`StreamTarget`] the turn streams into (each model delta and tool call becomes a
//! [`Frame`]), the task that runs the turn, the wait for the next frame with Hermes'
//! keepalive, and the SSE response with its headers. Each route formats the frames itself.

use crate::app::api_server::ApiTurn;
use crate::app::{ApiServer, AppError, Outcome};
use crate::http::routes::openai::chat::echo;
use crate::ports::{DeliveryError, StreamTarget};
use async_trait::async_trait;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::Value;
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

/// One thing for the stream to write.
pub enum Frame {
    /// New reply text.
    Delta(String),
    /// A tool call's progress, as the route's [`ToolView`] shows it.
    Tool(Value),
    /// The turn ended.
    End(Result<Outcome, AppError>),
}

/// One tool call's progress as the turn reports it.
#[derive(Debug, Clone, Copy)]
pub struct ToolStep<'a> {
    /// The model's call id.
    pub call_id: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Its arguments (JSON text).
    pub args: &'a str,
    /// Finished (else started).
    pub done: bool,
}

/// How a route shows a tool step on its stream.
pub type ToolView = fn(ToolStep<'_>) -> Value;

/// The turn's live stream target: each model delta becomes a [`Frame::Delta`].
struct LiveSink {
    tx: mpsc::UnboundedSender<Frame>,
    /// What each streamed message has shown so far (the editor sends whole texts).
    shown: Mutex<HashMap<String, String>>,
    next: AtomicU64,
    view: ToolView,
}

impl LiveSink {
    fn emit(&self, t: &str) {
        if !t.is_empty() {
            let _ = self.tx.send(Frame::Delta(t.to_string()));
        }
    }
}

#[async_trait]
impl StreamTarget for LiveSink {
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

    fn tool_progress(&self, call_id: &str, tool: &str, args: &str, done: bool) {
        // Hermes keeps internal tools (`_…`) and id-less calls off the wire.
        if call_id.is_empty() || tool.starts_with('_') {
            return;
        }
        let _ = self.tx.send(Frame::Tool((self.view)(ToolStep { call_id, tool, args, done })));
    }
}

/// Starts `turn` in a task of its own with a live sink; its frames, ending in
/// [`Frame::End`]. When the stream's reader is dropped (the client disconnected) before the
/// turn ends, the turn is interrupted, as Hermes interrupts its agent.
pub fn start(api: ApiServer, turn: ApiTurn, view: ToolView) -> mpsc::UnboundedReceiver<Frame> {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink = Arc::new(LiveSink { tx: tx.clone(), shown: Mutex::new(HashMap::new()), next: AtomicU64::new(0), view });
    let session_id = turn.session_id.clone();
    // The turn ends by the caller's deadline (a Lambda invocation's), though the answer is
    // already on its way.
    tokio::spawn(crate::app::budget::inherit(async move {
        let run = api.turn(turn, Some(sink));
        tokio::pin!(run);
        let r = tokio::select! {
            r = &mut run => r,
            () = tx.closed() => {
                // The client went away (its stream was dropped): Hermes interrupts the agent.
                if let Err(e) = api.interrupt(&session_id).await {
                    tracing::warn!(error = %e, "the turn of a dropped SSE stream could not be interrupted");
                }
                run.await
            }
        };
        let _ = tx.send(Frame::End(r));
    }));
    rx
}

/// What the wait for the next frame gave.
pub enum Next {
    /// Nothing for `keepalive`: time for a keepalive comment.
    Idle,
    /// A frame.
    Frame(Frame),
    /// The turn's task is gone without an end frame.
    Closed,
}

/// The next frame, or [`Next::Idle`] after `keepalive` of silence.
pub async fn next(rx: &mut mpsc::UnboundedReceiver<Frame>, keepalive: Duration) -> Next {
    match tokio::time::timeout(keepalive, rx.recv()).await {
        Err(_) => Next::Idle,
        Ok(Some(f)) => Next::Frame(f),
        Ok(None) => Next::Closed,
    }
}

/// Hermes' keepalive comment.
pub const KEEPALIVE_COMMENT: &[u8] = b": keepalive\n\n";

/// The SSE response of `body`, with Hermes' headers and the session headers echoed.
pub fn response(
    body: impl futures_util::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    session_id: &str,
    key: Option<&str>,
) -> Response {
    let mut resp = Response::new(Body::from_stream(body));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("X-Accel-Buffering", HeaderValue::from_static("no"));
    echo(h, session_id, key);
    resp
}
