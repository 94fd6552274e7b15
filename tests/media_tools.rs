//! Black-box tests of `vision_analyze`, `text_to_speech` and Hermes' toolsets: the real
//! `serve` binary, a fake main model and a fake vision model (OpenAI chat completions with
//! image parts), a fake speech vendor (OpenAI `/audio/speech`, ElevenLabs
//! `/v1/text-to-speech/{voice_id}`, driven once by the official `openai` SDK), and one fake of
//! the four chat platforms' outbound APIs that records voice notes and file uploads.

#![allow(clippy::unwrap_used)]

mod common;

use base64::Engine;
use common::media_fakes::{FakeChat, FakeSpeech, MP3, OPUS, PNG, SpeechReply};
use common::*;
use ed25519_dalek::{Signer, SigningKey};
use ring::hmac;
use serde_json::{Value, json};

const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const WA_SECRET: &str = "wa-app-secret";
const SEED: [u8; 32] = [0x11; 32];

struct Setup {
    llm: FakeLlm,
    vision: FakeLlm,
    speech: FakeSpeech,
    chat: FakeChat,
    gw: Gateway,
    _home: TempHome,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// A gateway whose platforms all point at one [`FakeChat`], with `extra` config lines.
async fn setup(tag: &str, extra: &str, env: &[(&str, &str)]) -> Setup {
    let (llm, vision, speech, chat) = (FakeLlm::start().await, FakeLlm::start().await, FakeSpeech::start().await, FakeChat::start().await);
    let home = TempHome::new(tag);
    let u = &chat.url;
    let platforms = format!(
        "platforms:\n  telegram: {{api_base: '{u}', allowed_users: ['42']}}\n  slack: {{api_base: '{u}/api'}}\n  whatsapp: {{api_base: '{u}'}}\n  discord: {{api_base: '{u}'}}\n"
    );
    let extra = extra.replace("{vision}", &vision.url).replace("{speech}", &speech.url);
    home.write("config.yaml", &format!("{}{platforms}agent: {{api_max_retries: 0}}\n{extra}", config(Some(&llm), None, "")));
    let public = hex(&SigningKey::from_bytes(&SEED).verifying_key().to_bytes());
    let mut all = vec![
        ("SLACK_SIGNING_SECRET", SLACK_SECRET),
        ("SLACK_BOT_TOKEN", "xoxb-t"),
        ("SLACK_ALLOWED_USERS", "U1"),
        ("WHATSAPP_CLOUD_APP_SECRET", WA_SECRET),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "1055"),
        ("WHATSAPP_CLOUD_ALLOWED_USERS", "15551234567"),
        ("DISCORD_PUBLIC_KEY", public.as_str()),
        ("DISCORD_BOT_TOKEN", "dbot"),
        ("DISCORD_ALLOWED_USERS", "42"),
        ("OPENAI_API_KEY", "sk-speech"),
        ("ELEVENLABS_API_KEY", "el-key"),
    ];
    all.extend_from_slice(env);
    let gw = Gateway::start(home.path(), &all);
    Setup { llm, vision, speech, chat, gw, _home: home }
}

const VISION: &str =
    "auxiliary:\n  vision: {base_url: '{vision}', model: vis-model, api_key: vis-key}\ntools: {web: {allow_private: true}}\n";
const OPENAI_TTS: &str = "tts:\n  provider: openai\n  openai: {base_url: '{speech}/v1', voice: nova}\n";

