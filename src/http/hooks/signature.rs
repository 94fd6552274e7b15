//! The signatures a webhook route accepts, as Hermes' `_validate_signature` takes them, in
//! its order: Svix (`svix-id`/`svix-timestamp`/`svix-signature`) and Standard Webhooks
//! (`webhook-id`/`webhook-timestamp`/`webhook-signature`, the same scheme), then GitHub's
//! `X-Hub-Signature-256`, GitLab's `X-Gitlab-Token`, Hermes' generic V2
//! `X-Webhook-Signature-V2` with `X-Webhook-Timestamp`, and its legacy body-only
//! `X-Webhook-Signature`. Timestamps must be within 300 s of now. Every comparison is
//! constant-time; nothing here parses the body.

use axum::http::HeaderMap;
use base64::Engine;
use ring::hmac;

/// Largest accepted distance between a signed timestamp and now, in seconds.
pub const TOLERANCE_SECS: i64 = 300;

/// Why a signature was refused (logged; the caller only learns "Invalid signature").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No recognised signature header.
    Missing,
    /// A signed timestamp is missing, malformed or outside the window (a stale delivery).
    Stale,
    /// The signature does not match.
    Mismatch,
}

/// The scheme that matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Svix or Standard Webhooks.
    StandardWebhooks,
    /// GitHub's HMAC-SHA256.
    GitHub,
    /// GitLab's token.
    GitLab,
    /// Hermes' generic HMAC with a timestamp.
    GenericV2,
    /// Hermes' legacy body-only HMAC (no replay protection).
    GenericV1,
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().trim()
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn key(secret: &[u8]) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret)
}

fn fresh(timestamp: &str, now: i64) -> Result<(), Refused> {
    let ts: i64 = timestamp.parse().map_err(|_| Refused::Stale)?;
    if (now - ts).abs() > TOLERANCE_SECS { Err(Refused::Stale) } else { Ok(()) }
}

/// Checks `body`'s signature against `secret` at unix time `now`.
pub fn verify(h: &HeaderMap, body: &[u8], secret: &str, now: i64) -> Result<Scheme, Refused> {
    for prefix in ["svix", "webhook"] {
        let (id, ts, sig) =
            (header(h, &format!("{prefix}-id")), header(h, &format!("{prefix}-timestamp")), header(h, &format!("{prefix}-signature")));
        if !(id.is_empty() && ts.is_empty() && sig.is_empty()) {
            return standard(id, ts, sig, body, secret, now).map(|()| Scheme::StandardWebhooks);
        }
    }
    let gh = header(h, "x-hub-signature-256");
    if !gh.is_empty() {
        let tag = gh.strip_prefix("sha256=").and_then(hex_decode).ok_or(Refused::Mismatch)?;
        return hmac::verify(&key(secret.as_bytes()), body, &tag).map(|()| Scheme::GitHub).map_err(|_| Refused::Mismatch);
    }
    let gl = header(h, "x-gitlab-token");
    if !gl.is_empty() {
        return if crate::http::extract::ct_eq(gl.as_bytes(), secret.as_bytes()) { Ok(Scheme::GitLab) } else { Err(Refused::Mismatch) };
    }
    // V2 commits to V2: a missing or stale timestamp never falls back to V1 (Hermes).
    let v2 = header(h, "x-webhook-signature-v2");
    if !v2.is_empty() {
        let ts = header(h, "x-webhook-timestamp");
        fresh(ts, now)?;
        let tag = hex_decode(v2).ok_or(Refused::Mismatch)?;
        let signed = [ts.as_bytes(), b".", body].concat();
        return hmac::verify(&key(secret.as_bytes()), &signed, &tag).map(|()| Scheme::GenericV2).map_err(|_| Refused::Mismatch);
    }
    let v1 = header(h, "x-webhook-signature");
    if !v1.is_empty() {
        let tag = hex_decode(v1).ok_or(Refused::Mismatch)?;
        return hmac::verify(&key(secret.as_bytes()), body, &tag).map(|()| Scheme::GenericV1).map_err(|_| Refused::Mismatch);
    }
    Err(Refused::Missing)
}

