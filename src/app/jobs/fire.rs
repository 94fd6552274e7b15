//! The one fire path (docs/design.md#fire-path), shared by the ticker, Chronos, EventBridge and
//! manual runs: verify (done by the caller) → claim the occurrence, advance the job and store
//! the run's prompt in one conditional write → arm the next timer → run → deliver → record
//! (the run half is `jobs::run`).

use crate::app::cas::{again, retry_cas};
use crate::app::jobs::types::{Claimed, EARLY_TOLERANCE_SECS, RunStart, Step, ended_run};
use crate::app::types::{LEASE_MARGIN_SECS, TURN_BUDGET_SECS};
use crate::app::{App, AppError, FireStatus};
use crate::core::job::{Decision, Job, JobState, Occurrence, Overlap, RunOutcome, RunStatus, RunningMark, decide};
use crate::ports::Claim;
use chrono::{DateTime, Duration, Utc};

impl App {
    /// Fires the occurrence `fire_at` (default: the job's `next_run_at`) of a job.
    #[tracing::instrument(skip(self), fields(occurrence))]
    pub(in crate::app) async fn fire(&self, job_id: &str, fire_at: Option<DateTime<Utc>>, trigger: &str) -> Result<FireStatus, AppError> {
        let _running = self.inner.fires.enter();
        let step = match crate::core::retry::RetryKey::parse(job_id) {
            // A retry attempt (docs/design/jobs.md#retry): its own claim, then the same path.
            Some(key) => retry_cas(|| self.claim_retry(&key)).await?,
            None => retry_cas(|| self.claim_due(job_id, fire_at)).await?,
        };
        let Claimed { job: claimed, occ, start } = match step {
            Step::Done(FireStatus::Paused) => {
                tracing::info!(job_id, trigger, "paused: the job is paused, nothing runs");
                return Ok(FireStatus::Paused);
            }
            Step::Done(status) => return Ok(status),
            Step::Skipped(c) => return self.record_skipped(&c.job, &c.occ, trigger).await,
            Step::Claimed(c) => *c,
        };
        crate::app::crash::crash_point("fire:claimed");
        // Arm the next timer before running, so a crash mid-run skips at most this one (a
        // retry attempt's claim moved no timer: the job's stays as it was).
        if claimed.running.as_ref().is_none_or(|m| m.attempt <= 1) {
            self.rearm(&claimed).await;
        }
        crate::app::crash::crash_point("fire:armed");
        let (run, tail) = match start {
            None => self.record_missed(&claimed, &occ, trigger).await,
            Some(start) => self.run_job(&claimed, &occ, trigger, start).await,
        };
        crate::app::crash::crash_point("fire:ran");
        let next = self.finalize_with(&claimed, &run, tail).await?;
        crate::app::crash::crash_point("fire:finalized");
        // No reconcile here (docs/design.md#fire-path): the fired job's timer was armed once
        // above; the whole set is reconciled on job changes and by the ticker / watchdog.
        Ok(FireStatus::Ran { run: Box::new(run), next })
    }

