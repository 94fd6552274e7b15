//! Retry of a run that had no effect, through the real fire path (docs/design/jobs.md#retry):
//! a model scripted to fail, a manual clock, a delivery outbox, and a store given by the
//! caller — [`scenario`] runs on SQLite here and on DynamoDB (moto) in the DynamoDB tests.

use crate::app::{App, FireStatus};
use crate::core::job::{Job, JobState, RunOutcome, RunRecord};
use crate::core::retry::RetryKey;
use crate::core::session::ToolCall;
use crate::ports::{ChatRequest, ChatResponse, Clock, Llm, LlmError, ManualClock, Store};
use crate::store::counting::CountingStore;
use crate::test_support::{Outbox, TestApp};
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// One scripted model answer.
#[derive(Clone)]
enum Say {
    Fail(u16),
    Text(&'static str),
    Tool(&'static str, serde_json::Value),
}

/// A model answering from a script (then `done`), counting calls.
#[derive(Default)]
struct ScriptLlm {
    script: Mutex<VecDeque<Say>>,
    calls: Mutex<usize>,
}

impl ScriptLlm {
    fn new(script: &[Say]) -> Arc<Self> {
        Arc::new(Self { script: Mutex::new(script.iter().cloned().collect()), calls: Mutex::new(0) })
    }
    fn calls(&self) -> usize {
        *self.calls.lock().unwrap()
    }
}

#[async_trait]
impl Llm for ScriptLlm {
    fn name(&self) -> &'static str {
        "script"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        *self.calls.lock().unwrap() += 1;
        match self.script.lock().unwrap().pop_front().unwrap_or(Say::Text("done")) {
            Say::Fail(status) => Err(LlmError::Status { status, detail: "fake failure".into() }),
            Say::Text(t) => Ok(ChatResponse { content: t.into(), ..ChatResponse::default() }),
            Say::Tool(name, args) => Ok(ChatResponse {
                tool_calls: vec![ToolCall { id: format!("call-{name}"), name: name.into(), arguments: args.to_string() }],
                ..ChatResponse::default()
            }),
        }
    }
}

struct Kit {
    app: App,
    clock: Arc<ManualClock>,
    llm: Arc<ScriptLlm>,
    outbox: Arc<Outbox>,
    store: Arc<dyn Store>,
}

fn kit(store: Arc<dyn Store>, script: &[Say]) -> Kit {
    let now: DateTime<Utc> = "2026-03-01T08:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let llm = ScriptLlm::new(script);
    let outbox = Arc::new(Outbox::default());
    let yaml = "platforms: {telegram: {allowed_users: [u1]}}";
    let app = TestApp::new(now).yaml(yaml).clock(clock.clone()).store(store.clone()).llm(llm.clone()).delivery(outbox.clone()).build();
    Kit { app, clock, llm, outbox, store }
}

/// Stores job `j`, daily, due now, delivering to a Telegram chat, with `extra` fields.
async fn due_job(k: &Kit, extra: serde_json::Value) -> DateTime<Utc> {
    let now = k.clock.now();
    let mut spec = serde_json::json!({"id": "j", "schedule": "0 8 * * *", "prompt": "news", "deliver": "telegram:c1"});
    if let (Some(o), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    let s = crate::core::jobfile::parse_job(&spec, now, chrono_tz::UTC).unwrap();
    let job = Job { next_run_at: Some(now), ..Job::from_spec(&s, false, now, chrono_tz::UTC) };
    k.store.put_job(&job).await.unwrap();
    now
}

fn ran(s: &FireStatus) -> &RunRecord {
    match s {
        FireStatus::Ran { run, .. } => run,
        other => panic!("expected a run, got {other:?}"),
    }
}

async fn job(k: &Kit) -> Job {
    k.store.get_job("j").await.unwrap().unwrap()
}

/// 503 then 200: the first attempt fails and delivers nothing, the second (its own claim,
/// fired by its key) delivers once; both attempts are recorded; the attempt fired again
/// answers `duplicate`; a retry attempt's fire stays within the fire's store budget.
pub(crate) async fn scenario(store: Arc<dyn Store>) {
    let counting = Arc::new(CountingStore::new(store));
    let k = kit(counting.clone(), &[Say::Fail(503), Say::Text("the news")]);
    let at = due_job(&k, serde_json::json!({})).await;
    let first = k.app.fire("j", None, "chronos").await.unwrap();
    let r1 = ran(&first);
    assert_eq!((r1.status, r1.attempt), (RunOutcome::Error, 1), "{r1:?}");
    assert!(r1.error.as_deref().unwrap_or_default().contains("retrying at"), "{r1:?}");
    assert!(r1.deliveries.is_empty() && k.outbox.sent().is_empty(), "nothing delivered before the last attempt");
    let j = job(&k).await;
    let due = j.retry_due.clone().expect("a retry is pending");
    assert_eq!((due.fire_at, due.attempt, due.at), (at, 2, k.clock.now() + Duration::seconds(60)));
    assert_eq!(j.state, JobState::Scheduled);
    assert_eq!(j.due_at(), Some(due.at), "the due index finds the attempt before the next occurrence");

    k.clock.advance(Duration::seconds(60));
    let key = RetryKey { job_id: "j".into(), fire_at: at, attempt: 2 }.key();
    assert_eq!(key, "retry~j~20260301T080000Z~2");
    counting.take();
    let second = k.app.fire(&key, None, "chronos").await.unwrap();
    let cost = counting.take();
    crate::app::budget_tests::assert_within("retry attempt fire", &cost, crate::app::budget_tests::FIRE_BUDGET);
    let r2 = ran(&second);
    assert_eq!((r2.status, r2.attempt, r2.fire_at), (RunOutcome::Ok, 2, at), "{r2:?}");
    assert_eq!(second.to_json()["attempt"], 2);
    let sent = k.outbox.sent();
    assert_eq!(sent.len(), 1, "delivered once: {sent:?}");
    assert!(sent[0].contains("the news"), "{sent:?}");
    assert_eq!(k.llm.calls(), 2);
    let j = job(&k).await;
    assert!(j.retry_due.is_none() && j.running.is_none(), "{j:?}");
    assert_eq!(j.last_status, Some(crate::core::job::RunStatus::Ok));

    let dup = k.app.fire(&key, None, "chronos").await.unwrap();
    assert!(matches!(dup, FireStatus::Duplicate), "{dup:?}");
    let dup = k.app.fire("j", Some(at), "chronos").await.unwrap();
    assert!(matches!(dup, FireStatus::Duplicate), "the occurrence itself: {dup:?}");
    assert_eq!((k.llm.calls(), k.outbox.sent().len()), (2, 1), "no duplicate ran");

    let runs = k.store.list_runs("j", 10).await.unwrap();
    let mut attempts: Vec<(u32, RunOutcome)> = runs.iter().map(|r| (r.attempt, r.status)).collect();
    attempts.sort_by_key(|a| a.0);
    assert_eq!(attempts, [(1, RunOutcome::Error), (2, RunOutcome::Ok)], "every attempt recorded with its number");
    assert_eq!(
        k.store.claim_status(&RetryKey { job_id: "j".into(), fire_at: at, attempt: 2 }.occurrence()).await.unwrap().as_deref(),
        Some("ok")
    );
}

#[tokio::test]
async fn a_503_then_200_delivers_once_with_two_attempts_on_sqlite() {
    scenario(Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())).await;
}

fn sqlite() -> Arc<dyn Store> {
    Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())
}

