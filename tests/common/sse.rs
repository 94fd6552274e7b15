//! An OpenAI-compatible model that streams its answers as SSE chunks with short pauses
//! (what streaming replies are tested against).

use crate::common::spawn_server;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest a held answer waits for [`SseModel::release`] (under the model's 10 s timeout
/// in `common::config`).
const HOLD_MAX: Duration = Duration::from_secs(8);

/// An OpenAI-compatible model that streams each answer in `chunk`-character pieces, `pause`
/// apart, and records whether it was asked to stream.
#[derive(Clone)]
pub struct SseModel {
    pub url: String,
    pub answers: Arc<Mutex<Vec<String>>>,
    pub requests: Arc<Mutex<Vec<Value>>>,
    hold: Arc<AtomicBool>,
}

#[derive(Clone)]
struct SseState {
    answers: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    chunk: usize,
    pause: Duration,
    hold: Arc<AtomicBool>,
}

impl SseModel {
    pub async fn start(chunk: usize, pause_ms: u64) -> Self {
        let (answers, requests) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(Vec::new())));
        let hold = Arc::new(AtomicBool::new(false));
        let pause = Duration::from_millis(pause_ms);
        let st = SseState { answers: answers.clone(), requests: requests.clone(), chunk, pause, hold: hold.clone() };
        let router = axum::Router::new().route("/v1/chat/completions", post(sse_handler)).with_state(st);
        Self { url: format!("{}/v1", spawn_server(router).await), answers, requests, hold }
    }

    /// From now on a streamed answer stops after its first piece, its stream still open,
    /// until [`SseModel::release`] (at most 8 s).
    pub fn hold_after_first(&self) {
        self.hold.store(true, Ordering::SeqCst);
    }

    /// Lets held answers go on.
    pub fn release(&self) {
        self.hold.store(false, Ordering::SeqCst);
    }
}

fn chunk_line(v: Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

async fn sse_handler(State(st): State<SseState>, Json(body): Json<Value>) -> Response {
    st.requests.lock().unwrap().push(body.clone());
    let answer = st.answers.lock().unwrap().pop().unwrap_or_else(|| "no answer scripted".into());
    if body["stream"] != true {
        return Json(json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}))
            .into_response();
    }
    let chars: Vec<char> = answer.chars().collect();
    let mut frames: Vec<Bytes> = chars
        .chunks(st.chunk)
        .map(|c| chunk_line(json!({"model": "sse-model", "choices": [{"index": 0, "delta": {"content": c.iter().collect::<String>()}}]})))
        .collect();
    frames.push(chunk_line(json!({"model": "sse-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    frames.push(chunk_line(json!({"model": "sse-model", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 34}})));
    frames.push(Bytes::from("data: [DONE]\n\n"));
    let (pause, hold) = (st.pause, st.hold.clone());
    let stream = futures_util::stream::unfold(frames.into_iter().enumerate(), move |mut it| {
        let hold = hold.clone();
        async move {
            let (i, next) = it.next()?;
            tokio::time::sleep(pause).await;
            let until = Instant::now() + HOLD_MAX;
            while i > 0 && hold.load(Ordering::SeqCst) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Some((Ok::<_, std::io::Error>(next), it))
        }
    });
    ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
}
