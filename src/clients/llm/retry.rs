//! The one retry loop of the model adapters: an attempt either answers, fails for good, or
//! fails with a wait hint (429/529/5xx/timeout, `Retry-After` in seconds); retries back off
//! exponentially and never wait less than the hint.

use crate::ports::{ChatResponse, LlmError};
use std::future::Future;
use std::time::Duration;

/// An attempt's failure: the classified error and, if it may be retried, the wait hint.
pub type Failure = (LlmError, Option<u64>);

/// Runs `attempt` up to `attempts` times (at least once).
pub async fn with_retries<F, Fut>(attempts: u32, backoff: Duration, mut attempt: F) -> Result<ChatResponse, LlmError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ChatResponse, Failure>>,
{
    let mut n = 0;
    loop {
        match attempt().await {
            Ok(r) => return Ok(r),
            Err(f) => match retry_delay(n, attempts, backoff, &f) {
                Some(delay) => {
                    tokio::time::sleep(delay).await;
                    n += 1;
                }
                None => return Err(f.0),
            },
        }
    }
}

/// The wait before retry `n + 1` after failure `f` of attempt `n` (from 0), or `None` when
/// `f` is final (no wait hint, or `attempts` used up). Logs the retry. The streaming loops
/// use it directly: their attempt borrows the text sink, which a closure cannot lend.
pub fn retry_delay(n: u32, attempts: u32, backoff: Duration, f: &Failure) -> Option<Duration> {
    let wait = f.1?;
    if n + 1 >= attempts.max(1) {
        return None;
    }
    let delay = Duration::from_secs(wait).max(backoff * 2u32.saturating_pow(n));
    tracing::warn!(error = %f.0, attempt = n + 1, delay_ms = delay.as_millis() as u64, "model call failed; retrying");
    Some(delay)
}

/// Names the model that answered when the server left it out: the request's per-job model,
/// else the client's configured one (the transcript records who answered).
pub fn answered_by(mut r: ChatResponse, req_model: Option<&String>, configured: &str) -> ChatResponse {
    if r.model.is_empty() {
        r.model = req_model.cloned().unwrap_or_else(|| configured.to_string());
    }
    r
}

/// The upstream's own error message from an error body (`{"error":{"message":…}}`, as both
/// OpenAI and Anthropic send), else the start of the body.
pub fn error_detail(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(200).collect())
}

/// Classifies a provider's non-success status once, for every protocol: 429 and 5xx
/// (Anthropic's 529 "overloaded" included) retryable with their `Retry-After`, 401/403 refused
/// keys, anything else final with the upstream's own message.
pub async fn check_status(resp: reqwest::Response) -> Result<reqwest::Response, Failure> {
    let status = resp.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(resp);
    }
    let wait = crate::clients::retry_after(resp.headers(), 30);
    if status == 429 {
        return Err((LlmError::RateLimited, Some(wait.unwrap_or(0))));
    }
    if status == 401 || status == 403 {
        return Err((LlmError::Unauthorized(status), None));
    }
    let detail = resp.text().await.map(|t| error_detail(&t)).unwrap_or_default();
    Err((LlmError::Status { status, detail }, (status >= 500).then_some(wait.unwrap_or(0))))
}
