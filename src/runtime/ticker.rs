//! The built-in ticker of `serve`: every `cron.tick_interval_seconds` it runs one tick —
//! the recovery sweep (interrupted turns, stored work without a running turn), due jobs
//! through the shared fire path, and a heartbeat record for `cron status`.

use crate::app::App;
use std::time::Duration;

pub use crate::app::LAST_TICK_KEY;

/// One ticker pass. With `wait`, returns only after the turns it started have finished
/// (what `hermes-zero cron tick` needs before exiting).
pub async fn tick(app: &App, wait: bool) {
    if let Err(e) = app.sweep(false, wait).await {
        tracing::error!(error = %e, "tick: sweep failed");
    }
    if let Err(e) = app.tick_jobs(wait).await {
        tracing::error!(error = %e, "tick: job pass failed");
    }
    if app.timers.provider().is_managed() {
        let _ = app.reconcile_timers().await;
    }
    if let Err(e) = app.store.put_meta(LAST_TICK_KEY, &app.clock.now().to_rfc3339()).await {
        tracing::warn!(error = %e, "tick: could not record heartbeat");
    }
}

/// Ticks forever (until the task is aborted).
pub async fn run(app: App) {
    let period = Duration::from_secs(app.cfg.settings.cron.tick_interval_seconds.max(1));
    let mut iv = tokio::time::interval(period);
    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    iv.tick().await;
    loop {
        iv.tick().await;
        tick(&app, false).await;
    }
}
