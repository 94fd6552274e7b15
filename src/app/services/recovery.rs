//! [`Recovery`]: sweeps, the ticker's pass, shutdown and drain.

use crate::app::{App, AppError, LAST_TICK_KEY, Wake};
use chrono::{DateTime, Utc};
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

    /// How many fires (job runs) run in this process now.
    pub fn running_fires(&self) -> usize {
        self.app.inner.fires.running()
    }

    /// When stored chat work next needs a process (docs/design.md#wakes), or None. With
    /// `exiting`, this process's own leases count as abandoned now.
    pub async fn stored_wake(&self, exiting: bool) -> Result<Option<DateTime<Utc>>, AppError> {
        self.app.stored_wake(exiting).await
    }

    /// Arms the timer provider's one-shot wake for stored chat work, if any waits.
    pub async fn arm_wake(&self, exiting: bool) -> Result<Wake, AppError> {
        self.app.arm_stored_wake(exiting).await
    }

    /// Whether the enabled jobs depend on this process's built-in ticker (no provider would
    /// wake a stopped process for them).
    pub async fn ticker_holds_jobs(&self) -> Result<bool, AppError> {
        self.app.ticker_holds_jobs().await
    }
}
