//! EventBridge Scheduler adapter of the `Timers` port (docs/design.md#timers-eventbridge), feature `aws`.
//!
//! One one-shot `at(...)` schedule per armed occurrence, named deterministically
//! `hz-<job_id>-<YYYYMMDDTHHMMSSZ>` in the group `cron.eventbridge.group`, with
//! `ActionAfterCompletion = DELETE` and the input `{"hermes_zero_fire":{"job_id","fire_at"}}`,
//! targeting the Lambda function itself. A routed profile P (one of many on one process,
//! docs/design.md#profiles) names its schedules `hzp.<P>.<job_id>-<YYYYMMDDTHHMMSSZ>` and
//! adds `"profile":"P"` to the input, so each profile's reconcile sees only its own.
//! EventBridge and Lambda's async invocation are at-least-once: the occurrence claim in the
//! store dedupes, so a schedule that fires twice, or a create that races another instance,
//! is harmless.
//!
//! Owns the schedule naming and the SDK calls; knows nothing of the store or the app.

use crate::config::EventBridgeSettings;
use crate::core::job::Job;
use crate::core::profile::Profile;
use crate::ports::{Clock, ReconcileReport, TimerError, Timers};
use async_trait::async_trait;
use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::config::http::HttpResponse;
use aws_sdk_scheduler::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_scheduler::types::{ActionAfterCompletion, FlexibleTimeWindow, FlexibleTimeWindowMode, Target};
use chrono::{DateTime, NaiveDateTime, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::OnceCell;

/// Prefix of every schedule of the process's own profile (its reconcile deletes unknown
/// `hz-` schedules).
pub const NAME_PREFIX: &str = "hz-";
/// Start of every routed profile's schedule names: `hzp.<profile>.` (never `hz-`, so the
/// process's own profile never lists them).
pub const PROFILE_PREFIX: &str = "hzp.";
/// Longest schedule name EventBridge Scheduler accepts.
const MAX_NAME: usize = 64;
/// `-` plus `YYYYMMDDTHHMMSSZ`.
const STAMP_LEN: usize = 17;
/// Longest profile name used verbatim in a schedule name. A longer one becomes its first
/// characters, `-` and a hash, one character longer than this: never equal to a verbatim name.
const MAX_PROFILE_PART: usize = 20;
/// How far in the future an `at()` expression must be to be safe to create: EventBridge may
/// refuse or never run a one-shot in the past, so overdue occurrences are scheduled a minute
/// from now (the input keeps the real `fire_at`; the fire path handles lateness).
const MIN_LEAD_SECS: i64 = 60;

/// The schedule names and inputs of one profile (docs/design.md#timers-eventbridge):
/// the process's own profile (`hz-<job_id>-<stamp>`, input without a profile), or a routed
/// profile P (`hzp.<P>.<job_id>-<stamp>`, input with `"profile":"P"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    /// The routed profile, or None for the process's own.
    profile: Option<String>,
    /// What every name of this profile starts with (and no other profile's does).
    prefix: String,
    /// Longest job id used verbatim: 64 − prefix − `-` − stamp.
    max_id: usize,
}

impl Default for Naming {
    fn default() -> Self {
        Self::of(None)
    }
}

impl Naming {
    /// The names of `profile` when it is routed, or of the process's own profile (None).
    pub fn of(profile: Option<&Profile>) -> Self {
        let profile = profile.map(|p| p.as_str().to_string());
        let prefix = match &profile {
            None => NAME_PREFIX.to_string(),
            Some(p) => format!("{PROFILE_PREFIX}{}.", profile_part(p)),
        };
        let max_id = MAX_NAME - prefix.len() - STAMP_LEN;
        Self { profile, prefix, max_id }
    }

    /// What every schedule name of this profile starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The schedule name of an occurrence. Job ids outside the allowed charset
    /// (`[0-9A-Za-z_.-]`) or too long to fit the 64-character limit are shortened to a
    /// prefix plus a hash of the whole id, so names stay unique.
    pub fn schedule_name(&self, job_id: &str, fire_at: DateTime<Utc>) -> String {
        format!("{}{}-{}", self.prefix, self.id_part(job_id), fire_at.format("%Y%m%dT%H%M%SZ"))
    }

