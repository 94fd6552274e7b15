//! Which timer provider wakes the process for a job's next occurrence. The choice is made
//! once at wiring time (`config::provider::choose`); code asks the provider's kind, never
//! compares names. Also the rule of when stored chat work needs a wake.

use crate::core::session::SessionEntry;
use chrono::{DateTime, Utc};
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

/// The reserved timer id of a wake (docs/design.md#wakes): a one-shot timer armed for stored
/// chat work, not for a job. Chronos calls the fire callback with this `job_id`, which runs a
/// recovery sweep; no job can take this id (`core::job::valid_id` refuses it).
pub const WAKE_ID: &str = "_hermes_zero_wake";

/// When an entry's stored work needs a process awake (docs/design.md#wakes): now for work a
/// sweep can start at once (pending slot, resume mark, queued items); a live lease's expiry,
/// when a sweep may take the turn over if its holder died; `None` when nothing waits.
pub fn wake_at(e: &SessionEntry, queued: bool, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match &e.lease {
        Some(l) => Some(l.expires_at.max(now)),
        None if e.needs_wake() || queued => Some(now),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
    use crate::core::session::Lease;

    #[test]
    fn wake_times() {
        let now = DateTime::from_timestamp(1000, 0).unwrap();
        let o = Origin::new("api", "c", ChatType::Dm, None, None).unwrap();
        let mut e = SessionEntry::new(SessionKey::derive(&o, Default::default()), SessionId::generate(now, &Utc), o, now);
        assert_eq!(wake_at(&e, false, now), None, "nothing stored");
        assert_eq!(wake_at(&e, true, now), Some(now), "queued items");
        e.resume_pending = true;
        e.last_resume_marked_at = Some(now);
        assert_eq!(wake_at(&e, false, now), Some(now), "resume mark");
        e.suspended = true;
        assert_eq!(wake_at(&e, false, now), None, "suspended: nothing a sweep would do");
        let exp = now + chrono::Duration::seconds(300);
        // Built from its stored form, so fields added to a lease later keep this test compiling.
        let lease: Lease =
            serde_json::from_value(serde_json::json!({"token": "t", "owner": "h:1", "started_at": now, "expires_at": exp})).unwrap();
        e.lease = Some(lease);
        assert_eq!(wake_at(&e, true, now), Some(exp), "a live turn: wake when its lease may be taken over");
        e.lease.as_mut().unwrap().expires_at = now - chrono::Duration::seconds(5);
        assert_eq!(wake_at(&e, false, now), Some(now), "an expired lease: now");
    }
}
