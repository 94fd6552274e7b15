//! The Graph API client of the WhatsApp Cloud API: `POST /{phone-number-id}/messages` (one
//! text message ≤ 4096 characters, failures classified once) and the two-step media download
//! (`GET /{media-id}` for a short-lived URL and the size, then the bytes, capped).

use crate::channels::Sent;
use crate::clients::{describe, retry_after, send_failure};
use crate::ports::DeliveryError;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

/// WhatsApp's text message length limit.
pub const LIMIT: usize = 4096;
/// Default `platforms.whatsapp.api_base`.
pub const DEFAULT_API_BASE: &str = "https://graph.facebook.com";
/// Default `platforms.whatsapp.api_version`.
pub const DEFAULT_API_VERSION: &str = "v21.0";
/// Wait after a rate limit that named none (Graph's throttling answers rarely carry
/// `Retry-After`), in seconds.
const RATE_LIMIT_WAIT: u64 = 5;
/// Longest `Retry-After` read from an answer, in seconds (the retry loop caps it further).
const RETRY_AFTER_CAP: u64 = 60;
/// Graph error codes that mean "slow down": application (4), account (80007), Cloud API
/// (130429) throughput and pair (131056) rate limits.
const RATE_LIMIT_CODES: &[i64] = &[4, 80007, 130429, 131056];

/// A Graph API client for one business phone number, built once.
pub struct GraphClient {
    pub(super) http: reqwest::Client,
    /// `{api_base}/{version}`.
    pub(super) base: String,
    pub(super) token: SecretString,
    pub(super) phone_number_id: String,
}

impl GraphClient {
    /// Client for `{api_base}/{version}` over `http`, sending from `phone_number_id`.
    pub fn new(http: reqwest::Client, api_base: &str, version: &str, token: SecretString, phone_number_id: String) -> Self {
        let base = format!("{}/{}", api_base.trim_end_matches('/'), version.trim_matches('/'));
        Self { http, base, token, phone_number_id }
    }

    /// Sends one text message (≤ 4096 characters) to the WhatsApp id `to`.
    pub async fn send_text(&self, to: &str, text: &str) -> Result<Sent, DeliveryError> {
        let url = format!("{}/{}/messages", self.base, self.phone_number_id);
        let body =
            json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "type": "text", "text": {"body": text}});
        let resp = self.http.post(url).bearer_auth(self.token.expose_secret()).json(&body).send().await.map_err(send_failure)?;
        let v = answer(resp).await?;
        Ok(Sent { message_id: v["messages"][0]["id"].as_str().map(str::to_string) })
    }

    /// Downloads the media `media_id`, refusing more than `max_bytes`: first by the size
    /// Graph announces, then while reading.
    pub async fn fetch_media(&self, media_id: &str, max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        // The id goes into a URL path: only Graph's own id characters.
        if media_id.is_empty() || !media_id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
            return Err(DeliveryError::Permanent(format!("not a WhatsApp media id: {:?}", truncate(media_id))));
        }
        let token = self.token.expose_secret();
        let meta = self.http.get(format!("{}/{media_id}", self.base)).bearer_auth(token).send().await.map_err(fetch_failure)?;
        let meta = answer(meta).await?;
        let Some(url) = meta["url"].as_str() else { return Err(DeliveryError::Permanent("the media answer has no url".into())) };
        too_big(meta["file_size"].as_u64(), max_bytes)?;
        // Meta documents that the download URL, although signed, needs the bearer token too.
        let mut resp = self.http.get(url).bearer_auth(token).send().await.map_err(fetch_failure)?;
        if !resp.status().is_success() {
            return Err(classify(resp.status().as_u16(), retry_after(resp.headers(), RETRY_AFTER_CAP), &Value::Null));
        }
        too_big(resp.content_length(), max_bytes)?;
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(fetch_failure)? {
            if bytes.len() + chunk.len() > max_bytes {
                return Err(over(None, max_bytes));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

/// The JSON of a successful Graph answer, or its failure classified.
pub(super) async fn answer(resp: reqwest::Response) -> Result<Value, DeliveryError> {
    let status = resp.status().as_u16();
    let wait = retry_after(resp.headers(), RETRY_AFTER_CAP);
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    if (200..300).contains(&status) { Ok(v) } else { Err(classify(status, wait, &v)) }
}

/// Classifies a Graph error answer (`{"error": {"message", "code", …}}`) once: rate limits
/// (HTTP 429 or a throttling code) wait `retry_after` or [`RATE_LIMIT_WAIT`], 5xx are
/// temporary, anything else (a rejected token, a bad recipient) is permanent.
pub fn classify(status: u16, retry_after: Option<u64>, v: &Value) -> DeliveryError {
    let code = v["error"]["code"].as_i64();
    let what = format!(
        "whatsapp HTTP {status}{}: {}",
        code.map(|c| format!(" (code {c})")).unwrap_or_default(),
        v["error"]["message"].as_str().unwrap_or("no message")
    );
    if status == 429 || code.is_some_and(|c| RATE_LIMIT_CODES.contains(&c)) {
        DeliveryError::RateLimited(retry_after.unwrap_or(RATE_LIMIT_WAIT))
    } else if status >= 500 {
        DeliveryError::Retryable(what)
    } else {
        DeliveryError::Permanent(what)
    }
}

/// A download that failed on the way: nothing was changed, so it can be tried again.
fn fetch_failure(e: reqwest::Error) -> DeliveryError {
    DeliveryError::Retryable(describe(e))
}

fn too_big(size: Option<u64>, max_bytes: usize) -> Result<(), DeliveryError> {
    match size {
        Some(n) if n > max_bytes as u64 => Err(over(Some(n), max_bytes)),
        _ => Ok(()),
    }
}

/// Over the cap: the app answers the user with the size and the limit.
fn over(size: Option<u64>, _max_bytes: usize) -> DeliveryError {
    DeliveryError::TooLarge(size)
}

fn truncate(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_errors_are_classified_once() {
        let err = |code: i64| json!({"error": {"message": "m", "type": "OAuthException", "code": code}});
        assert!(matches!(classify(429, Some(2), &Value::Null), DeliveryError::RateLimited(2)));
        assert!(matches!(classify(400, None, &err(131056)), DeliveryError::RateLimited(RATE_LIMIT_WAIT)));
        assert!(matches!(classify(400, None, &err(130429)), DeliveryError::RateLimited(_)));
        assert!(matches!(classify(403, Some(7), &err(4)), DeliveryError::RateLimited(7)));
        assert!(matches!(classify(400, None, &err(80007)), DeliveryError::RateLimited(_)));
        assert!(matches!(classify(503, None, &Value::Null), DeliveryError::Retryable(_)));
        match classify(401, None, &err(190)) {
            DeliveryError::Permanent(m) => assert!(m.contains("401") && m.contains("190"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(classify(400, None, &err(131030)), DeliveryError::Permanent(_)));
    }
}
