//! Slack Events API payloads as they arrive at `POST /webhooks/slack` (the fields read), and
//! what they become: `url_verification` → the challenge echoed; a direct message (`message`
//! with `channel_type: im`) or an `app_mention` from a person → one inbound message, answered
//! at once and handled in the background; anything else (other event types, bot messages,
//! edits, joins) → 200 and ignored.
//!
//! Conversation places follow Hermes 0.19.0's adapter ([`Threading`]): a top-level DM starts
//! its own thread, answered there, and that thread is its session
//! (`agent:main:slack:dm:<channel>:<ts>`; with `dm_top_level_threads_as_sessions: false` the
//! DM's one session `…:dm:<channel>`); a message in a DM thread lives in that thread's session
//! (`…:dm:<channel>:<thread_ts>`). A mention in a channel lives in its thread — the thread it
//! was written in, or the thread the reply starts under the message
//! (`…:group:<channel>:<thread_ts or ts>`), so a follow-up mention in that thread continues the
//! same conversation; with `reply_in_thread: false` a top-level mention is answered in the
//! channel and the channel is one session (per user, as `group_sessions_per_user`).

use crate::channels::{Attachment, AttachmentKind, ChannelError, Received, WebReply};
use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Inbound, ReplyPath};
use serde::Deserialize;
use serde_json::json;

/// Documents up to this size with a text-like name are read as documents.
const SMALL_DOC_BYTES: u64 = 100 * 1024;
/// Message subtypes written by a person (every other subtype is ignored).
const USER_SUBTYPES: [&str; 2] = ["file_share", "thread_broadcast"];

/// The outer envelope of every Events API request.
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    challenge: Option<String>,
    #[serde(default)]
    event: Option<Event>,
    #[serde(default)]
    authorizations: Vec<Authorization>,
}

/// Who the app acts as in this workspace (the bot user, whose own messages are ignored).
#[derive(Debug, Deserialize)]
struct Authorization {
    #[serde(default)]
    user_id: Option<String>,
}

/// A `message` or `app_mention` event.
#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    bot_id: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    ts: String,
    #[serde(default)]
    thread_ts: Option<String>,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    channel_type: Option<String>,
    #[serde(default)]
    files: Vec<SlackFile>,
    #[serde(default)]
    user_profile: Option<Profile>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    real_name: Option<String>,
}

/// A file shared with a message.
#[derive(Debug, Deserialize)]
struct SlackFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mimetype: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    url_private: Option<String>,
}

fn bad(msg: impl Into<String>) -> ChannelError {
    ChannelError::BadRequest(msg.into())
}

fn ignored(why: &str) -> Received {
    Received::Answer(WebReply::json(json!({"ok": true, "ignored": why})))
}

/// Hermes' `platforms.slack.extra` keys that place a conversation (both default true). The
/// reply goes to the place that is the session: where Hermes would answer a DM-wide session in
/// a thread (`dm_top_level_threads_as_sessions: false` with `reply_in_thread: true`) or a
/// per-message session in the DM itself (the reverse), the answer goes to the session's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threading {
    /// `dm_top_level_threads_as_sessions`: a top-level DM opens its own thread and session.
    pub dm_top_level_threads_as_sessions: bool,
    /// `reply_in_thread`: a top-level channel mention is answered in a thread under it.
    pub reply_in_thread: bool,
}

impl Default for Threading {
    fn default() -> Self {
        Self { dm_top_level_threads_as_sessions: true, reply_in_thread: true }
    }
}

/// What an authenticated Events API body becomes.
pub fn receive(body: &[u8], threading: Threading) -> Result<Received, ChannelError> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|e| bad(format!("not a Slack event: {e}")))?;
    match envelope.kind.as_str() {
        "url_verification" => {
            let challenge = envelope.challenge.ok_or_else(|| bad("url_verification without a challenge"))?;
            Ok(Received::Answer(WebReply::json(json!({"challenge": challenge}))))
        }
        "event_callback" => {
            let Some(event) = envelope.event else { return Ok(ignored("no event")) };
            let bot = envelope.authorizations.into_iter().find_map(|a| a.user_id);
            Ok(match normalize(event, bot.as_deref(), threading)? {
                Ok(msg) => Received::Deferred { msg, ack: WebReply::json(json!({"ok": true})), then: None },
                Err(why) => ignored(why),
            })
        }
        _ => Ok(ignored("unsupported envelope type")),
    }
}

