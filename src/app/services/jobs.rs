//! [`Jobs`]: everything the edges do with scheduled jobs.

use crate::app::jobs::fire_token::{FireAuth, FireClaims, FireTokenError};
use crate::app::{App, AppError, FireStatus, SyncReport};
use crate::config::FireMode;
use crate::core::job::{Job, RunRecord};
use crate::core::jobfile::{self, JobSpec, SkippedJob};
use crate::ports::ReconcileReport;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Scheduled jobs: CRUD, jobs.json sync, fires and manual runs, run history, timers and the
/// scheduler's status. Cheap to clone.
#[derive(Clone)]
pub struct Jobs {
    pub(super) app: App,
}

impl Jobs {
    /// Every stored job.
    pub async fn list(&self) -> Result<Vec<Job>, AppError> {
        Ok(self.app.inner.store.list_jobs().await?)
    }

    /// The jobs.json entries the last sync skipped, with their reasons.
    pub async fn skipped(&self) -> Result<Vec<SkippedJob>, AppError> {
        self.app.skipped_jobs().await
    }

    /// Parses a jobs.json-style object against the app's clock and timezone.
    pub fn parse(&self, v: &Value) -> Result<JobSpec, AppError> {
        jobfile::parse_job(v, self.app.now(), self.app.timezone()).map_err(AppError::BadRequest)
    }

    /// Creates a job from a parsed spec (`declared`: it comes from jobs.json). The operator's
    /// jobs are held to the delivery policy too (docs/who-sees-what.md).
    pub async fn create(&self, spec: JobSpec, declared: bool) -> Result<Job, AppError> {
        self.app.create_job(spec, declared, None).await
    }

    /// Creates a job from a jobs.json-style object (API, CLI).
    pub async fn add(&self, v: &Value) -> Result<Job, AppError> {
        let spec = self.parse(v)?;
        self.create(spec, false).await
    }

    /// A job by id or name.
    pub async fn find(&self, id_or_name: &str) -> Result<Job, AppError> {
        self.app.find_job(id_or_name).await
    }

    /// Updates definition fields from a JSON patch.
    pub async fn update(&self, id: &str, patch: &Value) -> Result<Job, AppError> {
        self.app.update_job(id, patch, None).await
    }

    /// Pauses or resumes a job.
    pub async fn set_paused(&self, id: &str, paused: bool) -> Result<Job, AppError> {
        self.app.set_paused(id, paused).await
    }

    /// Deletes a job (and cancels its timer).
    pub async fn remove(&self, id: &str) -> Result<Job, AppError> {
        self.app.remove_job(id).await
    }

    /// Syncs the declared jobs file into the store.
    pub async fn sync_file(&self) -> Result<SyncReport, AppError> {
        self.app.sync_jobs_file().await
    }

    /// Fires one occurrence through the shared claim (Chronos, EventBridge, the ticker).
    pub async fn fire(&self, job_id: &str, fire_at: Option<DateTime<Utc>>, trigger: &str) -> Result<FireStatus, AppError> {
        self.app.fire(job_id, fire_at, trigger).await
    }

    /// Runs a job now through the normal claim.
    pub async fn run_now(&self, job_id: &str) -> Result<FireStatus, AppError> {
        self.app.run_now(job_id, None).await
    }

    /// Runs a job now with a one-time `prompt` for this run only (put under
    /// `## Run Context`; the job is not changed).
    pub async fn run_with(&self, job_id: &str, prompt: Option<&str>) -> Result<FireStatus, AppError> {
        self.app.run_now(job_id, prompt).await
    }

    /// A job's latest `limit` runs, newest first.
    pub async fn runs(&self, job_id: &str, limit: usize) -> Result<Vec<RunRecord>, AppError> {
        Ok(self.app.inner.store.list_runs(job_id, limit).await?)
    }

    /// A job's runs, as many as `cron.output_retention` keeps.
    pub async fn retained_runs(&self, job_id: &str) -> Result<Vec<RunRecord>, AppError> {
        self.runs(job_id, self.app.inner.cfg.settings.cron.output_retention).await
    }

    /// Makes the timer provider's schedules match the stored jobs.
    pub async fn reconcile_timers(&self) -> Result<ReconcileReport, AppError> {
        self.app.reconcile_timers().await
    }

    /// The scheduler's status (`cron status --json`).
    pub async fn status(&self) -> Result<Value, AppError> {
        self.app.cron_status().await
    }

    /// Whether fire callbacks are answered at once (202) and run in the background.
    pub fn fires_async(&self) -> bool {
        self.app.inner.cfg.settings.cron.chronos.fire_mode == FireMode::Async
    }

    /// Verifies a Chronos fire token with the verifier built at wiring time (its `jti` is
    /// spent in the store, judged by the app's clock). The error says why, for the log only.
    pub async fn verify_fire_token(&self, token: &str) -> Result<FireClaims, FireTokenError> {
        let inner = &self.app.inner;
        match &inner.fire_auth {
            FireAuth::Ready(v) => v.verify(token, inner.clock.now(), inner.store.as_ref()).await.map_err(FireTokenError::Invalid),
            FireAuth::NotConfigured => Err(FireTokenError::NotConfigured),
            FireAuth::Broken(e) => Err(FireTokenError::Misconfigured(e.clone())),
        }
    }
}
