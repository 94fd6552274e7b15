//! Retry of a run that had no effect (docs/design/jobs.md#retry): the claim of a retry
//! attempt (`retry~<job_id>~<fire_at>~<n>`, its own claim, so a duplicate attempt answers
//! `duplicate`), whether a failed run is retried and when ([`App::retry_plan`]), the
//! attempt's timer beside the job's, and the ticker's fire of a due job (its pending attempt
//! first). The rest of an attempt is the one fire path (`fire`, `run`).
//!
//! A run is retried only when it failed with the model unreachable, rate-limited or failing
//! with a 5xx (after the fallback chain), or timed out, before any tool call with an effect
//! started and before anything was delivered: such a run changed nothing outside its own
//! session, so running it again cannot double an effect, and the one delivery of the
//! occurrence (its answer, or its failure summary after the last attempt) is made by exactly
//! one attempt.

use crate::app::jobs::types::{Claimed, EARLY_TOLERANCE_SECS, Step};
use crate::app::{App, AppError, FireStatus};
use crate::core::job::{Job, JobState, RunningMark};
use crate::core::retry::{RetryDue, RetryKey, timer_job};
use crate::ports::Claim;
use chrono::{DateTime, Duration, Utc};

/// Why a job run failed, and whether the failure is one a retry may cure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::app) struct Failure {
    /// One line (or a few) saying what failed.
    pub text: String,
    /// The model was unreachable, rate-limited or failed with a 5xx, or the run timed out.
    pub transient: bool,
}

impl Failure {
    /// A failure no retry cures (a bad key, an empty answer, a missing skill, a failed script).
    pub fn permanent(text: impl Into<String>) -> Self {
        Self { text: text.into(), transient: false }
    }

    /// A failure of the agent turn, classified: only the model's transient failures count.
    pub fn of_turn(e: &AppError) -> Self {
        use crate::ports::LlmError;
        let transient = matches!(
            e,
            AppError::Model(LlmError::Unreachable(_) | LlmError::RateLimited) | AppError::Model(LlmError::Status { status: 500..=599, .. })
        );
        Self { text: e.to_string(), transient }
    }
}

impl App {
    /// One attempt at the claim of retry attempt `key`: `gone`, `paused`, `duplicate` or
    /// `stale` answers, or the claim with the job marked running that attempt.
    pub(super) async fn claim_retry(&self, key: &RetryKey) -> Result<Step, AppError> {
        let Some(job) = self.inner.store.get_job(&key.job_id).await? else { return Ok(Step::Done(FireStatus::Gone)) };
        let occ = key.occurrence();
        tracing::Span::current().record("occurrence", occ.key());
        if job.enabled && job.state == JobState::Paused {
            // A paused job's attempt runs nothing; its timers follow its state.
            self.rearm(&job).await;
            return Ok(Step::Done(FireStatus::Paused));
        }
        if !job.enabled || !matches!(job.state, JobState::Scheduled | JobState::Running) {
            return Ok(Step::Done(FireStatus::Gone));
        }
        let now = self.inner.clock.now();
        let pending = job.retry_due.as_ref().filter(|r| r.key(&job.id) == *key);
        let Some(due) = pending else {
            if self.inner.store.claim_status(&occ).await?.is_some() {
                return Ok(Step::Done(FireStatus::Duplicate));
            }
            return Ok(Step::Done(FireStatus::Stale { next: job.next_run_at }));
        };
        if due.at - now > Duration::seconds(EARLY_TOLERANCE_SECS) {
            self.rearm(&job).await;
            return Ok(Step::Done(FireStatus::Stale { next: job.next_run_at }));
        }
        if job.running.as_ref().is_some_and(|m| self.running_mark_live(m)) {
            // Another run of the job holds it (a later occurrence would have dropped this
            // attempt): the attempt waits for a later fire.
            return Ok(Step::Done(FireStatus::Stale { next: job.next_run_at }));
        }
        let mut adv = job.clone();
        adv.retry_due = None;
        adv.state = JobState::Running;
        adv.completed_at = None;
        adv.last_run_at = Some(now);
        adv.running =
            Some(RunningMark { owner: self.inner.live.owner.clone(), fire_at: key.fire_at, started_at: now, attempt: key.attempt });
        let start = self.run_start(&job, &occ, now, None, key.attempt).await;
        crate::app::crash::crash_point("fire:due");
        match self.inner.store.fire_claim(&occ, &adv, now, start.append().as_ref()).await? {
            Claim::Claimed(j) => Ok(Step::Claimed(Box::new(Claimed { job: *j, occ, start: Some(start) }))),
            Claim::Duplicate => Ok(Step::Done(FireStatus::Duplicate)),
        }
    }

    /// The attempt after a failed attempt `attempt` of the occurrence `fire_at` of `job`, if
    /// the failure may be retried: transient, before any call with an effect (`effect`), and
    /// with a delay left (the job's `retry`, else `cron.retry.delays`) that comes before the
    /// job's next occurrence. Manual runs are not retried (their caller sees the failure).
    pub(super) fn retry_plan(&self, job: &Job, fire_at: DateTime<Utc>, attempt: u32, failure: &Failure, effect: bool) -> Option<RetryDue> {
        if !failure.transient || effect {
            return None;
        }
        let delays = job.retry.as_deref().unwrap_or(&self.inner.cfg.settings.cron.retry.delays);
        crate::core::retry::plan(delays, fire_at, attempt, self.inner.clock.now(), job.next_run_at)
    }

    /// Arms (or cancels) the timer of the job's pending attempt beside the job's own
    /// (`rearm`): armed while the job is scheduled, cancelled when it is paused or disabled.
    pub(super) async fn rearm_retry(&self, job: &Job) {
        let Some(due) = &job.retry_due else { return };
        let res = match timer_job(job) {
            Some(t) => self.inner.timers.arm(&t).await,
            None => self.inner.timers.cancel(&due.key(&job.id).key()).await,
        };
        if let Err(e) = res {
            tracing::error!(job_id = %job.id, attempt = due.attempt, error = %e, "could not arm the retry's timer; reconcile will retry");
        }
    }

    /// The ticker's fire of a job found due before `before`: its pending attempt first, when
    /// due, then its occurrence, when due (one after the other: an attempt running would
    /// make the occurrence `skipped`).
    pub(in crate::app) async fn fire_due(&self, job: &Job, before: DateTime<Utc>, trigger: &str) -> Result<Option<FireStatus>, AppError> {
        let mut last = None;
        if let Some(due) = job.retry_due.as_ref().filter(|r| r.at <= before) {
            last = Some(self.fire(&due.key(&job.id).key(), None, trigger).await?);
        }
        if job.next_run_at.is_some_and(|n| n <= before) {
            last = Some(self.fire(&job.id, job.next_run_at, trigger).await?);
        }
        Ok(last)
    }
}
