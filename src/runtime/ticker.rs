//! The built-in ticker of `serve`: every `cron.tick_interval_seconds` it runs one tick —
//! the recovery sweep (interrupted turns, stored work without a running turn), due jobs
//! through the shared fire path, and a heartbeat record for `cron status`.

use crate::app::App;

pub use crate::app::LAST_TICK_KEY;

/// One ticker pass. With `wait`, returns only after the turns it started have finished
/// (what `hermes-zero cron tick` needs before exiting).
pub async fn tick(app: &App, wait: bool) {
    app.recovery().tick(wait).await;
}

/// Ticks forever (until the task is aborted), at the default profile's interval: the
/// default profile, then every other profile on disk (docs/design.md#profiles).
pub async fn run(profiles: std::sync::Arc<super::profiles::Profiles>) {
    let mut iv = tokio::time::interval(profiles.default().app.recovery().tick_interval());
    iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    iv.tick().await;
    loop {
        iv.tick().await;
        profiles.tick_all(false).await;
    }
}
