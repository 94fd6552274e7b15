//! The AWS Lambda entry (feature `aws`): used when `AWS_LAMBDA_RUNTIME_API` is set.
//!
//! One cold start builds the app once (config from `HERMES_HOME`, else `/tmp/hermes-zero`;
//! clients once) and makes no store request: the store is opened, and the start-up work
//! (`jobs.json`, MCP tools, the recovery sweep) done, on the first invocation
//! (`lambda_start`). Each invocation is then one of:
//! - an EventBridge Scheduler fire event `{"hermes_zero_fire":{"job_id","fire_at"}}` → the
//!   shared fire path (`Jobs::fire`), answered with `{"status":"ok|duplicate|stale|gone",…}`;
//!   with `"profile":"P"` (a routed profile's schedule) it is P's app that fires;
//! - a watchdog event `{"hermes_zero_tick":{}}` (an optional recurring schedule) → one ticker
//!   pass, so stored work of a sandbox that died is picked up without waiting for a message;
//! - an HTTP event (Function URL, API Gateway v2/v1, ALB) → served by the same `http::router`
//!   as `serve` (`lambda_url`): a Function URL's answer is streamed (Lambda response
//!   streaming, so SSE reaches the caller as it is made), the others are answered buffered in
//!   the shape of their origin.
//!
//! Lambda freezes the sandbox once the runtime asks for the next event, so work the app left
//! running after answering (a queued turn drained in the background, a Discord follow-up, a
//! Slack event answered with 200 at once and handled after) would stall. A layer around the
//! runtime therefore waits, *after* the response has been posted and before the next event is
//! requested, until no turn and no deferred webhook message runs in this process — bounded
//! by the invocation deadline minus a margin. What is still running then resumes on a later
//! invocation, or is recovered from its expired lease by a later sweep. Before the sandbox
//! freezes, stored chat work that is left gets a one-shot wake from the timer provider
//! (EventBridge: a schedule sending the watchdog event; docs/design.md#wakes).
//!
//! Knows the Lambda event shapes and runtime protocol; the use cases know nothing of Lambda.

use super::lambda_start::FirstStart;
use super::lambda_url::Answer;
use crate::app::App;
use crate::channels::Channels;
use crate::config::{Env, load_settings};
use crate::http::{HttpState, router};
use crate::runtime::profiles::{Profiles, Served};
use axum::Router;
use chrono::{DateTime, Utc};
use lambda_http::request::LambdaRequest;
use lambda_runtime::tower::{Layer, Service};
use lambda_runtime::{FunctionResponse, LambdaEvent, LambdaInvocation, Runtime, layers::TracingLayer, service_fn};
use serde::Deserialize;
use serde_json::{Value, json};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

/// The variable whose presence means "running as a Lambda function".
pub const RUNTIME_API_VAR: &str = "AWS_LAMBDA_RUNTIME_API";
/// Variables the Lambda runtime client needs besides the API address.
const REQUIRED_VARS: [&str; 3] = ["AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION"];
/// Kept free before the invocation deadline for posting results and logging.
const DEADLINE_MARGIN: Duration = Duration::from_secs(10);
/// Idle looks in a row that end the settle phase, and their spacing (150 ms in all: billed,
/// but not seen by the caller, who already has the response).
const QUIET_POLLS: u32 = 3;
const POLL: Duration = Duration::from_millis(50);
/// Bound of arming a wake after an invocation (taken from the deadline margin).
const WAKE_BUDGET: Duration = Duration::from_secs(5);
/// Key of the fire event.
const FIRE_KEY: &str = "hermes_zero_fire";
/// Key of the watchdog event: one ticker pass (sweep, overdue jobs, reconcile).
const TICK_KEY: &str = "hermes_zero_tick";

