//! The speech-to-text port: one voice note or audio file in, its transcript out
//! (docs/design.md#media). Adapters live in `clients/stt.rs`.

use async_trait::async_trait;

/// One audio file to transcribe.
#[derive(Debug, Clone)]
pub struct Audio {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// File name sent with the upload (the service reads the format from its extension).
    pub name: String,
    /// MIME type.
    pub mime: String,
}

/// Transcription failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum SttError {
    /// No speech-to-text is configured (the reason names what to set).
    #[error("voice notes are not transcribed here: {0}")]
    NotConfigured(String),
    /// The service failed or could not be reached.
    #[error("transcription failed: {0}")]
    Failed(String),
}

/// A speech-to-text service.
#[async_trait]
pub trait Transcriber: Send + Sync {
    /// The transcript of `audio`.
    async fn transcribe(&self, audio: Audio) -> Result<String, SttError>;
}

/// The transcriber of a process without speech-to-text: always [`SttError::NotConfigured`].
#[derive(Debug, Clone)]
pub struct NoStt(pub String);

#[async_trait]
impl Transcriber for NoStt {
    async fn transcribe(&self, _audio: Audio) -> Result<String, SttError> {
        Err(SttError::NotConfigured(self.0.clone()))
    }
}