/// The inbound message of an event, or why it is ignored.
fn normalize(e: Event, bot: Option<&str>, threading: Threading) -> Result<Result<Inbound, &'static str>, ChannelError> {
    let dm = match e.kind.as_str() {
        "message" if e.channel_type.as_deref() == Some("im") => true,
        "message" => return Ok(Err("not a direct message")),
        "app_mention" => false,
        _ => return Ok(Err("unsupported event type")),
    };
    let from_bot = e.bot_id.is_some() || (bot.is_some() && e.user.as_deref() == bot);
    if from_bot || e.subtype.as_deref().is_some_and(|s| !USER_SUBTYPES.contains(&s)) {
        return Ok(Err("not a person's new message"));
    }
    let Some(user) = e.user.as_deref().filter(|u| !u.is_empty()) else { return Ok(Err("no user")) };
    if e.ts.is_empty() || e.channel.is_empty() {
        return Err(bad("message event without ts or channel"));
    }
    let text = unescape(&strip_mention(&e.text, bot, !dm));
    let attachments: Vec<Attachment> = e.files.iter().filter_map(attachment).collect();
    if text.trim().is_empty() && attachments.is_empty() {
        return Ok(Err("no text"));
    }
    let in_thread = e.thread_ts.as_deref().filter(|t| !t.is_empty() && *t != e.ts);
    let top_level_thread = if dm { threading.dm_top_level_threads_as_sessions } else { threading.reply_in_thread };
    let thread = in_thread.or_else(|| top_level_thread.then_some(e.ts.as_str()));
    let chat_type = if dm { ChatType::Dm } else { ChatType::Group };
    let origin = Origin::new("slack", &e.channel, chat_type, Some(user), thread).map_err(|err| bad(err.to_string()))?;
    let user_name = e.user_profile.and_then(|p| p.display_name.filter(|n| !n.is_empty()).or(p.real_name));
    Ok(Ok(Inbound { origin, text, message_id: Some(e.ts), user_name, reply: ReplyPath::Origin, attachments }))
}

/// The text without the bot's own mention (`<@UBOT>`); when the bot user is unknown, a
/// mention event loses its leading mention instead.
fn strip_mention(text: &str, bot: Option<&str>, mention: bool) -> String {
    match bot {
        Some(b) => text.replace(&format!("<@{b}>"), "").trim().to_string(),
        None if mention && text.trim_start().starts_with("<@") => {
            let t = text.trim_start();
            t.find('>').map_or(t, |end| &t[end + 1..]).trim().to_string()
        }
        None => text.trim().to_string(),
    }
}

/// Slack's escaping of `&`, `<` and `>` undone (the model reads plain text).
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// A shared file as an attachment (by its `url_private`), kind by MIME type.
fn attachment(f: &SlackFile) -> Option<Attachment> {
    let id = f.url_private.clone().filter(|u| !u.is_empty())?;
    let mime = f.mimetype.clone().filter(|m| !m.is_empty());
    Some(Attachment { kind: kind_of(mime.as_deref(), f.name.as_deref(), f.size), id, mime, name: f.name.clone(), size: f.size })
}

