//! The rules for files that come with a message (docs/design.md#media): size caps, which
//! documents count as text, what the stored text of a photo, voice note or document says,
//! and the one-line answers for what cannot be read. Pure: no fetching, no model.

use crate::core::inbound::{Attachment, AttachmentKind};

const KB: u64 = 1024;
const MB: u64 = 1024 * KB;
/// Largest photo fetched for a vision model.
pub const IMAGE_MAX: u64 = 10 * MB;
/// Largest audio file transcribed (OpenAI's limit).
pub const AUDIO_MAX: u64 = 25 * MB;
/// Largest text document inlined into the message.
pub const DOCUMENT_MAX: u64 = 100 * KB;

/// Marks a stored user message whose photo the model saw in that turn only.
pub const PHOTO_MARKER: &str = "[photo]";
/// Marks a transcribed voice note (the model may ask again about a misheard word).
pub const VOICE_MARKER: &str = "[voice]";
/// Told to a model that cannot see images.
pub const PHOTO_OMITTED: &str = "[The user sent a photo, but this model cannot see images, so it was left out.]";

/// The fetch cap of a kind (`None`: never fetched).
pub fn cap(kind: AttachmentKind) -> Option<u64> {
    match kind {
        AttachmentKind::Image => Some(IMAGE_MAX),
        AttachmentKind::Audio => Some(AUDIO_MAX),
        AttachmentKind::Document => Some(DOCUMENT_MAX),
        AttachmentKind::Other => None,
    }
}

/// `30 MB`, `250 kB`, `512 bytes`.
pub fn human_size(bytes: u64) -> String {
    if bytes >= MB {
        format!("{} MB", bytes.div_ceil(MB))
    } else if bytes >= KB {
        format!("{} kB", bytes.div_ceil(KB))
    } else {
        format!("{bytes} bytes")
    }
}

/// The lower-cased extension of a file name.
pub fn extension(name: &str) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty() && ext.len() <= 10).then(|| ext.to_ascii_lowercase())
}

/// The reply to a file over its cap: `That photo is 30 MB; I can read photos up to 10 MB.`
pub fn too_large(a: &Attachment, size: Option<u64>) -> String {
    let max = cap(a.kind).unwrap_or(0);
    let is = size.map_or_else(|| format!("is over {}", human_size(max)), |s| format!("is {}", human_size(s)));
    match a.kind {
        AttachmentKind::Image => format!("That photo {is}; I can read photos up to {}.", human_size(max)),
        AttachmentKind::Audio => format!("That voice note {is}; I can transcribe audio up to {}.", human_size(max)),
        _ => format!("That file{} {is}; I can read text files up to {}.", named(a), human_size(max)),
    }
}

fn named(a: &Attachment) -> String {
    a.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
}

/// The reply to a file of a kind the agent cannot read: `I can't read .xyz files yet.`
pub fn cannot_read(a: &Attachment) -> String {
    let what = match (a.name.as_deref().and_then(extension), a.mime.as_deref()) {
        (Some(ext), _) => format!(".{ext} files"),
        (None, Some(m)) if m.starts_with("video/") => "videos".into(),
        (None, Some(m)) if !m.is_empty() => format!("{m} files"),
        _ => "this kind of file".into(),
    };
    format!("I can't read {what} yet.")
}

/// Why a fetch failed, as one line for the user.
pub fn fetch_failed(a: &Attachment, why: &str) -> String {
    let noun = match a.kind {
        AttachmentKind::Image => "that photo".to_string(),
        AttachmentKind::Audio => "that voice note".to_string(),
        _ => format!("that file{}", named(a)),
    };
    format!("I couldn't download {noun} ({why}).")
}

const TEXT_MIMES: &[&str] = &[
    "application/json",
    "application/xml",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/javascript",
    "application/x-sh",
    "application/sql",
    "application/csv",
    "application/x-ndjson",
];
const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "md", "markdown", "csv", "tsv", "json", "jsonl", "ndjson", "yaml", "yml", "toml", "xml", "html", "htm", "log", "ini", "cfg",
    "conf", "py", "rs", "js", "ts", "go", "java", "kt", "c", "h", "cpp", "hpp", "cs", "sh", "sql", "rb", "php", "css", "tex", "rst", "org",
    "srt",
];

/// Whether a document is text the agent can inline (by MIME type, else by extension).
pub fn is_text(a: &Attachment) -> bool {
    let mime = a.mime.as_deref().unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    mime.starts_with("text/")
        || TEXT_MIMES.contains(&mime.as_str())
        || a.name.as_deref().and_then(extension).is_some_and(|e| TEXT_EXTENSIONS.contains(&e.as_str()))
}

/// The bytes as text, if they are UTF-8 without NUL bytes (a BOM is dropped).
pub fn decode_text(bytes: &[u8]) -> Option<String> {
    let t = std::str::from_utf8(bytes).ok()?;
    (!t.contains('\0')).then(|| t.trim_start_matches('\u{feff}').to_string())
}

