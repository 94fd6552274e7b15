//! The session resource of Hermes' API server (`/api/sessions`, `gateway/platforms/
//! api_server.py` `_session_response`, `hermes_state.py` `list_sessions_rich`), as pure rules:
//! the client-safe session object, its preview and last activity from the transcript, the
//! Hermes session id a place of the API server is named by, the next title of a fork's
//! lineage, and the session note that keeps what our records lack (model, parent). No I/O.

use crate::core::ids::SessionKey;
use crate::core::session::{Message, Role};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `source` of the API server's own sessions, as Hermes names them.
pub const API_SERVER_SOURCE: &str = "api_server";
/// Name of the session note ([`SessionNote`]) kept next to a transcript.
pub const NOTE: &str = "api_session";
/// Default and largest page of `GET /api/sessions` (Hermes).
pub const LIST_DEFAULT: usize = 50;
/// Largest page of `GET /api/sessions` (Hermes).
pub const LIST_MAX: usize = 200;
/// Largest `offset` (Hermes).
pub const OFFSET_MAX: usize = 1_000_000;

/// What a conversation record does not hold and the session resource shows: kept as a
/// session note, written when a session is created or forked through `/api/sessions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionNote {
    /// The model named at creation (Hermes: the body's `model`, else the advertised one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session a fork was made from, as the client named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
}

/// One session as `/api/sessions` shows it (Hermes' `_session_response`, the fields this
/// gateway has; `null` where it has no value, never an invented one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionView {
    /// The id a client names it by: the Hermes session id of an API server session, else
    /// our conversation id.
    pub id: String,
    /// `api_server`, or the platform (`telegram`, `cron`, …).
    pub source: String,
    /// The place's user, when known (none for the API server's sessions).
    pub user_id: Option<String>,
    /// The model named at creation, else the one that answered last.
    pub model: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Start, epoch seconds.
    pub started_at: f64,
    /// End, epoch seconds.
    pub ended_at: Option<f64>,
    /// Why it ended.
    pub end_reason: Option<String>,
    /// Messages in the transcript.
    pub message_count: u64,
    /// Prompt tokens (known for a place's current conversation only).
    pub input_tokens: Option<u64>,
    /// Completion tokens (likewise).
    pub output_tokens: Option<u64>,
    /// The session a fork was made from.
    pub parent_session_id: Option<String>,
    /// The last message's time (else the start), epoch seconds.
    pub last_active: f64,
    /// The first user message, at most 60 characters and `...`.
    pub preview: String,
    /// Whether a system prompt snapshot is kept: never here (each turn builds its prompt).
    pub has_system_prompt: bool,
    /// Whether a model config snapshot is kept: never here.
    pub has_model_config: bool,
}

/// Epoch seconds with milliseconds, as Hermes' `time.time()` columns.
pub fn epoch(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

/// The Hermes session id of an API server place (`agent:<profile>:api:dm:<chat>`): the chat
/// id, which `X-Hermes-Session-Id: <chat>` names again; `None` for any other place.
pub fn hermes_id(key: &SessionKey) -> Option<&str> {
    let parts: Vec<&str> = key.as_str().split(':').collect();
    match parts.as_slice() {
        ["agent", _, "api", "dm", chat] => Some(chat),
        _ => None,
    }
}

/// Hermes' preview: the first user message, newlines as spaces, trimmed, cut at 60
/// characters with `...` (of its first 63).
pub fn preview(messages: &[Message]) -> String {
    let Some(first) = messages.iter().find(|m| m.role == Role::User) else { return String::new() };
    let raw: String = first.content.chars().take(63).map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    let raw = raw.trim();
    let text: String = raw.chars().take(60).collect();
    if raw.chars().count() > 60 { format!("{text}...") } else { text }
}

/// Hermes' `get_next_title_in_lineage`: `base` (without a ` #N` suffix) when no title uses
/// it, else `base #<highest N + 1>` (the unnumbered one counting as #1).
pub fn next_lineage_title<'a>(base_title: &str, titles: impl IntoIterator<Item = &'a str>) -> String {
    let base = split_number(base_title).map_or(base_title, |(b, _)| b);
    let prefix = format!("{base} #");
    let mut seen = false;
    let mut max = 1;
    for t in titles {
        if t == base || t.starts_with(&prefix) {
            seen = true;
            if let Some((_, n)) = split_number(t) {
                max = max.max(n);
            }
        }
    }
    if seen { format!("{base} #{}", max + 1) } else { base.to_string() }
}

/// `("base", N)` of a title ending in ` #N`.
fn split_number(t: &str) -> Option<(&str, u64)> {
    let (base, n) = t.rsplit_once(" #")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(())?;
    Some((base, n.parse().ok()?))
}

/// A fresh session id as Hermes makes one: `api_<epoch seconds>_<8 hex>`.
pub fn new_session_id(now: DateTime<Utc>, random: u32) -> String {
    format!("api_{}_{random:08x}", now.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn preview_is_hermes() {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let m = |r, t: &str| Message::text(r, t, at);
        assert_eq!(preview(&[m(Role::Assistant, "x"), m(Role::User, " hi\nthere ")]), "hi there");
        let long = "a".repeat(70);
        assert_eq!(preview(&[m(Role::User, &long)]), format!("{}...", "a".repeat(60)));
        assert_eq!(preview(&[m(Role::User, &"b".repeat(60))]), "b".repeat(60));
        assert_eq!(preview(&[]), "");
    }

    #[test]
    fn lineage_titles_count_up() {
        assert_eq!(next_lineage_title("trip", ["other"]), "trip");
        assert_eq!(next_lineage_title("trip", ["trip"]), "trip #2");
        assert_eq!(next_lineage_title("trip #2", ["trip", "trip #2", "trip #7", "trip #x"]), "trip #8");
        assert_eq!(next_lineage_title("fork", Vec::<&str>::new()), "fork");
    }

    #[test]
    fn only_api_dm_places_have_a_hermes_id() {
        let k = |s: &str| SessionKey::parse(s).unwrap();
        assert_eq!(hermes_id(&k("agent:main:api:dm:my-chat")), Some("my-chat"));
        assert_eq!(hermes_id(&k("agent:b:api:dm:x")), Some("x"));
        assert_eq!(hermes_id(&k("agent:main:telegram:dm:42")), None);
        assert_eq!(hermes_id(&k("agent:main:api:group:g:u")), None);
    }
}
