//! Leases as fences (docs/design.md#lease, #recovery): a turn paused past its lease writes
//! and sends nothing once another turn took over; live turns renew their leases; several
//! hosts on one store judge only their own leases at an unclean start; a job run finalizes
//! only the occurrence it claimed. Real store, manual clock, in-process fakes.

use crate::app::{App, Inbound, ReplyPath};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::{Job, JobState, RunOutcome, RunRecord, RunStatus, RunningMark};
use crate::core::session::{Lease, SessionEntry};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ManualClock, Store};
use crate::store::sqlite::SqliteStore;
use crate::test_support::{Outbox, TestApp};
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A model whose first call blocks until released (and answers `stale answer`); later calls
/// answer `fresh answer` at once.
struct BlockingLlm {
    calls: AtomicUsize,
    gate: tokio::sync::Semaphore,
}

#[async_trait]
impl Llm for BlockingLlm {
    fn name(&self) -> &'static str {
        "blocking"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            self.gate.acquire().await.unwrap().forget();
            return Ok(ChatResponse { content: "stale answer".into(), ..ChatResponse::default() });
        }
        Ok(ChatResponse { content: "fresh answer".into(), ..ChatResponse::default() })
    }
}

struct Kit {
    app: App,
    clock: Arc<ManualClock>,
    llm: Arc<BlockingLlm>,
    outbox: Arc<Outbox>,
}

fn t0() -> DateTime<Utc> {
    "2026-03-01T10:00:00Z".parse().unwrap()
}

fn kit() -> Kit {
    let clock = Arc::new(ManualClock::new(t0()));
    let llm = Arc::new(BlockingLlm { calls: AtomicUsize::new(0), gate: tokio::sync::Semaphore::new(0) });
    let outbox = Arc::new(Outbox::default());
    let app = TestApp::new(t0()).yaml("allow_all_users: true").clock(clock.clone()).llm(llm.clone()).delivery(outbox.clone()).build();
    Kit { app, clock, llm, outbox }
}

fn origin(chat: &str) -> Origin {
    Origin::new("telegram", chat, ChatType::Dm, Some("u1"), None).unwrap()
}

