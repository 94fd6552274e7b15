//! Which timer provider wakes the process for a job's next occurrence. The choice is made
//! once at wiring time (`config::provider::choose`); code asks the provider's kind, never
//! compares names.

use serde::Serialize;

/// A timer provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimerProvider {
    /// Nobody arms anything: the built-in ticker polls the store for due jobs.
    Builtin,
    /// Chronos (the NAS): one-shot timers that call `POST /api/cron/fire`.
    Chronos,
    /// EventBridge Scheduler: one-shot `at()` schedules that invoke the Lambda function.
    Eventbridge,
}

impl TimerProvider {
    /// `builtin`, `chronos` or `eventbridge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Chronos => "chronos",
            Self::Eventbridge => "eventbridge",
        }
    }

    /// Whether an outside service holds timers that must match the store (armed on change,
    /// reconciled), as opposed to the ticker polling the store.
    pub fn is_managed(self) -> bool {
        self != Self::Builtin
    }
}

impl std::fmt::Display for TimerProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
