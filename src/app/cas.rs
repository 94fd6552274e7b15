//! The one compare-and-set retry loop: read, decide, write with the version read; when the
//! write loses ([`StoreError::Conflict`]) read again and decide again. Every use case that
//! updates a stored record goes through [`retry_cas`], so the retry policy lives in one place.

use crate::app::AppError;
use crate::ports::StoreError;

/// Attempts before a use case gives up with [`AppError::Contended`].
pub(crate) const CAS_RETRIES: usize = 64;

/// Runs `attempt` until it returns anything but a lost compare-and-set. Inside `attempt`, a
/// store write's `Conflict` (propagated with `?`) or an explicit [`again`] starts over with a
/// fresh read. After [`CAS_RETRIES`] losses: [`AppError::Contended`].
// A plain closure returning a future (not an async closure): the futures of async closures
// cannot yet be proven `Send` inside spawned tasks.
pub(crate) async fn retry_cas<T, F, Fut>(mut attempt: F) -> Result<T, AppError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, AppError>>,
{
    for _ in 0..CAS_RETRIES {
        match attempt().await {
            Err(AppError::Store(StoreError::Conflict(_))) => continue,
            other => return other,
        }
    }
    Err(AppError::Contended)
}

/// Inside [`retry_cas`]: start over with a fresh read (the state moved under us).
pub(crate) fn again<T>() -> Result<T, AppError> {
    Err(AppError::Store(StoreError::Conflict("state changed; reading again".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn retries_conflicts_and_stops_at_the_cap() {
        let mut n = 0;
        let r = retry_cas(|| {
            n += 1;
            let n = n;
            async move { if n < 3 { again() } else { Ok(n) } }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        let mut tries = 0;
        let r: Result<(), _> = retry_cas(|| {
            tries += 1;
            async { Err(StoreError::Conflict("x".into()).into()) }
        })
        .await;
        assert!(matches!(r, Err(AppError::Contended)));
        assert_eq!(tries, CAS_RETRIES);
        let r: Result<(), _> = retry_cas(|| async { Err(AppError::NotFound("gone".into())) }).await;
        assert!(matches!(r, Err(AppError::NotFound(_))), "other errors end at once");
    }
}
