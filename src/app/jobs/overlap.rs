//! Overlap (docs/design.md#overlap): an occurrence that comes due while the job's previous
//! run still runs (its stored running mark is live, whichever host set it) is claimed like a
//! run, so a duplicate fire still answers `duplicate`, but it is not run: the claim advances
//! the job's `next_run_at` and leaves the running run its mark, and the occurrence is
//! recorded `skipped`. A job with `overlap: allow` runs it instead (the fire path).

use crate::app::jobs::types::ended_run;
use crate::app::{App, AppError, FireStatus};
use crate::core::job::{Job, Occurrence, RunOutcome, RunStatus, decide};
use crate::ports::{Claim, FireFinish};
use chrono::{DateTime, Utc};

impl App {
    /// Claims `occ` as skipped: the job moves to its next occurrence (the previous run keeps
    /// its state, running mark and run count). Returns the written job, or `None` when the
    /// occurrence was claimed already (the job is then moved past it).
    pub(super) async fn claim_skipped(
        &self,
        job: &Job,
        occ: &Occurrence,
        effective_now: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Option<Job>, AppError> {
        // A skipped occurrence is not a run: it does not count toward `repeat`, so the next
        // occurrence is computed as if no limit were near.
        let mut unlimited = job.clone();
        unlimited.repeat.times = None;
        let tz = job.tz(self.inner.cfg.tz);
        let decision = decide(&unlimited, occ.fire_at, effective_now, tz, self.inner.cfg.settings.cron.spread_seconds);
        let mut adv = job.advance(&decision, occ.fire_at, &self.inner.live.owner, now);
        adv.state = job.state;
        adv.running = job.running.clone();
        adv.repeat = job.repeat;
        adv.last_run_at = job.last_run_at;
        adv.last_status = Some(RunStatus::Skipped);
        crate::app::crash::crash_point("fire:due");
        match self.inner.store.fire_claim(occ, &adv, now, None).await? {
            Claim::Claimed(j) => Ok(Some(*j)),
            Claim::Duplicate => {
                // Claimed already while the job still points at it: move the job past it
                // (compare-and-set on the version read), keeping the running run's mark.
                let written = self.inner.store.put_job(&adv).await?;
                self.rearm(&written).await;
                Ok(None)
            }
        }
    }

    /// Arms the next timer and records the skipped occurrence: its claim's status and a run
    /// record `skipped` naming the run that still runs. The job itself is left to that run.
    pub(super) async fn record_skipped(&self, job: &Job, occ: &Occurrence, trigger: &str) -> Result<FireStatus, AppError> {
        crate::app::crash::crash_point("fire:claimed");
        self.rearm(job).await;
        let now = self.inner.clock.now();
        let running = job.running.as_ref().map_or_else(String::new, |m| {
            format!(" (occurrence {} started {} by {})", m.fire_at.to_rfc3339(), m.started_at.to_rfc3339(), m.owner)
        });
        let error = format!("skipped: the previous run is still running{running}; set `overlap: allow` to run occurrences side by side");
        tracing::warn!(job_id = %job.id, occurrence = %occ.key(), trigger, "{error}");
        let run = ended_run(occ, trigger, now, now, RunOutcome::Skipped, String::new(), Some(error));
        let finish = FireFinish {
            run: run.clone(),
            retention: self.inner.cfg.settings.cron.output_retention,
            job: None,
            ledger: vec![],
            append: None,
            runs_hint: None,
        };
        self.inner.store.fire_finish(&finish).await?;
        self.note_streak(job, &run, None).await;
        crate::app::crash::crash_point("fire:finalized");
        Ok(FireStatus::Ran { run: Box::new(run), next: job.next_run_at })
    }
}

#[cfg(test)]
#[path = "overlap_tests.rs"]
mod tests;
