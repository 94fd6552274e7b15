//! Use-case tests with the real embedded store, a manual clock and in-process fakes of the
//! model and delivery ports: time rules are driven through the clock port, never sleeps.

use crate::app::{App, Inbound, ReplyPath};

use crate::core::ids::{ChatType, Origin, SessionKey};
use crate::ports::{ManualClock, QueuedItem};
use crate::test_support::{CountingLlm, EchoLlm, Outbox, TestApp};
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

struct Kit {
    app: App,
    clock: Arc<ManualClock>,
    llm: Arc<EchoLlm>,
    outbox: Arc<Outbox>,
}

fn kit(yaml: &str, start: &str) -> Kit {
    let now = start.parse::<DateTime<Utc>>().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let llm = Arc::new(EchoLlm::default());
    let outbox = Arc::new(Outbox::default());
    let app = TestApp::new(now).yaml(yaml).home("/nonexistent-home").clock(clock.clone()).llm(llm.clone()).delivery(outbox.clone()).build();
    Kit { app, clock, llm, outbox }
}

fn inbound(platform: &str, text: &str) -> Inbound {
    Inbound {
        origin: Origin::new(platform, "c1", ChatType::Dm, Some("u1"), None).unwrap(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

#[tokio::test]
async fn idle_reset_starts_a_fresh_session_with_notice_and_note() {
    let k = kit("session_reset: {mode: idle, idle_minutes: 120, notify_exclude_platforms: []}", "2026-01-01T10:00:00Z");
    let first = k.app.handle_inbound(inbound("api", "hello")).await.unwrap();
    k.clock.advance(Duration::minutes(125));
    let second = k.app.handle_inbound(inbound("api", "back again")).await.unwrap();
    assert_ne!(first.session_id, second.session_id);
    assert_eq!(second.notices, ["◐ Session automatically reset (inactive for 2h 5m). Conversation history cleared."]);
    let req = k.llm.requests().last().cloned().unwrap();
    assert!(req.messages[0].content.contains("fresh conversation"), "{}", req.messages[0].content);
    let users: Vec<&str> = req.messages.iter().filter(|m| m.role == crate::core::session::Role::User).map(|m| m.content.as_str()).collect();
    assert_eq!(users, ["back again"]);
    let old = k.app.inner.store.get_session(&crate::core::ids::SessionId::parse(&first.session_id).unwrap()).await.unwrap().unwrap();
    assert_eq!(old.end_reason.as_deref(), Some("session_reset"));
    // The flag is consumed: the next message has no notice and no note.
    let third = k.app.handle_inbound(inbound("api", "and again")).await.unwrap();
    assert!(third.notices.is_empty());
    assert_eq!(third.session_id, second.session_id);
}

#[tokio::test]
async fn excluded_platforms_and_empty_sessions_are_reset_silently() {
    let k = kit("session_reset: {mode: idle, idle_minutes: 60}", "2026-01-01T10:00:00Z");
    let first = k.app.handle_inbound(inbound("api", "hello")).await.unwrap();
    k.clock.advance(Duration::hours(2));
    let second = k.app.handle_inbound(inbound("api", "later")).await.unwrap();
    assert_ne!(first.session_id, second.session_id, "api is excluded from the notice, not from the reset");
    assert!(second.notices.is_empty());
}

#[tokio::test]
async fn daily_reset_in_the_configured_timezone_tells_telegram_users() {
    let k = kit("timezone: Europe/Berlin\nsession_reset: {mode: daily, at_hour: 4}\nallow_all_users: true", "2026-01-01T22:00:00Z");
    let first = k.app.handle_inbound(inbound("telegram", "late night")).await.unwrap();
    k.clock.set("2026-01-02T02:59:00Z".parse().unwrap());
    let same = k.app.handle_inbound(inbound("telegram", "still up")).await.unwrap();
    assert_eq!(first.session_id, same.session_id, "03:59 Berlin: boundary not passed");
    k.clock.set("2026-01-02T03:00:00Z".parse().unwrap());
    let next = k.app.handle_inbound(inbound("telegram", "good morning")).await.unwrap();
    assert_ne!(next.session_id, same.session_id);
    let sent: Vec<String> = k.outbox.sent();
    assert!(
        sent.contains(&"◐ Session automatically reset (daily schedule at 4:00). Conversation history cleared.".to_string()),
        "{sent:?}"
    );
    assert!(next.session_id.starts_with("20260102_040000_"), "id in local time: {}", next.session_id);
}

#[tokio::test]
async fn no_reset_while_queued_work_waits() {
    let k = kit("session_reset: {mode: idle, idle_minutes: 1}", "2026-01-01T10:00:00Z");
    let first = k.app.handle_inbound(inbound("api", "hello")).await.unwrap();
    let key = SessionKey::parse(&first.session_key).unwrap();
    let item = QueuedItem { text: "queued earlier".into(), message_id: None, at: k.clock.now_for_test(), attachments: Vec::new() };
    k.app.inner.store.queue_push(&key, &item, 32, None).await.unwrap();
    k.clock.advance(Duration::hours(5));
    let second = k.app.handle_inbound(inbound("api", "now")).await.unwrap();
    assert_eq!(first.session_id, second.session_id);
}

#[tokio::test]
async fn commands_never_reach_the_model() {
    let k = kit("", "2026-01-01T10:00:00Z");
    k.app.handle_inbound(inbound("api", "hello")).await.unwrap();
    let calls = k.llm.requests().len();
    let help = k.app.handle_inbound(inbound("api", "/help")).await.unwrap();
    assert!(help.reply.unwrap().contains("/queue <prompt>"));
    let status = k.app.handle_inbound(inbound("api", "/status")).await.unwrap().reply.unwrap();
    assert!(status.contains("Messages: 2") && status.contains("Running: no"), "{status}");
    let stop = k.app.handle_inbound(inbound("api", "/stop")).await.unwrap().reply.unwrap();
    assert_eq!(stop, "Nothing is running.");
    let before = k.app.handle_inbound(inbound("api", "/new Trip")).await.unwrap();
    let list = k.app.handle_inbound(inbound("api", "/resume")).await.unwrap().reply.unwrap();
    assert_eq!(list.lines().filter(|l| l.starts_with("2026")).count(), 2, "{list}");
    let old = list.lines().find(|l| l.starts_with("2026") && !l.contains("current")).unwrap().split(':').next().unwrap().to_string();
    let back = k.app.handle_inbound(inbound("api", &format!("/resume {old}"))).await.unwrap();
    assert_eq!(back.session_id, old);
    assert_ne!(back.session_id, before.session_id);
    assert_eq!(k.llm.requests().len(), calls);
}

#[tokio::test]
async fn whoami_sessions_and_usage_answer_as_hermes_without_the_model() {
    let k = kit("cron: {admin_users: ['api:u1']}\n", "2026-01-01T10:00:00Z");
    k.app.handle_inbound(inbound("api", "hello")).await.unwrap();
    let calls = k.llm.requests().len();
    let ask = |text: &str, user: &str| {
        let mut m = inbound("api", text);
        m.origin.user_id = Some(user.into());
        m
    };
    let me = k.app.handle_inbound(ask("/whoami", "u1")).await.unwrap().reply.unwrap();
    assert_eq!(me, "**You** — api (DM)\nUser ID: `u1`\nTier: **admin**\nSlash commands: all available");
    let other = k.app.handle_inbound(ask("/whoami", "u2")).await.unwrap().reply.unwrap();
    assert!(other.contains("User ID: `u2`\nTier: user\n"), "{other}");
    let open = kit("", "2026-01-01T10:00:00Z").app.handle_inbound(ask("/whoami", "u1")).await.unwrap().reply.unwrap();
    assert!(open.contains("Tier: unrestricted (no admin list configured for this scope)"), "{open}");
    let usage = k.app.handle_inbound(inbound("api", "/usage")).await.unwrap().reply.unwrap();
    assert!(
        usage.starts_with("📊 **Session Token Usage**\nModel: `") && usage.contains("\nInput tokens: ") && usage.contains("\nTotal: "),
        "{usage}"
    );
    let sessions = k.app.handle_inbound(inbound("api", "/sessions")).await.unwrap().reply.unwrap();
    assert_eq!(sessions, k.app.handle_inbound(inbound("api", "/resume")).await.unwrap().reply.unwrap());
    assert!(sessions.starts_with("Recent sessions:\n2026") && sessions.contains("(current)"), "{sessions}");
    let help = k.app.handle_inbound(inbound("api", "/help")).await.unwrap().reply.unwrap();
    for c in ["/sessions", "/usage", "/whoami"] {
        assert!(help.lines().any(|l| l.starts_with(c)), "{help}");
    }
    assert_eq!(k.llm.requests().len(), calls, "no command reached the model");
}

impl ManualClock {
    fn now_for_test(&self) -> DateTime<Utc> {
        crate::ports::Clock::now(self)
    }
}

#[tokio::test]
async fn sync_keeps_a_stored_recurring_bare_duration_and_makes_new_ones_one_shots() {
    use crate::core::schedule::Schedule;
    let now: DateTime<Utc> = "2026-03-01T10:00:00Z".parse().unwrap();
    let home = std::env::temp_dir().join(format!("hz-unit-sync-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    std::fs::create_dir_all(home.join("cron")).unwrap();
    let store: Arc<dyn crate::ports::Store> = Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap());
    let app = TestApp::new(now).yaml("{}").home(&home).store(store.clone()).llm(CountingLlm::new("ok")).build();
    // A job stored before bare durations became one-shots: `30m`, recurring.
    let file = r#"[{"id":"old","prompt":"p","schedule":"30m"},{"id":"new","prompt":"p","schedule":"45m"}]"#;
    let spec = crate::core::jobfile::parse_file(file, "f", now, chrono_tz::UTC).unwrap().jobs.remove(0);
    let mut old = crate::core::job::Job::from_spec(&spec, true, now, chrono_tz::UTC);
    old.schedule = Schedule::Interval { seconds: 1800 };
    old.next_run_at = Some(now + Duration::minutes(30));
    app.inner.store.put_job(&old).await.unwrap();
    std::fs::write(home.join("cron/jobs.json"), file).unwrap();
    let r = app.sync_jobs_file().await.unwrap();
    assert_eq!((r.created.clone(), r.updated.clone()), (vec!["new".to_string()], vec!["old".to_string()]));
    let old = app.inner.store.get_job("old").await.unwrap().unwrap();
    assert_eq!(old.schedule, Schedule::Interval { seconds: 1800 }, "a stored recurring schedule stays as it is");
    let new = app.inner.store.get_job("new").await.unwrap().unwrap();
    assert_eq!(new.schedule, Schedule::Once { at: now + Duration::minutes(45) });
    // A later sync does not push the one-shot forward.
    let later = now + Duration::minutes(10);
    let app2 = TestApp::new(later).yaml("{}").home(&home).store(store).llm(CountingLlm::new("ok")).build();
    app2.sync_jobs_file().await.unwrap();
    assert_eq!(app2.inner.store.get_job("new").await.unwrap().unwrap().next_run_at, Some(now + Duration::minutes(45)));
    std::fs::remove_dir_all(&home).ok();
}

#[tokio::test]
async fn a_message_its_caller_answers_sends_nothing_to_the_origin() {
    let k = kit("allow_all_users: true", "2026-01-01T10:00:00Z");
    let answered_here = Inbound { reply: ReplyPath::Caller, ..inbound("discord", "hello") };
    let out = k.app.handle_inbound(answered_here).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("echo: hello"));
    let help = Inbound { reply: ReplyPath::Caller, ..inbound("discord", "/help") };
    assert!(k.app.handle_inbound(help).await.unwrap().reply.is_some());
    assert!(k.outbox.all().is_empty(), "the caller answers from the outcome");
    k.app.handle_inbound(inbound("discord", "again")).await.unwrap();
    let sent: Vec<String> = k.outbox.all().iter().map(|(t, s)| format!("{}:{}:{s}", t.platform, t.chat_id)).collect();
    assert_eq!(sent, ["discord:c1:echo: again"]);
}

/// A job due at `at` ("every 1h", local delivery), stored.
async fn due_job(k: &Kit, id: &str, at: DateTime<Utc>) {
    let mut j = crate::store::conformance::sample_job(id, Some(at));
    j.deliver = vec!["local".into()];
    k.app.test_store().put_job(&j).await.unwrap();
}

#[tokio::test]
async fn a_manual_run_in_the_scheduled_second_does_not_wedge_the_job() {
    let k = kit("{}", "2026-03-01T08:00:00Z");
    let at = crate::ports::Clock::now(k.clock.as_ref());
    due_job(&k, "j", at).await;
    // `cron run` lands in the very second the job is due: its own occurrence key space…
    assert!(matches!(k.app.jobs().run_now("j").await.unwrap(), crate::app::FireStatus::Ran { .. }));
    // …so the scheduled occurrence still runs, and the job moves on.
    let fired = k.app.jobs().fire("j", None, "ticker").await.unwrap();
    assert!(matches!(fired, crate::app::FireStatus::Ran { .. }), "{fired:?}");
    let j = k.app.test_store().get_job("j").await.unwrap().unwrap();
    assert_eq!(j.next_run_at, Some(at + Duration::hours(1)));
    assert_eq!(k.llm.requests().len(), 2, "one manual run and one scheduled run");
    // Each run's outcome is recorded on its own claim.
    let store = k.app.test_store();
    assert_eq!(store.claim_status(&crate::core::job::Occurrence::manual("j", at)).await.unwrap().as_deref(), Some("ok"));
    assert_eq!(store.claim_status(&crate::core::job::Occurrence::new("j", at)).await.unwrap().as_deref(), Some("ok"));
}

#[tokio::test]
async fn a_claimed_occurrence_the_job_did_not_move_past_is_advanced() {
    let k = kit("{}", "2026-03-01T08:00:00Z");
    let at = crate::ports::Clock::now(k.clock.as_ref());
    due_job(&k, "j", at).await;
    // A claim whose write left the job on the same occurrence (what an older manual run did).
    let job = k.app.test_store().get_job("j").await.unwrap().unwrap();
    let occ = crate::core::job::Occurrence::new("j", at);
    k.app.test_store().claim_occurrence(&occ, &job, at).await.unwrap();
    let fired = k.app.jobs().fire("j", None, "ticker").await.unwrap();
    assert!(matches!(fired, crate::app::FireStatus::Duplicate), "{fired:?}");
    let j = k.app.test_store().get_job("j").await.unwrap().unwrap();
    assert_eq!(j.next_run_at, Some(at + Duration::hours(1)), "the job moved past the claimed occurrence");
    // The next tick after the next occurrence runs it: the job is not wedged.
    k.clock.advance(Duration::hours(1));
    assert!(matches!(k.app.jobs().fire("j", None, "ticker").await.unwrap(), crate::app::FireStatus::Ran { .. }));
    assert_eq!(k.llm.requests().len(), 1, "the claimed occurrence itself never ran again");
}
