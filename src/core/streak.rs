//! A job's failing streak (docs/jobs.md#failure-alerts): which run outcomes count as
//! failing, when a streak earns its one alert, and when a success ends it with one
//! "recovered" line. The streak is a small stored record (the app keeps it with a
//! compare-and-set, so two processes never both alert); this module is its pure rule.

use crate::core::run::RunOutcome;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Occurrences skipped by overlap in a row before a job counts as failing: one skip is the
/// normal end of a slow run, three mean a run is stuck.
pub const SKIPS_BEFORE_ALERT: u32 = 3;

/// What a run's outcome is to a streak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `ok` or `silent`: ends a streak.
    Success,
    /// `error`, `delivery_failed`, `missed`, `over_budget`, `interrupted`: a job failing.
    Failure,
    /// `skipped` by overlap: failing only [`SKIPS_BEFORE_ALERT`] times in a row.
    Skip,
}

impl Event {
    /// The event of a run outcome.
    pub fn of(outcome: RunOutcome) -> Self {
        match outcome {
            RunOutcome::Ok | RunOutcome::Silent => Self::Success,
            RunOutcome::Skipped => Self::Skip,
            _ => Self::Failure,
        }
    }
}

/// The stored streak of one job (absent or empty: the job is not failing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Streak {
    /// Failing runs (skips included) since the last success.
    pub runs: u32,
    /// Skips in a row at the end of the streak.
    pub skips: u32,
    /// The alert was sent (at most once per streak).
    pub alerted: bool,
    /// When the first failing run of the streak ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
}

/// What to send after a streak changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Nothing.
    None,
    /// The one alert of this streak.
    Alert,
    /// The streak ended after its alert: one "recovered" line.
    Recovered {
        /// Failing runs of the streak.
        runs: u32,
        /// When it started.
        since: Option<DateTime<Utc>>,
    },
}

/// The streak after `event` at `now`, and what to send. `None` as the new streak means the
/// record is cleared (a success).
pub fn step(prev: Option<&Streak>, event: Event, now: DateTime<Utc>) -> (Option<Streak>, Notice) {
    let prev = prev.cloned().unwrap_or_default();
    if event == Event::Success {
        let notice = if prev.alerted { Notice::Recovered { runs: prev.runs, since: prev.since } } else { Notice::None };
        return (None, notice);
    }
    let mut s = prev;
    s.runs = s.runs.saturating_add(1);
    s.since = s.since.or(Some(now));
    s.skips = if event == Event::Skip { s.skips.saturating_add(1) } else { 0 };
    let failing = event == Event::Failure || s.skips >= SKIPS_BEFORE_ALERT;
    let notice = if failing && !s.alerted { Notice::Alert } else { Notice::None };
    s.alerted |= failing;
    (Some(s), notice)
}

/// Whether a success needs to look at the stored streak at all: only when the job's status
/// before it was a failing one (a streak is only ever left by a failing run, which sets
/// that status in the same job write), or unknown.
pub fn success_may_end_streak(prior: Option<Option<crate::core::job::RunStatus>>) -> bool {
    use crate::core::job::RunStatus;
    !matches!(prior, Some(None | Some(RunStatus::Ok | RunStatus::Silent)))
}

/// The alert text for job `name` whose run ended `outcome` (with `error`, its first line).
pub fn alert_text(name: &str, outcome: RunOutcome, error: Option<&str>, streak: &Streak) -> String {
    let why = match outcome {
        RunOutcome::Skipped => {
            format!("{} occurrences in a row were skipped because the previous run is still running", streak.skips)
        }
        o => {
            let line: String = error.unwrap_or_default().lines().next().unwrap_or_default().chars().take(300).collect();
            if line.is_empty() { format!("its last run ended {o}") } else { format!("its last run ended {o}: {line}") }
        }
    };
    format!("🚨 Scheduled job '{name}' is failing: {why}. You get no more alerts for it until it recovers.")
}

