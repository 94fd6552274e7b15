//! Hermes' sections for the media tools and toolsets (docs/tools.md#vision-and-speech):
//! `auxiliary.vision` (the model `vision_analyze` asks, as `agent/auxiliary_client.py`
//! resolves it, with the `AUXILIARY_VISION_*` variables), `tts` (the `text_to_speech`
//! backend: `openai` or `elevenlabs`, with `tts_tool.py`'s defaults, limits and variables),
//! and `toolsets` / `platform_toolsets` (what a platform's turns are offered).
//!
//! Knows key and variable names; knows nothing of HTTP or the vendors' wire formats.

use super::Env;
use super::models::{Endpoint, ModelChain, Wire, lookup};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// Hermes' `auxiliary:` (only `vision` is read; the other tasks pass silently).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AuxiliarySettings {
    /// `auxiliary.vision`.
    pub vision: AuxTask,
}

/// One auxiliary task's model (`auxiliary.<task>`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AuxTask {
    /// Hermes' provider name; empty or `auto`: the main model when it has vision.
    pub provider: String,
    /// The model id (`auto` means none).
    pub model: String,
    /// A direct OpenAI-compatible endpoint (wins over `provider`).
    pub base_url: String,
    /// The key for `base_url` (else `key_env`, else `OPENAI_API_KEY`). Held as text only until
    /// the endpoint is resolved.
    pub api_key: String,
    /// The variable holding the key (Hermes reads `key_env` or `api_key_env`).
    pub key_env: String,
    /// Alias of `key_env`.
    pub api_key_env: String,
    /// Seconds one call may take (Hermes' default 120).
    pub timeout: Option<f64>,
}

/// The vision model `vision_analyze` asks, as Hermes' `_resolve_task_provider_model("vision")`
/// picks it: `auxiliary.vision.base_url` (or `AUXILIARY_VISION_BASE_URL`) is an
/// OpenAI-compatible endpoint keyed by `api_key`, `key_env`, `AUXILIARY_VISION_API_KEY`, else
/// `OPENAI_API_KEY`; a named `provider` uses its own URL and key variables; `auto` is the main
/// model when `model.supports_vision` (`Ok(None)` otherwise: the tool is not offered). An
/// error says why the configured vision model cannot be used.
pub fn vision_endpoint(aux: &AuxTask, chain: &ModelChain, main_has_vision: bool, env: &Env) -> Result<Option<Endpoint>, String> {
    let provider = pick(&aux.provider, "AUXILIARY_VISION_PROVIDER", env);
    let model = Some(pick(&aux.model, "AUXILIARY_VISION_MODEL", env)).filter(|m| !m.is_empty() && !m.eq_ignore_ascii_case("auto"));
    let base_url = pick(&aux.base_url, "AUXILIARY_VISION_BASE_URL", env).trim_end_matches('/');
    let provider = Some(provider).filter(|p| !p.is_empty() && !p.eq_ignore_ascii_case("auto"));
    if !base_url.is_empty() {
        let key_var = [&aux.key_env, &aux.api_key_env].into_iter().map(|s| s.trim()).find(|s| !s.is_empty());
        let key = Some(aux.api_key.trim())
            .filter(|k| !k.is_empty())
            .map(|k| (SecretString::from(k.to_string()), "auxiliary.vision.api_key".to_string()))
            .or_else(|| key_var.and_then(|v| env.secret(v).map(|k| (k, v.to_string()))))
            .or_else(|| env.secret("AUXILIARY_VISION_API_KEY").map(|k| (k, "AUXILIARY_VISION_API_KEY".into())))
            .or_else(|| env.secret("OPENAI_API_KEY").map(|k| (k, "OPENAI_API_KEY".into())));
        let wire = provider.and_then(lookup).map_or(Wire::OpenaiChat, |i| i.wire);
        let model = model.ok_or("auxiliary.vision.base_url needs auxiliary.vision.model (the model id to ask)")?;
        let (api_key, key_hint) = key.map_or((None, "none (a local endpoint)".to_string()), |(k, h)| (Some(k), h));
        return Ok(Some(Endpoint {
            provider: provider.and_then(lookup).map_or("custom", |i| i.name),
            wire: if matches!(wire, Wire::AnthropicMessages) { wire } else { Wire::OpenaiChat },
            base_url: base_url.to_string(),
            model: model.to_string(),
            api_key,
            key_hint,
            why: "auxiliary.vision.base_url".into(),
            oauth_line: None,
        }));
    }
    if let Some(p) = provider {
        let ep = super::models::resolve_route(chain, env, Some(p), None, model).map_err(|e| format!("auxiliary.vision: {e}"))?;
        return match ep.wire {
            Wire::Offline | Wire::OauthOnly => Err(format!("auxiliary.vision.provider `{p}` cannot analyze images here")),
            _ => Ok(Some(Endpoint { why: format!("auxiliary.vision.provider: {}", ep.provider), ..ep })),
        };
    }
    // `auto`: the main model, when it sees images (a vision model override names it).
    let main = &chain.primary;
    if !main_has_vision || matches!(main.wire, Wire::Offline | Wire::OauthOnly) {
        return Ok(None);
    }
    let model = model.map_or_else(|| main.model.clone(), str::to_string);
    Ok(Some(Endpoint { model, why: "the main model (model.supports_vision)".into(), ..main.clone() }))
}

