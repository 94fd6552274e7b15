//! Identity of conversations: [`Origin`], [`ChatType`], [`SessionKey`] and [`SessionId`].
//!
//! Owns the exact key and id formats of docs/design.md#sessions-keys. Knows nothing of storage or transport:
//! every value here is parsed once at the edge and cannot be invalid afterwards.

use chrono::{DateTime, TimeZone, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of conversation place a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatType {
    /// A one-to-one chat with the bot.
    Dm,
    /// A group chat (Telegram group/supergroup, Discord guild text channel).
    Group,
    /// A broadcast channel.
    Channel,
    /// A thread inside a group or channel.
    Thread,
}

impl ChatType {
    /// Parses the wire spelling (`dm`, `group`, `channel`, `thread`; Telegram's `private`
    /// and `supergroup` are accepted as `dm` and `group`).
    pub fn parse(s: &str) -> Result<Self, IdError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "dm" | "private" | "direct" => Ok(Self::Dm),
            "group" | "supergroup" => Ok(Self::Group),
            "channel" => Ok(Self::Channel),
            "thread" => Ok(Self::Thread),
            other => Err(IdError::ChatType(other.to_string())),
        }
    }

    /// The canonical spelling used in session keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dm => "dm",
            Self::Group => "group",
            Self::Channel => "channel",
            Self::Thread => "thread",
        }
    }
}

/// Errors from parsing identities at the edge.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IdError {
    /// Chat type not one of dm, group, channel, thread.
    #[error("unknown chat_type `{0}` (expected dm, group, channel or thread)")]
    ChatType(String),
    /// A required identifier part was empty.
    #[error("`{0}` must not be empty")]
    Empty(&'static str),
    /// An identifier part contained a character that would break the key format.
    #[error("`{0}` must not contain ':' or whitespace")]
    BadChar(&'static str),
    /// A session id did not have the `YYYYMMDD_HHMMSS_<8 hex>` shape.
    #[error("invalid session id `{0}` (expected YYYYMMDD_HHMMSS_xxxxxxxx)")]
    SessionId(String),
    /// A session key did not have the `agent:<profile>:…` shape.
    #[error("invalid session key `{0}`")]
    SessionKey(String),
}

/// Where a message came from and where replies go back to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Platform name: `telegram`, `discord`, `api`, `local`, `cron`, …
    pub platform: String,
    /// Chat (conversation place) id on that platform.
    pub chat_id: String,
    /// Kind of chat.
    pub chat_type: ChatType,
    /// The sending user, when known.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Thread/topic inside the chat, when any.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Human name of the chat, for listings.
    #[serde(default)]
    pub chat_name: Option<String>,
}

fn check_part(name: &'static str, v: &str) -> Result<(), IdError> {
    if v.is_empty() {
        return Err(IdError::Empty(name));
    }
    if v.contains(':') || v.chars().any(char::is_whitespace) {
        return Err(IdError::BadChar(name));
    }
    Ok(())
}

impl Origin {
    /// Builds an origin, refusing parts that would make an ambiguous session key.
    pub fn new(
        platform: &str,
        chat_id: &str,
        chat_type: ChatType,
        user_id: Option<&str>,
        thread_id: Option<&str>,
    ) -> Result<Self, IdError> {
        check_part("platform", platform)?;
        check_part("chat_id", chat_id)?;
        let user_id = user_id.filter(|s| !s.is_empty());
        let thread_id = thread_id.filter(|s| !s.is_empty());
        if let Some(u) = user_id {
            check_part("user_id", u)?;
        }
        if let Some(t) = thread_id {
            check_part("thread_id", t)?;
        }
        Ok(Self {
            platform: platform.to_string(),
            chat_id: chat_id.to_string(),
            chat_type,
            user_id: user_id.map(str::to_string),
            thread_id: thread_id.map(str::to_string),
            chat_name: None,
        })
    }
}

/// The per-key isolation switches of docs/design.md#sessions-keys.
#[derive(Debug, Clone, Copy)]
pub struct KeyRules {
    /// Add the user to group keys without a thread (default true).
    pub group_sessions_per_user: bool,
    /// Add the user to thread keys (default false).
    pub thread_sessions_per_user: bool,
}

