//! Discord interactions as they arrive at `POST /webhooks/discord` (the fields read), and
//! what they become: PING → PONG; a slash command (`/ask` and the session commands) → one
//! inbound message on platform `discord`, answered at once with a deferred response while it
//! is handled, then with follow-ups; an unknown command → an immediate ephemeral answer.

use crate::channels::discord::followup::{Followups, InteractionClient};
use crate::channels::{ChannelError, Received, WebReply};
use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Inbound, ReplyPath};
use crate::core::queue::BusyInputMode;
use serde::Deserialize;
use serde_json::{Value, json};

const PING: u64 = 1;
const APPLICATION_COMMAND: u64 = 2;
const PONG: u64 = 1;
const CHANNEL_MESSAGE: u64 = 4;
const DEFERRED_CHANNEL_MESSAGE: u64 = 5;
/// Message flag: only the invoking user sees it.
const EPHEMERAL: u64 = 64;

const ASK_USAGE: &str = "Usage: /ask <text>";

/// A Discord interaction (only the fields this endpoint reads).
#[derive(Debug, Deserialize)]
struct Interaction {
    #[serde(default)]
    id: String,
    #[serde(rename = "type")]
    kind: u64,
    application_id: Option<String>,
    token: Option<String>,
    data: Option<CommandData>,
    guild_id: Option<String>,
    channel_id: Option<String>,
    channel: Option<Channel>,
    member: Option<Member>,
    user: Option<User>,
}

#[derive(Debug, Deserialize)]
struct CommandData {
    name: String,
    #[serde(default)]
    options: Vec<CommandOption>,
}

