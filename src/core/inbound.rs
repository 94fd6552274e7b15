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
