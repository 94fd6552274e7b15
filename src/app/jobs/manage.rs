//! Job management use cases: create, update, pause/resume, remove, jobs.json sync, and the
//! ticker's job pass. Every change re-arms (or cancels) the job's timer.

use crate::app::cas::retry_cas;
use crate::app::{App, AppError, FireStatus};
use crate::core::ids::Origin;
use crate::core::job::{COMPLETED_RETENTION_DAYS, Job, JobState};
use crate::core::jobfile::{self, JobSpec, SkippedJob};
use crate::core::schedule;
use crate::ports::StoreError;
use chrono::Duration;
use serde::Serialize;
use serde_json::Value;

/// What a jobs.json sync changed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// The file read.
    pub file: String,
    /// New jobs.
    pub created: Vec<String>,
    /// Existing jobs whose definition was updated (run state kept).
    pub updated: Vec<String>,
    /// Declared jobs removed from the file, now disabled.
    pub disabled: Vec<String>,
    /// Jobs of the file that could not be loaded, with their reasons.
    pub skipped: Vec<SkippedJob>,
}

/// Store record (meta) with the jobs the last jobs.json sync skipped, as a JSON list.
pub const SKIPPED_JOBS_KEY: &str = "jobs_file_skipped";

impl App {
    /// Builds a new job from a validated spec (refuses past one-shots, existing ids and
    /// targets outside the delivery policy for `caller`: a chat, or `None` for the operator's
    /// CLI and REST API; a `declared` job of the operator's jobs.json is not held to it).
    pub(in crate::app) async fn create_job(&self, spec: JobSpec, declared: bool, caller: Option<&Origin>) -> Result<Job, AppError> {
        if !declared {
            let rules = self.delivery_rules(&spec.deliver).await;
            self.check_job_delivery(&rules, &spec.deliver, caller)?;
            // Failure targets are held to the same policy (checked only when set).
            if !spec.options.failure_deliver.is_empty() {
                let rules = self.delivery_rules(&spec.options.failure_deliver).await;
                self.check_job_delivery(&rules, &spec.options.failure_deliver, caller)?;
            }
            check_script_fields(&spec)?;
        }
        if spec.past_one_shot {
            return Err(AppError::BadRequest(format!("the one-shot time of `{}` is in the past; {}", spec.id, schedule::ACCEPTED)));
        }
        let now = self.inner.clock.now();
        let mut job = Job::from_spec(&spec, declared, now, self.inner.cfg.tz);
        job.place_first(now, self.inner.cfg.tz, self.spread());
        let job = match self.inner.store.put_job(&job).await {
            Ok(j) => j,
            Err(StoreError::Conflict(_)) => return Err(AppError::BadRequest(format!("a job with id `{}` already exists", spec.id))),
            Err(e) => return Err(e.into()),
        };
        self.rearm(&job).await;
        tracing::info!(job_id = %job.id, next = ?job.next_run_at, "job created");
        Ok(job)
    }

    /// Finds a job by id, else by exact name.
    pub(in crate::app) async fn find_job(&self, id_or_name: &str) -> Result<Job, AppError> {
        if let Some(j) = self.inner.store.get_job(id_or_name).await? {
            return Ok(j);
        }
        let all = self.inner.store.list_jobs().await?;
        let mut hits = all.into_iter().filter(|j| j.name == id_or_name);
        match (hits.next(), hits.next()) {
            (Some(j), None) => Ok(j),
            (Some(_), Some(_)) => Err(AppError::BadRequest(format!("several jobs are named `{id_or_name}`; use the id"))),
            _ => Err(AppError::NotFound(format!("no job `{id_or_name}`"))),
        }
    }

    /// Applies `f` to a job with compare-and-set and re-arms it.
    pub(in crate::app) async fn modify_job<F>(&self, id: &str, f: F) -> Result<Job, AppError>
    where
        F: Fn(&mut Job) -> Result<(), AppError>,
    {
        let f = &f;
        retry_cas(|| async move {
            let mut j = self.find_job(id).await?;
            f(&mut j)?;
            let j = self.inner.store.put_job(&j).await?;
            self.rearm(&j).await;
            Ok(j)
        })
        .await
    }

