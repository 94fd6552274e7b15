//! The timer port: whoever wakes the process for a job's next occurrence, and the built-in
//! provider that arms nothing because the ticker polls the store. Adapters live in `clients/`.

use crate::core::job::Job;
pub use crate::core::timers::{TimerProvider, WAKE_ID};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// Timer-provider failures, classified once.
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// Temporary (5xx, timeout) after retries.
    #[error("timer provider unavailable: {0}")]
    Unavailable(String),
    /// Refused (4xx): retrying will not help.
    #[error("timer provider refused: {0}")]
    Refused(String),
}

/// What a reconcile changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReconcileReport {
    /// Timers armed or moved.
    pub armed: usize,
    /// Timers cancelled.
    pub cancelled: usize,
    /// Timers already right.
    pub unchanged: usize,
}

/// Whoever wakes the process for the next occurrence of each job (Chronos, EventBridge, or
/// nobody: the built-in ticker polls the store).
#[async_trait]
pub trait Timers: Send + Sync {
    /// Which provider this is.
    fn provider(&self) -> TimerProvider;

    /// Tells the provider what its timers should call (the Lambda entry passes its own ARN from
    /// the invocation context). Providers that need no such target ignore it.
    fn learn_target(&self, _target: &str) {}

    /// Makes the provider's timer for `job` match `job.next_run_at` (cancels when the job is
    /// not armed).
    async fn arm(&self, job: &Job) -> Result<(), TimerError>;

    /// Removes the job's timer (unknown is fine).
    async fn cancel(&self, job_id: &str) -> Result<(), TimerError>;

    /// Compares the desired timers (`jobs`) with the provider's and fixes the difference.
    /// The wake timer ([`Timers::arm_wake`]) is not a job's and is left alone.
    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError>;

    /// Arms a one-shot wake at `at` for stored chat work (docs/design.md#wakes): its callback
    /// runs a recovery sweep (Chronos: the fire callback with `job_id` = [`WAKE_ID`];
    /// EventBridge: the watchdog event `{"hermes_zero_tick":{}}`). Returns false when the
    /// provider arms nothing (the built-in ticker: only a running process polls the store).
    async fn arm_wake(&self, _at: DateTime<Utc>) -> Result<bool, TimerError> {
        Ok(false)
    }
}

/// The built-in provider: nothing to arm, the ticker finds due jobs in the store.
#[derive(Debug, Default)]
pub struct PollingTimers;

#[async_trait]
impl Timers for PollingTimers {
    fn provider(&self) -> TimerProvider {
        TimerProvider::Builtin
    }
    async fn arm(&self, _job: &Job) -> Result<(), TimerError> {
        Ok(())
    }
    async fn cancel(&self, _job_id: &str) -> Result<(), TimerError> {
        Ok(())
    }
    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError> {
        Ok(ReconcileReport { unchanged: jobs.iter().filter(|j| j.armed()).count(), ..ReconcileReport::default() })
    }
}