impl Default for KeyRules {
    fn default() -> Self {
        Self { group_sessions_per_user: true, thread_sessions_per_user: false }
    }
}

/// Names a conversation place; never changes for that place.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionKey(String);

impl SessionKey {
    /// Derives the key of docs/design.md#sessions-keys from an origin, in profile `main`.
    pub fn derive(origin: &Origin, rules: KeyRules) -> Self {
        Self::derive_in(&super::profile::Profile::main(), origin, rules)
    }

    /// Derives the key of an origin in `profile`: `agent:<profile>:<platform>:…`
    /// (docs/design.md#profiles).
    pub fn derive_in(profile: &super::profile::Profile, origin: &Origin, rules: KeyRules) -> Self {
        let mut k = format!("agent:{profile}:{}:{}:{}", origin.platform, origin.chat_type.as_str(), origin.chat_id);
        if let Some(t) = &origin.thread_id {
            k.push(':');
            k.push_str(t);
        }
        if origin.chat_type != ChatType::Dm {
            let threaded = origin.thread_id.is_some() || origin.chat_type == ChatType::Thread;
            let per_user = if threaded {
                rules.thread_sessions_per_user
            } else {
                origin.chat_type == ChatType::Group && rules.group_sessions_per_user
            };
            if let (true, Some(u)) = (per_user, &origin.user_id) {
                k.push(':');
                k.push_str(u);
            }
        }
        Self(k)
    }

    /// Parses a stored or user-given key (shape check only).
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let parts: Vec<&str> = s.split(':').collect();
        let ok = parts.len() >= 5
            && parts[0] == "agent"
            && super::profile::Profile::parse(parts[1]).is_ok_and(|p| p.as_str() == parts[1])
            && parts.iter().all(|p| !p.is_empty() && !p.chars().any(char::is_whitespace));
        if ok { Ok(Self(s.to_string())) } else { Err(IdError::SessionKey(s.to_string())) }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The profile the key belongs to (its second part).
    pub fn profile(&self) -> &str {
        self.0.split(':').nth(1).unwrap_or(super::profile::MAIN)
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Names one conversation: `YYYYMMDD_HHMMSS_<8 lowercase hex>` (local time of the configured zone).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// A fresh id for `now` in `tz`, with 32 random bits.
    pub fn generate<Tz: TimeZone>(now: DateTime<Utc>, tz: &Tz) -> Self
    where
        Tz::Offset: fmt::Display,
    {
        let hex: u32 = rand::rng().random();
        Self(format!("{}_{hex:08x}", now.with_timezone(tz).format("%Y%m%d_%H%M%S")))
    }

    /// Wraps a non-chat session name such as `cron_<job>_<stamp>`; used for job runs.
    pub fn named(name: String) -> Self {
        Self(name)
    }

    /// Parses a chat session id (exact shape), a session id imported from Hermes
    /// (`YYYYMMDD_HHMMSS_` and 4–32 lowercase hex digits), or a cron run session name.
    pub fn parse(s: &str) -> Result<Self, IdError> {
        if is_chat_session_id(s) || is_hermes_session_id(s) || (s.starts_with("cron_") && !s.contains(char::is_whitespace)) {
            Ok(Self(s.to_string()))
        } else {
            Err(IdError::SessionId(s.to_string()))
        }
    }

    /// The id text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Hermes' own ids: the same date and time, then 6 (CLI) or 8 (gateway) hex digits.
fn is_hermes_session_id(s: &str) -> bool {
    let b = s.as_bytes();
    (20..=47).contains(&b.len())
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'_'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'_'
        && b[16..].iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

fn is_chat_session_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'_'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'_'
        && b[16..].iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn part() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_-]{1,12}"
    }

    #[test]
    fn dm_key_has_no_user_part() {
        let o = Origin::new("telegram", "42", ChatType::Dm, Some("7"), None).unwrap();
        assert_eq!(SessionKey::derive(&o, KeyRules::default()).as_str(), "agent:main:telegram:dm:42");
    }

