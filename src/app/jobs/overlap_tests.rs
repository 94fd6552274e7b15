//! Overlap, pause and spread through the real fire path (real SQLite, a manual clock, a
//! model that blocks until released, a timer provider that records what it was asked).

use crate::app::{App, FireStatus};
use crate::core::job::{Job, JobState, Occurrence, RunOutcome, RunningMark};
use crate::ports::{ChatRequest, ChatResponse, Clock, Llm, LlmError, ManualClock, ReconcileReport, TimerError, TimerProvider, Timers};
use crate::test_support::TestApp;
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// A model whose every call waits for a permit (released by the test), counting calls.
struct GateLlm {
    calls: AtomicUsize,
    gate: Semaphore,
}

impl Default for GateLlm {
    fn default() -> Self {
        Self { calls: AtomicUsize::new(0), gate: Semaphore::new(0) }
    }
}

#[async_trait]
impl Llm for GateLlm {
    fn name(&self) -> &'static str {
        "gate"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate.acquire().await.map_err(|e| LlmError::Unreachable(e.to_string()))?.forget();
        Ok(ChatResponse { content: "done".into(), ..ChatResponse::default() })
    }
}

/// A timer provider recording `arm` (with whether the job was armed) and `cancel` calls.
#[derive(Default)]
struct RecTimers(Mutex<Vec<String>>);

#[async_trait]
impl Timers for RecTimers {
    fn provider(&self) -> TimerProvider {
        TimerProvider::Chronos
    }
    async fn arm(&self, job: &Job) -> Result<(), TimerError> {
        let what = if job.armed() { format!("arm {} {:?}", job.id, job.next_run_at) } else { format!("cancel {}", job.id) };
        self.0.lock().unwrap().push(what);
        Ok(())
    }
    async fn cancel(&self, job_id: &str) -> Result<(), TimerError> {
        self.0.lock().unwrap().push(format!("cancel {job_id}"));
        Ok(())
    }
    async fn reconcile(&self, _: &[Job]) -> Result<ReconcileReport, TimerError> {
        Ok(ReconcileReport::default())
    }
}

struct Kit {
    app: App,
    clock: Arc<ManualClock>,
    llm: Arc<GateLlm>,
    timers: Arc<RecTimers>,
}

fn kit(yaml: &str) -> Kit {
    let now: DateTime<Utc> = "2026-03-01T08:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let llm = Arc::new(GateLlm::default());
    let timers = Arc::new(RecTimers::default());
    let app = TestApp::new(now).yaml(yaml).home("/nonexistent-home").clock(clock.clone()).llm(llm.clone()).timers(timers.clone()).build();
    Kit { app, clock, llm, timers }
}

/// Stores a job due now, every 5 minutes (inside a run's 600 s budget), delivered locally,
/// with `overlap`.
async fn due_job(k: &Kit, overlap: &str) -> DateTime<Utc> {
    let at = k.clock.now();
    let mut j = crate::store::conformance::sample_job("j", Some(at));
    j.schedule = crate::core::schedule::Schedule::Interval { seconds: 300 };
    j.deliver = vec!["local".into()];
    j.overlap = crate::core::job::Overlap::parse(overlap).unwrap();
    k.app.test_store().put_job(&j).await.unwrap();
    at
}

