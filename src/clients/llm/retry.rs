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
    let attempts = attempts.max(1);
    let mut n = 0;
    loop {
        match attempt().await {
            Ok(r) => return Ok(r),
            Err((e, Some(wait))) if n + 1 < attempts => {
                let delay = Duration::from_secs(wait).max(backoff * 2u32.saturating_pow(n));
                tracing::warn!(error = %e, attempt = n + 1, delay_ms = delay.as_millis() as u64, "model call failed; retrying");
                tokio::time::sleep(delay).await;
                n += 1;
            }
            Err((e, _)) => return Err(e),
        }
    }
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
