//! Black-box tests of photos, voice notes and files (docs/design.md#media): the real `serve`
//! binary, a fake Telegram Bot API (sendMessage, getFile, file downloads) and a fake
//! OpenAI-compatible server (chat completions and `/audio/transcriptions`) that records what
//! it received.

#![allow(clippy::unwrap_used)]

mod common;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use common::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A JPEG-looking photo (the bytes the model must get back).
const PHOTO: &[u8] = &[0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x02, 0x03, 0xfe, 0xff];
const VOICE: &[u8] = &[b'O', b'g', b'g', b'S', 0x00, 0x02, 0x00, 0xff, 0x7f, 0x10];

#[derive(Default)]
struct TgState {
    sent: Vec<Value>,
    get_file: Vec<String>,
    downloads: Vec<String>,
    files: HashMap<String, Vec<u8>>,
}

type Tg = Arc<Mutex<TgState>>;

/// Fake Telegram: `sendMessage`, `getFile` and `/file/bot<token>/<path>` over `files`.
async fn fake_telegram(files: &[(&str, &[u8])]) -> (String, Tg) {
    let st: Tg = Arc::default();
    st.lock().unwrap().files = files.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect();
    async fn send(State(st): State<Tg>, Json(b): Json<Value>) -> Json<Value> {
        st.lock().unwrap().sent.push(b);
        Json(json!({"ok": true, "result": {"message_id": 7}}))
    }
    async fn get_file(State(st): State<Tg>, Path(bot): Path<String>, Json(b): Json<Value>) -> Response {
        assert_eq!(bot, "bot123:abc");
        let id = b["file_id"].as_str().unwrap_or_default().to_string();
        let mut g = st.lock().unwrap();
        g.get_file.push(id.clone());
        match g.files.get(&id) {
            Some(bytes) => {
                Json(json!({"ok": true, "result": {"file_id": id, "file_size": bytes.len(), "file_path": format!("media/{id}.bin")}}))
                    .into_response()
            }
            None => (StatusCode::BAD_REQUEST, Json(json!({"ok": false, "description": "Bad Request: invalid file_id"}))).into_response(),
        }
    }
    async fn download(State(st): State<Tg>, Path((bot, path)): Path<(String, String)>) -> Response {
        assert_eq!(bot, "bot123:abc");
        let mut g = st.lock().unwrap();
        g.downloads.push(path.clone());
        let id = path.trim_start_matches("media/").trim_end_matches(".bin");
        match g.files.get(id) {
            Some(b) => b.clone().into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    }
    let router = axum::Router::new()
        .route("/{bot}/sendMessage", post(send))
        .route("/{bot}/getFile", post(get_file))
        .route("/file/{bot}/{*path}", get(download))
        .with_state(st.clone());
    (spawn_server(router).await, st)
}

#[derive(Default)]
struct AiState {
    chats: Vec<Value>,
    /// (content type, authorization, raw body) of each transcription request.
    stt: Vec<(String, String, Vec<u8>)>,
    delay_ms: u64,
}

type Ai = Arc<Mutex<AiState>>;

/// Fake OpenAI-compatible server: chat completions answer `ok`, transcriptions answer a fixed text.
async fn fake_openai() -> (String, Ai) {
    let st: Ai = Arc::default();
    async fn chat(State(st): State<Ai>, Json(b): Json<Value>) -> Json<Value> {
        let delay = {
            let mut g = st.lock().unwrap();
            g.chats.push(b);
            g.delay_ms
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        Json(
            json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        )
    }
    async fn transcribe(State(st): State<Ai>, headers: HeaderMap, body: Bytes) -> Json<Value> {
        let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        st.lock().unwrap().stt.push((h("content-type"), h("authorization"), body.to_vec()));
        Json(json!({"text": "remind me to buy milk"}))
    }
    let router = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/audio/transcriptions", post(transcribe))
        .with_state(st.clone());
    (format!("{}/v1", spawn_server(router).await), st)
}

struct Setup {
    gw: Gateway,
    tg: Tg,
    ai: Ai,
    _home: TempHome,
}

async fn setup(tag: &str, vision: bool, files: &[(&str, &[u8])]) -> Setup {
    let (tg_url, tg) = fake_telegram(files).await;
    let (ai_url, ai) = fake_openai().await;
    let home = TempHome::new(tag);
    home.write(
        "config.yaml",
        &format!(
            "model:\n  provider: openai\n  base_url: {ai_url}\n  name: fake-model\n  timeout_seconds: 10\n  supports_vision: {vision}\n\
             platforms:\n  telegram:\n    api_base: {tg_url}\n    allowed_users: ['42']\n\
             stt:\n  provider: openai\n  openai:\n    base_url: {ai_url}\n"
        ),
    );
    let gw = Gateway::start(home.path(), &[("VOICE_TOOLS_OPENAI_KEY", "stt-key-9")]);
    Setup { gw, tg, ai, _home: home }
}

/// A Telegram update from user 42 with the given message fields.
fn update(update_id: i64, fields: Value) -> Value {
    let mut m = json!({"message_id": update_id, "date": 0, "from": {"id": 42, "is_bot": false, "first_name": "Ann"}, "chat": {"id": 42, "type": "private"}});
    for (k, v) in fields.as_object().unwrap() {
        m[k] = v.clone();
    }
    json!({"update_id": update_id, "message": m})
}

fn last_user_msg(req: &Value) -> Value {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "user").unwrap().clone()
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn photo_sizes() -> Value {
    json!([
        {"file_id": "p_small", "file_unique_id": "s", "width": 90, "height": 90, "file_size": 10},
        {"file_id": "p_big", "file_unique_id": "b", "width": 800, "height": 800, "file_size": PHOTO.len()}
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_with_caption_reaches_a_vision_model_as_an_image_part() {
    let s = setup("media-vision", true, &[("p_big", PHOTO)]).await;
    let status = s.gw.telegram("tg-secret", update(1, json!({"photo": photo_sizes(), "caption": "what is this?"}))).await;
    assert_eq!(status, 200);
    let chats = s.ai.lock().unwrap().chats.clone();
    assert_eq!(chats.len(), 1);
    let content = last_user_msg(&chats[0])["content"].clone();
    let parts = content.as_array().expect("a content array");
    assert_eq!(parts[0]["type"], "text");
    assert!(parts[0]["text"].as_str().unwrap().contains("what is this?"), "{content}");
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    let b64 = url.strip_prefix("data:image/jpeg;base64,").expect("a JPEG data URL");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(b64).unwrap(), PHOTO);
    assert_eq!(s.tg.lock().unwrap().get_file, vec!["p_big"], "the largest size within the cap");
    assert!(s.tg.lock().unwrap().sent.iter().any(|m| m["text"] == "ok"));
    // A later turn sees the caption and the marker only, never the image again.
    assert_eq!(s.gw.telegram("tg-secret", update(2, json!({"text": "and now?"}))).await, 200);
    let chats = s.ai.lock().unwrap().chats.clone();
    let history = chats[1]["messages"].as_array().unwrap();
    let first = history.iter().find(|m| m["role"] == "user").unwrap();
    assert_eq!(first["content"], "[photo] what is this?");
    assert_eq!(s.tg.lock().unwrap().get_file.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_alone_without_vision_gives_the_model_a_note() {
    let s = setup("media-novision", false, &[("p_big", PHOTO)]).await;
    assert_eq!(s.gw.telegram("tg-secret", update(1, json!({"photo": photo_sizes(), "caption": "look"}))).await, 200);
    assert_eq!(s.gw.telegram("tg-secret", update(2, json!({"photo": photo_sizes()}))).await, 200);
    let chats = s.ai.lock().unwrap().chats.clone();
    assert_eq!(chats.len(), 2, "a photo with no caption is still a message");
    let text = last_user_msg(&chats[0])["content"].as_str().unwrap().to_string();
    assert!(text.starts_with("look") && text.contains("cannot see images"), "{text}");
    assert!(last_user_msg(&chats[1])["content"].as_str().unwrap().contains("cannot see images"));
    assert!(s.tg.lock().unwrap().get_file.is_empty(), "nothing downloaded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_transcribed_and_the_transcript_is_the_message() {
    let s = setup("media-voice", false, &[("v1", VOICE)]).await;
    let voice =
        json!({"voice": {"file_id": "v1", "file_unique_id": "u", "duration": 2, "mime_type": "audio/ogg", "file_size": VOICE.len()}});
    assert_eq!(s.gw.telegram("tg-secret", update(1, voice)).await, 200);
    let (ctype, auth, body) = s.ai.lock().unwrap().stt[0].clone();
    assert!(ctype.starts_with("multipart/form-data; boundary="), "{ctype}");
    assert_eq!(auth, "Bearer stt-key-9");
    assert!(find(&body, b"name=\"model\"\r\n\r\nwhisper-1\r\n"));
    assert!(find(&body, b"filename=\"audio.ogg\""));
    assert!(find(&body, VOICE), "the file bytes as downloaded");
    let chats = s.ai.lock().unwrap().chats.clone();
    assert_eq!(last_user_msg(&chats[0])["content"], "[voice] remind me to buy milk");
    let (_, list) = s.gw.get("/api/sessions").await;
    let id = list["sessions"][0]["session_id"].as_str().unwrap().to_string();
    let (_, show) = s.gw.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(user_texts(&show), vec!["[voice] remind me to buy milk"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_text_document_is_inlined() {
    let s = setup("media-doc", false, &[("d1", b"line one\nline two\n")]).await;
    let doc = json!({"document": {"file_id": "d1", "file_unique_id": "u", "file_name": "notes.txt", "mime_type": "text/plain", "file_size": 18}, "caption": "summarize"});
    assert_eq!(s.gw.telegram("tg-secret", update(1, doc)).await, 200);
    let chats = s.ai.lock().unwrap().chats.clone();
    assert_eq!(last_user_msg(&chats[0])["content"], "summarize\n\n[file: notes.txt]\n```\nline one\nline two\n```");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_file_gets_one_line_and_no_model_call() {
    let s = setup("media-xyz", false, &[("x1", b"\0\x01")]).await;
    let doc = json!({"document": {"file_id": "x1", "file_unique_id": "u", "file_name": "model.xyz", "mime_type": "application/octet-stream", "file_size": 2}});
    assert_eq!(s.gw.telegram("tg-secret", update(1, doc)).await, 200);
    let sent = s.tg.lock().unwrap().sent.clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["text"], "I can't read .xyz files yet.");
    assert_eq!(sent[0]["chat_id"], "42");
    assert!(s.ai.lock().unwrap().chats.is_empty(), "no model call");
    assert!(s.tg.lock().unwrap().get_file.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_photo_gets_a_clear_reply_and_no_download() {
    let s = setup("media-big", true, &[("huge", PHOTO)]).await;
    let photo =
        json!({"photo": [{"file_id": "huge", "file_unique_id": "h", "width": 9000, "height": 9000, "file_size": 30 * 1024 * 1024}]});
    assert_eq!(s.gw.telegram("tg-secret", update(1, photo)).await, 200);
    let sent = s.tg.lock().unwrap().sent.clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["text"], "That photo is 30 MB; I can read photos up to 10 MB.");
    assert!(s.tg.lock().unwrap().get_file.is_empty() && s.tg.lock().unwrap().downloads.is_empty(), "nothing fetched");
    assert!(s.ai.lock().unwrap().chats.is_empty(), "no model call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_sent_while_a_turn_runs_keeps_its_image_through_the_pending_slot() {
    let s = setup("media-busy", true, &[("p_big", PHOTO)]).await;
    s.ai.lock().unwrap().delay_ms = 1500;
    s.gw.telegram_in_background(update(1, json!({"text": "start"})));
    assert!(wait_until(10, || s.ai.lock().unwrap().chats.len() == 1).await);
    s.ai.lock().unwrap().delay_ms = 0;
    assert_eq!(s.gw.telegram("tg-secret", update(2, json!({"photo": photo_sizes(), "caption": "this one"}))).await, 200);
    let has_image = |c: &Value| last_user_msg(c)["content"].as_array().is_some_and(|p| p.iter().any(|x| x["type"] == "image_url"));
    assert!(wait_until(15, || s.ai.lock().unwrap().chats.iter().any(has_image)).await, "the queued photo reached the model");
}