async fn wait_calls(llm: &GateLlm, n: usize) {
    for _ in 0..200 {
        if llm.calls.load(Ordering::SeqCst) >= n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the model was not called {n} times");
}

fn run_of(s: &FireStatus) -> &crate::core::job::RunRecord {
    match s {
        FireStatus::Ran { run, .. } => run,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_occurrence_due_while_the_run_still_runs_is_skipped() {
    let k = kit("{}");
    let at = due_job(&k, "skip").await;
    let app = k.app.clone();
    let slow = tokio::spawn(async move { app.jobs().fire("j", None, "ticker").await.unwrap() });
    wait_calls(&k.llm, 1).await;
    // The next occurrence comes due while the first run still waits on the model.
    k.clock.advance(Duration::minutes(5));
    let fired = k.app.jobs().fire("j", None, "chronos").await.unwrap();
    let run = run_of(&fired);
    assert_eq!(run.status, RunOutcome::Skipped);
    assert!(run.error.as_deref().unwrap_or_default().contains("still running"), "{run:?}");
    assert_eq!(fired.to_json()["run_status"], "skipped");
    let store = k.app.test_store();
    let second = Occurrence::new("j", at + Duration::minutes(5));
    assert_eq!(store.claim_status(&second).await.unwrap().as_deref(), Some("skipped"));
    let j = store.get_job("j").await.unwrap().unwrap();
    assert_eq!(j.next_run_at, Some(at + Duration::minutes(10)), "a skipped occurrence advances the job");
    assert_eq!((j.state, j.running.as_ref().map(|m| m.fire_at)), (JobState::Running, Some(at)), "the first run keeps its mark");
    assert!(k.timers.0.lock().unwrap().contains(&format!("arm j {:?}", Some(at + Duration::minutes(10)))), "re-armed");
    // A duplicate of the skipped occurrence is a duplicate.
    assert!(matches!(k.app.jobs().fire("j", Some(second.fire_at), "chronos").await.unwrap(), FireStatus::Duplicate));
    k.llm.gate.add_permits(1);
    assert_eq!(run_of(&slow.await.unwrap()).status, RunOutcome::Ok);
    assert_eq!(k.llm.calls.load(Ordering::SeqCst), 1, "one model call: the skipped occurrence did not run");
    let j = store.get_job("j").await.unwrap().unwrap();
    assert_eq!((j.state, j.running, j.next_run_at), (JobState::Scheduled, None, Some(at + Duration::minutes(10))));
    let runs: Vec<RunOutcome> = k.app.jobs().runs("j", 10).await.unwrap().iter().map(|r| r.status).collect();
    assert_eq!(runs.len(), 2);
    assert!(runs.contains(&RunOutcome::Skipped) && runs.contains(&RunOutcome::Ok), "{runs:?}");
}

#[tokio::test]
async fn overlap_allow_runs_both() {
    let k = kit("{}");
    due_job(&k, "allow").await;
    let app = k.app.clone();
    let first = tokio::spawn(async move { app.jobs().fire("j", None, "ticker").await.unwrap() });
    wait_calls(&k.llm, 1).await;
    k.clock.advance(Duration::minutes(5));
    let app = k.app.clone();
    let second = tokio::spawn(async move { app.jobs().fire("j", None, "ticker").await.unwrap() });
    wait_calls(&k.llm, 2).await;
    k.llm.gate.add_permits(2);
    assert_eq!(run_of(&first.await.unwrap()).status, RunOutcome::Ok);
    assert_eq!(run_of(&second.await.unwrap()).status, RunOutcome::Ok);
    assert_eq!(k.llm.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stale_running_mark_is_recovered_and_the_occurrence_runs() {
    let k = kit("{}");
    let at = due_job(&k, "skip").await;
    // A run that started 700 s ago on another host and never finished: past its budget
    // (600 s and a 60 s margin).
    let store = k.app.test_store();
    let mut j = store.get_job("j").await.unwrap().unwrap();
    j.state = JobState::Running;
    j.running = Some(RunningMark {
        owner: "elsewhere:1".into(),
        fire_at: at - Duration::minutes(5),
        started_at: at - Duration::seconds(700),
        attempt: 1,
    });
    store.put_job(&j).await.unwrap();
    k.llm.gate.add_permits(1);
    assert_eq!(run_of(&k.app.jobs().fire("j", None, "ticker").await.unwrap()).status, RunOutcome::Ok);
    assert_eq!(store.claim_status(&Occurrence::new("j", at)).await.unwrap().as_deref(), Some("ok"));
    let runs: Vec<RunOutcome> = k.app.jobs().runs("j", 10).await.unwrap().iter().map(|r| r.status).collect();
    assert!(runs.contains(&RunOutcome::Interrupted), "the dead run is recorded interrupted: {runs:?}");
    // A mark inside its budget (another host, 60 s old) is a live run: the occurrence skips.
    k.clock.advance(Duration::minutes(5));
    let mut j = store.get_job("j").await.unwrap().unwrap();
    j.state = JobState::Running;
    j.running =
        Some(RunningMark { owner: "elsewhere:1".into(), fire_at: at, started_at: k.clock.now() - Duration::seconds(60), attempt: 1 });
    store.put_job(&j).await.unwrap();
    assert_eq!(run_of(&k.app.jobs().fire("j", None, "ticker").await.unwrap()).status, RunOutcome::Skipped);
    assert_eq!(k.llm.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_paused_job_runs_on_no_trigger_and_its_timer_is_cancelled() {
    let k = kit("{}");
    let at = due_job(&k, "skip").await;
    k.app.jobs().set_paused("j", true).await.unwrap();
    k.timers.0.lock().unwrap().clear();
    k.llm.gate.add_permits(10);
    for trigger in ["chronos", "eventbridge", "ticker"] {
        let fired = k.app.jobs().fire("j", Some(at), trigger).await.unwrap();
        assert!(matches!(fired, FireStatus::Paused), "{trigger}: {fired:?}");
        assert_eq!(fired.to_json(), serde_json::json!({"status": "paused"}));
    }
    assert!(matches!(k.app.jobs().run_now("j").await.unwrap(), FireStatus::Paused));
    assert_eq!(k.app.tick_jobs(true).await.unwrap(), 0, "the ticker selects no paused job");
    assert_eq!(k.llm.calls.load(Ordering::SeqCst), 0, "nothing ran");
    assert!(k.timers.0.lock().unwrap().iter().all(|t| t == "cancel j"), "{:?}", k.timers.0.lock().unwrap());
    assert!(k.app.test_store().claim_status(&Occurrence::new("j", at)).await.unwrap().is_none(), "nothing was claimed");
    // Resumed, it is armed again (at its next occurrence after now) and runs.
    let j = k.app.jobs().set_paused("j", false).await.unwrap();
    assert_eq!(j.next_run_at, Some(at + Duration::minutes(5)));
    assert_eq!(k.timers.0.lock().unwrap().last().cloned(), Some(format!("arm j {:?}", j.next_run_at)));
    k.clock.set(at + Duration::minutes(5));
    assert!(matches!(k.app.jobs().fire("j", None, "chronos").await.unwrap(), FireStatus::Ran { .. }));
}

#[tokio::test]
async fn spread_shifts_the_next_run_and_a_spread_edit_keeps_the_occurrence() {
    let k = kit("cron:\n  spread_seconds: 600\n");
    let off = crate::core::schedule::spread::offset("daily", 600);
    let j =
        k.app.jobs().add(&serde_json::json!({"id": "daily", "schedule": "0 9 * * *", "prompt": "p", "deliver": "local"})).await.unwrap();
    let base: DateTime<Utc> = "2026-03-01T09:00:00Z".parse().unwrap();
    assert_eq!((j.next_run_at, j.spread_offset), (Some(base + Duration::seconds(off)), off));
    assert_eq!(crate::app::job_view(&j)["next_run_at"], serde_json::json!(base + Duration::seconds(off)));
    // The job's own spread wins; an edit moves the pending occurrence, keeping its base.
    let j = k.app.jobs().update("daily", &serde_json::json!({"spread": 0})).await.unwrap();
    assert_eq!((j.next_run_at, j.spread), (Some(base), Some(0)));
    k.clock.set(base);
    k.llm.gate.add_permits(10);
    assert_eq!(run_of(&k.app.jobs().fire("daily", None, "chronos").await.unwrap()).status, RunOutcome::Ok);
    // Back to the configured spread after the run: the old shifted time of today answers
    // stale (its base ran), and tomorrow's occurrence carries the offset.
    let j = k.app.jobs().update("daily", &serde_json::json!({"spread": null})).await.unwrap();
    assert_eq!(j.next_run_at, Some(base + Duration::days(1) + Duration::seconds(off)));
    k.clock.set(base + Duration::seconds(off));
    let late = k.app.jobs().fire("daily", Some(base + Duration::seconds(off)), "chronos").await.unwrap();
    assert!(matches!(late, FireStatus::Stale { .. } | FireStatus::Duplicate), "{late:?}");
    assert_eq!(k.llm.calls.load(Ordering::SeqCst), 1);
}