    /// One attempt at the claim of an occurrence: decides what is due and claims it together
    /// with the job's advanced state. A lost job write comes back as `Conflict` (retried).
    async fn claim_due(&self, job_id: &str, fire_at: Option<DateTime<Utc>>) -> Result<Step, AppError> {
        let Some(job) = self.inner.store.get_job(job_id).await? else { return Ok(Step::Done(FireStatus::Gone)) };
        if job.enabled && job.state == JobState::Paused {
            // Every trigger honours pause (docs/design.md#fire-path): the timer follows the
            // job's state (a paused job has none).
            self.rearm(&job).await;
            return Ok(Step::Done(FireStatus::Paused));
        }
        if !job.enabled || !matches!(job.state, JobState::Scheduled | JobState::Running) {
            return Ok(Step::Done(FireStatus::Gone));
        }
        let Some(at) = fire_at.or(job.next_run_at) else { return Ok(Step::Done(FireStatus::Gone)) };
        let occ = Occurrence::new(&job.id, at);
        tracing::Span::current().record("occurrence", occ.key());
        let current = job.next_run_at.map(|n| Occurrence::new(&job.id, n).fire_at);
        if current != Some(occ.fire_at) {
            if self.inner.store.claim_status(&occ).await?.is_some() {
                return Ok(Step::Done(FireStatus::Duplicate));
            }
            self.rearm(&job).await;
            return Ok(Step::Done(FireStatus::Stale { next: job.next_run_at }));
        }
        let now = self.inner.clock.now();
        let tz = job.tz(self.inner.cfg.tz);
        let effective_now =
            if occ.fire_at > now && occ.fire_at - now <= Duration::seconds(EARLY_TOLERANCE_SECS) { occ.fire_at } else { now };
        let decision = decide(&job, occ.fire_at, effective_now, tz, self.inner.cfg.settings.cron.spread_seconds);
        match &decision {
            Decision::NotDue => {
                self.rearm(&job).await;
                return Ok(Step::Done(FireStatus::Stale { next: job.next_run_at }));
            }
            Decision::Run { late: true, .. } => tracing::warn!(job_id = %job.id, "late occurrence: running once, skipping the backlog"),
            _ => {}
        }
        if let (Decision::Run { .. }, Overlap::Skip, Some(mark)) = (&decision, job.overlap, &job.running) {
            if self.running_mark_live(mark) {
                return Ok(match self.claim_skipped(&job, &occ, effective_now, now).await? {
                    Some(j) => Step::Skipped(Box::new(Claimed { job: j, occ, start: None })),
                    None => Step::Done(FireStatus::Duplicate),
                });
            }
            // A stale mark (its run died or outlived its budget): record that run as
            // interrupted first, then decide again on the recovered job.
            self.recover_job(&job, false).await?;
            return again();
        }
        let adv = job.advance(&decision, occ.fire_at, &self.inner.live.owner, now);
        let start = match &decision {
            Decision::Run { .. } => Some(self.run_start(&job, &occ, now, None, 1).await),
            _ => None,
        };
        crate::app::crash::crash_point("fire:due");
        match self.inner.store.fire_claim(&occ, &adv, now, start.as_ref().and_then(RunStart::append).as_ref()).await? {
            Claim::Claimed(j) => Ok(Step::Claimed(Box::new(Claimed { job: *j, occ, start }))),
            Claim::Duplicate => {
                self.advance_past_claimed(&job, &decision, &occ, now).await?;
                Ok(Step::Done(FireStatus::Duplicate))
            }
        }
    }

    /// The job's current occurrence is claimed already, yet the job still points at it (its
    /// claimer's write did not advance it). The claim exists, so the work is done or owned:
    /// move the job past it (compare-and-set on the version read), or every later tick would
    /// fire the same occurrence and get `duplicate` forever.
    async fn advance_past_claimed(&self, job: &Job, decision: &Decision, occ: &Occurrence, now: DateTime<Utc>) -> Result<(), AppError> {
        let mut adv = job.advance(decision, occ.fire_at, &self.inner.live.owner, now);
        adv.running = None;
        if adv.state == JobState::Running {
            adv.state = if adv.next_run_at.is_some() { JobState::Scheduled } else { JobState::Completed };
        }
        let written = self.inner.store.put_job(&adv).await?;
        tracing::warn!(job_id = %job.id, occurrence = %occ.key(), next = ?written.next_run_at, "occurrence was claimed but the job had not moved past it; advanced it");
        self.rearm(&written).await;
        Ok(())
    }

    /// Runs a job now (manual `run`): its own occurrence at the current second, through the
    /// same claim; the schedule is not advanced. A second manual run within the same second
    /// takes the next free second (each manual run is its own occurrence). `prompt` is a
    /// one-time text for this run only (`## Run Context`), never stored on the job.
    pub(in crate::app) async fn run_now(&self, job_id: &str, prompt: Option<&str>) -> Result<FireStatus, AppError> {
        let _running = self.inner.fires.enter();
        let bump = std::sync::atomic::AtomicI64::new(0);
        let claimed = retry_cas(|| async {
            let Some(job) = self.inner.store.get_job(job_id).await? else { return Err(AppError::NotFound(format!("no job `{job_id}`"))) };
            if job.state == JobState::Paused {
                // A manual run honours pause too; the claim's version check makes a pause
                // written after this read a conflict, so this is read again.
                return Ok(None);
            }
            let now = self.inner.clock.now();
            let occ = Occurrence::manual(&job.id, now + Duration::seconds(bump.load(std::sync::atomic::Ordering::Relaxed)));
            let mut adv = job.clone();
            adv.last_run_at = Some(now);
            let start = self.run_start(&job, &occ, now, prompt, 1).await;
            match self.inner.store.fire_claim(&occ, &adv, now, start.append().as_ref()).await? {
                Claim::Claimed(j) => Ok(Some((*j, occ, start))),
                Claim::Duplicate => {
                    bump.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    again()
                }
            }
        })
        .await?;
        let Some((claimed, occ, start)) = claimed else {
            tracing::info!(job_id, trigger = "manual", "paused: the job is paused, nothing runs");
            return Ok(FireStatus::Paused);
        };
        let (run, tail) = self.run_job(&claimed, &occ, "manual", start).await;
        let next = self.finalize_with(&claimed, &run, tail).await?;
        Ok(FireStatus::Ran { run: Box::new(run), next })
    }