    /// Updates definition fields from a JSON patch (same field names as jobs.json); new
    /// targets are held to the delivery policy for `caller` as at creation.
    pub(in crate::app) async fn update_job(&self, id: &str, patch: &Value, caller: Option<&Origin>) -> Result<Job, AppError> {
        let obj = patch.as_object().ok_or_else(|| AppError::BadRequest("the update must be a JSON object".into()))?;
        let now = self.inner.clock.now();
        let tz = self.inner.cfg.tz;
        // New targets are checked with the stored home channels too; read once, before the
        // compare-and-set loop, and only when the patch names targets.
        let rules = match obj.get("deliver").or(obj.get("failure_deliver")) {
            Some(_) => self.access_with(&self.homes().await),
            None => self.access(),
        };
        self.modify_job(id, |j| {
            let mut merged = serde_json::json!({
                "id": j.id, "name": j.name, "schedule": j.schedule_text, "prompt": j.prompt, "skills": j.skills,
                "deliver": j.deliver, "enabled": j.enabled, "repeat": j.repeat, "model": j.model, "timezone": j.timezone, "origin": j.origin,
                "script": j.script, "no_agent": j.no_agent, "workdir": j.workdir,
            });
            merged["overlap"] = serde_json::json!(j.overlap);
            merged["spread"] = serde_json::json!(j.spread);
            merged["retry"] = serde_json::json!(j.retry);
            if let Some(m) = merged.as_object_mut() {
                m.extend(j.options.to_fields());
            }
            for (k, v) in obj {
                if k != "id" {
                    merged[k] = v.clone();
                }
            }
            if obj.contains_key("description") && !obj.contains_key("prompt") {
                merged["prompt"] = obj["description"].clone();
            }
            let spec = jobfile::parse_job(&merged, now, tz).map_err(AppError::BadRequest)?;
            if spec.deliver != j.deliver {
                self.check_job_delivery(&rules, &spec.deliver, caller)?;
            }
            if spec.options.failure_deliver != j.options.failure_deliver {
                self.check_job_delivery(&rules, &spec.options.failure_deliver, caller)?;
            }
            if spec.script != j.script || spec.workdir != j.workdir {
                check_script_fields(&spec)?;
            }
            apply_spec(j, &spec, now, tz, self.spread())
        })
        .await
    }

    /// The configured default spread (`cron.spread_seconds`).
    pub(in crate::app) fn spread(&self) -> u32 {
        self.inner.cfg.settings.cron.spread_seconds
    }

    /// Pauses or resumes a job.
    pub(in crate::app) async fn set_paused(&self, id: &str, paused: bool) -> Result<Job, AppError> {
        let now = self.inner.clock.now();
        let tz = self.inner.cfg.tz;
        self.modify_job(id, |j| {
            match (paused, j.state) {
                (true, JobState::Scheduled | JobState::Running) => {
                    j.state = JobState::Paused;
                    j.paused_at = Some(now);
                }
                (false, JobState::Paused) => {
                    j.state = JobState::Scheduled;
                    j.paused_at = None;
                    // Skip what was missed while paused.
                    if j.next_run_at.is_none_or(|n| n <= now) && j.schedule.is_recurring() {
                        j.place_first(now, tz, self.spread());
                    }
                }
                (true, JobState::Paused) | (false, JobState::Scheduled | JobState::Running) => {}
                (_, s) => {
                    return Err(AppError::BadRequest(format!("job `{}` is {s:?} and cannot be paused or resumed", j.id).to_lowercase()));
                }
            }
            Ok(())
        })
        .await
    }

    /// Removes a job and cancels its timer.
    pub(in crate::app) async fn remove_job(&self, id: &str) -> Result<Job, AppError> {
        let j = self.find_job(id).await?;
        self.inner.store.delete_job(&j.id).await?;
        if let Err(e) = self.inner.timers.cancel(&j.id).await {
            tracing::error!(job_id = %j.id, error = %e, "could not cancel the timer; reconcile will retry");
        }
        Ok(j)
    }

