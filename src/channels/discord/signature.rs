//! Discord's request signature: Ed25519 by the application's public key over the timestamp
//! header followed by the raw body, and a freshness window on that timestamp.

use chrono::{DateTime, Utc};
use ed25519_dalek::{Signature, VerifyingKey};

/// Header with the hex Ed25519 signature (64 bytes).
pub const SIGNATURE_HEADER: &str = "x-signature-ed25519";
/// Header with the signed timestamp (unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-signature-timestamp";
/// Oldest accepted signature, in seconds; the same skew is tolerated ahead of the clock.
pub const MAX_AGE_SECS: i64 = 300;

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
pub fn fresh(timestamp: &str, now: DateTime<Utc>) -> bool {
    timestamp.trim().parse::<i64>().is_ok_and(|t| (now.timestamp() - t).abs() <= MAX_AGE_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
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
}
