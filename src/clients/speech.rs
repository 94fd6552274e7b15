//! Text to speech, the adapters of the [`Speaker`] port (docs/tools.md#vision-and-speech), as
//! Hermes 0.19.0's `tools/tts_tool.py` calls its vendors: an OpenAI-compatible
//! `POST {base}/audio/speech` (`model`, `voice`, `input`, `response_format`, `speed`; bearer
//! key) and ElevenLabs' `POST {base}/v1/text-to-speech/{voice_id}?output_format=…`
//! (`text`, `model_id`; `xi-api-key`). Voice notes are asked for as Ogg/Opus, files as MP3.
//! An answer that is not audio (an error page, JSON) is a failure.

use crate::clients::{describe, http_client};
use crate::config::{Loaded, SpeechChoice, speech_choice};
use crate::ports::{Audio, Speaker, SpeechError};
use async_trait::async_trait;
use secrecy::ExposeSecret;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// One speech vendor, built once.
pub struct HttpSpeaker {
    http: reqwest::Client,
    c: SpeechChoice,
}

/// The speaker `tts.*` asks for, or `None` (the tool is not offered; `doctor` says why).
pub fn from_config(cfg: &Loaded) -> Option<Arc<dyn Speaker>> {
    let c = speech_choice(&cfg.settings.tts, &cfg.env).ok()?;
    Some(Arc::new(HttpSpeaker { http: http_client(Duration::from_secs(cfg.settings.model.timeout_seconds.max(30))), c }))
}

impl HttpSpeaker {
    fn fail(&self, why: impl std::fmt::Display) -> SpeechError {
        SpeechError(format!("TTS generation failed ({}): {why}", self.c.provider))
    }

    fn request(&self, text: &str, voice_note: bool) -> reqwest::RequestBuilder {
        let c = &self.c;
        if c.provider == "elevenlabs" {
            let format = if voice_note { "opus_48000_64" } else { "mp3_44100_128" };
            let voice: String = url::form_urlencoded::byte_serialize(c.voice.as_bytes()).collect();
            let url = format!("{}/v1/text-to-speech/{voice}?output_format={format}", c.base_url);
            self.http.post(url).header("xi-api-key", c.key.expose_secret()).json(&json!({"text": text, "model_id": c.model}))
        } else {
            let mut body =
                json!({"model": c.model, "voice": c.voice, "input": text, "response_format": if voice_note { "opus" } else { "mp3" }});
            if let Some(s) = c.speed {
                body["speed"] = json!(s);
            }
            self.http.post(format!("{}/audio/speech", c.base_url)).bearer_auth(c.key.expose_secret()).json(&body)
        }
    }
}

#[async_trait]
impl Speaker for HttpSpeaker {
    fn provider(&self) -> &str {
        self.c.provider
    }

    fn max_chars(&self) -> usize {
        self.c.max_chars
    }

    async fn speak(&self, text: &str, voice_note: bool) -> Result<Audio, SpeechError> {
        let resp = self.request(text, voice_note).send().await.map_err(|e| self.fail(describe(e)))?;
        let status = resp.status().as_u16();
        let kind = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        let bytes = resp.bytes().await.map_err(|e| self.fail(describe(e)))?;
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&bytes);
            let detail = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["detail"]["message"].as_str().or(v["detail"].as_str()).map(str::to_string))
                .unwrap_or_else(|| crate::clients::llm::retry::error_detail(&text));
            return Err(self.fail(format!("HTTP {status}: {detail}")));
        }
        if bytes.is_empty() || kind.starts_with("application/json") || kind.starts_with("text/") {
            return Err(self.fail(format!(
                "the answer is not audio ({} bytes of {})",
                bytes.len(),
                if kind.is_empty() { "no type" } else { &kind }
            )));
        }
        let (name, mime) = if voice_note { ("speech.ogg", "audio/ogg") } else { ("speech.mp3", "audio/mpeg") };
        Ok(Audio { bytes: bytes.to_vec(), name: name.into(), mime: mime.into() })
    }
}
