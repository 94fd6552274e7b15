//! Speech to text over the OpenAI-compatible `POST {base}/audio/transcriptions` (multipart:
//! `file`, `model`), the adapter of the [`Transcriber`] port (docs/design.md#media). Base,
//! model and key follow Hermes' `stt` section and variables.

use crate::clients::{describe, http_client};
use crate::config::Loaded;
use crate::ports::{Audio, NoStt, SttError, Transcriber};
use async_trait::async_trait;
use reqwest::multipart::{Form, Part};
use secrecy::{ExposeSecret, SecretString};
use std::sync::Arc;
use std::time::Duration;

/// Hermes' default speech-to-text base URL.
pub const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// The OpenAI-compatible transcription client, built once.
pub struct OpenAiStt {
    http: reqwest::Client,
    url: String,
    model: String,
    key: Option<SecretString>,
}

impl OpenAiStt {
    /// Client for `base` (e.g. `https://api.openai.com/v1`) with `model`; `key` is sent as a
    /// bearer token when present (a local server may need none).
    pub fn new(base: &str, model: &str, key: Option<SecretString>, timeout: Duration) -> Self {
        Self { http: http_client(timeout), url: format!("{}/audio/transcriptions", base.trim_end_matches('/')), model: model.into(), key }
    }
}

/// The transcriber the settings ask for: the OpenAI-compatible client, or one that says why
/// voice notes are not transcribed (`stt.enabled: false`, another provider, no key).
pub fn from_config(cfg: &Loaded) -> Arc<dyn Transcriber> {
    let stt = &cfg.settings.stt;
    if !stt.enabled {
        return Arc::new(NoStt("stt.enabled is false".into()));
    }
    let provider = stt.provider.trim();
    if !provider.is_empty() && provider != "openai" {
        return Arc::new(NoStt(format!("stt.provider `{provider}` is not supported here (use `openai`, any OpenAI-compatible server)")));
    }
    // Hermes' order: the voice tools' own key first, then the general OpenAI key.
    let key = cfg.env.secret("VOICE_TOOLS_OPENAI_KEY").or_else(|| cfg.env.secret("OPENAI_API_KEY"));
    let base = stt.base_url();
    if key.is_none() && base.trim_end_matches('/') == DEFAULT_BASE {
        return Arc::new(NoStt("set OPENAI_API_KEY (or VOICE_TOOLS_OPENAI_KEY)".into()));
    }
    Arc::new(OpenAiStt::new(base, stt.model(), key, Duration::from_secs(cfg.settings.model.timeout_seconds)))
}

#[async_trait]
impl Transcriber for OpenAiStt {
    async fn transcribe(&self, audio: Audio) -> Result<String, SttError> {
        let file = Part::bytes(audio.bytes).file_name(audio.name).mime_str(&audio.mime).map_err(|e| SttError::Failed(describe(e)))?;
        let form = Form::new().part("file", file).text("model", self.model.clone());
        let mut rq = self.http.post(&self.url).multipart(form);
        if let Some(k) = &self.key {
            rq = rq.bearer_auth(k.expose_secret());
        }
        let resp = rq.send().await.map_err(|e| SttError::Failed(describe(e)))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|e| SttError::Failed(describe(e)))?;
        if !(200..300).contains(&status) {
            let detail = crate::clients::llm::retry::error_detail(&text);
            return Err(SttError::Failed(format!("HTTP {status}: {detail}")));
        }
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| SttError::Failed(format!("answer not JSON: {e}")))?;
        v["text"].as_str().map(|t| t.trim().to_string()).ok_or_else(|| SttError::Failed("answer has no `text`".into()))
    }
}

#[cfg(test)]
#[path = "stt_tests.rs"]
mod tests;