    /// Syncs `jobs.json` into the store: upsert by id keeping run state, disable declared jobs
    /// that left the file. A job that cannot be loaded is skipped with its reason (kept in the
    /// store for `cron list --all`, `doctor` and the dashboard); a file that is not a job list
    /// changes nothing.
    pub(in crate::app) async fn sync_jobs_file(&self) -> Result<SyncReport, AppError> {
        let path = self.inner.home.join(&self.inner.cfg.settings.cron.jobs_file);
        let mut report = SyncReport { file: path.display().to_string(), ..SyncReport::default() };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.inner.store.delete_meta(SKIPPED_JOBS_KEY).await?;
                return Ok(report);
            }
            Err(e) => return Err(AppError::BadRequest(format!("{}: cannot read: {e}", path.display()))),
        };
        let now = self.inner.clock.now();
        let mut file = jobfile::parse_file(&text, &report.file, now, self.inner.cfg.tz).map_err(|e| AppError::BadRequest(e.to_string()))?;
        let existing = self.inner.store.list_jobs().await?;
        file.skip_new_past_one_shots(|id| existing.iter().any(|j| j.id == id));
        // jobs.json is the operator's own file: its targets are not held to the delivery
        // policy (the CLI and REST API are, with a 400 / exit 2), so a Hermes user's declared
        // jobs keep delivering where they did (docs/who-sees-what.md).
        for s in &file.jobs {
            match existing.iter().find(|j| j.id == s.id) {
                None => {
                    self.create_job(s.clone(), true, None).await?;
                    report.created.push(s.id.clone());
                }
                Some(_) => {
                    let tz = self.inner.cfg.tz;
                    self.modify_job(&s.id, |j| {
                        j.declared = true;
                        j.extra = s.extra.clone();
                        apply_spec(j, s, now, tz, self.spread())
                    })
                    .await?;
                    report.updated.push(s.id.clone());
                }
            }
        }
        // A job still in the file but skipped (a bad edit) keeps running as it was; only a job
        // that left the file is disabled.
        let in_file = |id: &str| file.jobs.iter().any(|s| s.id == id) || file.skipped.iter().any(|k| k.id.as_deref() == Some(id));
        for j in existing.iter().filter(|j| j.declared && j.enabled && !in_file(&j.id)) {
            self.modify_job(&j.id, |j| {
                j.enabled = false;
                Ok(())
            })
            .await?;
            report.disabled.push(j.id.clone());
        }
        for k in &file.skipped {
            tracing::warn!(file = %report.file, "skipped {k}");
        }
        let skipped = serde_json::to_string(&file.skipped).map_err(|e| AppError::BadRequest(e.to_string()))?;
        self.inner.store.put_meta(SKIPPED_JOBS_KEY, &skipped).await?;
        report.skipped = file.skipped;
        tracing::info!(
            file = %report.file,
            created = report.created.len(),
            updated = report.updated.len(),
            disabled = report.disabled.len(),
            skipped = report.skipped.len(),
            "jobs.json synced"
        );
        Ok(report)
    }

    /// The jobs the last jobs.json sync skipped, with their reasons.
    pub(in crate::app) async fn skipped_jobs(&self) -> Result<Vec<SkippedJob>, AppError> {
        let raw = self.inner.store.get_meta(SKIPPED_JOBS_KEY).await?;
        // A record this version cannot read is shown as nothing rather than failing a listing.
        Ok(raw.and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default())
    }

    /// The ticker's job pass: fires every due job through the shared path and purges jobs
    /// completed more than 7 days ago. With `wait`, returns after the runs.
    pub(in crate::app) async fn tick_jobs(&self, wait: bool) -> Result<usize, AppError> {
        let now = self.inner.clock.now();
        // With a managed provider the ticker is only a safety net: it fires what the
        // provider should have fired well before (claims make a double fire harmless).
        let due_before = if self.inner.timers.provider() == crate::ports::TimerProvider::Builtin {
            now
        } else {
            now - Duration::seconds(2 * self.inner.cfg.settings.cron.tick_interval_seconds as i64 + 60)
        };
        let due = self.inner.store.due_jobs(due_before, 500).await?;
        if self.inner.timers.provider().is_managed() && !due.is_empty() {
            tracing::warn!(
                provider = %self.inner.timers.provider(),
                jobs = due.len(),
                "overdue jobs the timer provider did not fire; the ticker runs them"
            );
        }
        let mut tasks = Vec::new();
        for j in due {
            let app = self.clone();
            tasks.push(tokio::spawn(async move {
                // The job's pending retry attempt first, then its occurrence (jobs::retry).
                match app.fire_due(&j, due_before, "ticker").await {
                    Ok(Some(FireStatus::Ran { run, .. })) => {
                        tracing::info!(job_id = %j.id, status = %run.status, attempt = run.attempt, "job ran")
                    }
                    Ok(other) => tracing::debug!(job_id = %j.id, ?other, "tick fire"),
                    Err(e) => tracing::error!(job_id = %j.id, error = %e, "tick fire failed"),
                }
            }));
        }
        let n = tasks.len();
        if wait {
            for t in tasks {
                t.await.ok();
            }
        }
        for j in self.inner.store.list_jobs().await? {
            if j.state == JobState::Completed && j.completed_at.is_some_and(|c| now - c > Duration::days(COMPLETED_RETENTION_DAYS)) {
                self.inner.store.delete_job(&j.id).await?;
            }
        }
        Ok(n)
    }
}

