//! The one retry loop of outbound platform calls: temporary failures are retried with
//! exponential backoff, rate limits after the platform's own wait (capped), anything else
//! returned at once. A call that succeeded is never repeated, nor one whose outcome is
//! unknown (no answer after the request went out: it may have been delivered).

use crate::ports::DeliveryError;
use std::future::Future;
use std::time::Duration;

/// Attempts per outbound call.
pub const ATTEMPTS: u32 = 3;
/// Longest wait honoured from a platform's retry-after, in seconds.
const MAX_WAIT_SECS: u64 = 30;

/// Runs `call` up to [`ATTEMPTS`] times: `RateLimited(s)` waits `s` seconds (at most 30),
/// `Retryable` waits `backoff`, then twice that; other failures end at once. `what` names the
/// call in the logs.
pub async fn with_retry<T, F, Fut>(what: &str, backoff: Duration, mut call: F) -> Result<T, DeliveryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DeliveryError>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let wait = match call().await {
            Ok(v) => return Ok(v),
            Err(DeliveryError::RateLimited(s)) if attempt < ATTEMPTS => Duration::from_secs(s.min(MAX_WAIT_SECS)),
            Err(DeliveryError::Retryable(_)) if attempt < ATTEMPTS => backoff * 2u32.pow(attempt - 1),
            Err(e) => return Err(e),
        };
        tracing::warn!(call = what, attempt, delay_ms = wait.as_millis() as u64, "platform call failed; retrying");
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn retries_temporary_failures_and_stops_on_permanent_ones() {
        let calls = AtomicU32::new(0);
        let r = with_retry("t", Duration::from_millis(1), || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(DeliveryError::Retryable("5xx".into())),
                1 => Err(DeliveryError::RateLimited(0)),
                _ => Ok(7),
            }
        })
        .await;
        assert_eq!((r.unwrap(), calls.load(Ordering::SeqCst)), (7, 3));

        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry("t", Duration::from_millis(1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(DeliveryError::Permanent("403".into()))
        })
        .await;
        assert!(matches!(r, Err(DeliveryError::Permanent(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry("t", Duration::from_millis(1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(DeliveryError::Retryable("down".into()))
        })
        .await;
        assert!(matches!(r, Err(DeliveryError::Retryable(_))));
        assert_eq!(calls.load(Ordering::SeqCst), ATTEMPTS);

        // No answer after the request went out: it may have been delivered, so never again.
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry("t", Duration::from_millis(1), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(DeliveryError::Unknown("timed out".into()))
        })
        .await;
        assert!(matches!(r, Err(DeliveryError::Unknown(_))));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_refused_connection_is_retryable_and_a_lost_answer_is_unknown() {
        let http = crate::clients::http_client(Duration::from_millis(300));
        // Nothing listens here: the request never reached anyone.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let e = http.post(format!("http://127.0.0.1:{port}/x")).send().await.unwrap_err();
        assert!(matches!(crate::clients::send_failure(e), DeliveryError::Retryable(_)));
        // A server that reads the request and never answers.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(s);
        });
        let e = http.post(format!("http://{addr}/x")).body("hi").send().await.unwrap_err();
        assert!(matches!(crate::clients::send_failure(e), DeliveryError::Unknown(_)));
    }
}
