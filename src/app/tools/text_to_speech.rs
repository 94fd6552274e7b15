//! `text_to_speech` (Hermes' `tools/tts_tool.py`): the text goes to the configured speech
//! vendor (the [`Speaker`] port: `tts.provider` `openai` or `elevenlabs`) and the audio goes to
//! this chat — a voice note on Telegram and WhatsApp (asked for as Ogg/Opus), a file on Slack
//! and Discord. Offered in chats on a platform that can send audio, when a vendor is
//! configured; each call is spoken and sent at most once (the delivery ledger, as
//! `send_message`). A text over the vendor's limit (Hermes' per-provider caps) is refused
//! with the limit, where Hermes would cut it; a vendor failure (401, 429, not audio) is a
//! tool error.
//!
//! Must not know: the vendors' wire formats, the platforms' upload APIs.

use super::{Tool, ToolCtx, ToolError, ToolOutput, TurnKind, parse_args};
use crate::core::job::Occurrence;
use crate::ports::{Speaker, Target};
use async_trait::async_trait;
use chrono::DateTime;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The `text_to_speech` tool.
pub struct TextToSpeech {
    speaker: Option<Arc<dyn Speaker>>,
}

impl TextToSpeech {
    /// A `text_to_speech` on `speaker` (`None`: not offered).
    pub fn new(speaker: Option<Arc<dyn Speaker>>) -> Self {
        Self { speaker }
    }
}

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    text: String,
}

/// The chat the audio goes to: this turn's, when its platform can send audio.
fn target(ctx: &ToolCtx<'_>) -> Option<Target> {
    let o = ctx.origin.filter(|_| ctx.kind == TurnKind::Chat)?;
    let delivery = &ctx.app.inner.delivery;
    delivery.delivers_to(&o.platform).then(|| Target {
        platform: o.platform.clone(),
        chat_id: o.chat_id.clone(),
        thread_id: o.thread_id.clone(),
    })
}

#[async_trait]
impl Tool for TextToSpeech {
    fn name(&self) -> &str {
        "text_to_speech"
    }

    fn toolset(&self) -> &str {
        "tts"
    }

    fn description(&self) -> &str {
        "Convert text to speech audio and send it to this chat: a voice note on Telegram and WhatsApp, an audio file on \
Slack and Discord. Voice and provider are user-configured (tts.provider), not model-selected. Provider-specific \
character caps apply (OpenAI 4096, ElevenLabs 5k-40k depending on model); longer text is refused."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to convert to speech."}
            },
            "required": ["text"]
        })
    }

    fn offered(&self, ctx: &ToolCtx<'_>) -> bool {
        self.speaker.is_some() && target(ctx).is_some()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(120))
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let speaker = self.speaker.as_ref().ok_or_else(|| ToolError::Failed("No TTS provider is configured (tts.provider)".into()))?;
        let a: Args = parse_args(args)?;
        if a.text.trim().is_empty() {
            return Err(ToolError::BadArgs("Text is required".into()));
        }
        let (len, max) = (a.text.chars().count(), speaker.max_chars());
        if len > max {
            return Err(ToolError::BadArgs(format!(
                "The text is {len} characters; the {} TTS provider takes at most {max}. Shorten it or split it into several calls.",
                speaker.provider()
            )));
        }
        let target = target(ctx).ok_or_else(|| ToolError::Failed("There is no chat here to send the audio to".into()))?;
        // At most once per call, as `send_message`: a replayed call (a resumed turn) is not spoken again.
        let occ = Occurrence::new(&format!("tts~{}~{}", ctx.session_id, ctx.call_id.unwrap_or_default()), DateTime::UNIX_EPOCH);
        let key = format!("{}:{}", target.platform, target.chat_id);
        let store = &ctx.app.inner.store;
        match store.ledger_begin(&occ, &key, ctx.now()).await {
            Ok(true) => {}
            Ok(false) => return Ok(ToolOutput::Json(json!({"success": true, "skipped": true, "reason": "already_sent"}))),
            Err(e) => return Err(ToolError::Failed(format!("TTS not sent: the delivery ledger is unavailable ({e})"))),
        }
        let voice = ctx.app.inner.delivery.voice_notes(&target.platform);
        let sent = speak_and_send(ctx, speaker.as_ref(), &target, &a.text, voice).await;
        if let Err(e) = store.ledger_finish(&occ, &key, if sent.is_ok() { "sent" } else { "failed" }, ctx.now()).await {
            tracing::warn!(session_id = %ctx.session_id, error = %e, "could not update the delivery ledger");
        }
        let size = sent?;
        Ok(ToolOutput::Json(json!({
            "success": true,
            "provider": speaker.provider(),
            "voice_compatible": voice,
            "delivered": if voice { "voice note" } else { "audio file" },
            "bytes": size,
        })))
    }
}

/// Speaks `text` and sends the audio to `target`; the audio's size.
async fn speak_and_send(ctx: &ToolCtx<'_>, speaker: &dyn Speaker, target: &Target, text: &str, voice: bool) -> Result<usize, ToolError> {
    let audio = speaker.speak(text, voice).await.map_err(|e| ToolError::Failed(e.to_string()))?;
    ctx.app
        .inner
        .delivery
        .send_audio(target, &audio)
        .await
        .map_err(|e| ToolError::Failed(format!("The audio was made but could not be sent to {}: {e}", target.platform)))?;
    Ok(audio.bytes.len())
}