/// A key's value, else its variable's (Hermes' `cli.py` bridges one to the other).
fn pick<'a>(value: &'a str, var: &str, env: &'a Env) -> &'a str {
    Some(value.trim()).filter(|s| !s.is_empty()).or_else(|| env.get(var).map(str::trim)).unwrap_or("")
}

/// Hermes' `tts:` block (the backends this gateway speaks; others' keys pass silently).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TtsSettings {
    /// `openai` or `elevenlabs` here (Hermes' default `edge` is a local library: not offered).
    pub provider: String,
    /// Default speed of every backend.
    pub speed: Option<f64>,
    /// `tts.openai`.
    pub openai: TtsOpenAi,
    /// `tts.elevenlabs`.
    pub elevenlabs: TtsElevenLabs,
}

/// `tts.openai` (any OpenAI-compatible `/audio/speech`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TtsOpenAi {
    /// Model (default `gpt-4o-mini-tts`).
    pub model: String,
    /// Voice (default `alloy`).
    pub voice: String,
    /// Base URL (default `https://api.openai.com/v1`).
    pub base_url: String,
    /// Playback speed, clamped to 0.25..=4.
    pub speed: Option<f64>,
    /// Characters one request may carry (default 4096).
    pub max_text_length: Option<i64>,
}

/// `tts.elevenlabs`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TtsElevenLabs {
    /// Voice id (default Adam, `pNInz6obpgDQGcFmaJgB`).
    pub voice_id: String,
    /// Model id (default `eleven_multilingual_v2`).
    pub model_id: String,
    /// API base (default `https://api.elevenlabs.io`; a hermes-zero key, for tests and proxies).
    pub base_url: String,
    /// Characters one request may carry (default: the model's, Hermes' table).
    pub max_text_length: Option<i64>,
}

/// The speech backend `tts.*` and the environment choose.
#[derive(Debug, Clone)]
pub struct SpeechChoice {
    /// `openai` or `elevenlabs`.
    pub provider: &'static str,
    /// `{base}/audio/speech` (OpenAI) or `{base}/v1/text-to-speech/{voice}` (ElevenLabs).
    pub base_url: String,
    /// Model id.
    pub model: String,
    /// Voice (OpenAI) or voice id (ElevenLabs).
    pub voice: String,
    /// Speed when not 1.0 (OpenAI only).
    pub speed: Option<f64>,
    /// The key.
    pub key: SecretString,
    /// The longest text one request may carry (characters).
    pub max_chars: usize,
}

/// ElevenLabs' per-model text caps (Hermes' `ELEVENLABS_MODEL_MAX_TEXT_LENGTH`).
fn elevenlabs_cap(model: &str) -> usize {
    match model {
        "eleven_v3" | "eleven_ttv_v3" => 5000,
        "eleven_flash_v2" => 30_000,
        "eleven_flash_v2_5" => 40_000,
        _ => 10_000,
    }
}

fn cap(over: Option<i64>, default: usize) -> usize {
    over.and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0).unwrap_or(default)
}

fn or<'a>(v: &'a str, default: &'a str) -> &'a str {
    Some(v.trim()).filter(|s| !s.is_empty()).unwrap_or(default)
}

/// The backend `text_to_speech` uses: `tts.provider` `openai` (key `VOICE_TOOLS_OPENAI_KEY`,
/// else `OPENAI_API_KEY`) or `elevenlabs` (`ELEVENLABS_API_KEY`); `Err` says why the tool is
/// not offered (another provider, no key).
pub fn speech_choice(tts: &TtsSettings, env: &Env) -> Result<SpeechChoice, String> {
    let provider = or(&tts.provider, "edge").to_ascii_lowercase();
    match provider.as_str() {
        "openai" => {
            let o = &tts.openai;
            let key = env
                .secret("VOICE_TOOLS_OPENAI_KEY")
                .or_else(|| env.secret("OPENAI_API_KEY"))
                .ok_or("tts.provider openai: set VOICE_TOOLS_OPENAI_KEY or OPENAI_API_KEY")?;
            let speed = o.speed.or(tts.speed).filter(|s| (*s - 1.0).abs() > f64::EPSILON).map(|s| s.clamp(0.25, 4.0));
            Ok(SpeechChoice {
                provider: "openai",
                base_url: or(&o.base_url, "https://api.openai.com/v1").trim_end_matches('/').to_string(),
                model: or(&o.model, "gpt-4o-mini-tts").to_string(),
                voice: or(&o.voice, "alloy").to_string(),
                speed,
                key,
                max_chars: cap(o.max_text_length, 4096),
            })
        }
        "elevenlabs" => {
            let e = &tts.elevenlabs;
            let key = env.secret("ELEVENLABS_API_KEY").ok_or("tts.provider elevenlabs: set ELEVENLABS_API_KEY")?;
            let model = or(&e.model_id, "eleven_multilingual_v2").to_string();
            Ok(SpeechChoice {
                provider: "elevenlabs",
                base_url: or(&e.base_url, "https://api.elevenlabs.io").trim_end_matches('/').to_string(),
                max_chars: cap(e.max_text_length, elevenlabs_cap(&model)),
                model,
                voice: or(&e.voice_id, "pNInz6obpgDQGcFmaJgB").to_string(),
                speed: None,
                key,
            })
        }
        other => Err(format!("tts.provider `{other}` is not supported here (use openai or elevenlabs)")),
    }
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
