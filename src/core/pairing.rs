//! DM pairing rules as Hermes 0.19.0 (`gateway/pairing.py`, CONTRACT §17): an unknown DM
//! sender gets a one-time code, the operator approves it, the user is then allowed. Every
//! decision is a function of the state of one platform, `now` (epoch seconds, from the
//! clock port) and, for a new code, the caller's random source.
//!
//! The state of one platform is one record ([`PlatformPairing`]), written compare-and-set by
//! the app, so two processes approving the same code cannot both win.

use ring::digest::{SHA256, digest};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Hermes' unambiguous alphabet (no 0/O, 1/I).
pub const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// Characters in a code.
pub const CODE_LENGTH: usize = 8;
/// A code expires this long after it was made.
pub const CODE_TTL_SECONDS: f64 = 3600.0;
/// One code request per user per this long.
pub const RATE_LIMIT_SECONDS: f64 = 600.0;
/// How long a platform stays locked after too many failed approvals.
pub const LOCKOUT_SECONDS: f64 = 3600.0;
/// At most this many pending codes per platform.
pub const MAX_PENDING_PER_PLATFORM: usize = 3;
/// Failed approvals before the lockout.
pub const MAX_FAILED_ATTEMPTS: u32 = 5;

/// Hermes' message to an unknown DM sender (`gateway/run.py`), with this binary's command.
pub fn code_message(platform: &str, code: &str) -> String {
    format!(
        "Hi~ I don't recognize you yet!\n\nHere's your pairing code: `{code}`\n\nAsk the bot owner to run:\n`hermes-zero pairing approve {platform} {code}`"
    )
}

/// Hermes' answer when no code can be made (limits, lockout).
pub const TOO_MANY: &str = "Too many pairing requests right now~ Please try again later!";

/// A code waiting for approval. Only a salted SHA-256 of the code is kept, as Hermes does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// `sha256(salt || code)`, hex.
    pub hash: String,
    /// The salt, hex.
    pub salt: String,
    /// Who asked.
    pub user_id: String,
    /// Their display name.
    #[serde(default)]
    pub user_name: String,
    /// When (epoch seconds).
    pub created_at: f64,
}

/// An approved user, as in Hermes' `<platform>-approved.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approved {
    /// Their display name.
    #[serde(default)]
    pub user_name: String,
    /// When (epoch seconds).
    #[serde(default)]
    pub approved_at: f64,
}

/// The pairing state of one platform.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlatformPairing {
    /// Pending codes by entry id.
    #[serde(default)]
    pub pending: BTreeMap<String, Pending>,
    /// Approved users by user id.
    #[serde(default)]
    pub approved: BTreeMap<String, Approved>,
    /// Last code request of each user (epoch seconds).
    #[serde(default)]
    pub requests: BTreeMap<String, f64>,
    /// Failed approvals since the last lockout.
    #[serde(default)]
    pub failures: u32,
    /// Locked until (epoch seconds; 0 = never locked).
    #[serde(default)]
    pub lockout_until: f64,
}

/// What an unknown DM sender is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A new code: send [`code_message`].
    Code(String),
    /// No code can be made: send [`TOO_MANY`] (the request is recorded, so the next ones are silent).
    TooMany,
    /// Asked too recently: send nothing.
    Silent,
}

/// What approving a code did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// The user the code belonged to is approved.
    Approved {
        /// Their id.
        user_id: String,
        /// Their name.
        user_name: String,
    },
    /// No pending code matches (a failed attempt was counted).
    Invalid,
    /// The platform is locked after too many failed attempts.
    LockedOut,
}

/// `sha256(salt || code)` as lowercase hex.
pub fn hash_code(code: &str, salt: &[u8]) -> String {
    let mut buf = salt.to_vec();
    buf.extend_from_slice(code.as_bytes());
    hex(digest(&SHA256, &buf).as_ref())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok())).collect()
}

/// A code of [`CODE_LENGTH`] characters from [`ALPHABET`], each picked by `pick(n)` (a
/// uniform index below `n` from a cryptographic source in production).
pub fn make_code(mut pick: impl FnMut(usize) -> usize) -> String {
    (0..CODE_LENGTH).map(|_| char::from(ALPHABET[pick(ALPHABET.len()) % ALPHABET.len()])).collect()
}

/// Random material for one new code: the index picker, the salt and the entry id.
pub struct Fresh<'a> {
    /// Uniform index below its argument.
    pub pick: &'a mut dyn FnMut(usize) -> usize,
    /// 16 random bytes.
    pub salt: [u8; 16],
    /// 8 random bytes (the entry id, hex).
    pub id: [u8; 8],
}

