//! The text-to-speech port: `text_to_speech`'s vendor (an OpenAI-compatible `/audio/speech`
//! or ElevenLabs, docs/tools.md#vision-and-speech), chosen at wiring time from Hermes' `tts.*`
//! keys. The adapters (`clients::speech`) own the endpoints, auth and audio formats. Knows no
//! HTTP library and no vendor.

use super::Audio;
use async_trait::async_trait;

/// A speech vendor call that failed; the text is what the model reads (`TTS generation
/// failed (openai): HTTP 401: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpeechError(pub String);

/// A text-to-speech vendor.
#[async_trait]
pub trait Speaker: Send + Sync {
    /// Hermes' provider name (`openai`, `elevenlabs`).
    fn provider(&self) -> &str;

    /// The longest text one request may carry, in characters (Hermes' per-provider caps or
    /// `tts.<provider>.max_text_length`).
    fn max_chars(&self) -> usize;

    /// `text` spoken: Ogg/Opus when `voice_note` (what Telegram and WhatsApp play as a voice
    /// note), else MP3.
    async fn speak(&self, text: &str, voice_note: bool) -> Result<Audio, SpeechError>;
}
