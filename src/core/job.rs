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
            Decision::Run { next, .. } => {
                adv.next_run_at = *next;
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

/// What to do with an occurrence at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it; the job's next occurrence is `next` (None: the job completes).
    Run {
        /// Next occurrence.
        next: Option<DateTime<Utc>>,
        /// Later than the grace window (backlog skipped).
        late: bool,
    },
    /// A one-shot more than 120 s late: record `missed`, tell the target, complete the job.
    Missed,
    /// Not due yet.
    NotDue,
}

/// The due rule (docs/design.md#due) for the occurrence `occ` of `job` at `now`.
pub fn decide(job: &Job, occ: DateTime<Utc>, now: DateTime<Utc>, tz: Tz) -> Decision {
    if occ > now {
        return Decision::NotDue;
    }
    let lateness = (now - occ).num_seconds();
    if !job.schedule.is_recurring() {
        return if lateness > ONE_SHOT_GRACE_SECS { Decision::Missed } else { Decision::Run { next: None, late: false } };
    }
    let grace = grace_seconds(job.schedule.period_seconds(occ, tz));
    let late = lateness > grace;
    let reached = job.repeat.times.is_some_and(|t| job.repeat.completed + 1 >= t);
    let next = if reached { None } else { next_future(&job.schedule, occ, now, tz) };
    Decision::Run { next, late }
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn job(s: Schedule) -> Job {
        let created = utc("2026-01-01T00:00:00Z");
        let spec =
            crate::core::jobfile::parse_job(&serde_json::json!({"id": "j", "schedule": "every 1h", "prompt": "p"}), created, Tz::UTC)
                .unwrap();
        Job { schedule: s, ..Job::from_spec(&spec, false, created, Tz::UTC) }
    }

    #[test]
    fn one_shot_grace_and_missed() {
        let j = job(Schedule::Once { at: utc("2026-01-01T08:00:00Z") });
        let occ = utc("2026-01-01T08:00:00Z");
        assert_eq!(decide(&j, occ, utc("2026-01-01T07:59:59Z"), Tz::UTC), Decision::NotDue);
        assert_eq!(decide(&j, occ, utc("2026-01-01T08:02:00Z"), Tz::UTC), Decision::Run { next: None, late: false });
        assert_eq!(decide(&j, occ, utc("2026-01-01T08:02:01Z"), Tz::UTC), Decision::Missed);
    }

    #[test]
    fn late_recurring_runs_once_and_skips_the_backlog() {
        let j = job(Schedule::Cron { expr: "0 8 * * *".into() });
        let occ = utc("2026-01-01T08:00:00Z");
        // Three days late: run once, next is tomorrow 08:00 after now.
        let d = decide(&j, occ, utc("2026-01-04T09:00:00Z"), Tz::UTC);
        assert_eq!(d, Decision::Run { next: Some(utc("2026-01-05T08:00:00Z")), late: true });
        // On time.
        let d = decide(&j, occ, utc("2026-01-01T08:00:30Z"), Tz::UTC);
        assert_eq!(d, Decision::Run { next: Some(utc("2026-01-02T08:00:00Z")), late: false });
        // Grace for a daily job is 2 h.
        assert!(matches!(decide(&j, occ, utc("2026-01-01T10:00:00Z"), Tz::UTC), Decision::Run { late: false, .. }));
        assert!(matches!(decide(&j, occ, utc("2026-01-01T10:00:01Z"), Tz::UTC), Decision::Run { late: true, .. }));
    }

    #[test]
    fn repeat_times_completes() {
        let mut j = job(Schedule::Interval { seconds: 600 });
        j.repeat = Repeat { times: Some(2), completed: 1 };
        let occ = utc("2026-01-01T08:00:00Z");
        assert_eq!(decide(&j, occ, occ, Tz::UTC), Decision::Run { next: None, late: false });
        j.repeat.completed = 0;
        assert_eq!(decide(&j, occ, occ, Tz::UTC), Decision::Run { next: Some(utc("2026-01-01T08:10:00Z")), late: false });
    }

    #[test]
    fn occurrence_key_and_ids() {
        let o = Occurrence::new("daily", utc("2026-12-01T08:00:00.700Z"));
        assert_eq!(o.key(), "daily:2026-12-01T08:00:00Z");
        assert!(valid_id("daily-news_1.x") && !valid_id("a b") && !valid_id("") && !valid_id(&"x".repeat(65)));
        assert!(valid_id(&new_id()));
    }

    proptest! {
        #[test]
        fn next_is_always_in_the_future_and_on_the_grid(occ in 0i64..4_000_000_000, late in 0i64..10_000_000, secs in 60i64..200_000) {
            let occ = DateTime::from_timestamp(occ, 0).unwrap();
            let now = occ + Duration::seconds(late);
            let j = job(Schedule::Interval { seconds: secs });
            match decide(&j, occ, now, Tz::UTC) {
                Decision::Run { next: Some(n), late: l } => {
                    prop_assert!(n > now);
                    prop_assert!(n - now <= Duration::seconds(secs));
                    prop_assert_eq!((n - occ).num_seconds() % secs, 0);
                    prop_assert_eq!(l, late > grace_seconds(Some(secs)));
                }
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
