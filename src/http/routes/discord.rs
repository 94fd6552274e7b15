//! `POST /webhooks/discord`: Discord's interactions endpoint. The Ed25519 signature is checked
//! on the raw body before anything is parsed; PING answers PONG; a slash command (`/ask` and
//! the session commands) becomes one inbound message on platform `discord`, answered at once
//! with a deferred response while the turn runs in the background, then with follow-ups of
//! the interaction. Knows no SQL and no session rule: those live in `app`.

use crate::app::REFUSAL;
use crate::app::inline::answering_inline;
use crate::app::{App, AppError, Inbound, Outcome};
use crate::clients::discord_interactions::InteractionClient;
use crate::config::BusyInputMode;
use crate::core::ids::{ChatType, Origin};
use crate::core::queue::{ACK_INTERRUPT, ACK_QUEUE};
use crate::http::HttpState;
use crate::http::error::ApiError;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signature, VerifyingKey};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Header with the hex Ed25519 signature (64 bytes).
pub const SIGNATURE_HEADER: &str = "x-signature-ed25519";
/// Header with the signed timestamp (unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-signature-timestamp";
/// Oldest accepted signature, in seconds; the same skew is tolerated ahead of the clock.
pub const MAX_AGE_SECS: i64 = 300;

const PING: u64 = 1;
const APPLICATION_COMMAND: u64 = 2;
const PONG: u64 = 1;
const CHANNEL_MESSAGE: u64 = 4;
const DEFERRED_CHANNEL_MESSAGE: u64 = 5;
/// Message flag: only the invoking user sees it.
const EPHEMERAL: u64 = 64;

const MODEL_APOLOGY: &str = "⚠️ Sorry, I couldn't reach the model just now. Your message is saved; please try again in a moment.";
const APOLOGY: &str = "⚠️ Sorry, something went wrong handling that. Please try again in a moment.";
const STOPPED: &str = "⏹ Stopped before answering.";
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

/// Where the follow-ups of one interaction go.
struct FollowupTo {
    application_id: String,
    token: String,
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn decode_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.trim().as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// Whether `sig_hex` (64 bytes, hex) is a valid Ed25519 signature by `public_key_hex`
/// (32 bytes, hex) over `timestamp` followed by `body`. Any malformed input is `false`.
pub fn verify(public_key_hex: &str, sig_hex: &str, timestamp: &str, body: &[u8]) -> bool {
    let (Some(key), Some(sig)) = (decode_hex::<32>(public_key_hex), decode_hex::<64>(sig_hex)) else { return false };
    let Ok(key) = VerifyingKey::from_bytes(&key) else { return false };
    let mut msg = Vec::with_capacity(timestamp.len() + body.len());
    msg.extend_from_slice(timestamp.as_bytes());
    msg.extend_from_slice(body);
    key.verify_strict(&msg, &Signature::from_bytes(&sig)).is_ok()
}

/// Whether a signature timestamp (unix seconds) is within [`MAX_AGE_SECS`] of `now`.
fn fresh(timestamp: &str, now: DateTime<Utc>) -> bool {
    timestamp.trim().parse::<i64>().is_ok_and(|t| (now.timestamp() - t).abs() <= MAX_AGE_SECS)
}

fn authorized(s: &HttpState, headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match (s.app.cfg.secrets.discord_public_key.as_deref(), header(SIGNATURE_HEADER), header(TIMESTAMP_HEADER)) {
        (Some(key), Some(sig), Some(ts)) => fresh(ts, s.app.clock.now()) && verify(key, sig, ts, body),
        _ => false,
    }
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, msg)
}

/// Handles one interaction: signature, then PING → PONG, or a slash command → deferred
/// response now and follow-ups when the turn is done.
pub async fn webhook(
    State(s): State<Arc<HttpState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let body = body.map_err(|r| {
        let status = r.status();
        let msg = if status == StatusCode::PAYLOAD_TOO_LARGE { "request body is larger than 1 MiB".to_string() } else { r.body_text() };
        ApiError::new(status, msg)
    })?;
    if !authorized(&s, &headers, &body) {
        return Err(ApiError::unauthorized());
    }
    let interaction: Interaction = serde_json::from_slice(&body).map_err(|e| bad(format!("not a Discord interaction: {e}")))?;
    match interaction.kind {
        PING => Ok(Json(json!({"type": PONG}))),
        APPLICATION_COMMAND => command(&s.app, interaction),
        other => Err(bad(format!("unsupported interaction type {other}"))),
    }
}