fn inbound(text: &str) -> Inbound {
    Inbound {
        origin: origin("c1"),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

/// Polls `f` every 10 ms for up to 5 s.
async fn wait_until<F: Fn() -> Fut, Fut: Future<Output = bool>>(what: &str, f: F) {
    for _ in 0..500 {
        if f().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn the_entry(app: &App) -> SessionEntry {
    app.inner.store.list_entries(1).await.unwrap().remove(0)
}

async fn transcript(app: &App, id: &SessionId) -> Vec<String> {
    app.inner.store.recent_messages(id, 100).await.unwrap().into_iter().map(|m| m.content).collect()
}

#[tokio::test]
async fn a_turn_paused_past_its_lease_writes_and_sends_nothing() {
    let k = kit();
    let app = k.app.clone();
    let stale = tokio::spawn(async move { app.handle_inbound(inbound("hello")).await });
    let llm = k.llm.clone();
    wait_until("the first model call", || async { llm.calls.load(Ordering::SeqCst) >= 1 }).await;
    let first = the_entry(&k.app).await;
    // The turn stalls past its lease (a paused VM); recovery runs the resume turn.
    k.clock.advance(k.app.lease_len() + Duration::seconds(1));
    k.app.sweep(false, true).await.unwrap();
    let after = the_entry(&k.app).await;
    assert!(after.lease.is_none() && after.lease_epoch > first.lease_epoch, "{after:?}");
    assert_eq!(k.outbox.sent(), ["fresh answer"]);
    // The stale turn wakes up: it may neither write nor send.
    k.llm.gate.add_permits(1);
    let res = tokio::time::timeout(std::time::Duration::from_secs(5), stale).await.unwrap().unwrap();
    assert!(res.is_err(), "the stale turn must fail, not answer: {res:?}");
    let texts = transcript(&k.app, &first.session_id).await;
    assert_eq!(texts, ["hello", "fresh answer"]);
    assert_eq!(k.outbox.sent(), ["fresh answer"], "nothing sent by the stale turn");
}

#[tokio::test]
async fn a_long_turn_renews_its_lease() {
    let k = kit();
    let app = k.app.clone();
    let turn = tokio::spawn(async move { app.handle_inbound(inbound("hello")).await });
    let llm = k.llm.clone();
    wait_until("the first model call", || async { llm.calls.load(Ordering::SeqCst) >= 1 }).await;
    let before = the_entry(&k.app).await.lease.unwrap();
    k.clock.advance(k.app.lease_len() / 3 + Duration::seconds(1));
    let app = k.app.clone();
    let renewed = t0() + k.app.lease_len() / 3 + Duration::seconds(1) + k.app.lease_len();
    wait_until("the renewal", || async { the_entry(&app).await.lease.is_some_and(|l| l.expires_at == renewed) }).await;
    let after = the_entry(&k.app).await.lease.unwrap();
    assert_eq!((after.epoch, &after.token), (before.epoch, &before.token), "a renewal keeps the lease");
    // Past the first expiry, the renewed lease is still live: no sweep takes it.
    k.clock.advance(k.app.lease_len() / 2);
    assert!(!k.app.lease_abandoned(&after, false));
    k.llm.gate.add_permits(1);
    tokio::time::timeout(std::time::Duration::from_secs(5), turn).await.unwrap().unwrap().unwrap();
    assert_eq!(k.outbox.sent(), ["stale answer"]);
}

fn leased_entry(chat: &str, owner: &str, now: DateTime<Utc>) -> SessionEntry {
    let o = origin(chat);
    let mut e = SessionEntry::new(SessionKey::derive(&o, Default::default()), SessionId::generate(now, &Utc), o, now);
    e.grant(Lease { token: "t".into(), epoch: 0, owner: owner.into(), started_at: now, expires_at: now + Duration::minutes(11) });
    e
}

fn host_app(store: &Arc<dyn Store>, owner: &str) -> App {
    TestApp::new(t0()).store(store.clone()).owner(owner).delivery(Arc::new(Outbox::default())).build()
}

#[tokio::test]
async fn an_unclean_start_takes_only_this_hosts_leases() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let other = store.put_entry(&leased_entry("b", "hostB:2", t0()), &[]).await.unwrap();
    let mine = store.put_entry(&leased_entry("a", "hostA:99", t0()), &[]).await.unwrap();
    let a = host_app(&store, "hostA:1");
    assert!(!a.startup_sweep().await.unwrap(), "no marker of host A: unclean");
    let b_now = store.get_entry(&other.session_key).await.unwrap().unwrap();
    assert_eq!(b_now.lease, other.lease, "host B's live lease is left alone");
    assert!(!b_now.resume_pending);
    let a_now = store.get_entry(&mine.session_key).await.unwrap().unwrap();
    assert_ne!(a_now.lease, mine.lease, "this host's lease from before the crash is taken");
}

#[tokio::test]
async fn an_unclean_start_takes_a_lease_with_its_own_owner_id() {
    // A container restarted after a crash: same host name, same pid 1.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let before = store.put_entry(&leased_entry("a", "hostA:1", t0()), &[]).await.unwrap();
    let a = host_app(&store, "hostA:1");
    assert!(!a.startup_sweep().await.unwrap(), "no marker of host A: unclean");
    let now = store.get_entry(&before.session_key).await.unwrap().unwrap();
    assert_ne!(now.lease, before.lease, "the dead incarnation's lease is taken, not left to expire");
}

#[tokio::test]
async fn clean_shutdown_markers_are_per_host() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let a = host_app(&store, "hostA:1");
    assert!(a.finish_shutdown(std::time::Duration::ZERO).await);
    assert!(store.get_meta("clean_shutdown:hostA").await.unwrap().is_some());
    assert!(!host_app(&store, "hostB:7").startup_sweep().await.unwrap(), "A's marker says nothing about B");
    assert!(host_app(&store, "hostA:2").startup_sweep().await.unwrap(), "A's next start is clean");
    assert!(store.get_meta("clean_shutdown:hostA").await.unwrap().is_none(), "the marker is consumed");
}

fn run_of(job: &Job) -> RunRecord {
    RunRecord {
        run_id: "r1".into(),
        job_id: job.id.clone(),
        fire_at: t0(),
        trigger: "tick".into(),
        started_at: t0(),
        finished_at: Some(t0()),
        status: RunOutcome::Ok,
        output: "done".into(),
        error: None,
        deliveries: vec![],
        session_id: String::new(),
        attempt: 1,
    }
}

#[tokio::test]
async fn finalize_leaves_a_job_that_no_longer_runs_its_occurrence() {
    let k = kit();
    let store = &k.app.inner.store;
    let mut job = store.put_job(&crate::store::conformance::sample_job("j1", Some(t0() + Duration::hours(1)))).await.unwrap();
    job.state = JobState::Running;
    job.running = Some(RunningMark { owner: "h:1".into(), fire_at: t0(), started_at: t0(), attempt: 1 });
    let claimed = store.put_job(&job).await.unwrap();
    // Recovery judged the run interrupted; then a later occurrence started running.
    let mut later = claimed.clone();
    later.last_status = Some(RunStatus::Error);
    later.last_error = Some("interrupted".into());
    later.running =
        Some(RunningMark { owner: "h:2".into(), fire_at: t0() + Duration::hours(1), started_at: t0() + Duration::hours(1), attempt: 1 });
    let later = store.put_job(&later).await.unwrap();
    k.app.finalize(&claimed, &run_of(&claimed)).await.unwrap();
    assert_eq!(store.get_job("j1").await.unwrap().unwrap(), later, "the stale run changes nothing on the job");
    // A manual run (no mark of its own) records its status but leaves the running mark.
    let mut manual = later.clone();
    manual.running = None;
    k.app.finalize(&manual, &run_of(&manual)).await.unwrap();
    let now = store.get_job("j1").await.unwrap().unwrap();
    assert_eq!((now.running, now.state, now.last_status), (later.running, JobState::Running, Some(RunStatus::Ok)));
    // The run that owns the mark finishes it.
    let owner = store.get_job("j1").await.unwrap().unwrap();
    k.app.finalize(&owner, &run_of(&owner)).await.unwrap();
    let done = store.get_job("j1").await.unwrap().unwrap();
    assert_eq!((done.running, done.state), (None, JobState::Scheduled));
}
