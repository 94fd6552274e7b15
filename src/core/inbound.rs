//! One inbound chat message as every channel normalizes it, and how the replies produced
//! while handling it reach the sender. Knows no platform wire format.

use crate::core::ids::Origin;

/// One inbound chat message, parsed and authenticated at the edge (a channel, the API, the
/// terminal).
#[derive(Debug, Clone)]
pub struct Inbound {
    /// Where it came from.
    pub origin: Origin,
    /// The text.
    pub text: String,
    /// Platform message id (dedupe of platform retries).
    pub message_id: Option<String>,
    /// Sender's display name.
    pub user_name: Option<String>,
    /// How the replies of this message's handling reach the sender.
    pub reply: ReplyPath,
    /// Files that came with the message (photos, voice notes, documents), by platform
    /// reference; fetched through the channel when the turn runs.
    pub attachments: Vec<Attachment>,
}

/// What kind of file an [`Attachment`] is, as far as the agent cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// A photo or image (a vision model gets it as an image part).
    Image,
    /// A voice note or audio file (transcribed; the transcript is the message).
    Audio,
    /// A document (inlined when it is small text).
    Document,
    /// Anything else (video, sticker, …): answered with one line saying it cannot be read.
    Other,
}

/// One file attached to an inbound message: a platform reference, not the bytes (the
/// channel fetches them with size caps when the turn needs them).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    /// Kind.
    pub kind: AttachmentKind,
    /// The platform's reference: a Telegram `file_id`, a WhatsApp media id, a Slack
    /// `url_private`.
    pub id: String,
    /// MIME type, when the platform said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// File name, when the platform said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Size in bytes, when the platform said (checked against the cap before fetching).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// How the replies produced while handling one message (its command answer, turn reply,
/// notices, acknowledgements, refusal) reach the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyPath {
    /// The app sends them to the origin's chat through the platform's channel.
    #[default]
    Origin,
    /// The transport that brought the message answers from the returned outcome itself (the
    /// body of `/api/messages`, a Discord interaction's follow-ups), so the app sends nothing
    /// to the origin for this message. Later turns of a background drain still go to the
    /// origin: by then the transport has answered.
    Caller,
}