    /// Splits a name of this profile made by [`Naming::schedule_name`] into its job part
    /// and occurrence; None for any other name (another profile's among them).
    pub fn parse_name<'a>(&self, name: &'a str) -> Option<(&'a str, DateTime<Utc>)> {
        let rest = name.strip_prefix(self.prefix.as_str())?;
        let (id, stamp) = rest.rsplit_once('-')?;
        let at = NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ").ok()?.and_utc();
        (!id.is_empty()).then_some((id, at))
    }

    /// The schedule's input: the fire event the Lambda entry dispatches, with the profile
    /// when it is routed.
    pub fn fire_input(&self, job_id: &str, fire_at: DateTime<Utc>) -> String {
        let fire_at = fire_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut fire = serde_json::json!({"job_id": job_id, "fire_at": fire_at});
        if let Some(p) = &self.profile {
            fire["profile"] = p.as_str().into();
        }
        serde_json::json!({ "hermes_zero_fire": fire }).to_string()
    }

    /// The job part of a schedule name.
    fn id_part(&self, job_id: &str) -> String {
        let clean = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
        if !job_id.is_empty() && job_id.len() <= self.max_id && job_id.chars().all(clean) {
            return job_id.to_string();
        }
        let head: String = job_id.chars().map(|c| if clean(c) { c } else { '_' }).take(self.max_id - 9).collect();
        format!("{head}.{:08x}", fnv1a(job_id.as_bytes()))
    }
}

/// The profile part of a routed profile's names: the name itself (`[a-z0-9_-]`, no `.`,
/// which ends the part) up to [`MAX_PROFILE_PART`] characters, else its head, `-` and a
/// hash of the whole name.
fn profile_part(profile: &str) -> String {
    if profile.len() <= MAX_PROFILE_PART {
        return profile.to_string();
    }
    let head: String = profile.chars().take(MAX_PROFILE_PART - 8).collect();
    format!("{head}-{:08x}", fnv1a(profile.as_bytes()))
}

/// The schedule name of an occurrence of the process's own profile:
/// `hz-<job_id>-<YYYYMMDDTHHMMSSZ>` (docs/design.md#timers-eventbridge).
pub fn schedule_name(job_id: &str, fire_at: DateTime<Utc>) -> String {
    Naming::default().schedule_name(job_id, fire_at)
}

/// 32-bit FNV-1a: a stable hash with no dependency (names must not change between builds).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// Splits a name made by [`schedule_name`] (the process's own profile) into its job part and
/// occurrence.
pub fn parse_name(name: &str) -> Option<(&str, DateTime<Utc>)> {
    Naming::default().parse_name(name)
}

/// The `at()` expression (UTC) for an occurrence, never earlier than `now + 60 s`.
pub fn at_expression(fire_at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let at = fire_at.max(now + chrono::Duration::seconds(MIN_LEAD_SECS));
    format!("at({})", at.format("%Y-%m-%dT%H:%M:%S"))
}

/// The input of the process's own profile's schedules: `{"hermes_zero_fire":{"job_id","fire_at"}}`
/// (docs/design.md#timers-eventbridge).
pub fn fire_input(job_id: &str, fire_at: DateTime<Utc>) -> String {
    Naming::default().fire_input(job_id, fire_at)
}

/// Prefix of wake schedules (docs/design.md#wakes): `hzwake-<YYYYMMDDTHHMMSSZ>`. Neither under
/// [`NAME_PREFIX`] nor [`PROFILE_PREFIX`], so job reconciliation never sees (or deletes) them.
/// Shared by every profile of a process: the watchdog event ticks them all.
pub const WAKE_PREFIX: &str = "hzwake-";

/// The schedule name of a wake at `at`.
pub fn wake_name(at: DateTime<Utc>) -> String {
    format!("{WAKE_PREFIX}{}", at.format("%Y%m%dT%H%M%SZ"))
}

/// The input of a wake schedule: the watchdog event, one ticker pass (sweep, overdue jobs).
pub const WAKE_INPUT: &str = r#"{"hermes_zero_tick":{}}"#;

/// The `Timers` port on EventBridge Scheduler.
pub struct EventBridgeTimers {
    group: String,
    target_arn: String,
    role_arn: String,
    /// The profile whose jobs these are: its schedule names and fire input.
    naming: Naming,
    endpoint: Option<String>,
    /// The program's clock: `at()` never lies before "now" as the rest of the program sees it.
    clock: Arc<dyn Clock>,
    /// Built on first use (loading AWS config is async; `build_app` is not).
    client: OnceCell<Client>,
    /// Set once the group is known to exist.
    group_ready: OnceCell<()>,
    /// This function's ARN, the default schedule target. The Lambda environment exposes the
    /// function name and region but not the account id, so the entry learns the full ARN from
    /// the first invocation's context ([`Timers::learn_target`]).
    function_arn: OnceLock<String>,
}

