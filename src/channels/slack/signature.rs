//! Slack's request signature (v0): `v0=` + hex HMAC-SHA256, keyed with the app's signing
//! secret, of `v0:{X-Slack-Request-Timestamp}:{raw body}`; a 300 s freshness window on that
//! timestamp; and a small in-memory cache of the signatures seen inside the window, so the
//! very same signed request replayed is refused.

use chrono::{DateTime, Utc};
use ring::hmac;
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

/// Header with the signature (`v0=<64 hex>`).
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// Header with the signed timestamp (unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// Oldest accepted timestamp, in seconds; the same skew is tolerated ahead of the clock.
pub const MAX_AGE_SECS: i64 = 300;
/// Signatures remembered at most (the oldest are forgotten first).
const REPLAY_CAPACITY: usize = 4096;

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn decode_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim().as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
        *o = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// The signature Slack sends for `body` at `timestamp` (`v0=<hex>`).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(format!("v0:{timestamp}:").as_bytes());
    ctx.update(body);
    let tag = ctx.sign();
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("v0={hex}")
}

/// Whether `signature` (`v0=<64 hex>`) is the HMAC-SHA256 by `secret` of
/// `v0:{timestamp}:{body}`, compared in constant time. Anything malformed is `false`.
pub fn verify(secret: &str, signature: &str, timestamp: &str, body: &[u8]) -> bool {
    let Some(tag) = signature.trim().strip_prefix("v0=").and_then(decode_hex32) else { return false };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut msg = Vec::with_capacity(timestamp.len() + body.len() + 4);
    msg.extend_from_slice(b"v0:");
    msg.extend_from_slice(timestamp.as_bytes());
    msg.push(b':');
    msg.extend_from_slice(body);
    hmac::verify(&key, &msg, &tag).is_ok()
}

/// The signed timestamp when it is within [`MAX_AGE_SECS`] of `now`.
pub fn fresh(timestamp: &str, now: DateTime<Utc>) -> Option<i64> {
    timestamp.trim().parse::<i64>().ok().filter(|t| (now.timestamp() - t).abs() <= MAX_AGE_SECS)
}

/// The signatures accepted within the freshness window (bounded; per process).
#[derive(Default)]
pub struct ReplayCache {
    inner: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    order: VecDeque<(i64, String)>,
    set: HashSet<String>,
}

impl ReplayCache {
    /// Records `signature` (signed at `ts`); false when it was already seen. Entries older than
    /// the window are forgotten (a request that old is refused as stale anyway).
    pub fn first_time(&self, signature: &str, ts: i64, now: DateTime<Utc>) -> bool {
        let mut seen = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let oldest = now.timestamp() - MAX_AGE_SECS;
        while let Some((t, sig)) = seen.order.front().cloned() {
            if t >= oldest && seen.order.len() < REPLAY_CAPACITY {
                break;
            }
            seen.order.pop_front();
            seen.set.remove(&sig);
        }
        if !seen.set.insert(signature.to_string()) {
            return false;
        }
        seen.order.push_back((ts, signature.to_string()));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slack's documented example (api.slack.com/authentication/verifying-requests-from-slack).
    const DOC_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const DOC_TS: &str = "1531420618";
    const DOC_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const DOC_SIG: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    #[test]
    fn verify_matches_slacks_documented_example() {
        assert_eq!(sign(DOC_SECRET, DOC_TS, DOC_BODY.as_bytes()), DOC_SIG);
        assert!(verify(DOC_SECRET, DOC_SIG, DOC_TS, DOC_BODY.as_bytes()));
        assert!(verify(DOC_SECRET, &DOC_SIG.to_uppercase().replace("V0=", "v0="), DOC_TS, DOC_BODY.as_bytes()));
    }

    #[test]
    fn verify_refuses_anything_but_the_exact_signed_bytes() {
        let body = br#"{"type":"event_callback"}"#;
        let sig = sign("s3cret", "1700000000", body);
        assert!(verify("s3cret", &sig, "1700000000", body));
        assert!(!verify("other", &sig, "1700000000", body), "wrong secret");
        assert!(!verify("s3cret", &sig, "1700000001", body), "other timestamp");
        assert!(!verify("s3cret", &sig, "1700000000", br#"{"type":"event_callbacK"}"#), "tampered body");
        assert!(!verify("s3cret", &sig["v0=".len()..], "1700000000", body), "no version prefix");
        assert!(!verify("s3cret", &sig.replace("v0=", "v1="), "1700000000", body), "other version");
        assert!(!verify("s3cret", &sig[..66], "1700000000", body), "short");
        assert!(!verify("s3cret", &format!("{}zz", &sig[..65]), "1700000000", body), "not hex");
        assert!(!verify("s3cret", "", "1700000000", body), "empty");
    }

    #[test]
    fn timestamps_outside_five_minutes_are_stale() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        assert_eq!(fresh("1700000000", now), Some(1_700_000_000));
        assert!(fresh("1699999700", now).is_some());
        assert!(fresh("1699999699", now).is_none());
        assert!(fresh("1700000300", now).is_some());
        assert!(fresh("1700000301", now).is_none());
        assert!(fresh("soon", now).is_none());
        assert!(fresh("", now).is_none());
    }

    #[test]
    fn a_signature_is_accepted_once_and_the_cache_stays_bounded() {
        let now = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let cache = ReplayCache::default();
        assert!(cache.first_time("v0=a", 1_700_000_000, now));
        assert!(!cache.first_time("v0=a", 1_700_000_000, now), "replayed");
        assert!(cache.first_time("v0=b", 1_700_000_000, now));
        // Past the window the entry is forgotten (the stale check refuses such a request first).
        let later = now + chrono::Duration::seconds(MAX_AGE_SECS + 1);
        assert!(cache.first_time("v0=a", 1_700_000_301, later));
        for i in 0..(REPLAY_CAPACITY * 2) {
            assert!(cache.first_time(&format!("v0={i}"), 1_700_000_301, later));
        }
        let seen = cache.inner.lock().unwrap();
        assert!(seen.order.len() <= REPLAY_CAPACITY && seen.set.len() == seen.order.len());
    }
}
