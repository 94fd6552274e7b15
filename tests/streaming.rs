//! Streaming replies, black-box: the real binary with `streaming.enabled`, a local
//! OpenAI-compatible server that streams its answer as SSE chunks with short pauses, and a
//! Telegram Bot API fake recording `sendMessage` / `editMessageText` in order with their
//! receive times. Also the Anthropic client's stream through the model port, retried before
//! its first delta.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::anthropic::{AReply, FakeAnthropic};
use common::sse::SseModel;
use common::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One Bot API call as the fake received it.
#[derive(Clone, Debug)]
struct Call {
    method: String,
    message_id: i64,
    text: String,
    at: Instant,
}

#[derive(Clone, Default)]
struct TgState {
    calls: Arc<Mutex<Vec<Call>>>,
    next_id: Arc<Mutex<i64>>,
    fail_edits: bool,
}

/// A Telegram Bot API fake for `sendMessage` and `editMessageText`.
struct StreamTelegram {
    url: String,
    st: TgState,
}

impl StreamTelegram {
    async fn start(fail_edits: bool) -> Self {
        let st = TgState { fail_edits, ..TgState::default() };
        let router = axum::Router::new().route("/{bot}/{method}", post(tg_handler)).with_state(st.clone());
        Self { url: spawn_server(router).await, st }
    }
    fn calls(&self) -> Vec<Call> {
        self.st.calls.lock().unwrap().clone()
    }
    fn count(&self, method: &str) -> usize {
        self.calls().iter().filter(|c| c.method == method).count()
    }
    /// Each message's text as the chat shows it now, in the order they were sent.
    fn final_texts(&self) -> Vec<String> {
        let mut order = Vec::new();
        let mut text: HashMap<i64, String> = HashMap::new();
        for c in self.calls() {
            if c.method == "sendMessage" {
                order.push(c.message_id);
            }
            if c.method == "sendMessage" || (c.method == "editMessageText" && !self.st.fail_edits) {
                text.insert(c.message_id, c.text.clone());
            }
        }
        order.iter().map(|id| text[id].clone()).collect()
    }
}

async fn tg_handler(State(st): State<TgState>, Path((_bot, method)): Path<(String, String)>, Json(body): Json<Value>) -> Response {
    let at = Instant::now();
    let text = body["text"].as_str().unwrap_or_default().to_string();
    let message_id = match method.as_str() {
        "sendMessage" => {
            let mut n = st.next_id.lock().unwrap();
            *n += 1;
            *n
        }
        "editMessageText" => body["message_id"].as_i64().unwrap_or(-1),
        _ => return (StatusCode::NOT_FOUND, Json(json!({"ok": false}))).into_response(),
    };
    st.calls.lock().unwrap().push(Call { method: method.clone(), message_id, text: text.clone(), at });
    if method == "editMessageText" && st.fail_edits {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"ok": false, "error_code": 400, "description": "Bad Request: message can't be edited"})),
        )
            .into_response();
    }
    Json(json!({"ok": true, "result": {"message_id": message_id, "chat": {"id": 7}, "text": text}})).into_response()
}

const CURSOR: &str = " ▉";

fn config(model: &SseModel, tg: &StreamTelegram, interval: f64) -> String {
    format!(
        "model:\n  provider: openai\n  base_url: {}\n  name: sse-model\n  timeout_seconds: 20\n\
platforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n\
streaming:\n  enabled: true\n  transport: edit\n  edit_interval: {interval}\n  buffer_threshold: 10\n  cursor: \"{CURSOR}\"\n",
        model.url, tg.url
    )
}

/// Runs one Telegram message through a fresh gateway; returns when the turn is answered.
async fn one_turn(tag: &str, model: &SseModel, tg: &StreamTelegram, interval: f64, answer: &str) -> TempHome {
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(model, tg, interval));
    model.answers.lock().unwrap().push(answer.to_string());
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 42, 7, "tell me")).await, 200);
    home
}