fn kind_of(mime: Option<&str>, name: Option<&str>, size: Option<u64>) -> AttachmentKind {
    let mime = mime.unwrap_or_default().to_ascii_lowercase();
    let texty = ["json", "xml", "yaml", "x-yaml", "csv", "markdown", "x-sh", "javascript", "toml"];
    let doc_ext = [".txt", ".md", ".csv", ".json", ".yaml", ".yml", ".log", ".toml", ".xml"];
    let text_mime = mime.starts_with("text/") || mime.strip_prefix("application/").is_some_and(|s| texty.contains(&s));
    let small_doc =
        size.is_some_and(|s| s <= SMALL_DOC_BYTES) && name.is_some_and(|n| doc_ext.iter().any(|e| n.to_ascii_lowercase().ends_with(e)));
    if mime.starts_with("image/") {
        AttachmentKind::Image
    } else if mime.starts_with("audio/") {
        AttachmentKind::Audio
    } else if text_mime || small_doc {
        AttachmentKind::Document
    } else {
        AttachmentKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn run(v: Value) -> Received {
        run_with(v, Threading::default())
    }

    fn run_with(v: Value, t: Threading) -> Received {
        receive(&serde_json::to_vec(&v).unwrap(), t).unwrap()
    }

    fn callback(event: Value) -> Value {
        json!({"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": event, "authorizations": [{"user_id": "UBOT", "is_bot": true}]})
    }

    fn inbound(v: Value) -> Inbound {
        match run(callback(v)) {
            Received::Deferred { msg, then: None, .. } => msg,
            _ => panic!("not a deferred message"),
        }
    }

    fn ignored_why(v: Value) -> String {
        match run(callback(v)) {
            Received::Answer(r) => match r.body {
                crate::channels::ReplyBody::Json(j) => j["ignored"].as_str().unwrap().to_string(),
                _ => panic!("not JSON"),
            },
            _ => panic!("not ignored"),
        }
    }

    #[test]
    fn url_verification_echoes_the_challenge() {
        match run(json!({"type": "url_verification", "token": "t", "challenge": "abc123"})) {
            Received::Answer(r) => assert_eq!(r, WebReply::json(json!({"challenge": "abc123"}))),
            _ => panic!("not an answer"),
        }
        assert!(receive(br#"{"type":"url_verification"}"#, Threading::default()).is_err());
        assert!(receive(b"not json", Threading::default()).is_err());
    }

    #[test]
    fn dms_and_mentions_get_their_places() {
        let dm = inbound(
            json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "a &lt;b&gt; &amp; c", "ts": "100.1"}),
        );
        assert_eq!(
            (dm.origin.chat_type, dm.origin.chat_id.as_str(), dm.origin.thread_id.as_deref()),
            (ChatType::Dm, "D1", Some("100.1")),
            "a top-level DM is its own thread"
        );
        assert_eq!((dm.text.as_str(), dm.message_id.as_deref(), dm.reply), ("a <b> & c", Some("100.1"), ReplyPath::Origin));
        let threaded = inbound(
            json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "x", "ts": "100.3", "thread_ts": "100.1"}),
        );
        assert_eq!(threaded.origin.thread_id.as_deref(), Some("100.1"));
        let top = inbound(json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> hello", "ts": "200.1"}));
        assert_eq!((top.origin.chat_type, top.origin.thread_id.as_deref(), top.text.as_str()), (ChatType::Group, Some("200.1"), "hello"));
        let inner = inbound(
            json!({"type": "app_mention", "channel": "C1", "user": "U2", "text": "more <@UBOT>", "ts": "200.9", "thread_ts": "200.1"}),
        );
        assert_eq!(
            (inner.origin.thread_id.as_deref(), inner.text.as_str(), inner.origin.user_id.as_deref()),
            (Some("200.1"), "more", Some("U2"))
        );
    }

    #[test]
    fn hermes_threading_keys_place_top_level_messages() {
        let place = |v: Value, t: Threading| match run_with(callback(v), t) {
            Received::Deferred { msg, .. } => msg.origin.thread_id,
            _ => panic!("not a message"),
        };
        let dm = json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "x", "ts": "100.1"});
        let in_dm_thread = json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "x", "ts": "100.3", "thread_ts": "100.1"});
        let top = json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> x", "ts": "200.1"});
        let in_thread =
            json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "<@UBOT> x", "ts": "200.2", "thread_ts": "200.1"});
        let legacy_dm = Threading { dm_top_level_threads_as_sessions: false, reply_in_thread: true };
        let flat = Threading { dm_top_level_threads_as_sessions: true, reply_in_thread: false };
        assert_eq!(place(dm.clone(), legacy_dm), None, "one DM-wide session");
        assert_eq!(place(dm, flat).as_deref(), Some("100.1"), "reply_in_thread is about channels");
        assert_eq!(place(in_dm_thread, legacy_dm).as_deref(), Some("100.1"), "a DM thread stays a thread");
        assert_eq!(place(top.clone(), flat), None, "answered in the channel, one channel session");
        assert_eq!(place(top, legacy_dm).as_deref(), Some("200.1"));
        assert_eq!(place(in_thread, flat).as_deref(), Some("200.1"), "a thread reply is always answered in its thread");
    }

    #[test]
    fn bots_edits_and_other_events_are_ignored() {
        let base = json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "hi", "ts": "1.1"});
        let with = |k: &str, v: Value| {
            let mut e = base.clone();
            e[k] = v;
            e
        };
        assert_eq!(ignored_why(with("bot_id", json!("B1"))), "not a person's new message");
        assert_eq!(ignored_why(with("user", json!("UBOT"))), "not a person's new message");
        assert_eq!(ignored_why(with("subtype", json!("bot_message"))), "not a person's new message");
        assert_eq!(ignored_why(with("subtype", json!("message_changed"))), "not a person's new message");
        assert_eq!(ignored_why(with("channel_type", json!("channel"))), "not a direct message");
        assert_eq!(ignored_why(with("text", json!("  "))), "no text");
        assert_eq!(ignored_why(json!({"type": "reaction_added", "user": "U1"})), "unsupported event type");
        inbound(with("subtype", json!("file_share")));
    }

    #[test]
    fn files_become_attachments_by_mime_type() {
        let file = |mime: &str, name: &str, size: u64| json!({"id": "F1", "name": name, "mimetype": mime, "size": size, "url_private": format!("https://files.slack.com/{name}")});
        let msg = inbound(
            json!({"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "text": "", "ts": "1.1", "subtype": "file_share",
            "files": [file("image/png", "a.png", 10), file("audio/webm", "v.webm", 10), file("text/plain", "n.txt", 10),
                      file("application/octet-stream", "notes.md", 10), file("application/zip", "x.zip", 10), {"id": "F9"}]}),
        );
        let kinds: Vec<AttachmentKind> = msg.attachments.iter().map(|a| a.kind).collect();
        use AttachmentKind::*;
        assert_eq!(kinds, [Image, Audio, Document, Document, Other]);
        assert_eq!(msg.attachments[0].id, "https://files.slack.com/a.png");
        assert_eq!((msg.attachments[0].mime.as_deref(), msg.attachments[0].size), (Some("image/png"), Some(10)));
        assert_eq!(kind_of(Some("application/octet-stream"), Some("big.md"), Some(SMALL_DOC_BYTES + 1)), Other);
    }

    #[test]
    fn without_authorizations_a_leading_mention_is_stripped() {
        assert_eq!(strip_mention("<@U9> hi <@U7>", None, true), "hi <@U7>");
        assert_eq!(strip_mention("<@U9> hi", None, false), "<@U9> hi");
        assert_eq!(strip_mention(" <@UBOT> hi <@UBOT>", Some("UBOT"), true), "hi");
    }
}
