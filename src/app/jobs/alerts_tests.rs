//! Failure alerts and budgets through the real fire path, on two apps (two processes) sharing
//! one store: SQLite here, DynamoDB (moto) in `store::dynamodb::tests`, which runs the same
//! scenarios ([`alerts_across_two_processes`], [`budgets_across_two_processes`]).

use crate::app::App;
use crate::core::ids::{ChatType, Origin};
use crate::core::job::{Job, RunOutcome};
use crate::core::session::ToolCall;
use crate::ports::{ChatRequest, ChatResponse, Clock, Llm, LlmError, ManualClock, MetaStore, Store};
use crate::store::counting::{CountingStore, breakdown};
use crate::test_support::{Outbox, TestApp};
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A model that fails while `fail` is set, answers with a tool call while `tools` is set,
/// and else answers `done`; every answer reports 100 prompt and 20 completion tokens.
#[derive(Default)]
pub(crate) struct ScriptLlm {
    pub fail: AtomicBool,
    pub tools: AtomicBool,
    pub calls: AtomicUsize,
}

#[async_trait]
impl Llm for ScriptLlm {
    fn name(&self) -> &'static str {
        "script"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail.load(Ordering::SeqCst) {
            return Err(LlmError::Unreachable("connection refused".into()));
        }
        let mut r = ChatResponse {
            content: "done".into(),
            input_tokens: 100,
            output_tokens: 20,
            model: "priced-model".into(),
            ..Default::default()
        };
        if self.tools.load(Ordering::SeqCst) {
            r.content = String::new();
            r.tool_calls = vec![ToolCall { id: format!("c{n}"), name: "current_time".into(), arguments: "{}".into() }];
        }
        Ok(r)
    }
}

/// Two apps ("processes") on `a` and `b` (one store), sharing a clock, a model and an outbox.
fn two(a: Arc<dyn Store>, b: Arc<dyn Store>, yaml: &str, now: DateTime<Utc>) -> ([App; 2], Arc<ManualClock>, Arc<ScriptLlm>, Arc<Outbox>) {
    let clock = Arc::new(ManualClock::new(now));
    let llm = Arc::new(ScriptLlm::default());
    let out = Arc::new(Outbox::default());
    let app = |s: Arc<dyn Store>, owner: &str| {
        TestApp::new(now).yaml(yaml).owner(owner).clock(clock.clone()).store(s).llm(llm.clone()).delivery(out.clone()).build()
    };
    ([app(a, "host-a:1"), app(b, "host-b:2")], clock, llm, out)
}

async fn put(store: &dyn Store, spec: serde_json::Value, now: DateTime<Utc>) {
    let s = crate::core::jobfile::parse_job(&spec, now, chrono_tz::UTC).unwrap();
    store.put_job(&Job { next_run_at: Some(now), ..Job::from_spec(&s, false, now, chrono_tz::UTC) }).await.unwrap();
}

/// Fires the job's due occurrence on `app`, then moves the clock to the next one.
async fn fire(app: &App, clock: &ManualClock, id: &str) -> RunOutcome {
    let fired = app.jobs().fire(id, None, "test").await.unwrap();
    clock.advance(Duration::hours(1));
    match fired {
        crate::app::FireStatus::Ran { run, .. } => run.status,
        other => panic!("not run: {other:?}"),
    }
}

const YAML: &str =
    "platforms: {telegram: {allowed_users: [u1]}}\npricing: {priced-model: {input_cost_per_million: 1000, output_cost_per_million: 1000}}";