#[derive(Debug, Deserialize)]
struct CommandOption {
    name: String,
    value: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Channel {
    id: String,
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Member {
    user: Option<User>,
    nick: Option<String>,
}

#[derive(Debug, Deserialize)]
struct User {
    id: String,
    username: Option<String>,
    global_name: Option<String>,
}

fn bad(msg: impl Into<String>) -> ChannelError {
    ChannelError::BadRequest(msg.into())
}

/// What an authenticated interaction body becomes. Slash commands are answered by follow-ups
/// through `client`; the app sends nothing to the channel for them ([`ReplyPath::Caller`]).
pub fn receive(body: &[u8], client: &InteractionClient, busy_mode: BusyInputMode) -> Result<Received, ChannelError> {
    let interaction: Interaction = serde_json::from_slice(body).map_err(|e| bad(format!("not a Discord interaction: {e}")))?;
    match interaction.kind {
        PING => Ok(Received::Answer(WebReply::json(json!({"type": PONG})))),
        APPLICATION_COMMAND => command(interaction, client, busy_mode),
        other => Err(bad(format!("unsupported interaction type {other}"))),
    }
}

/// An immediate, ephemeral answer (no turn runs).
fn immediate(content: &str) -> Received {
    Received::Answer(WebReply::json(json!({"type": CHANNEL_MESSAGE, "data": {"content": content, "flags": EPHEMERAL}})))
}

fn command(i: Interaction, client: &InteractionClient, busy_mode: BusyInputMode) -> Result<Received, ChannelError> {
    let data = i.data.as_ref().ok_or_else(|| bad("application command without data"))?;
    let text = match command_text(data) {
        Ok(t) => t,
        Err(answer) => return Ok(immediate(&answer)),
    };
    let nonempty = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let (Some(application_id), Some(token)) = (nonempty(&i.application_id), nonempty(&i.token)) else {
        return Err(bad("interaction without application_id or token"));
    };
    let (origin, user_name) = origin_of(&i)?;
    let message_id = (!i.id.is_empty()).then(|| i.id.clone());
    let msg = Inbound { origin, text, message_id, user_name, reply: ReplyPath::Caller, attachments: Vec::new() };
    let then = Followups { client: client.clone(), application_id, token, busy_mode };
    Ok(Received::Deferred { msg, ack: WebReply::json(json!({"type": DEFERRED_CHANNEL_MESSAGE})), then: Some(Box::new(then)) })
}

/// A string option by one of `names`, trimmed, when non-empty.
fn option<'a>(data: &'a CommandData, names: &[&str]) -> Option<&'a str> {
    data.options
        .iter()
        .find(|o| names.contains(&o.name.as_str()))
        .and_then(|o| o.value.as_ref()?.as_str())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The text the app understands for a slash command, or the immediate answer when there is
/// nothing to run (unknown command, `/ask` without text).
fn command_text(data: &CommandData) -> Result<String, String> {
    let with = |cmd: &str, arg: Option<&str>| arg.map_or_else(|| format!("/{cmd}"), |a| format!("/{cmd} {a}"));
    match data.name.to_ascii_lowercase().as_str() {
        "ask" => option(data, &["text", "prompt"]).map(str::to_string).ok_or_else(|| ASK_USAGE.to_string()),
        "new" => Ok(with("new", option(data, &["title"]))),
        "queue" => Ok(with("queue", option(data, &["prompt", "text"]))),
        "resume" => Ok(with("resume", option(data, &["session_id"]))),
        "undo" => Ok(with("undo", option(data, &["count"]))),
        "title" => Ok(with("title", option(data, &["title"]))),
        "model" => Ok(with("model", option(data, &["model"]))),
        c @ ("reset" | "stop" | "status" | "sessions" | "usage" | "whoami" | "help" | "retry" | "compress" | "sethome") => {
            Ok(format!("/{c}"))
        }
        other => Err(format!("Unknown command `/{other}`. Try /help.")),
    }
}

/// The origin (channel, DM or guild, sender) and the sender's display name.
fn origin_of(i: &Interaction) -> Result<(Origin, Option<String>), ChannelError> {
    let channel =
        i.channel_id.as_deref().or(i.channel.as_ref().map(|c| c.id.as_str())).ok_or_else(|| bad("interaction without a channel"))?;
    let user = i.member.as_ref().and_then(|m| m.user.as_ref()).or(i.user.as_ref());
    // Discord sets `user` (not `member`) in DMs; a guild interaction always has `guild_id`.
    let chat_type = if i.user.is_some() && i.guild_id.is_none() { ChatType::Dm } else { ChatType::Group };
    let mut origin = Origin::new("discord", channel, chat_type, user.map(|u| u.id.as_str()), None).map_err(|e| bad(e.to_string()))?;
    origin.chat_name = i.channel.as_ref().and_then(|c| c.name.clone());
    let nick = i.member.as_ref().and_then(|m| m.nick.clone());
    let user_name = nick.or_else(|| user.and_then(|u| u.global_name.clone().or(u.username.clone())));
    Ok((origin, user_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(v: Value) -> CommandData {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn slash_commands_map_to_app_text() {
        let cases = [
            (json!({"name": "ask", "options": [{"name": "text", "type": 3, "value": " hello "}]}), Ok("hello")),
            (json!({"name": "ask", "options": [{"name": "prompt", "type": 3, "value": "hi"}]}), Ok("hi")),
            (json!({"name": "ask"}), Err(ASK_USAGE)),
            (json!({"name": "new", "options": [{"name": "title", "type": 3, "value": "Trip"}]}), Ok("/new Trip")),
            (json!({"name": "new"}), Ok("/new")),
            (json!({"name": "queue", "options": [{"name": "prompt", "type": 3, "value": "later"}]}), Ok("/queue later")),
            (
                json!({"name": "resume", "options": [{"name": "session_id", "type": 3, "value": "20260101_000000_abcdef12"}]}),
                Ok("/resume 20260101_000000_abcdef12"),
            ),
            (json!({"name": "status"}), Ok("/status")),
            (json!({"name": "whoami"}), Ok("/whoami")),
            (json!({"name": "sessions"}), Ok("/sessions")),
            (json!({"name": "usage"}), Ok("/usage")),
            (json!({"name": "Help"}), Ok("/help")),
            (json!({"name": "retry"}), Ok("/retry")),
            (json!({"name": "undo", "options": [{"name": "count", "type": 3, "value": "2"}]}), Ok("/undo 2")),
            (json!({"name": "title", "options": [{"name": "title", "type": 3, "value": "Trip"}]}), Ok("/title Trip")),
            (
                json!({"name": "model", "options": [{"name": "model", "type": 3, "value": "openrouter:x/y --global"}]}),
                Ok("/model openrouter:x/y --global"),
            ),
            (json!({"name": "model"}), Ok("/model")),
            (json!({"name": "compress"}), Ok("/compress")),
            (json!({"name": "sethome"}), Ok("/sethome")),
        ];
        // Every registered command is understood.
        for d in super::super::commands::definitions() {
            assert!(command_text(&data(json!({"name": d["name"]}))).is_ok_and(|t| t.starts_with('/')) || d["name"] == "ask", "{d}");
        }
        for (d, want) in cases {
            assert_eq!(command_text(&data(d.clone())), want.map(str::to_string).map_err(str::to_string), "{d}");
        }
        assert!(command_text(&data(json!({"name": "dance"}))).unwrap_err().starts_with("Unknown command"));
    }

    #[test]
    fn origin_is_dm_only_without_guild() {
        let dm: Interaction =
            serde_json::from_value(json!({"id": "1", "type": 2, "channel_id": "c9", "user": {"id": "42", "username": "ann"}})).unwrap();
        let (o, name) = origin_of(&dm).unwrap();
        assert_eq!(
            (o.platform.as_str(), o.chat_id.as_str(), o.chat_type, o.user_id.as_deref()),
            ("discord", "c9", ChatType::Dm, Some("42"))
        );
        assert_eq!(name.as_deref(), Some("ann"));
        let guild: Interaction = serde_json::from_value(json!({"id": "1", "type": 2, "guild_id": "g", "channel": {"id": "c7", "name": "general"}, "member": {"nick": "Annie", "user": {"id": "43"}}})).unwrap();
        let (o, name) = origin_of(&guild).unwrap();
        assert_eq!(
            (o.chat_id.as_str(), o.chat_type, o.user_id.as_deref(), o.chat_name.as_deref()),
            ("c7", ChatType::Group, Some("43"), Some("general"))
        );
        assert_eq!(name.as_deref(), Some("Annie"));
        let none: Interaction = serde_json::from_value(json!({"id": "1", "type": 2})).unwrap();
        assert!(origin_of(&none).is_err());
    }
}
