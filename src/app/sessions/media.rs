//! Files that come with a message (docs/design.md#media). Before the message is stored, voice
//! notes become their transcript, small text documents are inlined, and whatever cannot be
//! read gets one line back to the sender; a photo stays a reference. When a turn's prompt is
//! built, the photos of the messages it answers are fetched into that model call only.
//!
//! Fetches go through the delivery port (the platform's channel), speech to text through
//! the `Transcriber` port; image bytes are never stored.

use crate::app::App;
use crate::core::inbound::{Attachment, AttachmentKind, Inbound};
use crate::core::media;
use crate::core::session::{Image, Message, Role};
use crate::ports::{Audio, DeliveryError};
use base64::Engine;

/// What a message's files turned into.
#[derive(Default)]
struct Parts {
    voice: Vec<String>,
    documents: Vec<String>,
    notes: Vec<String>,
    photos: Vec<Attachment>,
    lines: Vec<String>,
}

impl App {
    /// Resolves `msg`'s attachments in place before it is stored: its text becomes the voice
    /// transcripts, the caption, the inlined documents and notes; only photo references for a
    /// vision model stay attached. Returns the one-line answers for the sender (oversized,
    /// unreadable or failed files), in order.
    pub(in crate::app) async fn prepare_media(&self, msg: &mut Inbound) -> Vec<String> {
        if msg.attachments.is_empty() {
            return Vec::new();
        }
        let platform = msg.origin.platform.clone();
        let vision = self.inner.cfg.settings.model.supports_vision;
        // Without a vision main model, `vision_analyze`'s own model can still look (on request).
        let by_tool = !vision && self.vision_tool_model();
        let mut p = Parts::default();
        for a in std::mem::take(&mut msg.attachments) {
            let fetched = match a.kind {
                AttachmentKind::Image | AttachmentKind::Audio => vision || by_tool || a.kind == AttachmentKind::Audio,
                AttachmentKind::Document => media::is_text(&a),
                AttachmentKind::Other => false,
            };
            if let (true, Some(max), Some(size)) = (fetched, media::cap(a.kind), a.size)
                && size > max
            {
                p.lines.push(media::too_large(&a, Some(size)));
                continue;
            }
            let done = match a.kind {
                AttachmentKind::Image if vision || by_tool => {
                    p.photos.push(a);
                    if by_tool {
                        p.notes.push(media::photo_for_tool(p.photos.len()));
                    }
                    Ok(())
                }
                AttachmentKind::Image => {
                    p.notes.push(media::PHOTO_OMITTED.to_string());
                    Ok(())
                }
                AttachmentKind::Audio => self.transcribe(&platform, &a).await.map(|t| p.voice.push(t)),
                AttachmentKind::Document if fetched => self.read_document(&platform, &a).await.map(|t| p.documents.push(t)),
                AttachmentKind::Document | AttachmentKind::Other => Err(media::cannot_read(&a)),
            };
            if let Err(line) = done {
                p.lines.push(line);
            }
        }
        let mut text = p.voice;
        text.push(std::mem::take(&mut msg.text));
        text.extend(p.documents);
        text.extend(p.notes);
        let body = media::join(&text);
        msg.text = if p.photos.is_empty() { body } else { format!("{} {body}", media::PHOTO_MARKER).trim_end().to_string() };
        msg.attachments = p.photos;
        p.lines
    }

    /// Whether `vision_analyze` has a model of its own (`auxiliary.vision.*`), so photos are
    /// kept for it when the main model cannot see them.
    fn vision_tool_model(&self) -> bool {
        let cfg = &self.inner.cfg;
        matches!(crate::config::vision_endpoint(&cfg.settings.auxiliary.vision, &cfg.model, false, &cfg.env), Ok(Some(_)))
    }

    /// The bytes of `a` within its kind's cap, or the line that tells the sender why not.
    async fn fetch_media(&self, platform: &str, a: &Attachment) -> Result<Vec<u8>, String> {
        let max = media::cap(a.kind).unwrap_or(0);
        match self.inner.delivery.fetch(platform, a, usize::try_from(max).unwrap_or(usize::MAX)).await {
            Ok(bytes) => Ok(bytes),
            Err(DeliveryError::TooLarge(size)) => Err(media::too_large(a, size)),
            Err(e) => {
                tracing::warn!(platform, kind = ?a.kind, error = %e, "fetching an attachment failed");
                Err(media::fetch_failed(a, &e.to_string()))
            }
        }
    }

    /// A voice note's stored text (the marker and the transcript), or the line for the sender.
    async fn transcribe(&self, platform: &str, a: &Attachment) -> Result<String, String> {
        let bytes = self.fetch_media(platform, a).await?;
        let audio = Audio { bytes, name: media::audio_name(a), mime: a.mime.clone().unwrap_or_else(|| "audio/ogg".into()) };
        match self.inner.stt.transcribe(audio).await {
            Ok(t) if !t.trim().is_empty() => Ok(media::voice_text(&t)),
            Ok(_) => Err("That voice note came through empty or inaudible; please resend it or type it.".into()),
            Err(e) => {
                tracing::warn!(platform, error = %e, "transcribing a voice note failed");
                Err(format!("I couldn't transcribe that voice note ({e})."))
            }
        }
    }

    /// A text document inlined (name and fenced content), or the line for the sender.
    async fn read_document(&self, platform: &str, a: &Attachment) -> Result<String, String> {
        let bytes = self.fetch_media(platform, a).await?;
        let text = media::decode_text(&bytes).ok_or_else(|| media::cannot_read(a))?;
        Ok(media::inline_document(a.name.as_deref().unwrap_or("document"), &text))
    }

    /// Loads the photos of the user messages this turn answers (those after the last final
    /// answer) into `prompt`, for this model call only. A photo that cannot be fetched is
    /// replaced by a note to the model. No-op without `model.supports_vision`.
    pub(in crate::app) async fn load_images(&self, platform: &str, prompt: &mut [Message]) {
        if !self.inner.cfg.settings.model.supports_vision {
            return;
        }
        let start = prompt.iter().rposition(|m| m.role == Role::Assistant && m.tool_calls.is_empty()).map_or(0, |i| i + 1);
        for m in prompt[start..].iter_mut().filter(|m| m.role == Role::User) {
            for a in m.attachments.iter().filter(|a| a.kind == AttachmentKind::Image) {
                match self.fetch_media(platform, a).await {
                    Ok(bytes) => m.images.push(Image {
                        mime: media::image_mime(&bytes, a.mime.as_deref()),
                        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
                    }),
                    Err(line) => m.content = media::join(&[m.content.clone(), format!("[{line}]")]),
                }
            }
        }
    }
}