fn tool_results(req: &Value) -> Vec<String> {
    req["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

fn offered(req: &Value) -> Vec<String> {
    req["tools"].as_array().map(|t| t.iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

fn image_of(req: &Value) -> Vec<u8> {
    let parts = req["messages"][0]["content"].as_array().expect("content parts").clone();
    let url = parts.iter().find(|p| p["type"] == "image_url").unwrap()["image_url"]["url"].as_str().unwrap().to_string();
    let b64 = url.strip_prefix("data:image/png;base64,").expect("a PNG data URL");
    base64::engine::general_purpose::STANDARD.decode(b64).unwrap()
}

fn tg_photo(update_id: i64, caption: &str) -> Value {
    json!({"update_id": update_id, "message": {"message_id": update_id, "date": 0, "from": {"id": 42, "is_bot": false, "first_name": "Ann"},
        "chat": {"id": 42, "type": "private"}, "caption": caption,
        "photo": [{"file_id": "ph1", "file_unique_id": "u1", "width": 1, "height": 1, "file_size": PNG.len()}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vision_analyzes_an_image_url_through_the_auxiliary_model() {
    let s = setup("mt-vision-url", VISION, &[]).await;
    s.llm.push(Reply::Tool {
        name: "vision_analyze".into(),
        args: json!({"image_url": format!("{}/img/cat.png", s.chat.url), "question": "what animal?"}),
    });
    s.llm.push(Reply::Text("It is a cat.".into()));
    s.vision.push(Reply::Text("A small cat sits on a mat.".into()));
    let (st, v) = s.gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "what is in this picture?"})).await;
    assert_eq!((st, v["reply"].as_str()), (200, Some("It is a cat.")), "{v}");
    assert!(offered(&s.llm.requests()[0]).contains(&"vision_analyze".to_string()));
    let vreq = &s.vision.requests()[0];
    assert_eq!(vreq["model"], "vis-model");
    assert_eq!(s.vision.auth()[0].as_deref(), Some("Bearer vis-key"));
    assert!(vreq["messages"][0]["content"][0]["text"].as_str().unwrap().ends_with("what animal?"), "{vreq}");
    assert_eq!(image_of(vreq), PNG);
    let result = &tool_results(&s.llm.requests()[1])[0];
    assert!(result.contains("\"success\":true") && result.contains("A small cat sits on a mat."), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vision_refuses_a_private_address_unless_allowed() {
    let s = setup("mt-vision-private", "auxiliary:\n  vision: {base_url: '{vision}', model: vis-model}\n", &[]).await;
    s.llm.push(Reply::Tool {
        name: "vision_analyze".into(),
        args: json!({"image_url": format!("{}/img/x.png", s.chat.url), "question": "?"}),
    });
    s.llm.push(Reply::Text("I could not look at it.".into()));
    let (_, v) = s.gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "look"})).await;
    assert_eq!(v["reply"], "I could not look at it.");
    assert!(tool_results(&s.llm.requests()[1])[0].contains("private or internal network address"));
    assert!(s.chat.at("/img/x.png").is_empty() && s.vision.calls() == 0, "nothing fetched, no vision call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vision_analyzes_a_photo_the_user_sent_on_telegram() {
    let s = setup("mt-vision-photo", VISION, &[]).await;
    s.llm.push(Reply::Tool { name: "vision_analyze".into(), args: json!({"image_url": "attachment:1", "question": "what is it?"}) });
    s.llm.push(Reply::Text("That is a tiny image.".into()));
    s.vision.push(Reply::Text("One transparent pixel.".into()));
    assert_eq!(s.gw.telegram("tg-secret", tg_photo(1, "what is this?")).await, 200);
    // The main model cannot see images: it gets the caption and a note naming the attachment.
    let first = s.llm.requests()[0].clone();
    let user = last_user(&first);
    assert!(user.contains("what is this?") && user.contains("attachment:1"), "{user}");
    assert_eq!(image_of(&s.vision.requests()[0]), PNG);
    assert!(tool_results(&s.llm.requests()[1])[0].contains("One transparent pixel."));
    assert_eq!(s.chat.telegram_texts(), ["That is a tiny image."]);
    assert_eq!(s.chat.at("/getFile").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_is_a_voice_note_on_telegram() {
    let s = setup("mt-tts-tg", OPENAI_TTS, &[]).await;
    let call = || Reply::ToolWithId { id: "call_tts_1".into(), name: "text_to_speech".into(), args: json!({"text": "Good morning, Ann."}) };
    s.llm.push(call());
    s.llm.push(Reply::Text("Sent you a voice note.".into()));
    assert_eq!(s.gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "say good morning")).await, 200);
    let req = &s.speech.seen()[0];
    assert_eq!((req.path.as_str(), req.header("authorization")), ("/v1/audio/speech", "Bearer sk-speech"));
    assert_eq!(req.json(), json!({"model": "gpt-4o-mini-tts", "voice": "nova", "input": "Good morning, Ann.", "response_format": "opus"}));
    let voice = s.chat.at("/bot123:abc/sendVoice");
    assert_eq!(voice.len(), 1);
    assert!(voice[0].header("content-type").starts_with("multipart/form-data"));
    assert!(voice[0].has(b"name=\"chat_id\"\r\n\r\n42") && voice[0].has(b"name=\"voice\"; filename=\"speech.ogg\""), "{}", voice[0].text());
    assert!(voice[0].has(OPUS));
    assert!(tool_results(&s.llm.requests()[1])[0].contains("voice note"));
    assert_eq!(s.chat.telegram_texts(), ["Sent you a voice note."]);
    // The very same call replayed (a resumed turn) is neither spoken nor sent again.
    s.llm.push(call());
    s.llm.push(Reply::Text("Already sent.".into()));
    assert_eq!(s.gw.telegram("tg-secret", tg_update(2, 2, 42, 42, "again?")).await, 200);
    assert!(tool_results(&s.llm.requests()[3]).last().unwrap().contains("already_sent"));
    assert_eq!((s.speech.seen().len(), s.chat.at("/sendVoice").len()), (1, 1));
}

fn wa_sign(body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, WA_SECRET.as_bytes()), body);
    format!("sha256={}", hex(tag.as_ref()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_is_a_voice_note_on_whatsapp_through_elevenlabs() {
    let s = setup("mt-tts-wa", "tts:\n  provider: elevenlabs\n  elevenlabs: {base_url: '{speech}'}\n", &[]).await;
    s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "Hello from the agent."}) });
    s.llm.push(Reply::Text("Voice note sent.".into()));
    let body = serde_json::to_vec(&json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550000000", "phone_number_id": "1055"},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": "15551234567"}],
        "messages": [{"from": "15551234567", "id": "wamid.in1", "timestamp": "1749416383", "type": "text", "text": {"body": "speak to me"}}]}}]}]}))
    .unwrap();
    let r =
        s.gw.http
            .post(format!("{}/webhooks/whatsapp", s.gw.base))
            .header("X-Hub-Signature-256", wa_sign(&body))
            .body(body)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let sent = s.chat.wait("/1055/messages", 20).await.expect("a WhatsApp message");
    let req = &s.speech.seen()[0];
    assert_eq!((req.path.as_str(), req.query.as_str()), ("/v1/text-to-speech/pNInz6obpgDQGcFmaJgB", "output_format=opus_48000_64"));
    assert_eq!(req.header("xi-api-key"), "el-key");
    assert_eq!(req.json(), json!({"text": "Hello from the agent.", "model_id": "eleven_multilingual_v2"}));
    let up = &s.chat.at("/v21.0/1055/media")[0];
    assert_eq!(up.header("authorization"), "Bearer wa-token");
    assert!(up.has(b"name=\"messaging_product\"\r\n\r\nwhatsapp") && up.has(b"filename=\"speech.ogg\"") && up.has(OPUS), "{}", up.text());
    assert_eq!(sent.json()["type"], "audio", "the audio goes first: {}", sent.text());
    assert_eq!((sent.json()["to"].as_str(), sent.json()["audio"]["id"].as_str()), (Some("15551234567"), Some("MEDIA-1")));
    assert!(wait_until(20, || s.chat.at("/1055/messages").len() == 2).await);
    assert_eq!(s.chat.at("/1055/messages")[1].json()["text"]["body"], "Voice note sent.");
}