/// Three failing runs then a success, alternating between two processes: one alert and one
/// "recovered" line at the failure target, each run's own line at the job's target; a
/// second streak alerts again.
pub(crate) async fn alerts_across_two_processes(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let now = Utc::now();
    let ([pa, pb], clock, llm, out) = two(a.clone(), b, YAML, now);
    put(
        &*a,
        json!({"id": "news", "schedule": "every 1h", "prompt": "p", "retry": [], "deliver": "telegram:c1", "failure_deliver": "telegram:ops"}),
        now,
    )
    .await;
    llm.fail.store(true, Ordering::SeqCst);
    let mut seen = Vec::new();
    for app in [&pa, &pb, &pa] {
        seen.push(fire(app, &clock, "news").await);
    }
    llm.fail.store(false, Ordering::SeqCst);
    seen.push(fire(&pb, &clock, "news").await);
    seen.push(fire(&pa, &clock, "news").await);
    assert_eq!(seen, [RunOutcome::Error, RunOutcome::Error, RunOutcome::Error, RunOutcome::Ok, RunOutcome::Ok]);
    let ops: Vec<String> = out.all().into_iter().filter(|(t, _)| t.chat_id == "ops").map(|(_, m)| m).collect();
    assert_eq!(ops.len(), 2, "one alert, one recovery: {ops:?}");
    assert!(ops[0].contains("'news' is failing") && ops[0].contains("connection refused"), "{ops:?}");
    assert!(ops[1].contains("'news' recovered") && ops[1].contains("after 3 failing runs"), "{ops:?}");
    let own = out.all().into_iter().filter(|(t, _)| t.chat_id == "c1").count();
    assert_eq!(own, 5, "each run's own line (3 failures, 2 answers) at the job's target");
    // A new streak alerts again, at the job's own targets when it names no failure target.
    a.put_job(&Job { options: Default::default(), ..a.get_job("news").await.unwrap().unwrap() }).await.unwrap();
    llm.fail.store(true, Ordering::SeqCst);
    assert_eq!(fire(&pb, &clock, "news").await, RunOutcome::Error);
    let last: Vec<String> = out.all().into_iter().rev().take(2).map(|(t, m)| format!("{}: {m}", t.chat_id)).collect();
    assert!(last[0].starts_with("c1: 🚨") && last[0].contains("is failing"), "{last:?}");
}

#[tokio::test]
async fn three_failures_then_a_success_alert_once_and_recover_once_across_two_processes() {
    let dir = std::env::temp_dir().join(format!("hz-alerts-{}-{:08x}.db", std::process::id(), rand::random::<u32>()));
    let a = Arc::new(crate::store::sqlite::SqliteStore::open(&dir).unwrap());
    let b = Arc::new(crate::store::sqlite::SqliteStore::open(&dir).unwrap());
    alerts_across_two_processes(a, b).await;
    std::fs::remove_file(&dir).ok();
}

/// A success after a success never reads the streak: the fire stays within its store budget.
/// A success after a failure reads it once and clears it.
#[tokio::test]
async fn a_success_after_a_success_reads_no_streak() {
    let counting = Arc::new(CountingStore::new(Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())));
    let now = Utc::now();
    let ([app, _], clock, llm, _) = two(counting.clone(), counting.clone(), YAML, now);
    put(&*counting, json!({"id": "j", "schedule": "every 1h", "prompt": "p", "retry": [], "deliver": "telegram:c1"}), now).await;
    assert_eq!(fire(&app, &clock, "j").await, RunOutcome::Ok);
    counting.take();
    assert_eq!(fire(&app, &clock, "j").await, RunOutcome::Ok);
    let c = counting.take();
    assert_eq!(c.get("get_meta").copied().unwrap_or(0) + c.get("swap_meta").copied().unwrap_or(0), 0, "{}", breakdown(&c));
    crate::app::budget_tests::assert_within("a success after a success", &c, crate::app::budget_tests::FIRE_BUDGET);
    llm.fail.store(true, Ordering::SeqCst);
    assert_eq!(fire(&app, &clock, "j").await, RunOutcome::Error);
    llm.fail.store(false, Ordering::SeqCst);
    counting.take();
    assert_eq!(fire(&app, &clock, "j").await, RunOutcome::Ok);
    let c = counting.take();
    assert_eq!((c.get("get_meta").copied(), c.get("swap_meta").copied()), (Some(1), Some(1)), "{}", breakdown(&c));
    assert_eq!(counting.get_meta("job_streak:j").await.unwrap().as_deref(), Some("-"), "cleared");
}

