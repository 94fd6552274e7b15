//! Retry of a run that had no effect (docs/design/jobs.md#retry): the attempt's key and
//! claim occurrence (`retry~<job_id>~<fire_at>~<n>`), the pending attempt a job carries
//! ([`RetryDue`]), when the next attempt is planned ([`plan`]), and the pending attempt as
//! the timer providers see it ([`timer_job`]). Pure: `now` is passed in.
//!
//! Attempt 1 is the occurrence's own claim (`(job_id, fire_at)`); attempt `n ≥ 2` claims
//! `retry~<job_id>~<fire_at>~<n>`, so each attempt is admitted once (SPEC §2.4) and a
//! duplicate attempt answers `duplicate` as a duplicate fire does.

use crate::core::job::{Job, JobState, Occurrence};
use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde::{Deserialize, Serialize};

/// Start of every retry attempt's key (`~` is never part of a job id).
pub const PREFIX: &str = "retry~";
/// The default `cron.retry.delays`, in seconds.
pub const DEFAULT_DELAYS: [u32; 3] = [60, 300, 900];
/// The longest delay accepted (one day).
pub const MAX_DELAY_SECS: u32 = 86_400;
/// The most retries a job may ask for.
pub const MAX_RETRIES: usize = 10;

/// The stamp of an occurrence inside a key.
const STAMP: &str = "%Y%m%dT%H%M%SZ";

/// One attempt of one occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryKey {
    /// The job.
    pub job_id: String,
    /// The occurrence retried (its scheduled instant, whole UTC seconds).
    pub fire_at: DateTime<Utc>,
    /// The attempt's number (2 for the first retry).
    pub attempt: u32,
}

impl RetryKey {
    /// `retry~<job_id>~<fire_at as YYYYMMDDTHHMMSSZ>~<attempt>`: the attempt's claim key and
    /// the id its timer carries (Chronos `job_id`, EventBridge input `job_id`).
    pub fn key(&self) -> String {
        format!("{PREFIX}{}~{}~{}", self.job_id, self.fire_at.format(STAMP), self.attempt)
    }

    /// Parses [`RetryKey::key`]; `None` for anything else (a plain job id among them).
    pub fn parse(s: &str) -> Option<Self> {
        let rest = s.strip_prefix(PREFIX)?;
        let (rest, n) = rest.rsplit_once('~')?;
        let (job_id, stamp) = rest.rsplit_once('~')?;
        let attempt: u32 = n.parse().ok().filter(|n| *n >= 2)?;
        let fire_at = NaiveDateTime::parse_from_str(stamp, STAMP).ok()?.and_utc();
        crate::core::job::valid_id(job_id).then(|| Self { job_id: job_id.to_string(), fire_at, attempt })
    }

    /// The attempt's claim: the key as the claim's job part, the occurrence's instant.
    pub fn occurrence(&self) -> Occurrence {
        Occurrence::new(&self.key(), self.fire_at)
    }
}

/// The next attempt a job's failed run planned (stored on the job, written by the failed
/// attempt's finishing write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryDue {
    /// The occurrence retried.
    pub fire_at: DateTime<Utc>,
    /// The number of the attempt planned (2 for the first retry).
    pub attempt: u32,
    /// When it runs.
    pub at: DateTime<Utc>,
}

impl RetryDue {
    /// The planned attempt's key.
    pub fn key(&self, job_id: &str) -> RetryKey {
        RetryKey { job_id: job_id.to_string(), fire_at: self.fire_at, attempt: self.attempt }
    }
}

/// Checks a list of retry delays (`cron.retry.delays`, a job's `retry`).
pub fn check_delays(delays: &[u32]) -> Result<(), String> {
    if delays.len() > MAX_RETRIES {
        return Err(format!("at most {MAX_RETRIES} retries, got {}", delays.len()));
    }
    match delays.iter().find(|d| **d == 0 || **d > MAX_DELAY_SECS) {
        Some(d) => Err(format!("each delay must be 1 to {MAX_DELAY_SECS} seconds, got {d}")),
        None => Ok(()),
    }
}