fn slack_sign(ts: &str, body: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, SLACK_SECRET.as_bytes()), &[format!("v0:{ts}:").as_bytes(), body].concat());
    format!("v0={}", hex(tag.as_ref()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_is_a_file_in_the_thread_on_slack() {
    let s = setup("mt-tts-slack", OPENAI_TTS, &[]).await;
    s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "Status: all green."}) });
    s.llm.push(Reply::Text("Uploaded the audio.".into()));
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string();
    let body = serde_json::to_vec(&json!({"token": "x", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": "Ev1", "event_time": 1,
        "event": {"type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "read it out", "ts": "1700000000.000100", "client_msg_id": "c1"}}))
    .unwrap();
    let r =
        s.gw.http
            .post(format!("{}/webhooks/slack", s.gw.base))
            .header("X-Slack-Request-Timestamp", &ts)
            .header("X-Slack-Signature", slack_sign(&ts, &body))
            .body(body)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(s.chat.wait("/api/chat.postMessage", 20).await.is_some());
    assert_eq!(s.speech.seen()[0].json()["response_format"], "mp3", "a file, not a voice note");
    let get = &s.chat.at("/api/files.getUploadURLExternal")[0];
    assert_eq!(get.header("authorization"), "Bearer xoxb-t");
    assert_eq!(get.text(), format!("filename=speech.mp3&length={}", MP3.len()));
    let up = &s.chat.at("/upload/F123")[0];
    assert!(up.has(MP3) && up.header("authorization").is_empty(), "the signed upload URL gets no token");
    let done = s.chat.at("/api/files.completeUploadExternal")[0].json();
    assert_eq!(done, json!({"files": [{"id": "F123", "title": "speech.mp3"}], "channel_id": "D1", "thread_ts": "1700000000.000100"}));
    assert_eq!(s.chat.at("/api/chat.postMessage")[0].json()["text"], "Uploaded the audio.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tts_is_an_attachment_on_discord() {
    let s = setup("mt-tts-discord", OPENAI_TTS, &[]).await;
    s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "Ping pong."}) });
    s.llm.push(Reply::Text("Attached.".into()));
    let v = json!({"id": "i1", "type": 2, "application_id": "app1", "token": "tok-i1", "version": 1, "channel_id": "c100",
        "user": {"id": "42", "username": "ann"}, "data": {"id": "cmd1", "name": "ask", "type": 1, "options": [{"name": "text", "type": 3, "value": "say it"}]}});
    let body = serde_json::to_vec(&v).unwrap();
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string();
    let sig = hex(&SigningKey::from_bytes(&SEED).sign(&[ts.as_bytes(), &body].concat()).to_bytes());
    let r =
        s.gw.http
            .post(format!("{}/webhooks/discord", s.gw.base))
            .header("content-type", "application/json")
            .header("X-Signature-Ed25519", sig)
            .header("X-Signature-Timestamp", ts)
            .body(body)
            .send()
            .await
            .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(s.chat.wait("/webhooks/app1/tok-i1", 20).await.is_some(), "the reply follows up");
    let file = &s.chat.at("/channels/c100/messages")[0];
    assert_eq!(file.header("authorization"), "Bot dbot");
    assert!(file.header("content-type").starts_with("multipart/form-data"));
    assert!(file.has(b"name=\"payload_json\"") && file.has(b"\"filename\":\"speech.mp3\""), "{}", file.text());
    assert!(file.has(b"name=\"files[0]\"; filename=\"speech.mp3\"") && file.has(MP3), "{}", file.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_failures_and_long_texts_are_tool_errors_and_the_turn_ends_with_the_models_reply() {
    let extra = format!("{VISION}{OPENAI_TTS}").replace("voice: nova}", "voice: nova, max_text_length: 40}");
    let s = setup("mt-failures", &extra, &[]).await;
    for (i, failure) in [SpeechReply::Status(401), SpeechReply::Status(429), SpeechReply::Garbage].into_iter().enumerate() {
        s.speech.push(failure);
        s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "short text"}) });
        s.llm.push(Reply::Text(format!("sorry {i}")));
    }
    s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "x".repeat(41)}) });
    s.llm.push(Reply::Text("sorry 3".into()));
    for (i, failure) in [Reply::Status(401), Reply::Status(429), Reply::Garbage].into_iter().enumerate() {
        s.vision.push(failure);
        s.llm.push(Reply::Tool {
            name: "vision_analyze".into(),
            args: json!({"image_url": format!("{}/img/a.png", s.chat.url), "question": "?"}),
        });
        s.llm.push(Reply::Text(format!("sorry {}", i + 4)));
    }
    for i in 0..7 {
        assert_eq!(s.gw.telegram("tg-secret", tg_update(i + 1, i + 1, 42, 42, &format!("try {i}"))).await, 200);
    }
    let reqs = s.llm.requests();
    let errors: Vec<String> = (0..7).map(|i| tool_results(&reqs[2 * i + 1]).last().unwrap().clone()).collect();
    let wants = ["HTTP 401", "HTTP 429", "not audio", "at most 40", "401", "rate-limited", "not understood"];
    for (e, want) in errors.iter().zip(wants) {
        assert!(e.starts_with("{\"error\":") && e.contains(want), "{want}: {e}");
    }
    assert_eq!(s.speech.seen().len(), 3, "the long text never reached the vendor");
    assert!(s.chat.at("/sendVoice").is_empty(), "no audio went out");
    assert_eq!(s.chat.telegram_texts(), (0..7).map(|i| format!("sorry {i}")).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolsets_and_platform_toolsets_decide_the_offered_tools_and_status_lists_them() {
    let extra = format!("{VISION}{OPENAI_TTS}toolsets: [memory, vision]\nplatform_toolsets:\n  telegram: [tts, memory, terminal]\n");
    let s = setup("mt-toolsets", &extra, &[]).await;
    assert_eq!(s.gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "hi")).await, 200);
    assert_eq!(offered(&s.llm.requests()[0]), ["memory", "text_to_speech"]);
    let (_, _) = s.gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hi"})).await;
    assert_eq!(offered(&s.llm.requests()[1]), ["memory", "vision_analyze"], "the API follows `toolsets`");
    assert_eq!(s.gw.telegram("tg-secret", tg_update(2, 2, 42, 42, "/status")).await, 200);
    let status = s.chat.telegram_texts().last().unwrap().clone();
    assert!(status.contains("Tools: memory, text_to_speech"), "{status}");
    assert_eq!(s.llm.calls(), 2, "/status asks no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_toolsets_every_tool_is_offered_and_hermes_composites_mean_all() {
    let s = setup("mt-toolsets-all", &format!("{VISION}{OPENAI_TTS}platform_toolsets:\n  telegram: [hermes-telegram]\n"), &[]).await;
    assert_eq!(s.gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "hi")).await, 200);
    let (_, _) = s.gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hi"})).await;
    let (tg, api) = (offered(&s.llm.requests()[0]), offered(&s.llm.requests()[1]));
    assert!(
        tg.contains(&"text_to_speech".to_string()) && tg.contains(&"vision_analyze".to_string()) && tg.contains(&"memory".to_string()),
        "{tg:?}"
    );
    assert!(api.contains(&"vision_analyze".to_string()) && !api.contains(&"text_to_speech".to_string()), "no chat to speak to: {api:?}");
}