fn user() -> crate::app::Inbound {
    crate::app::Inbound {
        origin: Origin::new("telegram", "c1", ChatType::Dm, Some("u1"), None).unwrap(),
        text: "hello".into(),
        message_id: Some(format!("m{}", rand::random::<u32>())),
        user_name: None,
        reply: crate::app::ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

/// `max_tokens` stops a run before the call that would pass it (`over_budget`, one line, no
/// further model call); the daily budget (100 prompt + 20 completion tokens at $1000/M =
/// $0.12 a call) holds across runs on two processes; chats are never stopped.
pub(crate) async fn budgets_across_two_processes(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let now = Utc::now();
    let yaml = format!("{YAML}\ncron: {{daily_budget_usd: 0.30, failure_deliver: [telegram:ops]}}");
    let ([pa, pb], clock, llm, out) = two(a.clone(), b, &yaml, now);
    put(&*a, json!({"id": "loop", "schedule": "every 1h", "prompt": "p", "retry": [], "deliver": "telegram:c1", "max_tokens": 250}), now)
        .await;
    llm.tools.store(true, Ordering::SeqCst);
    assert_eq!(fire(&pa, &clock, "loop").await, RunOutcome::OverBudget);
    // 120 tokens, then 240: a third call would send at least 100 more, past 250.
    assert_eq!(llm.calls.load(Ordering::SeqCst), 2, "no model call past the limit");
    let at = |chat: &str| out.all().into_iter().filter(|(t, _)| t.chat_id == chat).map(|(_, m)| m).collect::<Vec<_>>();
    let lines = at("c1");
    assert_eq!(lines.len(), 1, "one line at the job's target: {lines:?}");
    assert!(lines[0].contains("'loop' stopped: over budget") && lines[0].contains("max_tokens 250"), "{lines:?}");
    let runs = a.list_runs("loop", 5).await.unwrap();
    assert_eq!(runs[0].status, RunOutcome::OverBudget);
    assert_eq!(a.get_job("loop").await.unwrap().unwrap().last_status, Some(crate::core::job::RunStatus::OverBudget));
    // That run spent $0.24 of the day's $0.30: the next run (the other process) may make its
    // first call ($0.36 then), the one after may not.
    llm.tools.store(false, Ordering::SeqCst);
    put(&*a, json!({"id": "daily", "schedule": "every 1h", "prompt": "p", "retry": [], "deliver": "telegram:c2"}), clock.now()).await;
    assert_eq!(fire(&pb, &clock, "daily").await, RunOutcome::Ok);
    assert_eq!(llm.calls.load(Ordering::SeqCst), 3);
    assert_eq!(fire(&pa, &clock, "daily").await, RunOutcome::OverBudget);
    assert_eq!(llm.calls.load(Ordering::SeqCst), 3, "stopped before its first call");
    let last = at("c2").pop().unwrap();
    assert!(last.contains("'daily' stopped: over budget") && last.contains("cron.daily_budget_usd $0.3000"), "{last}");
    // Chats are not limited.
    let reply = pb.sessions().handle_inbound(user()).await.unwrap();
    assert_eq!(reply.reply.as_deref(), Some("done"));
    assert!(llm.calls.load(Ordering::SeqCst) >= 4);
    // Over budget is a failure: the failure target got one alert per job.
    assert_eq!(at("ops").iter().filter(|m| m.contains("is failing") && m.contains("over_budget")).count(), 2, "{:?}", at("ops"));
    // The usage view shows the day's job spend against the budget.
    let usage = pa.usage().await.unwrap();
    let b = &usage["budget"];
    assert_eq!((b["daily_budget_usd"].as_f64(), b["job_spend_usd"].as_f64()), (Some(0.30), Some(0.36)), "{usage}");
    assert_eq!(b["left_usd"].as_f64(), Some(0.0));
    assert_eq!(b["max_tokens"], json!([{"job_id": "loop", "name": "loop", "max_tokens": 250}]));
}

#[tokio::test]
async fn budgets_stop_job_runs_before_the_call_that_would_pass_them_but_never_chats() {
    let dir = std::env::temp_dir().join(format!("hz-budget-{}-{:08x}.db", std::process::id(), rand::random::<u32>()));
    let a = Arc::new(crate::store::sqlite::SqliteStore::open(&dir).unwrap());
    let b = Arc::new(crate::store::sqlite::SqliteStore::open(&dir).unwrap());
    budgets_across_two_processes(a, b).await;
    std::fs::remove_file(&dir).ok();
}
