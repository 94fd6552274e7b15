//! Telegram files (docs/design.md#media): the `photo`, `voice`, `audio`, `document`, `video`,
//! `sticker`, … fields of a message as [`Attachment`]s, and their download — `getFile` for the
//! `file_path`, then `{api_base}/file/bot<token>/<file_path>` — refused over the cap by the
//! announced `file_size` first, then while the body streams. The download URL carries the
//! token: it is never logged, and errors are described without it.

use super::api::TelegramClient;
use crate::clients::describe;
use crate::core::inbound::{Attachment, AttachmentKind};
use crate::ports::DeliveryError;
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Value, json};

/// The file fields of a Telegram message (flattened into `TgMessage`).
#[derive(Debug, Default, Deserialize)]
pub struct TgMedia {
    /// A photo in several sizes, smallest first.
    #[serde(default)]
    pub photo: Vec<TgFile>,
    /// A voice note.
    #[serde(default)]
    pub voice: Option<TgFile>,
    /// An audio file.
    #[serde(default)]
    pub audio: Option<TgFile>,
    /// A document (any file sent as a file).
    #[serde(default)]
    pub document: Option<TgFile>,
    /// A video.
    #[serde(default)]
    pub video: Option<TgFile>,
    /// A round video note.
    #[serde(default)]
    pub video_note: Option<TgFile>,
    /// A GIF or silent video (Telegram also sends it as `document`).
    #[serde(default)]
    pub animation: Option<TgFile>,
    /// A sticker.
    #[serde(default)]
    pub sticker: Option<TgFile>,
}

/// One Telegram file reference (`PhotoSize`, `Voice`, `Audio`, `Document`, …: the fields they share).
#[derive(Debug, Clone, Deserialize)]
pub struct TgFile {
    /// The id `getFile` takes.
    pub file_id: String,
    /// Size in bytes, when Telegram says.
    #[serde(default)]
    pub file_size: Option<u64>,
    /// MIME type, when Telegram says.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Original file name (documents, audio).
    #[serde(default)]
    pub file_name: Option<String>,
    /// Photo width.
    #[serde(default)]
    pub width: Option<u64>,
    /// Photo height.
    #[serde(default)]
    pub height: Option<u64>,
}

fn attachment(kind: AttachmentKind, f: &TgFile) -> Attachment {
    Attachment { kind, id: f.file_id.clone(), mime: f.mime_type.clone(), name: f.file_name.clone(), size: f.file_size }
}

/// The largest photo size within `max` bytes, else the smallest (which then gets the
/// "too large" answer).
fn best_photo(sizes: &[TgFile], max: u64) -> Option<&TgFile> {
    let area = |f: &TgFile| (f.width.unwrap_or(0) * f.height.unwrap_or(0), f.file_size.unwrap_or(0));
    sizes.iter().filter(|f| f.file_size.is_none_or(|s| s <= max)).max_by_key(|f| area(f)).or_else(|| sizes.iter().min_by_key(|f| area(f)))
}

/// The message's files as attachments.
pub fn attachments(m: &TgMedia) -> Vec<Attachment> {
    let mut out = Vec::new();
    if let Some(p) = best_photo(&m.photo, crate::core::media::IMAGE_MAX) {
        out.push(attachment(AttachmentKind::Image, p));
    }
    for (kind, f) in [(AttachmentKind::Audio, &m.voice), (AttachmentKind::Audio, &m.audio)] {
        if let Some(f) = f {
            let mut a = attachment(kind, f);
            a.mime = a.mime.or_else(|| Some("audio/ogg".into()));
            out.push(a);
        }
    }
    if let Some(d) = m.document.as_ref().filter(|_| m.animation.is_none()) {
        let image = d.mime_type.as_deref().is_some_and(|t| matches!(t, "image/jpeg" | "image/png" | "image/webp" | "image/gif"));
        out.push(attachment(if image { AttachmentKind::Image } else { AttachmentKind::Document }, d));
    }
    for (f, mime) in [(&m.video, "video/mp4"), (&m.video_note, "video/mp4"), (&m.animation, "video/mp4"), (&m.sticker, "image/webp")] {
        if let Some(f) = f {
            let mut a = attachment(AttachmentKind::Other, f);
            a.mime = a.mime.or_else(|| Some(mime.into()));
            out.push(a);
        }
    }
    out
}