/// A tool with an effect that job runs are offered (as an MCP tool is; `send_message` is
/// offered in chat turns only): it records each message it "sends".
#[derive(Default)]
struct Notify(Mutex<Vec<String>>);

#[async_trait]
impl crate::app::tools::Tool for Notify {
    fn name(&self) -> &str {
        "notify"
    }
    fn toolset(&self) -> &str {
        "test"
    }
    fn description(&self) -> &str {
        "Sends a message."
    }
    fn schema(&self) -> serde_json::Value {
        serde_json::json!({"type": "object", "properties": {"message": {"type": "string"}}})
    }
    async fn call(
        &self,
        _: &crate::app::tools::ToolCtx<'_>,
        args: serde_json::Value,
    ) -> Result<crate::app::tools::ToolOutput, crate::app::tools::ToolError> {
        self.0.lock().unwrap().push(args["message"].as_str().unwrap_or_default().to_string());
        Ok(serde_json::json!({"sent": true}).into())
    }
}

#[tokio::test]
async fn a_run_that_sent_a_message_before_failing_is_never_retried() {
    let send = serde_json::json!({"message": "partial result"});
    let k = kit(sqlite(), &[Say::Tool("notify", send), Say::Fail(503), Say::Text("late")]);
    let notify = Arc::new(Notify::default());
    k.app.inner.tools.register(notify.clone()).unwrap();
    due_job(&k, serde_json::json!({"deliver": "local"})).await;
    let r = k.app.fire("j", None, "ticker").await.unwrap();
    assert_eq!(ran(&r).status, RunOutcome::Error);
    assert!(!ran(&r).error.as_deref().unwrap_or_default().contains("retrying"), "{:?}", ran(&r));
    assert!(job(&k).await.retry_due.is_none(), "an effect happened: no retry");
    assert_eq!(*notify.0.lock().unwrap(), ["partial result"], "one message, the tool's");
    k.clock.advance(Duration::seconds(120));
    assert_eq!(k.app.tick_jobs(true).await.unwrap(), 0, "nothing is due");
    assert_eq!(k.llm.calls(), 2);
    assert_eq!(*notify.0.lock().unwrap(), ["partial result"], "still one message");
}

