use super::*;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use std::sync::Mutex;

/// What the fake received: content type, authorization and raw body.
type Seen = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

async fn fake(status: StatusCode, answer: &'static str) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let app = Router::new().route(
        "/v1/audio/transcriptions",
        post(move |headers: HeaderMap, body: Bytes| {
            let s = s.clone();
            async move {
                let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                s.lock().unwrap().push((h("content-type"), h("authorization"), body.to_vec()));
                (status, answer)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), seen)
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn audio() -> Audio {
    Audio { bytes: vec![0x4f, 0x67, 0x67, 0x53, 0x00, 0xff, 0x10], name: "voice.ogg".into(), mime: "audio/ogg".into() }
}

#[tokio::test]
async fn sends_a_multipart_form_with_the_file_bytes_and_the_model() {
    let (base, seen) = fake(StatusCode::OK, r#"{"text":" hello there "}"#).await;
    let stt = OpenAiStt::new(&base, "whisper-1", Some(SecretString::from("sk-test")), Duration::from_secs(5));
    assert_eq!(stt.transcribe(audio()).await.unwrap(), "hello there");
    let seen = seen.lock().unwrap();
    let (ctype, auth, body) = &seen[0];
    let boundary = ctype.strip_prefix("multipart/form-data; boundary=").expect("a multipart body");
    assert_eq!(auth, "Bearer sk-test");
    assert!(find(body, format!("--{boundary}").as_bytes()));
    assert!(find(body, b"name=\"model\"\r\n\r\nwhisper-1\r\n"), "model part");
    assert!(find(body, b"name=\"file\"; filename=\"voice.ogg\"\r\nContent-Type: audio/ogg\r\n\r\n"), "file part header");
    assert!(find(body, &[0x4f, 0x67, 0x67, 0x53, 0x00, 0xff, 0x10, b'\r', b'\n']), "file bytes as sent");
}

#[tokio::test]
async fn a_keyless_local_server_gets_no_authorization() {
    let (base, seen) = fake(StatusCode::OK, r#"{"text":"ok"}"#).await;
    let stt = OpenAiStt::new(&base, "m", None, Duration::from_secs(5));
    stt.transcribe(audio()).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0].1, "");
}

#[tokio::test]
async fn an_error_answer_is_a_failure_with_the_upstream_message() {
    let (base, _) = fake(StatusCode::BAD_REQUEST, r#"{"error":{"message":"Invalid file format."}}"#).await;
    let stt = OpenAiStt::new(&base, "whisper-1", None, Duration::from_secs(5));
    let e = stt.transcribe(audio()).await.unwrap_err().to_string();
    assert!(e.contains("HTTP 400") && e.contains("Invalid file format."), "{e}");
}

#[tokio::test]
async fn an_answer_without_text_is_a_failure() {
    let (base, _) = fake(StatusCode::OK, r#"{"nope":1}"#).await;
    let stt = OpenAiStt::new(&base, "whisper-1", None, Duration::from_secs(5));
    assert!(matches!(stt.transcribe(audio()).await, Err(SttError::Failed(_))));
}

fn loaded(yaml: &str, env: &[(&str, &str)]) -> Loaded {
    crate::test_support::TestApp::new("2026-01-01T00:00:00Z".parse().unwrap())
        .home("/nonexistent-home")
        .yaml(yaml)
        .env(crate::config::Env::from_pairs(env.iter().copied()))
        .loaded()
}

#[tokio::test]
async fn settings_choose_the_transcriber() {
    let no = |cfg: &Loaded| {
        let t = from_config(cfg);
        async move { t.transcribe(audio()).await.unwrap_err().to_string() }
    };
    assert!(no(&loaded("{}", &[])).await.contains("OPENAI_API_KEY"));
    assert!(no(&loaded("stt: {enabled: false}", &[("OPENAI_API_KEY", "k")])).await.contains("stt.enabled"));
    assert!(no(&loaded("stt: {provider: local}", &[("OPENAI_API_KEY", "k")])).await.contains("`local`"));
    let (base, seen) = fake(StatusCode::OK, r#"{"text":"hi"}"#).await;
    let yaml = format!("stt:\n  base_url: http://unused.invalid\n  openai: {{base_url: \"{base}\", model: whisper-large}}\n");
    let cfg = loaded(&yaml, &[("OPENAI_API_KEY", "k1"), ("VOICE_TOOLS_OPENAI_KEY", "k2")]);
    assert_eq!(from_config(&cfg).transcribe(audio()).await.unwrap(), "hi");
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].1, "Bearer k2", "Hermes' voice key wins");
    assert!(find(&seen[0].2, b"whisper-large"));
}