/// A failed call that got no answer: safe to retry (a download changes nothing).
fn unreachable(e: reqwest::Error) -> DeliveryError {
    DeliveryError::Retryable(describe(e))
}

fn classify(status: u16, v: &Value) -> DeliveryError {
    let desc = v["description"].as_str().unwrap_or("no description");
    match status {
        429 => DeliveryError::RateLimited(v["parameters"]["retry_after"].as_u64().unwrap_or(1)),
        s if s >= 500 => DeliveryError::Retryable(format!("telegram HTTP {s}: {desc}")),
        s => DeliveryError::Permanent(format!("telegram HTTP {s}: {desc}")),
    }
}

/// Downloads `a` (at most `max` bytes) through `getFile` and the file URL.
pub async fn fetch(c: &TelegramClient, a: &Attachment, max: usize) -> Result<Vec<u8>, DeliveryError> {
    let max = max as u64;
    if let Some(size) = a.size.filter(|s| *s > max) {
        return Err(DeliveryError::TooLarge(Some(size)));
    }
    let url = format!("{}/bot{}/getFile", c.base, c.token.expose_secret());
    let resp = c.http.post(url).json(&json!({"file_id": a.id})).send().await.map_err(unreachable)?;
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        return Err(classify(status, &v));
    }
    if let Some(size) = v["result"]["file_size"].as_u64().filter(|s| *s > max) {
        return Err(DeliveryError::TooLarge(Some(size)));
    }
    let path = v["result"]["file_path"].as_str().ok_or_else(|| DeliveryError::Permanent("telegram getFile gave no file_path".into()))?;
    let url = format!("{}/file/bot{}/{}", c.base, c.token.expose_secret(), path.trim_start_matches('/'));
    let mut resp = c.http.get(url).send().await.map_err(unreachable)?;
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return Err(classify(status, &Value::Null));
    }
    if let Some(len) = resp.content_length().filter(|l| *l > max) {
        return Err(DeliveryError::TooLarge(Some(len)));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
        if (body.len() + chunk.len()) as u64 > max {
            return Err(DeliveryError::TooLarge(None));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(id: &str, w: u64, size: u64) -> TgFile {
        TgFile { file_id: id.into(), file_size: Some(size), mime_type: None, file_name: None, width: Some(w), height: Some(w) }
    }

    #[test]
    fn the_largest_photo_within_the_cap_is_taken() {
        let sizes = [file("s", 90, 1_000), file("m", 320, 20_000), file("l", 1280, 200_000)];
        assert_eq!(best_photo(&sizes, 1_000_000).unwrap().file_id, "l");
        assert_eq!(best_photo(&sizes, 50_000).unwrap().file_id, "m");
        assert_eq!(best_photo(&sizes, 10).unwrap().file_id, "s", "none fits: the smallest, answered as too large");
        assert!(best_photo(&[], 10).is_none());
    }

    #[test]
    fn files_map_to_kinds() {
        let v = json!({
            "voice": {"file_id": "v", "file_size": 10},
            "document": {"file_id": "d", "file_name": "a.txt", "mime_type": "text/plain"},
            "sticker": {"file_id": "st"}
        });
        let m: TgMedia = serde_json::from_value(v).unwrap();
        let a = attachments(&m);
        let kinds: Vec<_> = a.iter().map(|a| (a.kind, a.id.as_str(), a.mime.as_deref())).collect();
        assert_eq!(
            kinds,
            vec![
                (AttachmentKind::Audio, "v", Some("audio/ogg")),
                (AttachmentKind::Document, "d", Some("text/plain")),
                (AttachmentKind::Other, "st", Some("image/webp"))
            ]
        );
        let gif: TgMedia = serde_json::from_value(json!({"animation": {"file_id": "g"}, "document": {"file_id": "g"}})).unwrap();
        assert_eq!(attachments(&gif).len(), 1, "a GIF is one file, not two");
    }
}