/// Runs the process as a Lambda function until the runtime stops it.
pub fn main() -> ExitCode {
    match crate::runtime::process::async_runtime() {
        Ok(rt) => rt.block_on(run()),
        Err(e) => {
            eprintln!("hermes-zero: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    let env = Env::from_process();
    let Some(api) = env.get(RUNTIME_API_VAR).map(str::to_string) else { return ExitCode::FAILURE };
    if let Some(missing) = REQUIRED_VARS.iter().find(|v| env.get(v).is_none()) {
        return init_failed(&api, "Runtime.MissingEnvironment", &format!("{missing} is not set"), ExitCode::FAILURE).await;
    }
    let root = env.get("HERMES_HOME").map_or_else(|| PathBuf::from("/tmp/hermes-zero"), PathBuf::from);
    let profile = match crate::cli::resolve_profile(None, &env) {
        Ok(p) => p,
        Err((_, msg)) => return init_failed(&api, "Runtime.ConfigError", &msg, ExitCode::from(crate::cli::EXIT_CONFIG)).await,
    };
    let home = profile.home(&root);
    let mut cfg = match load_settings(&home, None, &env) {
        Ok(c) => c,
        Err(e) => return init_failed(&api, "Runtime.ConfigError", &e.to_string(), ExitCode::from(crate::cli::EXIT_CONFIG)).await,
    };
    if !profile.is_main() {
        cfg.store_home = Some(root);
    }
    cfg.profile = profile;
    for w in &cfg.warnings {
        tracing::warn!("{w}");
    }
    let choice = crate::config::provider::choose(&cfg, true);
    let no_role = cfg.settings.cron.eventbridge.role_arn.is_empty();
    // Every sandbox runs the bootstrap under the same few pids, so the default owner id
    // (`<host>:<pid>`) could collide across sandboxes; the log stream is unique per sandbox.
    let owner = env
        .get("AWS_LAMBDA_LOG_STREAM_NAME")
        .map(|stream| crate::core::recovery::owner_id(&format!("lambda/{stream}"), std::process::id()));
    // The store is opened by the first invocation, not here (lambda_start).
    let base = match super::open_base_lazy(&home, &cfg).await {
        Ok(b) => b,
        Err(e) => return init_failed(&api, "Runtime.StartError", &e.to_string(), ExitCode::FAILURE).await,
    };
    let super::Wired { app, channels, shared } = super::wire_on(&home, cfg, owner, base, false);
    tracing::info!(provider = %choice.provider, why = %choice.why, store = app.store_kind(), model = app.model_name(), "hermes-zero on AWS Lambda");
    if choice.provider == crate::ports::TimerProvider::Eventbridge && no_role {
        tracing::error!("cron.eventbridge.role_arn is not set: scheduled jobs cannot be armed and will not fire");
    }
    let api_key = app.configured_api_key();
    if api_key.is_none() {
        tracing::warn!("API_SERVER_KEY is not set: /api/* refuses every request");
    }
    let start = Arc::new(FirstStart::new(app.clone(), shared.base.clone()));
    let state = Arc::new(HttpState { app: app.clone(), channels: channels.clone(), api_key, provider: app.provider().as_str().into() });
    let default = Served { app: app.clone(), channels, router: router(state) };
    let profiles = Profiles::new(app.profile().clone(), default, shared, false);
    let handler = Handler { app, router: super::profiles::routes(profiles.clone()), profiles: profiles.clone(), start: start.clone() };
    let runtime = Runtime::new(service_fn(move |ev: LambdaEvent<Value>| handler.clone().handle(ev)))
        .layer(TracingLayer::new())
        .layer(SettleLayer { profiles, start });
    match runtime.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "Lambda runtime stopped");
            ExitCode::FAILURE
        }
    }
}

/// Reports an init failure to the Runtime API (so Lambda shows it), logs it, and exits.
async fn init_failed(api: &str, kind: &str, msg: &str, code: ExitCode) -> ExitCode {
    tracing::error!(error_type = kind, "cannot start: {msg}");
    let url = format!("http://{api}/2018-06-01/runtime/init/error");
    let body = json!({"errorType": kind, "errorMessage": msg});
    let client = crate::clients::http_client(Duration::from_secs(5));
    if let Err(e) = client.post(url).header("Lambda-Runtime-Function-Error-Type", kind).json(&body).send().await {
        tracing::error!(error = %crate::clients::describe(e), "could not report the init error to the Lambda Runtime API");
    }
    code
}

