//! Types and constants that several rooms of `app` share: what kind of turn runs (chat or
//! job), what a fire did, and the turn's time budgets. Every room may import this file; it
//! imports no room of `app`, so shared types never make two rooms depend on each other.

use crate::core::job::RunRecord;
use chrono::{DateTime, Utc};

/// Whether a turn answers a chat message or runs a scheduled job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnKind {
    /// A chat turn (has an origin).
    Chat,
    /// A job run (no chat; `cronjob` is not offered).
    Job,
}

/// How long one turn may run.
pub const TURN_BUDGET_SECS: i64 = 600;
/// Slack on top of the budget before another process may treat the lease as abandoned.
pub const LEASE_MARGIN_SECS: i64 = 60;
/// How long one drain may keep the lease before leaving the rest to a later wake.
pub const DRAIN_BUDGET_SECS: u64 = 900;

/// What a fire did.
#[derive(Debug, Clone)]
pub enum FireStatus {
    /// The job is missing, disabled or completed.
    Gone,
    /// The job is paused: nothing ran, and its timer follows its state (none while paused).
    Paused,
    /// The occurrence was claimed before.
    Duplicate,
    /// The fire is for an occurrence the job has moved past (or not reached); nothing ran.
    Stale {
        /// The job's current next occurrence.
        next: Option<DateTime<Utc>>,
    },
    /// It ran (or was recorded as missed).
    Ran {
        /// The run.
        run: Box<RunRecord>,
        /// The job's next occurrence.
        next: Option<DateTime<Utc>>,
    },
}

impl FireStatus {
    /// The one JSON shape of a fire's result, for every transport (the Chronos callback, the
    /// REST run route, the Lambda fire event): `status` is `ok` (it ran, or was recorded as
    /// missed or skipped), `gone`, `paused`, `duplicate` or `stale`; a run adds `run_id`,
    /// `run_status` (`ok`, `silent`, `error`, `delivery_failed`, `missed`, `skipped`, `over_budget`), `attempt` (1, or the retry's
    /// number) and `error`; `next_fire_at` is the job's next
    /// occurrence. The run's output is never included (the caller may be the NAS).
    pub fn to_json(&self) -> serde_json::Value {
        let iso = |t: &Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        match self {
            Self::Gone => serde_json::json!({"status": "gone"}),
            Self::Paused => serde_json::json!({"status": "paused"}),
            Self::Duplicate => serde_json::json!({"status": "duplicate"}),
            Self::Stale { next } => serde_json::json!({"status": "stale", "next_fire_at": iso(next)}),
            Self::Ran { run, next } => serde_json::json!({
                "status": "ok", "run_id": run.run_id, "run_status": run.status, "attempt": run.attempt, "error": run.error, "next_fire_at": iso(next),
            }),
        }
    }
}

/// Job-run sessions in which a tool call with an effect started (docs/design/jobs.md#retry):
/// the tool registry marks a session before such a call runs in a job run, and the run takes
/// the mark when it ends. A failed run with a mark is never retried. Process-local on
/// purpose: a run lives in one process, and a run whose process died is never retried.
#[derive(Debug, Default)]
pub(in crate::app) struct EffectLog(std::sync::Mutex<std::collections::HashSet<String>>);

impl EffectLog {
    /// Marks `session`: a call with an effect is about to run in it.
    pub(in crate::app) fn mark(&self, session: &str) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(session.to_string());
    }

    /// Whether `session` was marked, clearing the mark.
    pub(in crate::app) fn take(&self, session: &str) -> bool {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(session)
    }
}
