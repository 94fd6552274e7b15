//! Scheduled jobs (docs/design.md#jobs, #due): the stored [`Job`], its states, the due rule with grace
//! and missed one-shots, and occurrences. Pure: `now` is always passed in.

use crate::core::schedule::{Schedule, grace_seconds};
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::core::run::{DeliveryResult, RunOutcome, RunRecord};

/// The key-space prefix of manual runs' occurrences ([`Occurrence::manual`]).
pub const MANUAL_PREFIX: &str = "manual~";

/// Late tolerance of one-shots (and the floor of the grace window).
pub const ONE_SHOT_GRACE_SECS: i64 = 120;
/// How long completed jobs are kept.
pub const COMPLETED_RETENTION_DAYS: i64 = 7;

/// A job id: 1–64 of `[A-Za-z0-9_.-]`, except the reserved wake id (`core::timers::WAKE_ID`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && id != crate::core::timers::WAKE_ID
}

/// A fresh random job id.
pub fn new_id() -> String {
    format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// Job lifecycle states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for `next_run_at`.
    Scheduled,
    /// Paused by the user.
    Paused,
    /// An occurrence is running.
    Running,
    /// No more occurrences (one-shot done, repeat reached, or missed).
    Completed,
    /// Cannot be scheduled (e.g. its schedule no longer parses).
    Error,
}

/// Outcome of the last run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ran and (if needed) delivered.
    Ok,
    /// The run failed (model error, empty answer, missing skill).
    Error,
    /// The run succeeded but at least one delivery failed.
    DeliveryFailed,
    /// A one-shot was too late and did not run.
    Missed,
    /// A script job had nothing to report: no model call, nothing delivered.
    Silent,
    /// The occurrence came due while the previous run still ran, and was not run
    /// (docs/design.md#overlap).
    Skipped,
    /// Stopped by the job's `max_tokens` or `cron.daily_budget_usd` (docs/jobs.md#budgets).
    OverBudget,
}

/// What an occurrence that comes due while the job's previous run still runs does
/// (docs/design.md#overlap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overlap {
    /// Recorded `skipped`, not run (the default).
    #[default]
    Skip,
    /// Runs beside the previous run.
    Allow,
}

impl Overlap {
    /// Parses `skip` or `allow`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "skip" => Ok(Self::Skip),
            "allow" => Ok(Self::Allow),
            other => Err(format!("`overlap` must be `skip` or `allow`, got `{other}`")),
        }
    }

    /// `skip` or `allow`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Allow => "allow",
        }
    }
}

/// How often a job runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat {
    /// Total runs allowed (None: forever).
    #[serde(default)]
    pub times: Option<u32>,
    /// Runs done.
    #[serde(default)]
    pub completed: u32,
}

/// Where a job came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobOrigin {
    /// Platform.
    pub platform: String,
    /// Chat.
    pub chat_id: String,
    /// Thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The user who made the job there (its runs search as them, docs/who-sees-what.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The kind of that chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<crate::core::ids::ChatType>,
}

/// A scheduled job with its run state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Id.
    pub id: String,
    /// Human name.
    pub name: String,
    /// The schedule as written by the user (or jobs.json).
    pub schedule_text: String,
    /// The parsed schedule.
    pub schedule: Schedule,
    /// What the agent is asked to do.
    pub prompt: String,
    /// Skills whose SKILL.md is put in the prompt, in order.
    #[serde(default)]
    pub skills: Vec<String>,
    /// Delivery targets (`local`, `origin`, `<platform>`, `<platform>:<chat>[:<thread>]`).
    #[serde(default)]
    pub deliver: Vec<String>,
    /// Enabled (declared jobs removed from jobs.json are disabled).
    pub enabled: bool,
    /// Repeat limit.
    #[serde(default)]
    pub repeat: Repeat,
    /// Model override.
    #[serde(default)]
    pub model: Option<String>,
    /// IANA zone of the schedule (else the configured zone).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Chat the job was created from.
    #[serde(default)]
    pub origin: Option<JobOrigin>,
    /// Declared in jobs.json (sync manages it).
    #[serde(default)]
    pub declared: bool,
    /// Unknown fields from jobs.json, kept as they were.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
    /// Next scheduled instant.
    pub next_run_at: Option<DateTime<Utc>>,
    /// Last run start.
    #[serde(default)]
    pub last_run_at: Option<DateTime<Utc>>,
    /// Last outcome.
    #[serde(default)]
    pub last_status: Option<RunStatus>,
    /// Last error text.
    #[serde(default)]
    pub last_error: Option<String>,
    /// State.
    pub state: JobState,
    /// When paused.
    #[serde(default)]
    pub paused_at: Option<DateTime<Utc>>,
    /// When completed (for the 7-day retention).
    #[serde(default)]
    pub completed_at: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// While an occurrence runs: who runs it and which one (crash recovery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<RunningMark>,
    /// Compare-and-set version.
    #[serde(default)]
    pub version: u64,
    // Beyond Hermes: overlap and spread (docs/design.md#overlap, #spread).
    /// Whether an occurrence may start while the previous run still runs (default `skip`).
    #[serde(default)]
    pub overlap: Overlap,
    /// The job's own spread in seconds (None: `cron.spread_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<u32>,
    /// Run state: the offset in seconds that `next_run_at` carries; its base occurrence (the
    /// schedule's own time) is `next_run_at − spread_offset`.
    #[serde(default)]
    pub spread_offset: i64,
    /// A script under `$HERMES_HOME/scripts/` run before each run (Hermes' `script`): its
    /// stdout goes into the prompt, or is the job with `no_agent` (docs/jobs.md#script-jobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The script is the job: its stdout is delivered as it is, no model call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_agent: bool,
    /// The script's working directory (absolute; default the scripts folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// Hermes' run options (`context_from`, `enabled_toolsets`, `provider`, `base_url`,
    /// `attach_to_session`), stored flat under their own names.
    #[serde(default, flatten)]
    pub options: crate::core::job_options::JobOptions,
}