/// The "recovered" line.
pub fn recovered_text(name: &str, runs: u32, since: Option<DateTime<Utc>>) -> String {
    let since = since.map(|s| format!(" since {}", s.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))).unwrap_or_default();
    let s = if runs == 1 { "" } else { "s" };
    format!("✅ Scheduled job '{name}' recovered: it ran successfully after {runs} failing run{s}{since}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::job::RunStatus;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn run(events: &[Event]) -> (Option<Streak>, Vec<Notice>) {
        let mut s = None;
        let mut out = Vec::new();
        for (i, e) in events.iter().enumerate() {
            let (next, n) = step(s.as_ref(), *e, at("2026-03-01T08:00:00Z") + chrono::Duration::hours(i as i64));
            s = next;
            out.push(n);
        }
        (s, out)
    }

    #[test]
    fn one_alert_per_streak_and_one_recovery() {
        use Event::*;
        let (s, n) = run(&[Failure, Failure, Failure, Success]);
        assert_eq!(s, None);
        assert_eq!(n[..3], [Notice::Alert, Notice::None, Notice::None]);
        assert_eq!(n[3], Notice::Recovered { runs: 3, since: Some(at("2026-03-01T08:00:00Z")) });
        // A second streak alerts again.
        let (_, n) = run(&[Failure, Success, Success, Failure]);
        assert_eq!(n, [Notice::Alert, Notice::Recovered { runs: 1, since: Some(at("2026-03-01T08:00:00Z")) }, Notice::None, Notice::Alert]);
    }

    #[test]
    fn skips_alert_only_three_in_a_row() {
        use Event::*;
        let (s, n) = run(&[Skip, Skip, Success, Skip, Skip]);
        assert!(n.iter().all(|n| *n == Notice::None), "{n:?}");
        assert_eq!(s.map(|s| (s.skips, s.alerted)), Some((2, false)));
        let (_, n) = run(&[Skip, Skip, Skip, Skip, Success]);
        assert_eq!(n[..4], [Notice::None, Notice::None, Notice::Alert, Notice::None]);
        assert!(matches!(n[4], Notice::Recovered { runs: 4, .. }));
        // Two skips that end quietly say nothing when the run then succeeds.
        let (_, n) = run(&[Skip, Skip, Success]);
        assert_eq!(n[2], Notice::None);
    }

    #[test]
    fn outcomes_map_to_events() {
        for o in [RunOutcome::Error, RunOutcome::DeliveryFailed, RunOutcome::Missed, RunOutcome::Interrupted, RunOutcome::OverBudget] {
            assert_eq!(Event::of(o), Event::Failure, "{o}");
        }
        assert_eq!(Event::of(RunOutcome::Ok), Event::Success);
        assert_eq!(Event::of(RunOutcome::Silent), Event::Success);
        assert_eq!(Event::of(RunOutcome::Skipped), Event::Skip);
    }

    #[test]
    fn a_success_after_a_success_never_reads_the_streak() {
        assert!(!success_may_end_streak(Some(Some(RunStatus::Ok))));
        assert!(!success_may_end_streak(Some(None)));
        assert!(success_may_end_streak(Some(Some(RunStatus::Skipped))));
        assert!(success_may_end_streak(Some(Some(RunStatus::Error))));
        assert!(success_may_end_streak(None), "unknown: read");
    }

    #[test]
    fn texts_name_the_job_and_the_reason() {
        let s = Streak { runs: 3, skips: 3, alerted: true, since: None };
        assert!(alert_text("news", RunOutcome::Skipped, None, &s).contains("3 occurrences in a row were skipped"));
        let t = alert_text("news", RunOutcome::Error, Some("model down\nsecond line"), &s);
        assert!(t.contains("'news' is failing: its last run ended error: model down.") && !t.contains("second line"), "{t}");
        assert_eq!(
            recovered_text("news", 2, Some(at("2026-03-01T08:00:00Z"))),
            "✅ Scheduled job 'news' recovered: it ran successfully after 2 failing runs since 2026-03-01T08:00:00Z."
        );
    }
}
