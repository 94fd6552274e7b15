//! The start-up gate of `serve` (docs/design.md#recovery): the listener answers `GET /healthz`
//! as soon as the store is open, while start-up recovery (jobs.json sync, timer reconcile,
//! startup sweep) runs; every other request waits for that recovery, so no turn, webhook or
//! fire starts before the sweep has marked the interrupted turns.

use crate::http::error::ApiError;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Duration;
use tokio::sync::watch;

/// How long a request waits for start-up recovery before it is refused with 503.
pub const WAIT: Duration = Duration::from_secs(30);

/// Held by the router: whether start-up recovery has finished.
#[derive(Clone, Debug)]
pub struct Gate {
    open: watch::Receiver<bool>,
    wait: Duration,
}

/// Held by `serve`: opens the gate once recovery has finished. Dropped unopened (recovery
/// failed, the process exits), it refuses the waiting requests.
#[derive(Debug)]
pub struct Opener(watch::Sender<bool>);

impl Opener {
    /// Lets every request through from now on.
    pub fn open(&self) {
        let _ = self.0.send(true);
    }
}

/// A closed gate and its opener.
pub fn gate() -> (Opener, Gate) {
    gate_waiting(WAIT)
}

/// A closed gate whose requests wait at most `wait`.
fn gate_waiting(wait: Duration) -> (Opener, Gate) {
    let (tx, open) = watch::channel(false);
    (Opener(tx), Gate { open, wait })
}

/// Middleware: `GET /healthz` passes at once; any other request waits (up to [`WAIT`]) for the
/// gate to open, else gets 503.
pub async fn hold(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    if req.uri().path() != "/healthz" && !*gate.open.borrow() {
        let mut rx = gate.open.clone();
        if !matches!(tokio::time::timeout(gate.wait, rx.wait_for(|open| *open)).await, Ok(Ok(_))) {
            return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "starting: start-up recovery has not finished").into_response();
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    fn app(gate: Gate) -> Router {
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/api/status", get(|| async { "status" }))
            .layer(axum::middleware::from_fn_with_state(gate, hold))
    }

    async fn status(r: &Router, path: &str) -> StatusCode {
        r.clone().oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap().status()
    }

    /// Before the gate opens `/healthz` answers and every other route waits; it answers once
    /// the gate opens.
    #[tokio::test]
    async fn only_healthz_passes_a_closed_gate() {
        let (opener, gate) = gate();
        let r = app(gate);
        assert_eq!(status(&r, "/healthz").await, StatusCode::OK);
        let waiting = tokio::spawn({
            let r = r.clone();
            async move { status(&r, "/api/status").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a non-health route must wait for start-up recovery");
        opener.open();
        assert_eq!(waiting.await.unwrap(), StatusCode::OK);
        assert_eq!(status(&r, "/api/status").await, StatusCode::OK);
    }

    /// Recovery failed (the opener is dropped unopened): the waiting requests get 503.
    #[tokio::test]
    async fn a_dropped_gate_refuses() {
        let (opener, gate) = gate();
        let r = app(gate);
        let waiting = tokio::spawn({
            let r = r.clone();
            async move { status(&r, "/api/status").await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(opener);
        assert_eq!(waiting.await.unwrap(), StatusCode::SERVICE_UNAVAILABLE);
    }

    /// A request that waits longer than the gate's bound gets 503.
    #[tokio::test]
    async fn waiting_is_bounded() {
        let (_opener, gate) = gate_waiting(Duration::from_millis(30));
        assert_eq!(status(&app(gate), "/api/status").await, StatusCode::SERVICE_UNAVAILABLE);
    }
}