impl EventBridgeTimers {
    /// From settings. `endpoint` overrides the Scheduler endpoint (tests); without it the
    /// standard AWS configuration applies, including `AWS_ENDPOINT_URL_SCHEDULER`.
    pub fn new(settings: &EventBridgeSettings, endpoint: Option<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            group: settings.group.clone(),
            target_arn: settings.target_arn.clone(),
            role_arn: settings.role_arn.clone(),
            naming: Naming::default(),
            endpoint,
            clock,
            client: OnceCell::new(),
            group_ready: OnceCell::new(),
            function_arn: OnceLock::new(),
        }
    }

    /// Arming for a routed profile (docs/design.md#profiles): its own schedule names and
    /// fire input. None (the default) is the process's own profile.
    #[must_use]
    pub fn for_profile(mut self, profile: Option<&Profile>) -> Self {
        self.naming = Naming::of(profile);
        self
    }

    /// With a ready client (tests).
    pub fn with_client(settings: &EventBridgeSettings, client: Client, clock: Arc<dyn Clock>) -> Self {
        Self { client: OnceCell::new_with(Some(client)), ..Self::new(settings, None, clock) }
    }

    async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                let timeouts = aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(5))
                    .operation_timeout(Duration::from_secs(15))
                    .build();
                let sdk = crate::clients::aws_sdk_loader().timeout_config(timeouts).load().await;
                let mut conf = aws_sdk_scheduler::config::Builder::from(&sdk);
                if let Some(ep) = &self.endpoint {
                    conf = conf.endpoint_url(ep);
                }
                Client::from_conf(conf.build())
            })
            .await
    }

    /// The client, after making sure the schedule group exists (created if missing).
    async fn ready(&self) -> Result<&Client, TimerError> {
        // Checked before any network call, so a half-configured deployment fails fast.
        if self.role_arn.is_empty() {
            return Err(TimerError::Refused("cron.eventbridge.role_arn is not set".into()));
        }
        let c = self.client().await;
        self.group_ready
            .get_or_try_init(|| async {
                match c.get_schedule_group().name(&self.group).send().await {
                    Ok(_) => Ok(()),
                    Err(e) if code(&e) == Some("ResourceNotFoundException") => {
                        tracing::info!(group = %self.group, "creating the EventBridge schedule group");
                        match c.create_schedule_group().name(&self.group).send().await {
                            Ok(_) => Ok(()),
                            Err(e) if code(&e) == Some("ConflictException") => Ok(()),
                            Err(e) => Err(classify("CreateScheduleGroup", e)),
                        }
                    }
                    Err(e) => Err(classify("GetScheduleGroup", e)),
                }
            })
            .await?;
        Ok(c)
    }

    fn target(&self) -> Result<String, TimerError> {
        if !self.target_arn.is_empty() {
            return Ok(self.target_arn.clone());
        }
        self.function_arn
            .get()
            .cloned()
            .ok_or_else(|| TimerError::Refused("cron.eventbridge.target_arn is not set and this function's ARN is not known yet".into()))
    }

    /// Creates an occurrence's schedule; false if it already existed.
    async fn create(&self, c: &Client, job_id: &str, fire_at: DateTime<Utc>) -> Result<bool, TimerError> {
        let (name, input) = (self.naming.schedule_name(job_id, fire_at), self.naming.fire_input(job_id, fire_at));
        let what = match &self.naming.profile {
            None => format!("hermes-zero job {job_id}"),
            Some(p) => format!("hermes-zero job {job_id} of profile {p}"),
        };
        self.create_one_shot(c, &name, fire_at, input, what).await
    }

    /// Creates a one-shot `at()` schedule invoking the target with `input`; false if a
    /// schedule of that name already existed.
    async fn create_one_shot(&self, c: &Client, name: &str, at: DateTime<Utc>, input: String, what: String) -> Result<bool, TimerError> {
        let refused = |e: aws_sdk_scheduler::error::BuildError| TimerError::Refused(e.to_string());
        let target = Target::builder().arn(self.target()?).role_arn(&self.role_arn).input(input).build().map_err(refused)?;
        let window = FlexibleTimeWindow::builder().mode(FlexibleTimeWindowMode::Off).build().map_err(refused)?;
        let res = c
            .create_schedule()
            .name(name)
            .group_name(&self.group)
            .schedule_expression(at_expression(at, self.clock.now()))
            .schedule_expression_timezone("UTC")
            .flexible_time_window(window)
            .action_after_completion(ActionAfterCompletion::Delete)
            .target(target)
            .description(what)
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if code(&e) == Some("ConflictException") => Ok(false),
            Err(e) => Err(classify("CreateSchedule", e)),
        }
    }

    /// Deletes a schedule; false if it was already gone.
    async fn delete(&self, c: &Client, name: &str) -> Result<bool, TimerError> {
        match c.delete_schedule().name(name).group_name(&self.group).send().await {
            Ok(_) => Ok(true),
            Err(e) if code(&e) == Some("ResourceNotFoundException") => Ok(false),
            Err(e) => Err(classify("DeleteSchedule", e)),
        }
    }

    /// Names of this adapter's schedules in the group that start with `prefix`.
    async fn list(&self, c: &Client, prefix: &str) -> Result<Vec<String>, TimerError> {
        let mut names = Vec::new();
        let mut token = None;
        loop {
            let page = c.list_schedules().group_name(&self.group).name_prefix(prefix).max_results(100).set_next_token(token).send().await;
            let page = match page {
                Ok(p) => p,
                Err(e) if code(&e) == Some("ResourceNotFoundException") => return Ok(names),
                Err(e) => return Err(classify("ListSchedules", e)),
            };
            names.extend(page.schedules().iter().filter_map(|s| s.name().map(str::to_string)));
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => return Ok(names),
            }
        }
    }

    /// The job's schedules in this profile (exactly this job: `hz-abc-` also prefixes job
    /// `abc-def`'s names).
    async fn list_job(&self, c: &Client, job_id: &str) -> Result<Vec<String>, TimerError> {
        let part = self.naming.id_part(job_id);
        let names = self.list(c, &format!("{}{part}-", self.naming.prefix)).await?;
        Ok(names.into_iter().filter(|n| self.naming.parse_name(n).is_some_and(|(id, _)| id == part)).collect())
    }
}