    #[test]
    fn group_key_adds_user_by_default_and_thread_does_not() {
        let g = Origin::new("telegram", "-100", ChatType::Group, Some("7"), None).unwrap();
        assert_eq!(SessionKey::derive(&g, KeyRules::default()).as_str(), "agent:main:telegram:group:-100:7");
        let t = Origin::new("discord", "c", ChatType::Group, Some("7"), Some("t1")).unwrap();
        assert_eq!(SessionKey::derive(&t, KeyRules::default()).as_str(), "agent:main:discord:group:c:t1");
        let rules = KeyRules { group_sessions_per_user: false, thread_sessions_per_user: true };
        assert_eq!(SessionKey::derive(&g, rules).as_str(), "agent:main:telegram:group:-100");
        assert_eq!(SessionKey::derive(&t, rules).as_str(), "agent:main:discord:group:c:t1:7");
    }

    #[test]
    fn origin_rejects_colons_and_empty() {
        assert_eq!(Origin::new("api", "a:b", ChatType::Dm, None, None), Err(IdError::BadChar("chat_id")));
        assert_eq!(Origin::new("api", "", ChatType::Dm, None, None), Err(IdError::Empty("chat_id")));
        assert!(ChatType::parse("bogus").is_err());
        assert_eq!(ChatType::parse("private"), Ok(ChatType::Dm));
    }

    #[test]
    fn session_id_format() {
        let now = Utc.with_ymd_and_hms(2026, 12, 1, 7, 5, 9).unwrap();
        let id = SessionId::generate(now, &chrono_tz::Europe::Berlin);
        assert!(id.as_str().starts_with("20261201_080509_"), "{id}");
        assert!(SessionId::parse(id.as_str()).is_ok());
        assert!(SessionId::parse("20261201_080509_ABCDEF12").is_err());
        assert!(SessionId::parse("../etc").is_err());
        // Hermes' CLI ids carry 6 hex digits.
        assert!(SessionId::parse("20250305_091523_a1b2c3").is_ok());
        assert!(SessionId::parse("20250305_091523_a1b").is_err());
    }

    proptest! {
        #[test]
        fn key_is_parseable_and_prefix_stable(
            platform in "[a-z]{2,8}", chat in part(), user in proptest::option::of(part()),
            thread in proptest::option::of(part()), ct in 0usize..4, g: bool, t: bool,
        ) {
            let chat_type = [ChatType::Dm, ChatType::Group, ChatType::Channel, ChatType::Thread][ct];
            let o = Origin::new(&platform, &chat, chat_type, user.as_deref(), thread.as_deref()).unwrap();
            let rules = KeyRules { group_sessions_per_user: g, thread_sessions_per_user: t };
            let k = SessionKey::derive(&o, rules);
            let prefix = format!("agent:main:{platform}:{}:{chat}", chat_type.as_str());
            prop_assert!(k.as_str().starts_with(&prefix));
            prop_assert!(SessionKey::parse(k.as_str()).is_ok());
            // DMs never carry the user; the user part appears only under the switch rules.
            let has_user = user.as_ref().is_some_and(|u| k.as_str().ends_with(&format!(":{u}")) && k.as_str() != prefix && thread.as_deref() != Some(u.as_str()));
            if chat_type == ChatType::Dm { prop_assert_eq!(k.as_str().split(':').count(), 5 + usize::from(thread.is_some())); }
            let threaded = thread.is_some() || chat_type == ChatType::Thread;
            let expect_user = user.is_some() && chat_type != ChatType::Dm && if threaded { t } else { chat_type == ChatType::Group && g };
            let parts = 5 + usize::from(thread.is_some()) + usize::from(expect_user);
            prop_assert_eq!(k.as_str().split(':').count(), parts);
            if expect_user { prop_assert!(has_user || user.as_deref() == Some(chat.as_str())); }
            // Same origin, same key: derivation is a pure function.
            prop_assert_eq!(k, SessionKey::derive(&o, rules));
        }

        #[test]
        fn generated_ids_always_parse(secs in 0i64..4_102_444_800) {
            let now = Utc.timestamp_opt(secs, 0).unwrap();
            let id = SessionId::generate(now, &Utc);
            prop_assert!(SessionId::parse(id.as_str()).is_ok());
            prop_assert_eq!(&id.as_str()[..15], now.format("%Y%m%d_%H%M%S").to_string());
        }
    }
}