impl App {
    /// Makes the provider's timers match the store (startup, every tick, after fires).
    /// Failures are recorded for `cron status` and retried next time.
    pub(in crate::app) async fn reconcile_timers(&self) -> Result<crate::ports::ReconcileReport, AppError> {
        // Pending retry attempts have timers of their own (docs/design/jobs.md#retry).
        let jobs = crate::core::retry::with_timer_jobs(self.inner.store.list_jobs().await?);
        match self.inner.timers.reconcile(&jobs).await {
            Ok(r) => {
                let _ = self.inner.store.delete_meta("timers_last_error").await;
                if r.armed + r.cancelled > 0 {
                    tracing::info!(provider = %self.inner.timers.provider(), armed = r.armed, cancelled = r.cancelled, "timers reconciled");
                }
                Ok(r)
            }
            Err(e) => {
                tracing::error!(provider = %self.inner.timers.provider(), error = %e, "timer reconcile failed; will retry");
                let _ = self
                    .inner
                    .store
                    .put_meta("timers_last_error", &format!("{} reconcile: {e}", self.inner.clock.now().to_rfc3339()))
                    .await;
                Err(AppError::BadRequest(format!("timer provider: {e}")))
            }
        }
    }
}

/// The checks of a script job made through the CLI, REST API or `cronjob` tool (Hermes'
/// `_validate_cron_script_path`, `_normalize_workdir`): the script is named relative to the
/// scripts folder and stays inside it; the workdir is an existing directory. jobs.json is the
/// operator's file and keeps its forms (the run checks the resolved path every time).
fn check_script_fields(s: &JobSpec) -> Result<(), AppError> {
    if let Some(script) = &s.script {
        crate::core::script::check_path(script).map_err(AppError::BadRequest)?;
    }
    if let Some(w) = &s.workdir
        && !std::path::Path::new(w).is_dir()
    {
        return Err(AppError::BadRequest(format!("Cron workdir does not exist or is not a directory: {w}")));
    }
    Ok(())
}

/// Lays a validated definition over a stored job, keeping its run state; a changed schedule
/// (or zone) recomputes the next occurrence; a changed spread moves the pending one
/// (docs/design.md#spread), with `spread` the configured default.
fn apply_spec(j: &mut Job, s: &JobSpec, now: chrono::DateTime<chrono::Utc>, tz: chrono_tz::Tz, spread: u32) -> Result<(), AppError> {
    // The same schedule text keeps the stored parsed schedule: a job stored as recurring from a
    // bare `30m` (before bare durations became one-shots) stays recurring, and an `in 2h`
    // one-shot is not pushed forward by every sync.
    let same_text = j.schedule_text == s.schedule_text && j.timezone == s.timezone;
    let schedule_changed = !same_text && (j.schedule != s.schedule || j.timezone != s.timezone);
    j.name = s.name.clone();
    if !same_text {
        j.schedule_text = s.schedule_text.clone();
        j.schedule = s.schedule.clone();
    }
    j.prompt = s.prompt.clone();
    j.skills = s.skills.clone();
    j.deliver = s.deliver.clone();
    j.enabled = s.enabled;
    j.repeat.times = s.repeat.times;
    j.model = s.model.clone();
    j.timezone = s.timezone.clone();
    j.script = s.script.clone();
    j.no_agent = s.no_agent;
    j.workdir = s.workdir.clone();
    j.options = s.options.clone();
    if s.origin.is_some() {
        j.origin = s.origin.clone();
    }
    j.overlap = s.overlap;
    j.spread = s.spread;
    j.retry = s.retry.clone();
    if !schedule_changed {
        j.respread(spread);
    }
    if schedule_changed {
        if s.past_one_shot {
            return Err(AppError::BadRequest(format!("the one-shot time of `{}` is in the past", s.id)));
        }
        j.place_first(now, tz, spread);
        if j.state == JobState::Completed && j.next_run_at.is_some() {
            j.state = JobState::Scheduled;
            j.completed_at = None;
        }
    }
    Ok(())
}