/// An immediate, ephemeral answer (no turn runs).
fn immediate(content: &str) -> Json<Value> {
    Json(json!({"type": CHANNEL_MESSAGE, "data": {"content": content, "flags": EPHEMERAL}}))
}

fn command(app: &App, i: Interaction) -> Result<Json<Value>, ApiError> {
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
    let msg = Inbound { origin, text, message_id, user_name };
    tokio::spawn(answer(app.clone(), FollowupTo { application_id, token }, msg));
    Ok(Json(json!({"type": DEFERRED_CHANNEL_MESSAGE})))
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
        c @ ("reset" | "stop" | "status" | "help") => Ok(format!("/{c}")),
        other => Err(format!("Unknown command `/{other}`. Try /help.")),
    }
}

/// The origin (channel, DM or guild, sender) and the sender's display name.
fn origin_of(i: &Interaction) -> Result<(Origin, Option<String>), ApiError> {
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

/// Runs the message through the app and sends what it produced as follow-ups. Replies to
/// this channel inside the run are marked as answered inline, so the bot channel API does
/// not post them a second time (see `app::inline::answered_inline`).
async fn answer(app: App, to: FollowupTo, msg: Inbound) {
    let channel = msg.origin.chat_id.clone();
    let result = answering_inline(channel, app.handle_inbound(msg)).await;
    let client = InteractionClient::new(&app.cfg.settings.platforms.discord.api_base);
    for text in followup_texts(&app, result) {
        if let Err(e) = client.followup(&to.application_id, &to.token, &text).await {
            tracing::error!(error = %e, "discord follow-up failed");
            return;
        }
    }
}

/// What the user sees for an outcome, one follow-up per entry: notices first, then the
/// reply. A duplicate gets nothing (the first delivery answered it).
fn followup_texts(app: &App, result: Result<Outcome, AppError>) -> Vec<String> {
    let out = match result {
        Ok(out) => out,
        Err(AppError::Model(_)) => return vec![MODEL_APOLOGY.to_string()],
        Err(e) => {
            tracing::error!(error = %e, "discord interaction failed");
            return vec![APOLOGY.to_string()];
        }
    };
    if out.duplicate {
        return Vec::new();
    }
    if out.refused {
        return vec![REFUSAL.to_string()];
    }
    if out.busy {
        let ack = if app.cfg.settings.busy_input_mode == BusyInputMode::Queue { ACK_QUEUE } else { ACK_INTERRUPT };
        return vec![ack.to_string()];
    }
    let mut texts = out.notices;
    texts.push(out.reply.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| STOPPED.to_string()));
    texts
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn data(v: Value) -> CommandData {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn verify_accepts_only_the_exact_signed_bytes() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let public = hex(&key.verifying_key().to_bytes());
        let other = hex(&SigningKey::from_bytes(&[8u8; 32]).verifying_key().to_bytes());
        let body = br#"{"type":1}"#;
        let sig = hex(&key.sign(&[b"1700000000".as_slice(), body].concat()).to_bytes());
        assert!(verify(&public, &sig, "1700000000", body));
        assert!(verify(&public.to_uppercase(), &sig.to_uppercase(), "1700000000", body));
        assert!(!verify(&other, &sig, "1700000000", body), "wrong key");
        assert!(!verify(&public, &sig, "1700000001", body), "other timestamp");
        assert!(!verify(&public, &sig, "1700000000", br#"{"type":2}"#), "tampered body");
        assert!(!verify(&public, &sig[..126], "1700000000", body), "short signature");
        assert!(!verify(&public, &format!("{}zz", &sig[..126]), "1700000000", body), "not hex");
        assert!(!verify("", &sig, "1700000000", body), "no key");
        assert!(!verify(&public[..62], &sig, "1700000000", body), "short key");
    }

    #[test]
    fn timestamps_older_than_five_minutes_are_stale() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        assert!(fresh("1700000000", now));
        assert!(fresh("1699999700", now));
        assert!(!fresh("1699999699", now));
        assert!(!fresh("1700000301", now));
        assert!(!fresh("soon", now));
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
            (json!({"name": "Help"}), Ok("/help")),
        ];
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