impl Job {
    /// The zone the schedule is evaluated in.
    pub fn tz(&self, default: Tz) -> Tz {
        self.timezone.as_deref().and_then(|z| z.parse().ok()).unwrap_or(default)
    }

    /// Whether timers should exist for it.
    pub fn armed(&self) -> bool {
        self.enabled && matches!(self.state, JobState::Scheduled | JobState::Running) && self.next_run_at.is_some()
    }

    /// The job as claimed for `occ` under `decision` (written in the same conditional write
    /// as the claim): a run advances `next_run_at` and marks it running by `owner`; a missed
    /// one-shot completes. `NotDue` changes nothing but `last_run_at`.
    pub fn advance(&self, decision: &Decision, occ: DateTime<Utc>, owner: &str, now: DateTime<Utc>) -> Job {
        let mut adv = self.clone();
        adv.last_run_at = Some(now);
        match decision {
            Decision::NotDue => {}
            Decision::Missed => {
                adv.state = JobState::Completed;
                adv.completed_at = Some(now);
                adv.next_run_at = None;
                adv.last_status = Some(RunStatus::Missed);
                adv.last_error = Some(format!("missed: the one-shot was due at {occ} and the agent was not awake within 120 s"));
            }
            Decision::Run { next, offset, .. } => {
                adv.next_run_at = *next;
                adv.spread_offset = *offset;
                adv.state = JobState::Running;
                adv.running = Some(RunningMark { owner: owner.to_string(), fire_at: occ, started_at: now });
                adv.repeat.completed = adv.repeat.completed.saturating_add(1);
            }
        }
        adv
    }

    /// Records a finished run: its status and error, no running mark, and back on schedule
    /// (or completed when no occurrence is left).
    pub fn finish(&mut self, status: RunStatus, error: Option<String>, now: DateTime<Utc>) {
        self.last_status = Some(status);
        self.running = None;
        self.last_error = error;
        if self.state == JobState::Running {
            if self.next_run_at.is_none() {
                self.state = JobState::Completed;
                self.completed_at = Some(now);
            } else {
                self.state = JobState::Scheduled;
            }
        }
    }

    /// Records the finished run of the claim that set the running mark `mark` (None: a manual
    /// run, which sets none). Returns false, changing nothing, when the job no longer runs
    /// that occurrence (recovery recorded it as interrupted, or a later occurrence runs). A
    /// manual run leaves another run's mark alone.
    pub fn finish_claimed(&mut self, mark: Option<&RunningMark>, status: RunStatus, error: Option<String>, now: DateTime<Utc>) -> bool {
        match mark {
            Some(m) if self.running.as_ref() != Some(m) => return false,
            None if self.running.is_some() => {
                self.last_status = Some(status);
                self.last_error = error;
            }
            _ => self.finish(status, error, now),
        }
        true
    }

    /// This job's spread offset under the configured default spread `spread`: its own
    /// `spread` if set; 0 for a one-shot, which is never moved.
    pub fn offset(&self, spread: u32) -> i64 {
        if self.schedule.is_recurring() { crate::core::schedule::spread::offset(&self.id, self.spread.unwrap_or(spread)) } else { 0 }
    }

    /// Places the next occurrence as for a new job, with its spread: a one-shot at its time,
    /// a recurring job at the first shifted occurrence after `now`.
    pub fn place_first(&mut self, now: DateTime<Utc>, tz: Tz, spread: u32) {
        let off = self.offset(spread);
        self.next_run_at = match &self.schedule {
            Schedule::Once { at } => Some(*at),
            s => s.next_after(now - Duration::seconds(off), self.tz(tz)).map(|t| t + Duration::seconds(off)),
        };
        self.spread_offset = off;
    }