/// Svix / Standard Webhooks: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, any
/// of the space-separated signatures; a `whsec_` secret is base64 of the key, any other is
/// the key's bytes (Hermes is as permissive).
fn standard(id: &str, ts: &str, sig: &str, body: &[u8], secret: &str, now: i64) -> Result<(), Refused> {
    if id.is_empty() || ts.is_empty() || sig.is_empty() {
        return Err(Refused::Mismatch);
    }
    fresh(ts, now)?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let raw = match secret.strip_prefix("whsec_") {
        Some(enc) => b64.decode(enc).map_err(|_| Refused::Mismatch)?,
        None => secret.as_bytes().to_vec(),
    };
    let signed = [id.as_bytes(), b".", ts.as_bytes(), b".", body].concat();
    let k = key(&raw);
    let ok = sig
        .split_whitespace()
        .filter_map(|p| p.strip_prefix("v1,"))
        .filter_map(|s| b64.decode(s).ok())
        .any(|tag| hmac::verify(&k, &signed, &tag).is_ok());
    if ok { Ok(()) } else { Err(Refused::Mismatch) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn each_scheme_is_checked_and_stale_or_wrong_ones_refused() {
        let (body, now) = (br#"{"a":1}"#.as_slice(), 1_800_000_000i64);
        let tag = |msg: &[u8], k: &[u8]| hmac::sign(&key(k), msg).as_ref().to_vec();
        let gh = headers(&[("x-hub-signature-256", format!("sha256={}", hex(&tag(body, b"s"))))]);
        assert_eq!(verify(&gh, body, "s", now), Ok(Scheme::GitHub));
        assert_eq!(verify(&gh, body, "t", now), Err(Refused::Mismatch));
        assert_eq!(verify(&gh, b"{}", "s", now), Err(Refused::Mismatch));
        assert_eq!(verify(&headers(&[("x-gitlab-token", "s".into())]), body, "s", now), Ok(Scheme::GitLab));
        assert_eq!(verify(&headers(&[("x-gitlab-token", "x".into())]), body, "s", now), Err(Refused::Mismatch));
        let ts = now.to_string();
        let v2 = |t: &str| {
            headers(&[
                ("x-webhook-signature-v2", hex(&tag(&[t.as_bytes(), b".", body].concat(), b"s"))),
                ("x-webhook-timestamp", t.into()),
                ("x-webhook-signature", hex(&tag(body, b"s"))),
            ])
        };
        assert_eq!(verify(&v2(&ts), body, "s", now), Ok(Scheme::GenericV2));
        let old = (now - 301).to_string();
        assert_eq!(verify(&v2(&old), body, "s", now), Err(Refused::Stale), "no fallback to V1");
        assert_eq!(verify(&headers(&[("x-webhook-signature", hex(&tag(body, b"s")))]), body, "s", now), Ok(Scheme::GenericV1));
        let k = b"0123456789abcdef";
        let secret = format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(k));
        let sig = |t: &str| base64::engine::general_purpose::STANDARD.encode(tag(&[b"msg_1.", t.as_bytes(), b".", body].concat(), k));
        for p in ["svix", "webhook"] {
            let h = |t: &str, s: String| {
                headers(&[
                    (if p == "svix" { "svix-id" } else { "webhook-id" }, "msg_1".into()),
                    (if p == "svix" { "svix-timestamp" } else { "webhook-timestamp" }, t.into()),
                    (if p == "svix" { "svix-signature" } else { "webhook-signature" }, s),
                ])
            };
            assert_eq!(verify(&h(&ts, format!("v1,bad v1,{}", sig(&ts))), body, &secret, now), Ok(Scheme::StandardWebhooks));
            assert_eq!(verify(&h(&old, format!("v1,{}", sig(&old))), body, &secret, now), Err(Refused::Stale));
            assert_eq!(verify(&h(&ts, format!("v2,{}", sig(&ts))), body, &secret, now), Err(Refused::Mismatch));
        }
        assert_eq!(verify(&HeaderMap::new(), body, "s", now), Err(Refused::Missing));
    }
}