fn answer_words(n: usize) -> String {
    (0..n).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn a_streamed_answer_grows_in_throttled_edits_and_ends_whole() {
    let model = SseModel::start(6, 40).await;
    let tg = StreamTelegram::start(false).await;
    let answer = answer_words(40);
    let _home = one_turn("stream-edits", &model, &tg, 0.3, &answer).await;
    let req = model.requests.lock().unwrap()[0].clone();
    assert_eq!((req["stream"].clone(), req["stream_options"]["include_usage"].clone()), (json!(true), json!(true)));
    let calls = tg.calls();
    assert_eq!(tg.count("sendMessage"), 1, "{calls:#?}");
    let edits: Vec<&Call> = calls.iter().filter(|c| c.method == "editMessageText").collect();
    assert!(edits.len() >= 2, "at least two edits: {calls:#?}");
    assert!(calls[0].method == "sendMessage" && calls[0].text.ends_with(CURSOR), "the first message grows with the cursor");
    // Progress edits come no more often than edit_interval (the fake's receive times; slack
    // for scheduling). The final edit may follow the last progress edit sooner.
    let progress: Vec<&Call> = std::iter::once(&calls[0]).chain(edits.iter().copied().filter(|c| c.text.ends_with(CURSOR))).collect();
    for w in progress.windows(2) {
        let gap = w[1].at - w[0].at;
        assert!(gap >= Duration::from_millis(250), "edits {gap:?} apart: {progress:#?}");
    }
    assert_eq!(edits.last().unwrap().text, answer, "the final edit is the whole answer, no cursor");
    assert_eq!(tg.final_texts(), vec![answer]);
}

#[tokio::test]
async fn a_short_answer_is_one_message_and_no_edit() {
    let model = SseModel::start(3, 20).await;
    let tg = StreamTelegram::start(false).await;
    let _home = one_turn("stream-short", &model, &tg, 0.3, "Hi there.").await;
    let calls = tg.calls();
    assert_eq!((tg.count("sendMessage"), tg.count("editMessageText")), (1, 0), "{calls:#?}");
    assert_eq!(calls[0].text, "Hi there.");
}

#[tokio::test]
async fn a_long_answer_is_split_into_two_messages_the_second_complete() {
    let model = SseModel::start(400, 15).await;
    let tg = StreamTelegram::start(false).await;
    let lines: Vec<String> = (0..60).map(|i| format!("line {i:02} {}", "x".repeat(90))).collect();
    let answer = lines.join("\n");
    assert!(answer.len() > 4096 && answer.len() < 8000);
    let _home = one_turn("stream-long", &model, &tg, 0.2, &answer).await;
    let texts = tg.final_texts();
    assert_eq!(texts.len(), 2, "{:#?}", tg.calls());
    assert!(texts.iter().all(|t| t.encode_utf16().count() <= 4096 && !t.contains(CURSOR)));
    assert_eq!(texts.concat(), answer, "both messages together are the whole answer");
    assert!(texts[1].ends_with(lines.last().unwrap()), "the second message is complete");
}

#[tokio::test]
async fn a_failing_edit_falls_back_to_one_final_message_with_the_whole_answer() {
    let model = SseModel::start(6, 40).await;
    let tg = StreamTelegram::start(true).await;
    let answer = answer_words(30);
    let _home = one_turn("stream-fail", &model, &tg, 0.2, &answer).await;
    let calls = tg.calls();
    let sends: Vec<&Call> = calls.iter().filter(|c| c.method == "sendMessage").collect();
    assert_eq!(tg.count("editMessageText"), 1, "no edit after one failed: {calls:#?}");
    assert_eq!(sends.len(), 2, "the growing message and one final message: {calls:#?}");
    assert!(sends[0].text.ends_with(CURSOR));
    assert_eq!(sends[1].text, answer, "the fallback is the whole answer, once");
}

#[tokio::test]
async fn the_anthropic_stream_reaches_the_sink_through_the_port_after_a_retry() {
    use hermes_zero::clients::llm::anthropic::AnthropicLlm;
    use hermes_zero::config::models::{Endpoint, Wire};
    use hermes_zero::core::session::{Message, Role};
    use hermes_zero::ports::{ChatRequest, Llm};
    let fake = FakeAnthropic::start().await;
    let ep = Endpoint {
        provider: "anthropic",
        wire: Wire::AnthropicMessages,
        base_url: fake.url.clone(),
        model: "claude-test".into(),
        api_key: Some(secrecy::SecretString::from("k".to_string())),
        key_hint: "ANTHROPIC_API_KEY".into(),
        why: "test".into(),
        oauth_line: None,
    };
    let llm: Arc<dyn Llm> = Arc::new(AnthropicLlm::new(&ep, Duration::from_secs(10), 3, "5m"));
    fake.push(AReply::Status(529, Some(0)));
    fake.push(AReply::Text("Streamed through the port".into()));
    let req = ChatRequest { messages: vec![Message::text(Role::User, "hi", chrono::Utc::now())], tools: vec![], model: None, route: None };
    let mut pieces = Vec::new();
    let r = llm.complete_streamed(&req, &mut |t: &str| pieces.push(t.to_string())).await.unwrap();
    assert_eq!(r.content, "Streamed through the port");
    assert!(pieces.len() > 1 && pieces.concat() == r.content, "{pieces:?}");
    assert_eq!(fake.requests().len(), 2, "the overloaded answer came before any text: retried");
    assert!(fake.requests().iter().all(|s| s.body["stream"] == true));
}
