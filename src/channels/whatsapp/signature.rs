//! Meta's webhook signature: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw
//! request body keyed with the app secret, checked in constant time.

use ring::hmac;

/// Header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// Whether `header` (`sha256=<64 hex digits>`) is the HMAC-SHA256 of `body` under `secret`.
pub fn verify(secret: &[u8], header: &str, body: &[u8]) -> bool {
    let Some(tag) = header.trim().strip_prefix("sha256=").and_then(decode_hex) else { return false };
    hmac::verify(&hmac::Key::new(hmac::HMAC_SHA256, secret), body, &tag).is_ok()
}

/// Hex digits (either case) to bytes; None for an odd length or a non-hex digit.
fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    s.as_bytes().chunks(2).map(|p| Some((digit(p[0])? * 16 + digit(p[1])?) as u8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &[u8], body: &[u8]) -> String {
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), body);
        format!("sha256={}", tag.as_ref().iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    #[test]
    fn accepts_the_documented_signature_and_nothing_else() {
        let body = br#"{"object":"whatsapp_business_account","entry":[]}"#;
        let good = sign(b"app-secret", body);
        assert!(verify(b"app-secret", &good, body));
        assert!(verify(b"app-secret", &good.to_ascii_uppercase().replace("SHA256=", "sha256="), body));
        assert!(!verify(b"other-secret", &good, body));
        assert!(!verify(b"app-secret", &good, b"{}"));
        assert!(!verify(b"app-secret", good.trim_start_matches("sha256="), body));
        assert!(!verify(b"app-secret", "sha256=zz", body));
        assert!(!verify(b"app-secret", "sha256=abc", body));
        assert!(!verify(b"app-secret", "", body));
    }

    #[test]
    fn a_known_vector() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let h = "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        assert!(verify(b"Jefe", h, b"what do ya want for nothing?"));
    }
}