#[test]
fn doctor_lists_hermes_toolsets_it_does_not_have_as_ignored() {
    let home = TempHome::new("mt-doctor");
    home.write(
        "config.yaml",
        "toolsets: [hermes-cli]\nplatform_toolsets:\n  telegram: [web, terminal, file, browser]\n  discord: [code_execution, memory]\ntts: {provider: openai}\n",
    );
    let out = cli(home.path(), &["doctor"], &[("OPENAI_API_KEY", "k"), ("TELEGRAM_WEBHOOK_SECRET", "s")]);
    let text = stdout(&out);
    assert!(text.contains("toolsets: ignored code_execution, terminal, file, browser"), "{text}");
    assert!(text.contains("tts:      text_to_speech via openai gpt-4o-mini-tts at https://api.openai.com/v1"), "{text}");
    assert!(out.status.success() && !text.contains("problem:"), "ignored toolsets are no error: {text}\n{}", stderr(&out));
}

/// The Python of the SDK venv (`HZ_WEB_SDK_PY`, made by scripts/test.sh with `openai`).
fn sdk_python() -> Option<String> {
    match std::env::var("HZ_WEB_SDK_PY") {
        Ok(p) if !p.trim().is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("HZ_WEB_SDK_PY is not set under CI=true"),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_speaks_to_the_speech_fake_as_the_gateway_does() {
    let Some(python) = sdk_python() else {
        println!("SKIPPED: HZ_WEB_SDK_PY is not set (scripts/test.sh makes target/web-sdk-venv with the openai SDK)");
        return;
    };
    let s = setup("mt-sdk", OPENAI_TTS, &[]).await;
    let script = "import sys\nfrom openai import OpenAI\nc = OpenAI(api_key='sk-speech', base_url=sys.argv[1] + '/v1', max_retries=0)\n\
r = c.audio.speech.create(model='gpt-4o-mini-tts', voice='nova', input='Good morning, Ann.', response_format='opus')\n\
sys.stdout.buffer.write(r.content)\n";
    let url = s.speech.url.clone();
    let out = tokio::task::spawn_blocking(move || std::process::Command::new(python).arg("-c").arg(script).arg(url).output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, OPUS, "the SDK reads the fake's audio");
    s.llm.push(Reply::Tool { name: "text_to_speech".into(), args: json!({"text": "Good morning, Ann."}) });
    s.llm.push(Reply::Text("done".into()));
    assert_eq!(s.gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "speak")).await, 200);
    let seen = s.speech.seen();
    assert_eq!(seen.len(), 2);
    let (sdk, ours) = (&seen[0], &seen[1]);
    assert_eq!((sdk.method.as_str(), sdk.path.as_str()), (ours.method.as_str(), ours.path.as_str()));
    assert_eq!(sdk.header("authorization"), ours.header("authorization"));
    assert!(sdk.header("content-type").starts_with("application/json") && ours.header("content-type").starts_with("application/json"));
    assert_eq!(sdk.json(), ours.json(), "the same fields as the SDK sends");
}
