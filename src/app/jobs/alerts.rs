//! Failure alerts (docs/jobs.md#failure-alerts): after each recorded run, the job's failing
//! streak (`core::streak`) is stepped in the store with a compare-and-set on the record
//! `job_streak:<job_id>`, so whichever process writes the change that starts a streak sends
//! its one alert, and whichever ends it sends the one "recovered" line; a second process
//! (or a second host on the same store) sees the same streak. Both go to the job's
//! `failure_deliver`, else `cron.failure_deliver`, else the job's own targets, at most once
//! (no ledger: the compare-and-set is the guard, and a lost send is not repeated).
//!
//! A success after a success costs nothing: the streak is read only when the status the
//! job held before this run's record was a failing one (docs/design.md#store-cost).

use crate::app::App;
use crate::app::jobs::deliver::Resolved;
use crate::core::job::{Job, RunRecord, RunStatus};
use crate::core::streak::{self, Event, Notice, Streak};

/// The store record of a job's streak.
fn key(job_id: &str) -> String {
    format!("job_streak:{job_id}")
}

/// The value of a cleared streak (a non-empty marker: every store keeps it as written).
const CLEARED: &str = "-";

/// Compare-and-set attempts before a streak change is given up (and logged).
const ATTEMPTS: usize = 5;

impl App {
    /// Steps the failing streak of `job` with `run`'s outcome and sends what that calls for.
    /// `prior` is the job's `last_status` as this run's record found it (`None`: unknown).
    /// Failures here are logged: a run is recorded whatever its alert does.
    pub(in crate::app) async fn note_streak(&self, job: &Job, run: &RunRecord, prior: Option<Option<RunStatus>>) {
        let event = Event::of(run.status);
        if event == Event::Success && !streak::success_may_end_streak(prior) {
            return;
        }
        let key = key(&job.id);
        for _ in 0..ATTEMPTS {
            let raw = match self.inner.store.get_meta(&key).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(job_id = %job.id, error = %e, "could not read the job's failing streak; no alert for this run");
                    return;
                }
            };
            let prev: Option<Streak> = raw.as_deref().filter(|r| *r != CLEARED).and_then(|r| serde_json::from_str(r).ok());
            if event == Event::Success && prev.is_none() {
                return;
            }
            let (next, notice) = streak::step(prev.as_ref(), event, self.inner.clock.now());
            let new = next.as_ref().and_then(|s| serde_json::to_string(s).ok()).unwrap_or_else(|| CLEARED.to_string());
            match self.inner.store.swap_meta(&key, raw.as_deref(), &new).await {
                Ok(true) => {
                    let text = match notice {
                        Notice::None => return,
                        Notice::Alert => {
                            let error = run.error.clone().or_else(|| run.deliveries.iter().find_map(|d| d.error.clone()));
                            streak::alert_text(&job.name, run.status, error.as_deref(), &next.unwrap_or_default())
                        }
                        Notice::Recovered { runs, since } => streak::recovered_text(&job.name, runs, since),
                    };
                    self.send_notice(job, &text).await;
                    return;
                }
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(job_id = %job.id, error = %e, "could not write the job's failing streak; no alert for this run");
                    return;
                }
            }
        }
        tracing::warn!(job_id = %job.id, "the job's failing streak kept changing under this process; left to the next run");
    }

    /// Sends an alert or "recovered" line to the job's failure targets, each once.
    async fn send_notice(&self, job: &Job, text: &str) {
        let mut to = job.clone();
        to.deliver = match (&job.options.failure_deliver, &self.inner.cfg.settings.cron.failure_deliver) {
            (own, _) if !own.is_empty() => own.clone(),
            (_, default) if !default.is_empty() => default.clone(),
            _ => job.deliver.clone(),
        };
        tracing::warn!(job_id = %job.id, targets = ?to.deliver, "{text}");
        for (label, r) in self.resolve_targets(&to).await {
            let target = match r {
                Resolved::Chat(t) => t,
                Resolved::Local => continue,
                Resolved::Invalid(e) => {
                    tracing::warn!(job_id = %job.id, target = %label, error = %e, "failure alert not sent");
                    continue;
                }
            };
            let parts = match self.inner.delivery.parts(&target, text) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(job_id = %job.id, target = %label, error = %e, "failure alert not sent");
                    continue;
                }
            };
            for part in parts {
                if let Err(e) = self.inner.delivery.send_part(&target, &part).await {
                    tracing::warn!(job_id = %job.id, target = %label, error = %e, "failure alert not sent");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "alerts_tests.rs"]
pub(crate) mod tests;
