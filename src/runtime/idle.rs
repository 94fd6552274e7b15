//! `serve --idle-exit SECS` (docs/design.md#wakes): tracks inbound requests (`/healthz` does
//! not count) and decides when the process may stop: SECS without requests, no turn or fire
//! running here, and every piece of stored chat work either finished or covered by a wake
//! armed with the timer provider. With the built-in ticker and enabled jobs it never stops
//! (nobody else would wake it) and says so once.

use crate::app::{App, Wake};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How often the idle check looks.
const POLL: Duration = Duration::from_millis(250);

/// Inbound request activity of one `serve` process.
#[derive(Debug)]
pub struct Activity {
    last: Mutex<Instant>,
    in_flight: AtomicUsize,
}

impl Default for Activity {
    fn default() -> Self {
        Self { last: Mutex::new(Instant::now()), in_flight: AtomicUsize::new(0) }
    }
}

/// Marks a request in flight until dropped (also when the client goes away).
struct InFlight<'a>(&'a Activity);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Activity {
    fn touch(&self) {
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// The last moment a counted request was seen.
    fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether no counted request is in flight and none came for `idle`.
    fn quiet_for(&self, idle: Duration) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0 && self.last().elapsed() >= idle
    }
}

/// Middleware: counts every request except `GET /healthz` as activity.
pub async fn track(State(activity): State<Arc<Activity>>, req: Request, next: Next) -> Response {
    if req.uri().path() == "/healthz" {
        return next.run(req).await;
    }
    activity.in_flight.fetch_add(1, Ordering::SeqCst);
    activity.touch();
    let _guard = InFlight(&activity);
    next.run(req).await
}

/// Resolves when the process may exit for being idle `idle` (see the module doc). Work that
/// could run now is finished first (one sweep per quiet period); what still waits gets a wake
/// armed with the provider, or keeps the process up when nobody can be armed.
pub async fn wait(app: &App, activity: &Activity, idle: Duration) {
    let mut said_ticker = false;
    let mut swept_at: Option<Instant> = None;
    loop {
        tokio::time::sleep(POLL).await;
        let rec = app.recovery();
        if !activity.quiet_for(idle) || rec.running_turns() > 0 || rec.running_fires() > 0 {
            continue;
        }
        if rec.ticker_holds_jobs().await.unwrap_or(true) {
            if !said_ticker {
                tracing::info!("not exiting when idle: enabled jobs run on the built-in ticker and nobody else would wake this process");
                said_ticker = true;
            }
            // Look again after another quiet period (a job may be disabled meanwhile).
            activity.touch();
            continue;
        }
        let due = match rec.stored_wake(false).await {
            Ok(None) => return,
            Ok(Some(at)) => at <= app.now(),
            Err(e) => {
                tracing::warn!(error = %e, "idle check: cannot read stored work; staying up");
                activity.touch();
                continue;
            }
        };
        if due && swept_at.is_none_or(|t| activity.last() > t) {
            // Finish what can run now, then look again.
            swept_at = Some(Instant::now());
            if let Err(e) = rec.sweep(false, true).await {
                tracing::warn!(error = %e, "idle check: sweep failed");
            }
            continue;
        }
        match rec.arm_wake(false).await {
            Ok(Wake::NotNeeded | Wake::Armed(_)) => return,
            // Unarmed: the ticker of this process is the only wake, so it stays up. Failed:
            // logged by the arm. Either way, look again after another quiet period.
            Ok(Wake::Unarmed(_) | Wake::Failed(..)) | Err(_) => activity.touch(),
        }
    }
}
