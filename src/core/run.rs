//! One run of one occurrence, as stored: how it ended, what it delivered (the claim record
//! and the run list keep it).

use crate::core::job::{Occurrence, RunStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How one run ended (the claim record and the run list keep it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// Ran and (if needed) delivered.
    Ok,
    /// The run failed.
    Error,
    /// Ran, but at least one delivery failed.
    DeliveryFailed,
    /// A one-shot too late to run.
    Missed,
    /// The process running it died or ran past its budget; never re-run.
    Interrupted,
    /// A script job with nothing to report (empty stdout, or `{"wakeAgent": false}`): no
    /// model call, nothing delivered.
    Silent,
    /// Came due while the job's previous run still ran; not run (docs/design.md#overlap).
    Skipped,
    /// Stopped before a model call that would pass the job's `max_tokens` or
    /// `cron.daily_budget_usd` (docs/jobs.md#budgets).
    OverBudget,
}

impl RunOutcome {
    /// The stored name (`ok`, `error`, `delivery_failed`, `missed`, `interrupted`, `silent`, `skipped`,
    /// `over_budget`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::DeliveryFailed => "delivery_failed",
            Self::Missed => "missed",
            Self::Interrupted => "interrupted",
            Self::Skipped => "skipped",
            Self::Silent => "silent",
            Self::OverBudget => "over_budget",
        }
    }

    /// What the job's `last_status` becomes.
    pub fn job_status(self) -> RunStatus {
        match self {
            Self::Ok => RunStatus::Ok,
            Self::Missed => RunStatus::Missed,
            Self::Skipped => RunStatus::Skipped,
            Self::DeliveryFailed => RunStatus::DeliveryFailed,
            Self::Silent => RunStatus::Silent,
            Self::OverBudget => RunStatus::OverBudget,
            Self::Error | Self::Interrupted => RunStatus::Error,
        }
    }
}

impl std::fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The delivery result of one target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryResult {
    /// The target as written (`telegram:-100123`).
    pub target: String,
    /// `sent`, `skipped` (already sent, or `local`) or `failed`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One run of one occurrence, as stored (newest `output_retention` per job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run id.
    pub run_id: String,
    /// The job.
    pub job_id: String,
    /// The occurrence.
    pub fire_at: DateTime<Utc>,
    /// What fired it (`ticker`, `chronos`, `eventbridge`, `manual`).
    pub trigger: String,
    /// Start.
    pub started_at: DateTime<Utc>,
    /// End.
    pub finished_at: Option<DateTime<Utc>>,
    /// How the run ended.
    pub status: RunOutcome,
    /// The agent's answer.
    pub output: String,
    /// Error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per-target delivery results.
    #[serde(default)]
    pub deliveries: Vec<DeliveryResult>,
    /// The run's session (`cron_<job>_<stamp>`, `_<attempt>` after it for a retry).
    #[serde(default)]
    pub session_id: String,
    /// The attempt of the occurrence (1, then 2, 3… for retries; docs/design/jobs.md#retry).
    #[serde(default = "first_attempt")]
    pub attempt: u32,
}

/// The first attempt's number (what records written before retries existed were).
pub fn first_attempt() -> u32 {
    1
}

impl RunRecord {
    /// The occurrence whose claim this run belongs to: manual runs claim in their own key
    /// space ([`Occurrence::manual`]), a retry attempt its own key
    /// ([`crate::core::retry::RetryKey`]), every other run the job's scheduled occurrence.
    pub fn occurrence(&self) -> Occurrence {
        if self.trigger == "manual" {
            Occurrence::manual(&self.job_id, self.fire_at)
        } else if self.attempt > 1 {
            crate::core::retry::RetryKey { job_id: self.job_id.clone(), fire_at: self.fire_at, attempt: self.attempt }.occurrence()
        } else {
            Occurrence::new(&self.job_id, self.fire_at)
        }
    }
}