/// Time left for work in an invocation: the deadline minus a margin (at most half of what
/// is left, so short invocations still get time).
pub fn budget(deadline: SystemTime, now: SystemTime) -> Duration {
    let left = deadline.duration_since(now).unwrap_or_default();
    left - DEADLINE_MARGIN.min(left / 2)
}

/// The per-invocation handler: built once, cloned per event.
#[derive(Clone)]
struct Handler {
    app: App,
    router: Router,
    profiles: Arc<Profiles>,
    start: Arc<FirstStart>,
}

/// The occurrence in a fire event.
#[derive(Debug, Deserialize)]
struct FireEvent {
    job_id: String,
    #[serde(default)]
    fire_at: Option<DateTime<Utc>>,
    /// The profile whose job it is (docs/design.md#profiles); absent: the function's own.
    #[serde(default)]
    profile: Option<String>,
}

impl Handler {
    /// Handles one event with the invocation's deadline as the turn budget of the work it
    /// starts in this task.
    async fn handle(self, ev: LambdaEvent<Value>) -> Result<Answer, lambda_runtime::Error> {
        let left = budget(ev.context.deadline(), SystemTime::now());
        crate::app::budget::within(left, self.handle_event(ev)).await
    }

    async fn handle_event(self, ev: LambdaEvent<Value>) -> Result<Answer, lambda_runtime::Error> {
        let LambdaEvent { payload, context } = ev;
        // Every profile's schedules target this function.
        self.profiles.learn_timer_target(&context.invoked_function_arn);
        // The first event: the store opened, jobs.json synced (its schedules armed with the
        // target just learned), MCP tools offered (lambda_start).
        self.start.before_event().await?;
        if let Some(fire) = payload.get(FIRE_KEY) {
            return self.fire(fire.clone()).await.map(FunctionResponse::BufferedResponse);
        }
        if payload.get(TICK_KEY).is_some() {
            // The turns it starts finish in the settle phase, after this answer.
            self.profiles.tick_all(false).await;
            return Ok(FunctionResponse::BufferedResponse(json!({"status": "ok"})));
        }
        let stage = payload.pointer("/requestContext/stage").and_then(Value::as_str).filter(|s| *s != "$default").map(str::to_string);
        let request: LambdaRequest =
            serde_json::from_value(payload).map_err(|e| format!("unsupported event (not HTTP, {FIRE_KEY} or {TICK_KEY}): {e}"))?;
        super::lambda_url::serve(self.router, request, stage, context).await
    }

    async fn fire(&self, event: Value) -> Result<Value, lambda_runtime::Error> {
        let ev: FireEvent = match serde_json::from_value(event) {
            Ok(ev) => ev,
            Err(e) => {
                // Retrying a malformed event cannot help; answer instead of failing.
                tracing::error!(error = %e, "malformed fire event");
                return Ok(json!({"status": "invalid", "error": format!("malformed {FIRE_KEY}: {e}")}));
            }
        };
        let app = match ev.profile.as_deref() {
            None => self.app.clone(),
            Some(name) => match self.profiles.get(name).await {
                Ok(s) => s.app,
                Err(_) => return Ok(json!({"status": "invalid", "error": format!("unknown profile `{name}`")})),
            },
        };
        let status = app.jobs().fire(&ev.job_id, ev.fire_at, "eventbridge").await?;
        Ok(status.to_json())
    }
}

/// After each response is posted (and before the next event is requested): on the first
/// invocation, the recovery sweep and the timer reconcile (`lambda_start`); then wait until no
/// turn and no deferred webhook message (a Slack event answered at once, a Discord
/// follow-up) runs in this process. Bounded by the invocation deadline minus a margin.
#[derive(Clone)]
struct SettleLayer {
    profiles: Arc<Profiles>,
    start: Arc<FirstStart>,
}

impl<S> Layer<S> for SettleLayer {
    type Service = Settle<S>;
    fn layer(&self, inner: S) -> Settle<S> {
        Settle { inner, profiles: self.profiles.clone(), start: self.start.clone() }
    }
}

/// The service of [`SettleLayer`].
struct Settle<S> {
    inner: S,
    profiles: Arc<Profiles>,
    start: Arc<FirstStart>,
}