/// The attempt after the failed attempt `attempt` of the occurrence `fire_at`, or `None`
/// when `delays` has no delay left for it or when it would not come before the job's next
/// occurrence `next` (that occurrence is the next try; this attempt was the last, and its
/// failure summary is delivered).
pub fn plan(delays: &[u32], fire_at: DateTime<Utc>, attempt: u32, now: DateTime<Utc>, next: Option<DateTime<Utc>>) -> Option<RetryDue> {
    let delay = *delays.get(usize::try_from(attempt.checked_sub(1)?).ok()?)?;
    let at = now + Duration::seconds(i64::from(delay));
    if next.is_some_and(|n| at >= n) {
        return None;
    }
    Some(RetryDue { fire_at, attempt: attempt + 1, at })
}

/// The pending attempt as the timer providers see a timer: a one-shot at its time whose id is
/// the attempt's key (`None` when the job has no pending attempt or is paused or disabled,
/// so its timer is cancelled or never armed). Timer adapters know jobs only; this keeps them
/// unaware of retries.
pub fn timer_job(job: &Job) -> Option<Job> {
    let due = job.retry_due.as_ref()?;
    if !job.enabled || !matches!(job.state, JobState::Scheduled | JobState::Running) {
        return None;
    }
    let mut t = job.clone();
    t.id = due.key(&job.id).key();
    t.next_run_at = Some(due.at);
    t.state = JobState::Scheduled;
    t.retry_due = None;
    Some(t)
}

/// `jobs` plus one timer job per pending attempt ([`timer_job`]): the desired timers a
/// reconcile compares with the provider's.
pub fn with_timer_jobs(jobs: Vec<Job>) -> Vec<Job> {
    let extra: Vec<Job> = jobs.iter().filter_map(timer_job).collect();
    jobs.into_iter().chain(extra).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn keys_round_trip_and_refuse_anything_else() {
        let k = RetryKey { job_id: "news-1".into(), fire_at: t("2026-12-06T08:00:00Z"), attempt: 2 };
        assert_eq!(k.key(), "retry~news-1~20261206T080000Z~2");
        assert_eq!(RetryKey::parse(&k.key()), Some(k.clone()));
        assert_eq!(k.occurrence().job_id, "retry~news-1~20261206T080000Z~2");
        assert_eq!(k.occurrence().fire_at, k.fire_at);
        for bad in
            ["news-1", "retry~news-1~20261206T080000Z~1", "retry~~20261206T080000Z~2", "retry~a~2026~2", "retry~a b~20261206T080000Z~2"]
        {
            assert_eq!(RetryKey::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn plans_each_delay_then_stops_and_never_passes_the_next_occurrence() {
        let (fire, now) = (t("2026-12-06T08:00:00Z"), t("2026-12-06T08:00:30Z"));
        let d = DEFAULT_DELAYS;
        assert_eq!(plan(&d, fire, 1, now, None), Some(RetryDue { fire_at: fire, attempt: 2, at: now + Duration::seconds(60) }));
        assert_eq!(plan(&d, fire, 3, now, None).map(|r| (r.attempt, r.at)), Some((4, now + Duration::seconds(900))));
        assert_eq!(plan(&d, fire, 4, now, None), None, "no delay left");
        assert_eq!(plan(&[], fire, 1, now, None), None, "retries off");
        assert_eq!(plan(&d, fire, 2, now, Some(now + Duration::seconds(300))), None, "the next occurrence comes first");
        assert!(plan(&d, fire, 2, now, Some(now + Duration::seconds(301))).is_some());
    }

    #[test]
    fn delays_are_checked() {
        assert!(check_delays(&[]).is_ok());
        assert!(check_delays(&DEFAULT_DELAYS).is_ok());
        assert!(check_delays(&[0]).is_err());
        assert!(check_delays(&[MAX_DELAY_SECS + 1]).is_err());
        assert!(check_delays(&[1; 11]).is_err());
    }
}