/// `send_message` is not offered to a job run: a call to it is refused as an unknown tool,
/// sends nothing, and so is no effect.
#[tokio::test]
async fn a_refused_send_message_call_in_a_job_run_is_no_effect() {
    let send = serde_json::json!({"target": "telegram:c1", "message": "hi"});
    let k = kit(sqlite(), &[Say::Tool("send_message", send), Say::Fail(503)]);
    due_job(&k, serde_json::json!({})).await;
    k.app.fire("j", None, "ticker").await.unwrap();
    assert!(k.outbox.sent().is_empty());
    assert_eq!(job(&k).await.retry_due.map(|r| r.attempt), Some(2));
}

#[tokio::test]
async fn a_read_only_tool_call_before_the_failure_still_retries() {
    let k = kit(sqlite(), &[Say::Tool("current_time", serde_json::json!({})), Say::Fail(502)]);
    due_job(&k, serde_json::json!({})).await;
    k.app.fire("j", None, "ticker").await.unwrap();
    assert_eq!(job(&k).await.retry_due.map(|r| r.attempt), Some(2));
}

#[tokio::test]
async fn retry_off_or_a_permanent_failure_delivers_the_summary_at_once() {
    for (extra, status) in [(serde_json::json!({"retry": []}), 503), (serde_json::json!({}), 401), (serde_json::json!({}), 400)] {
        let k = kit(sqlite(), &[Say::Fail(status)]);
        due_job(&k, extra.clone()).await;
        let r = k.app.fire("j", None, "ticker").await.unwrap();
        assert_eq!(ran(&r).status, RunOutcome::Error, "{extra} {status}");
        assert!(job(&k).await.retry_due.is_none(), "{extra} {status}: no retry");
        let sent = k.outbox.sent();
        // The summary, then the job's one failure alert (to its own targets: no failure_deliver).
        assert!(
            sent.len() == 2 && sent[0].contains("failed") && sent[1].contains("is failing"),
            "{extra} {status}: the summary and the alert at once: {sent:?}"
        );
    }
}

#[tokio::test]
async fn the_summary_comes_after_the_last_attempt_and_the_ticker_fires_attempts() {
    let k = kit(sqlite(), &[Say::Fail(503), Say::Fail(503), Say::Fail(429)]);
    due_job(&k, serde_json::json!({"retry": [30, 45]})).await;
    k.app.fire("j", None, "ticker").await.unwrap();
    for attempt in [2, 3] {
        assert!(k.outbox.sent().is_empty(), "no summary before the last attempt");
        assert_eq!(k.app.tick_jobs(true).await.unwrap(), 0, "attempt {attempt} is not due yet");
        k.clock.advance(Duration::seconds(60));
        assert_eq!(k.app.tick_jobs(true).await.unwrap(), 1, "the ticker fires attempt {attempt}");
    }
    let sent = k.outbox.sent();
    // One summary and the job's one failure alert, both only after the last attempt.
    assert!(
        sent.len() == 2 && sent[0].contains("failed") && sent[1].contains("is failing"),
        "one summary and one alert, after attempt 3: {sent:?}"
    );
    let mut attempts: Vec<u32> = k.store.list_runs("j", 10).await.unwrap().iter().map(|r| r.attempt).collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [1, 2, 3]);
    assert!(job(&k).await.retry_due.is_none());
}

#[tokio::test]
async fn a_paused_jobs_retry_fire_runs_nothing() {
    let k = kit(sqlite(), &[Say::Fail(503)]);
    let at = due_job(&k, serde_json::json!({})).await;
    k.app.fire("j", None, "chronos").await.unwrap();
    k.app.jobs().set_paused("j", true).await.unwrap();
    k.clock.advance(Duration::seconds(60));
    let key = RetryKey { job_id: "j".into(), fire_at: at, attempt: 2 }.key();
    let r = k.app.fire(&key, None, "chronos").await.unwrap();
    assert!(matches!(r, FireStatus::Paused), "{r:?}");
    assert_eq!(r.to_json()["status"], "paused");
    assert_eq!((k.llm.calls(), k.outbox.sent().len()), (1, 0), "nothing ran");
    assert_eq!(job(&k).await.due_at(), None, "a paused job's attempt is not due for the ticker");
}

#[tokio::test]
async fn a_retry_fire_for_no_pending_attempt_is_stale_and_a_malformed_key_is_gone() {
    let k = kit(sqlite(), &[]);
    let at = due_job(&k, serde_json::json!({})).await;
    let key = RetryKey { job_id: "j".into(), fire_at: at, attempt: 2 }.key();
    assert!(matches!(k.app.fire(&key, None, "chronos").await.unwrap(), FireStatus::Stale { .. }));
    assert!(matches!(k.app.fire("retry~nope~20260301T080000Z~2", None, "chronos").await.unwrap(), FireStatus::Gone));
    assert_eq!(k.llm.calls(), 0);
}