impl<S> Service<LambdaInvocation> for Settle<S>
where
    S: Service<LambdaInvocation, Response = (), Error = lambda_runtime::Error>,
    S::Future: 'static,
{
    type Response = ();
    type Error = lambda_runtime::Error;
    type Future = Pin<Box<dyn Future<Output = Result<(), lambda_runtime::Error>>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, inv: LambdaInvocation) -> Self::Future {
        let deadline = inv.context.deadline();
        let posted = self.inner.call(inv);
        let (profiles, start) = (self.profiles.clone(), self.start.clone());
        Box::pin(async move {
            let result = posted.await;
            // The default profile and every routed one this sandbox has served.
            let served: Vec<Served> = std::iter::once(profiles.default().clone()).chain(profiles.cached()).collect();
            let settle = async {
                start.after_event().await;
                for s in &served {
                    wait_idle(&s.app, &s.channels).await;
                }
            };
            if tokio::time::timeout(budget(deadline, SystemTime::now()), settle).await.is_err() {
                let running: usize = served.iter().map(|s| s.app.recovery().running_turns()).sum();
                tracing::warn!(
                    running,
                    "turns still running at the invocation deadline; they resume later or are recovered from their leases"
                );
            }
            for s in &served {
                arm_wake(&s.app).await;
                // At most one counter write a minute per sandbox (docs/design.md#usage).
                s.app.flush_usage(false).await;
            }
            result
        })
    }
}

/// Before the sandbox freezes: stored chat work that is left (queued, marked for resume, a
/// lease a frozen turn may never renew) gets a one-shot wake from the timer provider
/// (docs/design.md#wakes), so it does not wait for the next message or the watchdog.
async fn arm_wake(app: &App) {
    match tokio::time::timeout(WAKE_BUDGET, app.recovery().arm_wake(false)).await {
        Ok(Ok(crate::app::Wake::Unarmed(at))) => {
            tracing::warn!(wake_at = %at, "stored chat work waits and no timer provider can wake this function for it")
        }
        // Armed, nothing needed, or a failure the arm logged.
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "could not look for stored chat work before freezing"),
        Err(_) => tracing::error!("arming a wake for stored chat work timed out"),
    }
}

/// Waits until no turn and no deferred webhook message runs in this process, seen idle for
/// [`QUIET_POLLS`] polls in a row: a task the app has just spawned (a wake after a `/queue`, the next drain step) registers
/// its turn only after a store read and a lease write, so one idle look is not enough. A turn
/// that registers later still is not lost: it is frozen, then continues on the next event or
/// is recovered from its lease.
async fn wait_idle(app: &App, channels: &Channels) {
    let mut quiet = 0;
    while quiet < QUIET_POLLS {
        let idle = app.recovery().running_turns() == 0 && channels.deferred_running() == 0;
        quiet = if idle { quiet + 1 } else { 0 };
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_keeps_a_margin() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(budget(now + Duration::from_secs(60), now), Duration::from_secs(50));
        assert_eq!(budget(now + Duration::from_secs(8), now), Duration::from_secs(4));
        assert_eq!(budget(now - Duration::from_secs(1), now), Duration::ZERO);
    }

    /// The fire event a schedule sends, as the handler reads it.
    fn fire_event(input: &str) -> FireEvent {
        let payload: Value = serde_json::from_str(input).unwrap();
        serde_json::from_value(payload.get(FIRE_KEY).cloned().unwrap()).unwrap()
    }

    #[test]
    fn a_schedule_input_is_the_fire_event_of_its_profile() {
        use crate::clients::eventbridge::{Naming, fire_input};
        let at: DateTime<Utc> = "2026-12-01T08:00:00Z".parse().unwrap();
        let own = fire_event(&fire_input("j1", at));
        assert_eq!((own.job_id.as_str(), own.fire_at, own.profile), ("j1", Some(at), None));
        let profile = crate::core::profile::Profile::parse("team-a_1").unwrap();
        let routed = fire_event(&Naming::of(Some(&profile)).fire_input("j1", at));
        assert_eq!((routed.job_id.as_str(), routed.fire_at, routed.profile.as_deref()), ("j1", Some(at), Some("team-a_1")));
    }
}
