//! Fakes for the media tools (tests/media_tools.rs): one chat-platform server that speaks the
//! four platforms' outbound APIs as they document them — Telegram (`sendMessage`, `sendVoice`
//! multipart, `getFile` and file downloads), Slack (`chat.postMessage` and the files upload v2
//! flow), the WhatsApp Cloud API (`/media` upload, `/messages`), Discord (`/channels/{id}/messages`
//! JSON or multipart, interaction follow-ups) — and serves test images; and one speech server
//! for OpenAI's `POST /v1/audio/speech` and ElevenLabs' `POST /v1/text-to-speech/{voice_id}`.
//! Every request is recorded raw (method, path, query, headers, body).

use super::spawn_server;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A tiny valid PNG (1×1).
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f,
    0x15, 0xc4, 0x89, 0, 0, 0, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0, 0x05, 0, 0x01, 0xff, 0x89,
    0x99, 0x3d, 0x1d, 0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
/// The Ogg/Opus "audio" the speech fake answers a voice-note request with.
pub const OPUS: &[u8] = b"OggS\x00\x02fake-opus-voice";
/// The MP3 "audio" the speech fake answers a file request with.
pub const MP3: &[u8] = b"ID3\x04\x00fake-mp3-audio";

/// One recorded request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).to_string()
    }
    pub fn has(&self, needle: &[u8]) -> bool {
        self.body.windows(needle.len()).any(|w| w == needle)
    }
}

async fn record(seen: &Mutex<Vec<Seen>>, req: Request) -> Seen {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20).await.unwrap_or_default().to_vec();
    let s = Seen {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
        body,
    };
    seen.lock().unwrap().push(s.clone());
    s
}

/// Waits (bounded) until `seen` holds a request whose path ends with `suffix`.
async fn wait_path(seen: &Mutex<Vec<Seen>>, suffix: &str, secs: u64) -> Option<Seen> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = seen.lock().unwrap().iter().find(|s| s.path.ends_with(suffix)).cloned() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Default)]
struct ChatState {
    url: String,
    seen: Vec<Seen>,
}

/// The four platforms' outbound APIs on one server (Slack under `/api`).
#[derive(Clone)]
pub struct FakeChat {
    pub url: String,
    state: Arc<Mutex<ChatState>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeChat {
    pub async fn start() -> Self {
        let state: Arc<Mutex<ChatState>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let router = axum::Router::new().fallback(chat_handler).with_state((state.clone(), seen.clone()));
        let url = spawn_server(router).await;
        state.lock().unwrap().url = url.clone();
        Self { url, state, seen }
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    /// The recorded requests whose path ends with `suffix`.
    pub fn at(&self, suffix: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.path.ends_with(suffix)).collect()
    }
    pub async fn wait(&self, suffix: &str, secs: u64) -> Option<Seen> {
        wait_path(&self.seen, suffix, secs).await
    }
    /// Telegram `sendMessage` texts, in order.
    pub fn telegram_texts(&self) -> Vec<String> {
        self.at("/sendMessage").iter().map(|s| s.json()["text"].as_str().unwrap_or("").to_string()).collect()
    }
}

/// A fake's state and its record of requests.
type Shared<T> = (Arc<Mutex<T>>, Arc<Mutex<Vec<Seen>>>);

async fn chat_handler(State((state, seen)): State<Shared<ChatState>>, req: Request) -> Response {
    let s = record(&seen, req).await;
    let url = state.lock().unwrap().url.clone();
    let p = s.path.as_str();
    let ok = |v: Value| axum::Json(v).into_response();
    if p.starts_with("/img/") {
        return ([("content-type", "image/png")], PNG.to_vec()).into_response();
    }
    if p.starts_with("/file/") {
        return PNG.to_vec().into_response();
    }
    if p.ends_with("/getFile") {
        let id = s.json()["file_id"].as_str().unwrap_or("").to_string();
        return ok(json!({"ok": true, "result": {"file_id": id, "file_size": PNG.len(), "file_path": format!("photos/{id}.png")}}));
    }
    if p.ends_with("/sendMessage") || p.ends_with("/sendVoice") {
        return ok(json!({"ok": true, "result": {"message_id": 7}}));
    }
    if p == "/api/files.getUploadURLExternal" {
        return ok(json!({"ok": true, "upload_url": format!("{url}/upload/F123"), "file_id": "F123"}));
    }
    if p.starts_with("/upload/") {
        return (StatusCode::OK, format!("OK - {}", s.body.len())).into_response();
    }
    if p.starts_with("/api/") {
        return ok(json!({"ok": true, "ts": "1700000000.000200", "files": [{"id": "F123"}]}));
    }
    if p.ends_with("/media") {
        return ok(json!({"id": "MEDIA-1"}));
    }
    if p.ends_with("/messages") && p.starts_with("/v") {
        return ok(json!({"messaging_product": "whatsapp", "messages": [{"id": "wamid.1"}]}));
    }
    if p.starts_with("/channels/") {
        return ok(json!({"id": "m1"}));
    }
    if p.starts_with("/webhooks/") {
        return StatusCode::NO_CONTENT.into_response();
    }
    StatusCode::NOT_FOUND.into_response()
}

/// What the speech fake answers next.
#[derive(Clone, Debug)]
pub enum SpeechReply {
    /// An error status with the vendor's error body.
    Status(u16),
    /// 200 with an HTML page instead of audio.
    Garbage,
}

#[derive(Default)]
struct SpeechState {
    script: VecDeque<SpeechReply>,
}

/// OpenAI's `/v1/audio/speech` and ElevenLabs' `/v1/text-to-speech/{voice_id}`: audio in the
/// format asked for (Ogg/Opus or MP3), or the scripted failure.
#[derive(Clone)]
pub struct FakeSpeech {
    pub url: String,
    state: Arc<Mutex<SpeechState>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeSpeech {
    pub async fn start() -> Self {
        let state: Arc<Mutex<SpeechState>> = Arc::default();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let router = axum::Router::new().fallback(speech_handler).with_state((state.clone(), seen.clone()));
        Self { url: spawn_server(router).await, state, seen }
    }
    pub fn push(&self, r: SpeechReply) {
        self.state.lock().unwrap().script.push_back(r);
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn speech_handler(State((state, seen)): State<Shared<SpeechState>>, req: Request) -> Response {
    let s = record(&seen, req).await;
    let openai = s.path == "/v1/audio/speech";
    if !openai && !s.path.starts_with("/v1/text-to-speech/") {
        return StatusCode::NOT_FOUND.into_response();
    }
    match state.lock().unwrap().script.pop_front() {
        Some(SpeechReply::Status(code)) => {
            let body = if openai {
                json!({"error": {"message": format!("fake speech failure {code}"), "type": "invalid_request_error"}})
            } else {
                json!({"detail": {"status": "fake_failure", "message": format!("fake speech failure {code}")}})
            };
            return (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response();
        }
        Some(SpeechReply::Garbage) => return ([("content-type", "text/html")], "<html>oops</html>").into_response(),
        None => {}
    }
    let opus = if openai { s.json()["response_format"] == "opus" } else { s.query.contains("output_format=opus") };
    let (kind, bytes) = if opus { ("audio/ogg", OPUS) } else { ("audio/mpeg", MP3) };
    ([("content-type", kind)], Bytes::from_static(bytes)).into_response()
}
