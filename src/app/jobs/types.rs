//! What the files of `jobs` share: the job preamble, the `[SILENT]` rule, run ids, the
//! run's start and owed writes ([`RunStart`], [`Tail`]) and a claim's result ([`Step`]).
//! It imports no other file of `jobs`.

use crate::app::FireStatus;
use crate::core::ids::SessionId;
use crate::core::job::{Job, Occurrence, RunOutcome, RunRecord};
use crate::core::retry::{RetryDue, RetryKey};
use crate::core::session::Message;
use crate::ports::RunAppend;
use chrono::{DateTime, Utc};

/// How early an external timer may fire and still count (clock skew).
pub(in crate::app) const EARLY_TOLERANCE_SECS: i64 = 60;

/// The preamble of every job run.
pub const PREAMBLE: &str = "You are running as a scheduled job, not in a live conversation. Your final answer is delivered \
automatically to the job's targets, so write it as the finished message. If there is nothing worth reporting, answer exactly [SILENT].";

/// Whether an answer means "nothing to report": `[SILENT]` as the whole answer, or as its
/// first or last line.
pub fn is_silent(answer: &str) -> bool {
    let t = answer.trim();
    let first = t.lines().next().map(str::trim);
    let last = t.lines().last().map(str::trim);
    t == "[SILENT]" || first == Some("[SILENT]") || last == Some("[SILENT]")
}

/// A job's delivered output as Hermes 0.19.0 wraps it (`cron/scheduler.py` `_deliver_result`):
/// the `Cronjob Response:` header with the job's name (its id when unnamed), the job id line,
/// the separator, the output and the footer.
pub fn wrap_response(name: &str, id: &str, output: &str) -> String {
    let name = if name.is_empty() { id } else { name };
    format!(
        "Cronjob Response: {name}\n(job_id: {id})\n-------------\n\n{output}\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder {name}\")."
    )
}

/// A run's id: `<job_id>-<fire_at stamp>-<6 hex>` (a retry attempt's run names its job, not
/// its attempt key).
pub(in crate::app) fn run_id(job_id: &str, fire_at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    format!("{}-{}-{:06x}", job_id, fire_at.format("%Y%m%dT%H%M%SZ"), (now.timestamp_subsec_micros() ^ rand::random::<u32>()) & 0xff_ffff)
}

/// A run that ended as it was recorded, with no session and no model call (missed, skipped,
/// interrupted): finished `now`, started `started`. `occ` may be a retry attempt's claim.
pub(in crate::app) fn ended_run(
    occ: &Occurrence,
    trigger: &str,
    started: DateTime<Utc>,
    now: DateTime<Utc>,
    status: RunOutcome,
    output: String,
    error: Option<String>,
) -> RunRecord {
    let (job_id, attempt) = match RetryKey::parse(&occ.job_id) {
        Some(k) => (k.job_id, k.attempt),
        None => (occ.job_id.clone(), 1),
    };
    RunRecord {
        run_id: run_id(&job_id, occ.fire_at, now),
        job_id,
        fire_at: occ.fire_at,
        trigger: trigger.into(),
        started_at: started,
        finished_at: Some(now),
        status,
        output,
        error,
        deliveries: vec![],
        session_id: String::new(),
        attempt,
    }
}

/// A job run's fresh session and its first message (the prompt), written with the claim.
pub(in crate::app) struct RunStart {
    /// `cron_<job_id>_<fire_at in the configured zone>`.
    pub session_id: SessionId,
    /// The prompt message, or why it could not be built (an unreadable skill).
    pub prompt: Result<Message, String>,
    /// When the run started (the claim's time).
    pub started: DateTime<Utc>,
    /// The job runs a script first: its prompt is known only after the script ran, so the
    /// claim stores none (the run stores it with the answer).
    pub scripted: bool,
    /// A manual run's one-time text (`## Run Context`), for a script job's prompt built after
    /// its script ran.
    pub extra: Option<String>,
    /// The attempt of the occurrence (1, or a retry's number; docs/design/jobs.md#retry).
    pub attempt: u32,
}

impl RunStart {
    /// The prompt as the first message of the fresh session, if there is one (none for a
    /// script job: see [`RunStart::scripted`]).
    pub fn append(&self) -> Option<RunAppend> {
        if self.scripted {
            return None;
        }
        let msg = self.prompt.as_ref().ok()?;
        Some(RunAppend { session_id: self.session_id.clone(), after: 0, messages: vec![msg.clone()] })
    }
}

/// Writes a run still owes, carried to its delivery's ledger write or to its finish.
#[derive(Debug, Default)]
pub(in crate::app) struct Tail {
    /// Ledger rows to set, as `(target key, status)`.
    pub ledger: Vec<(String, String)>,
    /// The answer, until a write stores it.
    pub append: Option<RunAppend>,
    /// A model turn ran in the run's session (a script job's session exists only then).
    pub session_used: bool,
    /// The next attempt this failed run planned, stored on the job by the finishing write.
    pub retry: Option<RetryDue>,
    /// Why the run was stopped before a model call (its budget, `app::budget`).
    pub over_budget: Option<String>,
}

/// An occurrence (or retry attempt) this process claimed, with the job as the claim wrote
/// it and, for a run, the session and prompt the claim stored.
pub(in crate::app) struct Claimed {
    pub job: Job,
    pub occ: Occurrence,
    pub start: Option<RunStart>,
}

/// One claim attempt's result: an answer already (gone, paused, duplicate, stale), the
/// claim of an occurrence skipped because the previous run still runs, or the claim.
pub(in crate::app) enum Step {
    Done(FireStatus),
    Skipped(Box<Claimed>),
    Claimed(Box<Claimed>),
}

#[cfg(test)]
mod tests {
    use super::{is_silent, wrap_response};

    #[test]
    fn wrapped_as_hermes_wraps_it() {
        assert_eq!(
            wrap_response("news", "a1b2c3d4e5f6", "Top story."),
            "Cronjob Response: news\n(job_id: a1b2c3d4e5f6)\n-------------\n\nTop story.\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder news\")."
        );
        assert!(wrap_response("", "a1b2", "x").starts_with("Cronjob Response: a1b2\n(job_id: a1b2)\n"));
    }

    #[test]
    fn silent_rules() {
        assert!(is_silent("[SILENT]"));
        assert!(is_silent("  [SILENT]\n"));
        assert!(is_silent("[SILENT]\nnothing new today"));
        assert!(is_silent("checked everything\n[SILENT]"));
        assert!(!is_silent("The answer mentions [SILENT] inline"));
        assert!(!is_silent(""));
    }
}