/// A text document as it is inlined: its name, then its content in a fence longer than any
/// backtick run inside it.
pub fn inline_document(name: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("[file: {name}]\n{fence}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// The stored text of a voice note: the marker and the transcript.
pub fn voice_text(transcript: &str) -> String {
    format!("{VOICE_MARKER} {}", transcript.trim())
}

/// The name an audio file is uploaded under (the service reads its format from it).
pub fn audio_name(a: &Attachment) -> String {
    if let Some(n) = a.name.as_deref().filter(|n| extension(n).is_some()) {
        return n.to_string();
    }
    let ext = match a.mime.as_deref().unwrap_or_default() {
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/mp4" | "audio/x-m4a" | "audio/m4a" => "m4a",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/webm" => "webm",
        "audio/flac" => "flac",
        _ => "ogg",
    };
    format!("audio.{ext}")
}

/// The note for a photo the main model cannot see but `vision_analyze` can (the `n`th of
/// the message).
pub fn photo_for_tool(n: usize) -> String {
    format!(
        "[The user sent a photo (attachment:{n}). This model cannot see images: call vision_analyze with image_url \"attachment:{n}\" to look at it.]"
    )
}

/// An image's MIME type from its first bytes (JPEG, PNG, GIF, WebP), else what the platform
/// said, else JPEG (Telegram photos are JPEG and come without a type).
pub fn image_mime(bytes: &[u8], said: Option<&str>) -> String {
    let sniffed = if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"GIF8") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    };
    sniffed.or(said.filter(|m| m.starts_with("image/"))).unwrap_or("image/jpeg").to_string()
}

/// Non-empty parts joined by a blank line.
pub fn join(parts: &[String]) -> String {
    parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn att(kind: AttachmentKind, name: Option<&str>, mime: Option<&str>) -> Attachment {
        Attachment { kind, id: "f".into(), mime: mime.map(Into::into), name: name.map(Into::into), size: None }
    }

    #[test]
    fn oversized_replies_name_the_size_and_the_cap() {
        let photo = att(AttachmentKind::Image, None, None);
        assert_eq!(too_large(&photo, Some(30 * MB)), "That photo is 30 MB; I can read photos up to 10 MB.");
        assert_eq!(too_large(&photo, None), "That photo is over 10 MB; I can read photos up to 10 MB.");
        let doc = att(AttachmentKind::Document, Some("big.txt"), None);
        assert_eq!(too_large(&doc, Some(300 * KB)), "That file (big.txt) is 300 kB; I can read text files up to 100 kB.");
        assert!(too_large(&att(AttachmentKind::Audio, None, None), Some(26 * MB)).contains("up to 25 MB"));
    }

    #[test]
    fn unreadable_files_are_named_by_type() {
        assert_eq!(cannot_read(&att(AttachmentKind::Other, Some("model.XYZ"), None)), "I can't read .xyz files yet.");
        assert_eq!(cannot_read(&att(AttachmentKind::Other, None, Some("video/mp4"))), "I can't read videos yet.");
        assert_eq!(cannot_read(&att(AttachmentKind::Other, None, None)), "I can't read this kind of file yet.");
    }

    #[test]
    fn text_documents_are_known_by_mime_or_extension() {
        assert!(is_text(&att(AttachmentKind::Document, Some("a.bin"), Some("text/plain; charset=utf-8"))));
        assert!(is_text(&att(AttachmentKind::Document, Some("notes.MD"), Some("application/octet-stream"))));
        assert!(is_text(&att(AttachmentKind::Document, None, Some("application/json"))));
        assert!(!is_text(&att(AttachmentKind::Document, Some("report.pdf"), Some("application/pdf"))));
        assert_eq!(decode_text(b"\xef\xbb\xbfhi"), Some("hi".into()));
        assert_eq!(decode_text(b"a\0b"), None);
        assert_eq!(decode_text(&[0xff, 0xfe]), None);
    }

    #[test]
    fn inlined_documents_are_fenced_beyond_their_own_backticks() {
        assert_eq!(inline_document("a.txt", "hello\n"), "[file: a.txt]\n```\nhello\n```");
        let t = inline_document("b.md", "x ```` y");
        assert!(t.starts_with("[file: b.md]\n`````\n") && t.ends_with("\n`````"), "{t}");
    }

    #[test]
    fn images_are_typed_by_their_bytes() {
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\nrest", Some("image/jpeg")), "image/png");
        assert_eq!(image_mime(&[0xff, 0xd8, 0xff, 0xe0], None), "image/jpeg");
        assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 ", None), "image/webp");
        assert_eq!(image_mime(b"??", Some("image/gif")), "image/gif");
        assert_eq!(image_mime(b"??", Some("application/x")), "image/jpeg");
    }

    #[test]
    fn audio_uploads_carry_an_extension() {
        assert_eq!(audio_name(&att(AttachmentKind::Audio, None, Some("audio/ogg"))), "audio.ogg");
        assert_eq!(audio_name(&att(AttachmentKind::Audio, Some("memo.m4a"), None)), "memo.m4a");
        assert_eq!(audio_name(&att(AttachmentKind::Audio, Some("memo"), Some("audio/mpeg"))), "audio.mp3");
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!((human_size(512), human_size(2048), human_size(30 * MB)), ("512 bytes".into(), "2 kB".into(), "30 MB".into()));
        assert_eq!(join(&["a".into(), " ".into(), "b".into()]), "a\n\nb");
    }
}
