//! The WhatsApp Cloud API webhook payload (the parts the gateway reads) and its
//! normalization: every user message of `entry[].changes[].value.messages[]` becomes one
//! [`Inbound`]; `statuses` (sent, delivered, read receipts) and reactions become nothing.

use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Attachment, AttachmentKind, Inbound, ReplyPath};
use serde::Deserialize;
use serde_json::Value;

/// A webhook notification.
#[derive(Debug, Deserialize)]
pub struct Notification {
    /// `whatsapp_business_account` for WhatsApp.
    #[serde(default)]
    pub object: String,
    /// Entries (one per business account).
    #[serde(default)]
    pub entry: Vec<Entry>,
}

/// One business account's changes.
#[derive(Debug, Deserialize)]
pub struct Entry {
    /// Changes.
    #[serde(default)]
    pub changes: Vec<Change>,
}

/// One change: `field` `messages` carries messages and statuses.
#[derive(Debug, Deserialize)]
pub struct Change {
    /// Subscribed field.
    #[serde(default)]
    pub field: String,
    /// Its value.
    #[serde(default)]
    pub value: ChangeValue,
}

/// The value of a `messages` change.
#[derive(Debug, Default, Deserialize)]
pub struct ChangeValue {
    /// The business phone number the change is for.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// Senders' profiles.
    #[serde(default)]
    pub contacts: Vec<Contact>,
    /// Inbound messages.
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// The receiving business number.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    /// Its phone number id.
    #[serde(default)]
    pub phone_number_id: Option<String>,
}

/// A sender's profile.
#[derive(Debug, Deserialize)]
pub struct Contact {
    /// WhatsApp id (the phone number, digits).
    #[serde(default)]
    pub wa_id: String,
    /// Profile.
    #[serde(default)]
    pub profile: Option<Value>,
}

/// One inbound message.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// Sender's WhatsApp id.
    #[serde(default)]
    pub from: String,
    /// Message id (`wamid.…`), the same in every redelivery.
    #[serde(default)]
    pub id: String,
    /// `text`, `image`, `audio`, `document`, `video`, `sticker`, `location`, `reaction`, …
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The whole message, for the type-specific object (`text`, `image`, …).
    #[serde(flatten)]
    pub rest: serde_json::Map<String, Value>,
}

/// Types that are not a message to the agent (a reaction, a system notice).
const IGNORED: &[&str] = &["reaction", "system", "request_welcome"];

/// The inbound messages of `n` for the business number `phone_number_id` (messages for
/// another number of the same app are left out). A message that cannot be normalized is
/// logged and skipped: the others of the batch still count.
pub fn inbounds(n: &Notification, phone_number_id: Option<&str>) -> Vec<Inbound> {
    if n.object != "whatsapp_business_account" {
        return Vec::new();
    }
    let values = n.entry.iter().flat_map(|e| &e.changes).filter(|c| c.field == "messages").map(|c| &c.value);
    let ours = |v: &&ChangeValue| match (v.metadata.as_ref().and_then(|m| m.phone_number_id.as_deref()), phone_number_id) {
        (Some(to), Some(me)) => to == me,
        _ => true,
    };
    let mut out = Vec::new();
    for v in values.filter(ours) {
        for m in &v.messages {
            let name = v.contacts.iter().find(|c| c.wa_id == m.from).and_then(|c| c.profile.as_ref()?["name"].as_str().map(str::to_string));
            match normalize(m, name) {
                Ok(Some(msg)) => out.push(msg),
                Ok(None) => tracing::debug!(kind = m.kind, "whatsapp message type ignored"),
                Err(e) => tracing::warn!(error = %e, "whatsapp message skipped"),
            }
        }
    }
    out
}

/// One message as an [`Inbound`]; None for a type that is no message to the agent.
fn normalize(m: &Message, name: Option<String>) -> Result<Option<Inbound>, crate::core::ids::IdError> {
    if IGNORED.contains(&m.kind.as_str()) {
        return Ok(None);
    }
    let body = m.rest.get(&m.kind).unwrap_or(&Value::Null);
    let s = |v: &Value, k: &str| v[k].as_str().map(str::to_string);
    let (text, attachment) = match m.kind.as_str() {
        "text" => (s(body, "body"), None),
        "button" => (s(body, "text"), None),
        "interactive" => (s(&body["button_reply"], "title").or_else(|| s(&body["list_reply"], "title")), None),
        kind => {
            let media_kind = match kind {
                "image" => AttachmentKind::Image,
                "audio" | "voice" => AttachmentKind::Audio,
                "document" => AttachmentKind::Document,
                _ => AttachmentKind::Other,
            };
            // Media carry their id; a location, contact card or unsupported type has none, so
            // it is named by the message (it is never fetched, only answered).
            let id = s(body, "id").unwrap_or_else(|| m.id.clone());
            let a = Attachment { kind: media_kind, id, mime: s(body, "mime_type"), name: s(body, "filename"), size: None };
            (s(body, "caption"), Some(a))
        }
    };
    let text = text.filter(|t| !t.trim().is_empty());
    if text.is_none() && attachment.is_none() {
        return Ok(None);
    }
    let mut origin = Origin::new("whatsapp", &m.from, ChatType::Dm, Some(&m.from), None)?;
    origin.chat_name = name.clone();
    Ok(Some(Inbound {
        origin,
        text: text.unwrap_or_default(),
        message_id: Some(m.id.clone()).filter(|id| !id.is_empty()),
        user_name: name,
        reply: ReplyPath::Origin,
        attachments: attachment.into_iter().collect(),
    }))
}