    /// Moves the pending occurrence to the job's current offset, keeping its base occurrence
    /// (`next_run_at − spread_offset`): a change of spread never makes an occurrence that ran
    /// due again, and the old time, no longer `next_run_at`, answers `stale`.
    pub fn respread(&mut self, spread: u32) {
        let off = self.offset(spread);
        if let Some(n) = self.next_run_at.filter(|_| off != self.spread_offset) {
            self.next_run_at = Some(n - Duration::seconds(self.spread_offset) + Duration::seconds(off));
            self.spread_offset = off;
        }
    }

    /// The first occurrence of a new job: one-shots at their time, recurring ones after `now`.
    pub fn first_run(schedule: &Schedule, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        match schedule {
            Schedule::Once { at } => Some(*at),
            s => s.next_after(now, tz),
        }
    }
}

/// The occurrence a job is running, and the process running it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningMark {
    /// `<host>:<pid>` of the runner.
    pub owner: String,
    /// The occurrence.
    pub fire_at: DateTime<Utc>,
    /// When the run started.
    pub started_at: DateTime<Utc>,
}

impl RunningMark {
    /// When the mark stops proving a live run: its start plus the turn budget `budget_secs`
    /// (a run cannot outlive it) and a margin; the lease rules judge it (docs/design.md#claims).
    pub fn expires_at(&self, budget_secs: i64, margin_secs: i64) -> DateTime<Utc> {
        self.started_at + Duration::seconds(budget_secs + margin_secs)
    }
}

/// What to do with an occurrence at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it; the job's next occurrence is `next` (None: the job completes).
    Run {
        /// Next occurrence (shifted by `offset`).
        next: Option<DateTime<Utc>>,
        /// Later than the grace window (backlog skipped).
        late: bool,
        /// The spread offset `next` carries.
        offset: i64,
    },
    /// A one-shot more than 120 s late: record `missed`, tell the target, complete the job.
    Missed,
    /// Not due yet.
    NotDue,
}

/// The due rule (docs/design.md#due) for the occurrence `occ` (the job's `next_run_at`) of
/// `job` at `now`, with `spread` the configured default spread (docs/design.md#spread): the
/// next occurrence is the first base occurrence after this one's base (`occ −
/// spread_offset`) whose shifted time is in the future, shifted by the job's current offset.
pub fn decide(job: &Job, occ: DateTime<Utc>, now: DateTime<Utc>, tz: Tz, spread: u32) -> Decision {
    if occ > now {
        return Decision::NotDue;
    }
    let lateness = (now - occ).num_seconds();
    if !job.schedule.is_recurring() {
        return if lateness > ONE_SHOT_GRACE_SECS { Decision::Missed } else { Decision::Run { next: None, late: false, offset: 0 } };
    }
    let base = occ - Duration::seconds(job.spread_offset);
    let offset = job.offset(spread);
    let grace = grace_seconds(job.schedule.period_seconds(base, tz));
    let late = lateness > grace;
    let reached = job.repeat.times.is_some_and(|t| job.repeat.completed + 1 >= t);
    let shift = Duration::seconds(offset);
    let next = if reached { None } else { next_future(&job.schedule, base, now - shift, tz).map(|t| t + shift) };
    Decision::Run { next, late, offset }
}

/// The first occurrence after `occ` that is in the future of `now` (skips any backlog).
pub fn next_future(s: &Schedule, occ: DateTime<Utc>, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    match s {
        Schedule::Interval { seconds } if *seconds > 0 => {
            // Stay on the job's grid: occ + k·period, the first one after now.
            let k = (now - occ).num_seconds() / seconds + 1;
            Some(occ + Duration::seconds(k * seconds))
        }
        _ => {
            let mut t = s.next_after(occ, tz)?;
            if t <= now {
                t = s.next_after(now, tz)?;
            }
            Some(t)
        }
    }
}

/// An occurrence: `(job_id, fire_at)` with `fire_at` in whole UTC seconds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Occurrence {
    /// The job.
    pub job_id: String,
    /// The scheduled instant.
    pub fire_at: DateTime<Utc>,
}

impl Occurrence {
    /// Builds an occurrence, truncating to whole seconds.
    pub fn new(job_id: &str, fire_at: DateTime<Utc>) -> Self {
        let secs = fire_at.timestamp();
        Self { job_id: job_id.to_string(), fire_at: DateTime::from_timestamp(secs, 0).unwrap_or(fire_at) }
    }

    /// A manual run (`cron run`, the REST run route, the `cronjob` tool) of `job_id` at `at`.
    /// Manual runs claim in their own key space (`manual~<job_id>`; `~` is never part of a
    /// job id), so a manual run in the same second as a scheduled occurrence never takes that
    /// occurrence's claim (and its delivery ledger) away from it.
    pub fn manual(job_id: &str, at: DateTime<Utc>) -> Self {
        Self::new(&format!("{MANUAL_PREFIX}{job_id}"), at)
    }

    /// `<job_id>:<fire_at RFC 3339>` (the dedup key used with timer providers).
    pub fn key(&self) -> String {
        format!("{}:{}", self.job_id, self.fire_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    }
}

#[cfg(test)]
mod tests;
