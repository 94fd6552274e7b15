//! Outbound clients (adapters of the `Llm` and `Timers` ports; chat platforms are `channels`). Each is built once at
//! startup, has timeouts, and classifies failures once (retryable / permanent /
//! unauthorized / rate-limited with retry-after).

#[cfg(feature = "aws")]
pub mod eventbridge;
pub mod jwks;
pub mod llm;
pub mod mcp;
pub mod nas;
pub mod stt;

use std::time::Duration;

/// A shared HTTP client with a total-request timeout. rustls only.
pub fn http_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("hermes-zero/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Seconds from a `Retry-After` header (delta-seconds form), capped at `cap`.
pub fn retry_after(headers: &reqwest::header::HeaderMap, cap: u64) -> Option<u64> {
    headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<f64>().ok().map(|s| (s.ceil().max(0.0) as u64).min(cap))
}

/// Classifies a platform call that got no HTTP answer (docs/design.md#delivery). A connection
/// that was never made is `Retryable`: nothing reached the platform. Anything else (a timeout
/// after the request went out, a connection cut before the answer) is `Unknown`: the platform
/// may have taken the message, so it is never sent again.
pub fn send_failure(e: reqwest::Error) -> crate::ports::DeliveryError {
    use crate::ports::DeliveryError;
    if e.is_connect() { DeliveryError::Retryable(describe(e)) } else { DeliveryError::Unknown(describe(e)) }
}

/// Describes a transport error without its URL (URLs can carry tokens, e.g. Telegram's).
pub fn describe(e: reqwest::Error) -> String {
    let timeout = e.is_timeout();
    let e = e.without_url();
    if timeout { format!("timed out ({e})") } else { e.to_string() }
}