#[async_trait]
impl Timers for EventBridgeTimers {
    fn provider(&self) -> crate::ports::TimerProvider {
        crate::ports::TimerProvider::Eventbridge
    }

    /// Records this function's ARN (from an invocation context) as the default schedule
    /// target. Ignores anything that is not an ARN; the first value wins.
    fn learn_target(&self, arn: &str) {
        if arn.starts_with("arn:") {
            let _ = self.function_arn.set(arn.to_string());
        }
    }

    async fn arm(&self, job: &Job) -> Result<(), TimerError> {
        let Some(at) = job.next_run_at.filter(|_| job.armed()) else { return self.cancel(&job.id).await };
        let c = self.ready().await?;
        // Create first, then remove the others: the job is never left without a timer.
        self.create(c, &job.id, at).await?;
        let keep = self.naming.schedule_name(&job.id, at);
        for name in self.list_job(c, &job.id).await? {
            if name != keep {
                self.delete(c, &name).await?;
            }
        }
        Ok(())
    }

    async fn cancel(&self, job_id: &str) -> Result<(), TimerError> {
        let c = self.ready().await?;
        for name in self.list_job(c, job_id).await? {
            self.delete(c, &name).await?;
        }
        Ok(())
    }

    async fn reconcile(&self, jobs: &[Job]) -> Result<ReconcileReport, TimerError> {
        let c = self.ready().await?;
        let desired: BTreeMap<String, (&str, DateTime<Utc>)> = jobs
            .iter()
            .filter(|j| j.armed())
            .filter_map(|j| j.next_run_at.map(|at| (self.naming.schedule_name(&j.id, at), (j.id.as_str(), at))))
            .collect();
        // Only this profile's names: anything else in the group (another profile's schedules,
        // wakes, foreign schedules) is left alone.
        let existing: Vec<String> =
            self.list(c, &self.naming.prefix).await?.into_iter().filter(|n| self.naming.parse_name(n).is_some()).collect();
        let mut report = ReconcileReport::default();
        for name in &existing {
            if desired.contains_key(name) {
                report.unchanged += 1;
            } else if self.delete(c, name).await? {
                report.cancelled += 1;
            }
        }
        for (name, (job_id, at)) in &desired {
            if !existing.contains(name) && self.create(c, job_id, *at).await? {
                report.armed += 1;
            }
        }
        Ok(report)
    }

    /// Creates the one-shot schedule `hzwake-<at>` with the watchdog event as its input
    /// (at least a minute ahead, like every `at()`); an existing one of that name is fine.
    async fn arm_wake(&self, at: DateTime<Utc>) -> Result<bool, TimerError> {
        let c = self.ready().await?;
        self.create_one_shot(c, &wake_name(at), at, WAKE_INPUT.to_string(), "hermes-zero wake for stored chat work".into()).await?;
        Ok(true)
    }
}

/// The service error code, if the call reached the service.
fn code<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> Option<&str> {
    match e {
        SdkError::ServiceError(s) => s.err().code(),
        _ => None,
    }
}

/// Classifies an SDK failure once: throttling, 5xx and transport problems are `Unavailable`
/// (the SDK already retried them); every other service answer is `Refused`.
fn classify<E>(op: &str, e: SdkError<E, HttpResponse>) -> TimerError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let transient = match &e {
        SdkError::ServiceError(s) => {
            s.raw().status().is_server_error()
                || matches!(s.err().code(), Some("ThrottlingException" | "InternalServerException" | "ServiceUnavailableException"))
        }
        SdkError::ConstructionFailure(_) => false,
        _ => true,
    };
    let detail = format!("{op}: {}", DisplayErrorContext(&e));
    if transient { TimerError::Unavailable(detail) } else { TimerError::Refused(detail) }
}

#[cfg(test)]
mod tests;