impl PlatformPairing {
    /// Drops codes older than the TTL.
    pub fn cleanup(&mut self, now: f64) {
        self.pending.retain(|_, p| now - p.created_at <= CODE_TTL_SECONDS);
    }

    /// Whether failed approvals locked the platform.
    pub fn is_locked_out(&self, now: f64) -> bool {
        now < self.lockout_until
    }

    /// Whether `user` asked for a code within the rate limit.
    pub fn is_rate_limited(&self, user: &str, now: f64) -> bool {
        self.requests.get(user).is_some_and(|t| now - t < RATE_LIMIT_SECONDS)
    }

    /// Whether `user` is approved.
    pub fn is_approved(&self, user: &str) -> bool {
        self.approved.contains_key(user.trim())
    }

    /// An unknown DM sender's message, as `gateway/run.py` answers it.
    pub fn request(&mut self, user: &str, user_name: &str, now: f64, fresh: Fresh<'_>) -> Request {
        let user = user.trim();
        if self.is_rate_limited(user, now) {
            return Request::Silent;
        }
        self.cleanup(now);
        self.requests.insert(user.to_string(), now);
        if self.is_locked_out(now) || self.pending.len() >= MAX_PENDING_PER_PLATFORM {
            return Request::TooMany;
        }
        let code = make_code(fresh.pick);
        let entry = Pending {
            hash: hash_code(&code, &fresh.salt),
            salt: hex(&fresh.salt),
            user_id: user.to_string(),
            user_name: user_name.to_string(),
            created_at: now,
        };
        self.pending.insert(hex(&fresh.id), entry);
        Request::Code(code)
    }

    /// The operator approves `code` (any case, surrounding blanks ignored).
    pub fn approve(&mut self, code: &str, now: f64) -> Approval {
        self.cleanup(now);
        if self.is_locked_out(now) {
            return Approval::LockedOut;
        }
        let code = code.trim().to_uppercase();
        let found = self.pending.iter().find_map(|(id, p)| {
            let salt = unhex(&p.salt)?;
            let h = hash_code(&code, &salt);
            bool::from(subtle::ConstantTimeEq::ct_eq(h.as_bytes(), p.hash.as_bytes())).then(|| id.clone())
        });
        let Some(p) = found.and_then(|id| self.pending.remove(&id)) else {
            self.failures += 1;
            if self.failures >= MAX_FAILED_ATTEMPTS {
                self.lockout_until = now + LOCKOUT_SECONDS;
                self.failures = 0;
            }
            return Approval::Invalid;
        };
        self.approved.insert(p.user_id.clone(), Approved { user_name: p.user_name.clone(), approved_at: now });
        Approval::Approved { user_id: p.user_id, user_name: p.user_name }
    }

    /// Removes an approved user; false if they were not approved.
    pub fn revoke(&mut self, user: &str) -> bool {
        self.approved.remove(user.trim()).is_some()
    }
}

/// Whether `p` is a platform name as origins carry it: lowercase letters, digits, `_`, `-`.
pub fn is_platform_name(p: &str) -> bool {
    !p.is_empty() && p.len() <= 64 && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// What an unknown sender in a DM gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmBehavior {
    /// A pairing code (Hermes' `pair`).
    Pair,
    /// Nothing at all (Hermes' `ignore`).
    Ignore,
    /// One refusal text: where Hermes would not pair by default (an allow list is set and
    /// `unauthorized_dm_behavior` is not), this gateway keeps its refusal (docs/pairing.md).
    Refuse,
}

fn parse_behavior(v: Option<&str>) -> Option<DmBehavior> {
    match v.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        Some("pair") => Some(DmBehavior::Pair),
        Some("ignore") => Some(DmBehavior::Ignore),
        _ => None,
    }
}

/// Hermes' resolution (`authz_mixin._get_unauthorized_dm_behavior`): the platform's
/// `unauthorized_dm_behavior` wins; email is `ignore` unless its own key says `pair`; then
/// the top-level key; then, with nothing set, `pair` when the platform has no allow list
/// and the refusal when it has one. Values other than `pair`/`ignore` count as unset.
pub fn dm_behavior(platform: &str, own: Option<&str>, global: Option<&str>, has_allow_list: bool) -> DmBehavior {
    if let Some(b) = parse_behavior(own) {
        return b;
    }
    if platform == "email" {
        return DmBehavior::Ignore;
    }
    if let Some(b) = parse_behavior(global) {
        return b;
    }
    if has_allow_list { DmBehavior::Refuse } else { DmBehavior::Pair }
}

#[cfg(test)]
#[path = "pairing_tests.rs"]
mod tests;
