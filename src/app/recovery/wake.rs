//! Wakes for stored chat work (docs/design.md#wakes). Before a process goes idle (`serve
//! --idle-exit`, a shutdown, the end of a Lambda invocation) every stored message must have
//! someone to wake it: this finds when stored work next needs a process and arms the timer
//! provider's one-shot wake for it. Also counts the fires running here, so an idle check
//! does not stop a process in the middle of one.

use crate::app::{App, AppError};
use crate::core::timers::wake_at;
use chrono::{DateTime, Duration, Utc};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Lead of a wake for work that could run now: the process arming it is about to go idle,
/// and the callback should find it gone (or a fresh one) rather than mid-stop.
const WAKE_LEAD_SECS: i64 = 5;

/// What [`App::arm_stored_wake`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// Nothing stored waits.
    NotNeeded,
    /// A wake is armed with the provider for this time.
    Armed(DateTime<Utc>),
    /// Work waits (from this time) but the provider arms nothing: the built-in ticker of a
    /// running process is its only wake.
    Unarmed(DateTime<Utc>),
    /// Work waits (from this time) and the provider refused or was unreachable.
    Failed(DateTime<Utc>, String),
}

/// Fires running in this process.
#[derive(Debug, Default)]
pub(in crate::app) struct Fires(AtomicUsize);

/// Counts one running fire until dropped.
pub(in crate::app) struct FireGuard<'a>(&'a AtomicUsize);

impl Fires {
    /// Counts a fire until the guard drops.
    pub(in crate::app) fn enter(&self) -> FireGuard<'_> {
        self.0.fetch_add(1, Ordering::SeqCst);
        FireGuard(&self.0)
    }

    /// How many run now.
    pub(in crate::app) fn running(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Drop for FireGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl App {
    /// The earliest time stored chat work needs a process (`core::timers::wake_at` over the
    /// sweep's candidates), or None. With `exiting`, leases this process holds count as
    /// abandoned now: it is about to stop, and the next process takes them over at once.
    pub(in crate::app) async fn stored_wake(&self, exiting: bool) -> Result<Option<DateTime<Utc>>, AppError> {
        let now = self.inner.clock.now();
        let mut earliest: Option<DateTime<Utc>> = None;
        for key in self.inner.store.wake_candidates(now, true).await? {
            let Some(e) = self.inner.store.get_entry(&key).await? else { continue };
            let queued = !self.inner.store.queue_list(&key).await?.is_empty();
            let mine = exiting && e.lease.as_ref().is_some_and(|l| l.owner == self.inner.live.owner);
            let at = if mine { Some(now) } else { wake_at(&e, queued, now) };
            if let Some(at) = at {
                earliest = Some(earliest.map_or(at, |x| x.min(at)));
            }
        }
        Ok(earliest)
    }

    /// Arms the provider's one-shot wake for stored chat work, if any waits. Failures to arm
    /// are returned as [`Wake::Failed`] (and logged); store failures as errors.
    pub(in crate::app) async fn arm_stored_wake(&self, exiting: bool) -> Result<Wake, AppError> {
        let Some(at) = self.stored_wake(exiting).await? else { return Ok(Wake::NotNeeded) };
        let at = at.max(self.inner.clock.now() + Duration::seconds(WAKE_LEAD_SECS));
        let provider = self.inner.timers.provider();
        Ok(match self.inner.timers.arm_wake(at).await {
            Ok(true) => {
                tracing::info!(%provider, wake_at = %at, "stored chat work waits: one-shot wake armed");
                Wake::Armed(at)
            }
            Ok(false) => Wake::Unarmed(at),
            Err(e) => {
                tracing::error!(%provider, wake_at = %at, error = %e, "stored chat work waits and the wake could not be armed");
                Wake::Failed(at, e.to_string())
            }
        })
    }

    /// Whether only this process's built-in ticker can run the enabled jobs (nobody would
    /// wake a stopped process for them).
    pub(in crate::app) async fn ticker_holds_jobs(&self) -> Result<bool, AppError> {
        if self.inner.timers.provider().is_managed() {
            return Ok(false);
        }
        Ok(self.inner.store.list_jobs().await?.iter().any(crate::core::job::Job::armed))
    }
}
