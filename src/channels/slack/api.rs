//! Slack Web API client: `chat.postMessage` (one message, in its thread), `chat.update`
//! (streaming edits), file downloads from `url_private` with the bot token and a size cap, and
//! the one classification of Slack's answers (HTTP 200 with `{"ok":false,"error":…}` is a
//! failure too).

use crate::channels::{Attachment, Sent};
use crate::clients::{describe, retry_after, send_failure};
use crate::ports::{DeliveryError, Target};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

/// Characters per message: Slack truncates `text` over 40,000 characters; Hermes sends at most
/// 39,000 (a margin for the escaping of `&`, `<` and `>`).
pub const LIMIT: usize = 39_000;

/// Slack `error` codes worth retrying (Slack's side failed, not the request).
const TEMPORARY: [&str; 4] = ["internal_error", "fatal_error", "service_unavailable", "request_timeout"];

/// A Slack Web API client, built once (its HTTP client is shared with the other channels).
pub struct SlackClient {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    pub(super) token: SecretString,
}

/// Escapes the three characters Slack reads as markup in `text` (`&`, `<`, `>`), so model
/// output cannot ping `<!channel>` or forge links.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl SlackClient {
    /// Client for `api_base` (e.g. `https://slack.com/api`) over `http`.
    pub fn new(http: reqwest::Client, api_base: &str, token: SecretString) -> Self {
        Self { http, base: api_base.trim_end_matches('/').to_string(), token }
    }

    async fn call(&self, method: &str, body: &Value) -> Result<Value, DeliveryError> {
        let resp = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(self.token.expose_secret())
            .json(body)
            .send()
            .await
            .map_err(send_failure)?;
        let status = resp.status().as_u16();
        let wait = retry_after(resp.headers(), 60);
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        classify(method, status, wait, v)
    }

    /// Posts one message (≤ [`LIMIT`]) to the target's channel, in its thread when it has one.
    /// The message's `ts` is its id (what `chat.update` edits).
    pub async fn post_message(&self, target: &Target, text: &str) -> Result<Sent, DeliveryError> {
        let mut body = json!({"channel": target.chat_id, "text": escape(text)});
        if let Some(thread) = &target.thread_id {
            body["thread_ts"] = json!(thread);
        }
        let v = self.call("chat.postMessage", &body).await?;
        Ok(Sent { message_id: v["ts"].as_str().map(str::to_string) })
    }

    /// Replaces the text of the message `ts` in the target's channel.
    pub async fn update(&self, target: &Target, ts: &str, text: &str) -> Result<(), DeliveryError> {
        self.call("chat.update", &json!({"channel": target.chat_id, "ts": ts, "text": escape(text)})).await.map(|_| ())
    }

    /// Downloads a file the user shared (`url_private`), with the bot token, refusing more than
    /// `max_bytes`. The token is sent only to Slack's hosts (or the configured API host).
    pub async fn download(&self, file: &Attachment, max_bytes: usize) -> Result<Vec<u8>, DeliveryError> {
        if file.size.is_some_and(|s| s > max_bytes as u64) {
            return Err(too_large(file, max_bytes));
        }
        if !self.trusted(&file.id) {
            return Err(DeliveryError::Permanent("not a Slack file URL".into()));
        }
        let resp = self.http.get(&file.id).bearer_auth(self.token.expose_secret()).send().await.map_err(send_failure)?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => {}
            429 => return Err(DeliveryError::RateLimited(retry_after(resp.headers(), 60).unwrap_or(1))),
            s if s >= 500 => return Err(DeliveryError::Retryable(format!("slack file HTTP {s}"))),
            s => return Err(DeliveryError::Permanent(format!("slack file HTTP {s}"))),
        }
        let mut resp = resp;
        let mut out = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| DeliveryError::Retryable(describe(e)))? {
            if out.len() + chunk.len() > max_bytes {
                return Err(too_large(file, max_bytes));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Whether `url` may receive the bot token: https on a `slack.com` host, or the configured
    /// API base's own host (a local fake in tests).
    fn trusted(&self, url: &str) -> bool {
        let (Ok(u), Ok(base)) = (url::Url::parse(url), url::Url::parse(&self.base)) else { return false };
        let host = u.host_str().unwrap_or_default();
        let slack = u.scheme() == "https" && (host == "slack.com" || host.ends_with(".slack.com"));
        slack || (u.scheme() == base.scheme() && u.host_str() == base.host_str() && u.port() == base.port())
    }
}

/// Over the cap: the app answers the user with the size and the limit.
fn too_large(file: &Attachment, _max_bytes: usize) -> DeliveryError {
    DeliveryError::TooLarge(file.size)
}

/// Classifies a Web API answer once: HTTP 429 or `ratelimited` → rate-limited with Slack's
/// `Retry-After`; HTTP 5xx or a temporary `error` → retryable; any other failure (`invalid_auth`,
/// `channel_not_found`, `msg_too_long`, …) → permanent.
pub fn classify(method: &str, status: u16, wait: Option<u64>, v: Value) -> Result<Value, DeliveryError> {
    let error = v["error"].as_str().unwrap_or("no error code").to_string();
    if (200..300).contains(&status) && v["ok"].as_bool() == Some(true) {
        return Ok(v);
    }
    Err(match status {
        429 => DeliveryError::RateLimited(wait.unwrap_or(1)),
        _ if error == "ratelimited" => DeliveryError::RateLimited(wait.unwrap_or(1)),
        s if s >= 500 => DeliveryError::Retryable(format!("slack {method} HTTP {s}: {error}")),
        s if (200..300).contains(&s) && TEMPORARY.contains(&error.as_str()) => DeliveryError::Retryable(format!("slack {method}: {error}")),
        s => DeliveryError::Permanent(format!("slack {method} HTTP {s}: {error}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_classified_once() {
        let ok = classify("chat.postMessage", 200, None, json!({"ok": true, "ts": "1.2"}));
        assert_eq!(ok.unwrap()["ts"], "1.2");
        let c = |status, wait, v| classify("chat.postMessage", status, wait, v).unwrap_err();
        assert!(matches!(c(429, Some(7), json!({"ok": false, "error": "ratelimited"})), DeliveryError::RateLimited(7)));
        assert!(matches!(c(200, None, json!({"ok": false, "error": "ratelimited"})), DeliveryError::RateLimited(1)));
        assert!(matches!(c(200, None, json!({"ok": false, "error": "invalid_auth"})), DeliveryError::Permanent(_)));
        assert!(matches!(c(200, None, json!({"ok": false, "error": "channel_not_found"})), DeliveryError::Permanent(_)));
        assert!(matches!(c(200, None, json!({"ok": false, "error": "internal_error"})), DeliveryError::Retryable(_)));
        assert!(matches!(c(503, None, Value::Null), DeliveryError::Retryable(_)));
        assert!(matches!(c(404, None, Value::Null), DeliveryError::Permanent(_)));
        assert!(matches!(c(200, None, Value::Null), DeliveryError::Permanent(_)), "an answer that is not Slack's");
    }

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(escape("a <!channel> & <@U1> > b"), "a &lt;!channel&gt; &amp; &lt;@U1&gt; &gt; b");
    }

    #[test]
    fn the_token_goes_only_to_slack_or_the_configured_host() {
        let c = SlackClient::new(
            crate::clients::client_builder().build().unwrap(),
            "http://127.0.0.1:9/api",
            SecretString::from("xoxb".to_string()),
        );
        assert!(c.trusted("https://files.slack.com/files-pri/T1-F1/a.png"));
        assert!(c.trusted("http://127.0.0.1:9/files/a.png"));
        assert!(!c.trusted("http://files.slack.com/files-pri/T1-F1/a.png"), "not https");
        assert!(!c.trusted("https://evil.example/slack.com/a.png"));
        assert!(!c.trusted("https://files.slack.com.evil.example/a.png"));
        assert!(!c.trusted("http://127.0.0.1:10/files/a.png"));
        assert!(!c.trusted("not a url"));
    }
}
