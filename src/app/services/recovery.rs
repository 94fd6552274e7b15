//! [`Recovery`]: sweeps, the ticker's pass, shutdown and drain.

use crate::app::{App, AppError, LAST_TICK_KEY};
use std::time::Duration;

/// Restart recovery, the periodic tick, and the clean-shutdown protocol. Cheap to clone.
#[derive(Clone)]
pub struct Recovery {
    pub(super) app: App,
}

impl Recovery {
    /// One ticker pass: the recovery sweep, due jobs through the shared fire path, timer
    /// reconciliation under a managed provider, and a heartbeat for `cron status`. With
    /// `wait`, returns only after the turns it started have finished. Failures are logged.
    pub async fn tick(&self, wait: bool) {
        if let Err(e) = self.app.sweep(false, wait).await {
            tracing::error!(error = %e, "tick: sweep failed");
        }
        if let Err(e) = self.app.tick_jobs(wait).await {
            tracing::error!(error = %e, "tick: job pass failed");
        }
        self.reconcile_if_managed().await;
        let now = self.app.now().to_rfc3339();
        if let Err(e) = self.app.inner.store.put_meta(LAST_TICK_KEY, &now).await {
            tracing::warn!(error = %e, "tick: could not record heartbeat");
        }
    }

    /// Reconciles the timers when a managed provider (Chronos, EventBridge) holds them;
    /// failures are logged by the reconciliation.
    pub async fn reconcile_if_managed(&self) {
        if self.app.provider().is_managed() {
            let _ = self.app.reconcile_timers().await;
        }
    }

    /// How often the built-in ticker runs (`cron.tick_interval_seconds`, at least 1 s).
    pub fn tick_interval(&self) -> Duration {
        Duration::from_secs(self.app.inner.cfg.settings.cron.tick_interval_seconds.max(1))
    }

    /// Finds interrupted turns and stored work without a running turn, and resumes them.
    pub async fn sweep(&self, unclean_start: bool, wait: bool) -> Result<usize, AppError> {
        self.app.sweep(unclean_start, wait).await
    }

    /// The startup sweep of `serve`: trusts the clean-shutdown marker; returns whether the
    /// last stop was unclean.
    pub async fn startup_sweep(&self) -> Result<bool, AppError> {
        self.app.startup_sweep().await
    }

    /// Stops taking turns, and notifies and marks the sessions running here.
    pub async fn begin_shutdown(&self) {
        self.app.begin_shutdown().await;
    }

    /// Waits for running turns up to `restart_drain_timeout`; writes the clean-shutdown
    /// marker only if the drain finished. Returns whether it did.
    pub async fn finish_shutdown(&self) -> bool {
        let timeout = Duration::from_secs(self.app.inner.cfg.settings.restart_drain_timeout);
        self.app.finish_shutdown(timeout).await
    }

    /// How many turns run in this process now.
    pub fn running_turns(&self) -> usize {
        self.app.inner.live.running().len()
    }
}