    /// Finds jobs left `running` by a process that died (or ran past its budget), records
    /// the occurrence as interrupted (never re-run) and puts the job back on its schedule.
    pub(in crate::app) async fn recover_jobs(&self, unclean_start: bool) -> Result<usize, AppError> {
        let mut n = 0;
        for job in self.inner.store.list_jobs().await?.into_iter().filter(|j| j.state == JobState::Running) {
            if self.recover_job(&job, unclean_start).await? {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether a running mark still proves a live run: its lease (start + turn budget +
    /// margin) is not abandoned by the lease rules (docs/design.md#lease).
    pub(super) fn running_mark_live(&self, mark: &RunningMark) -> bool {
        !self.lease_abandoned(&mark_lease(mark), false)
    }

    /// Recovers one job whose running mark is abandoned: the occurrence is recorded as
    /// interrupted (never re-run) and the job goes back on its schedule. False when the
    /// mark is live or gone, or the job changed meanwhile.
    pub(super) async fn recover_job(&self, job: &Job, unclean_start: bool) -> Result<bool, AppError> {
        let Some(mark) = job.running.clone() else { return Ok(false) };
        if !self.lease_abandoned(&mark_lease(&mark), unclean_start) {
            return Ok(false);
        }
        let mut j = job.clone();
        j.state = if j.next_run_at.is_some() { JobState::Scheduled } else { JobState::Completed };
        j.last_status = Some(RunStatus::Error);
        j.last_error = Some("interrupted: the process running this job stopped".into());
        j.running = None;
        if self.inner.store.put_job(&j).await.is_err() {
            return Ok(false);
        }
        let now = self.inner.clock.now();
        let occ = match mark.attempt {
            0 | 1 => Occurrence::new(&job.id, mark.fire_at),
            attempt => crate::core::retry::RetryKey { job_id: job.id.clone(), fire_at: mark.fire_at, attempt }.occurrence(),
        };
        let run = ended_run(&occ, "recovery", mark.started_at, now, RunOutcome::Interrupted, String::new(), j.last_error.clone());
        self.inner.store.finish_run(&run, self.inner.cfg.settings.cron.output_retention).await?;
        self.note_streak(&j, &run, None).await;
        tracing::warn!(job_id = %job.id, occurrence = %occ.key(), "job run interrupted by a crash; not re-run");
        Ok(true)
    }

    /// Asks the timer provider to match the job; failures are logged (reconcile retries).
    /// A paused, disabled or completed job is not armed: its timer is cancelled.
    /// A pending retry attempt's timer follows the same state (docs/design/jobs.md#retry).
    pub(in crate::app) async fn rearm(&self, job: &Job) {
        if let Err(e) = self.inner.timers.arm(job).await {
            tracing::error!(job_id = %job.id, provider = %self.inner.timers.provider(), error = %e, "could not arm the next timer; reconcile will retry");
            let _ =
                self.inner.store.put_meta("timers_last_error", &format!("{} {}: {e}", self.inner.clock.now().to_rfc3339(), job.id)).await;
        }
        self.rearm_retry(job).await;
    }
}

/// A running mark as a lease, judged by the lease rules: it expires at its start plus the turn
/// budget and margin (a run cannot outlive its budget).
fn mark_lease(mark: &RunningMark) -> crate::core::session::Lease {
    crate::core::session::Lease {
        token: String::new(),
        epoch: 0,
        owner: mark.owner.clone(),
        started_at: mark.started_at,
        expires_at: mark.expires_at(TURN_BUDGET_SECS, LEASE_MARGIN_SECS),
    }
}
