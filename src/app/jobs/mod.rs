//! Scheduled jobs: managing them ([`manage`]: create, update, pause/resume, remove,
//! jobs.json sync, the ticker's pass), the one fire path ([`fire`]: claim the occurrence,
//! advance the job, arm the next timer; [`overlap`] records an occurrence skipped while the
//! previous run still runs; [`retry`] claims a retry attempt of a run that had no effect and
//! plans the next one), the run ([`run`]: the run's fresh session and agent
//! turn, the finishing write), a job's script before it ([`script`]), delivery through the
//! ledger ([`deliver`]), the schedule
//! lines of `cron status` and `/status` ([`status`]) and the verifier of Chronos fire
//! tokens ([`fire_token`]); the prompt body of a run (`context_from` outputs, a manual run's
//! `## Run Context`) is [`context`], and the delivery mirror into the job's chat ([`mirror`]);
//! a recorded run steps the job's failing streak and sends its one alert ([`alerts`]).
//!
//! Calls run one way: `manage` → `fire` → `retry`, `run` → `script`, `deliver` (and `run` → `context`,
//! `alerts` → `deliver`); the types they share live in
//! [`types`]. A run reaches the agent loop through `app::turn`, never the other way round.

pub(in crate::app) mod alerts;
pub(in crate::app) mod context;
pub(in crate::app) mod deliver;
pub(in crate::app) mod fire;
pub mod fire_token;
pub(in crate::app) mod manage;
pub(in crate::app) mod mirror;
pub(in crate::app) mod overlap;
pub(in crate::app) mod retry;
#[cfg(test)]
pub(crate) mod retry_tests;
pub(in crate::app) mod run;
pub(in crate::app) mod script;
pub(in crate::app) mod status;
pub(in crate::app) mod types;

/// The alert and budget scenarios, for the DynamoDB adapter's tests.
#[cfg(all(test, feature = "aws"))]
pub(crate) use alerts::tests as alerts_tests;
