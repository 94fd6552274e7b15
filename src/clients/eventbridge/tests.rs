//! Naming rules (pure), and the adapter against a local Scheduler API (moto, started by
//! `scripts/test.sh`; the tests that need it print a note and pass when `HZ_MOTO_ENDPOINT`
//! is unset). Each test uses its own schedule group, so they run in parallel.

use super::*;
use crate::core::job::JobState;
use aws_sdk_scheduler::config::{Credentials, Region};

const TARGET: &str = "arn:aws:lambda:us-east-1:123456789012:function:hermes-zero";
const ROLE: &str = "arn:aws:iam::123456789012:role/hermes-zero-scheduler";

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// A recurring job (built from JSON so fields added later with defaults do not break it).
fn job(id: &str, next: Option<DateTime<Utc>>) -> Job {
    serde_json::from_value(serde_json::json!({
        "id": id, "name": id, "schedule_text": "every 1h", "schedule": {"kind": "interval", "seconds": 3600},
        "prompt": "p", "enabled": true, "next_run_at": next, "state": "scheduled", "created_at": "2026-01-01T00:00:00Z", "version": 1
    }))
    .unwrap()
}

fn settings(group: &str, role: &str) -> EventBridgeSettings {
    EventBridgeSettings { group: group.into(), target_arn: TARGET.into(), role_arn: role.into() }
}

/// A future instant on a whole second (so `at()` is not clamped to now + 60 s).
/// These tests talk to moto, which runs on the machine's clock: so do they.
fn wall() -> std::sync::Arc<dyn crate::ports::Clock> {
    std::sync::Arc::new(crate::ports::SystemClock)
}

fn future(hours: i64) -> DateTime<Utc> {
    let t = Utc::now() + chrono::Duration::hours(hours);
    DateTime::from_timestamp(t.timestamp(), 0).unwrap()
}

/// The moto endpoint, or None (with a note) when the test script did not start one.
fn moto(test: &str) -> Option<String> {
    let ep = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty());
    if ep.is_none() {
        eprintln!("skipping {test}: HZ_MOTO_ENDPOINT is not set (scripts/test.sh starts moto)");
    }
    ep
}

fn client(endpoint: &str) -> Client {
    let conf = aws_sdk_scheduler::Config::builder()
        .behavior_version(aws_sdk_scheduler::config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
        .endpoint_url(endpoint)
        .http_client(crate::clients::aws_sdk_http_client())
        .build();
    Client::from_conf(conf)
}

/// A fresh group name and an adapter on it.
fn adapter(endpoint: &str) -> (EventBridgeTimers, Client, String) {
    let group = format!("hz-test-{:08x}", rand::random::<u32>());
    let c = client(endpoint);
    (EventBridgeTimers::with_client(&settings(&group, ROLE), c.clone(), wall()), c, group)
}

async fn names(c: &Client, group: &str) -> Vec<String> {
    let out = c.list_schedules().group_name(group).send().await.unwrap();
    let mut v: Vec<String> = out.schedules().iter().filter_map(|s| s.name().map(str::to_string)).collect();
    v.sort();
    v
}

#[test]
fn names_follow_the_contract() {
    let at = utc("2026-12-01T08:00:00Z");
    assert_eq!(schedule_name("daily-news", at), "hz-daily-news-20261201T080000Z");
    assert_eq!(parse_name("hz-daily-news-20261201T080000Z"), Some(("daily-news", at)));
    assert_eq!(parse_name("hz-x-2026"), None);
    assert_eq!(parse_name("other-x-20261201T080000Z"), None);
    // Too long or outside the charset: shortened with a hash, still ≤ 64 and unique.
    let long = "a".repeat(64);
    let n = schedule_name(&long, at);
    assert!(n.len() <= 64, "{n}");
    assert_ne!(n, schedule_name(&"a".repeat(63), at));
    let odd = schedule_name("weird id/ü", at);
    assert!(odd.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)), "{odd}");
    assert_eq!(parse_name(&odd).map(|(_, t)| t), Some(at));
}

#[test]
fn expression_and_input() {
    let now = utc("2026-12-01T07:00:00Z");
    assert_eq!(at_expression(utc("2026-12-01T08:00:00Z"), now), "at(2026-12-01T08:00:00)");
    // Overdue occurrences are scheduled a minute from now; the input keeps the real time.
    assert_eq!(at_expression(utc("2026-12-01T06:00:00Z"), now), "at(2026-12-01T07:01:00)");
    let input: serde_json::Value = serde_json::from_str(&fire_input("j1", utc("2026-12-01T06:00:00Z"))).unwrap();
    assert_eq!(input, serde_json::json!({"hermes_zero_fire": {"job_id": "j1", "fire_at": "2026-12-01T06:00:00Z"}}));
}

#[tokio::test]
async fn missing_role_is_refused_without_calling_aws() {
    // Unroutable endpoint: a network call would fail as Unavailable, not Refused.
    let t = EventBridgeTimers::with_client(&settings("g", ""), client("http://127.0.0.1:9"), wall());
    let err = t.arm(&job("j1", Some(future(1)))).await.unwrap_err();
    assert!(matches!(err, TimerError::Refused(ref m) if m.contains("role_arn")), "{err}");
}

#[tokio::test]
async fn arm_creates_exactly_one_schedule_with_the_contract_fields() {
    let Some(ep) = moto("arm_creates_exactly_one_schedule_with_the_contract_fields") else { return };
    let (t, c, group) = adapter(&ep);
    let at = future(2);
    t.arm(&job("job-a", Some(at))).await.unwrap();
    t.arm(&job("job-a", Some(at))).await.unwrap(); // idempotent: ConflictException is fine
    let name = schedule_name("job-a", at);
    assert_eq!(names(&c, &group).await, vec![name.clone()]);
    let s = c.get_schedule().name(&name).group_name(&group).send().await.unwrap();
    assert_eq!(s.schedule_expression(), Some(format!("at({})", at.format("%Y-%m-%dT%H:%M:%S")).as_str()));
    assert_eq!(s.schedule_expression_timezone(), Some("UTC"));
    assert_eq!(s.action_after_completion(), Some(&ActionAfterCompletion::Delete));
    assert_eq!(s.flexible_time_window().map(|w| w.mode()), Some(&FlexibleTimeWindowMode::Off));
    let target = s.target().unwrap();
    assert_eq!(target.arn(), TARGET);
    assert_eq!(target.role_arn(), ROLE);
    let input: serde_json::Value = serde_json::from_str(target.input().unwrap()).unwrap();
    let fire_at = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(input, serde_json::json!({"hermes_zero_fire": {"job_id": "job-a", "fire_at": fire_at}}));
}

#[tokio::test]
async fn rearm_moves_the_schedule_and_leaves_other_jobs_alone() {
    let Some(ep) = moto("rearm_moves_the_schedule_and_leaves_other_jobs_alone") else { return };
    let (t, c, group) = adapter(&ep);
    let (t1, t2) = (future(1), future(2));
    // `abc-def`'s names start with `hz-abc-` too: moving `abc` must not touch them.
    t.arm(&job("abc-def", Some(t1))).await.unwrap();
    t.arm(&job("abc", Some(t1))).await.unwrap();
    t.arm(&job("abc", Some(t2))).await.unwrap();
    let mut want = vec![schedule_name("abc", t2), schedule_name("abc-def", t1)];
    want.sort();
    assert_eq!(names(&c, &group).await, want);
}

#[tokio::test]
async fn cancel_and_disarm_remove_the_schedules() {
    let Some(ep) = moto("cancel_and_disarm_remove_the_schedules") else { return };
    let (t, c, group) = adapter(&ep);
    t.arm(&job("j1", Some(future(1)))).await.unwrap();
    t.arm(&job("j2", Some(future(1)))).await.unwrap();
    t.cancel("j1").await.unwrap();
    t.cancel("j1").await.unwrap(); // unknown is fine
    let mut paused = job("j2", Some(future(1)));
    paused.state = JobState::Paused;
    t.arm(&paused).await.unwrap(); // not armed → cancelled
    assert!(names(&c, &group).await.is_empty());
}

#[tokio::test]
async fn reconcile_creates_missing_and_deletes_extra() {
    let Some(ep) = moto("reconcile_creates_missing_and_deletes_extra") else { return };
    let (t, c, group) = adapter(&ep);
    let at = future(3);
    t.arm(&job("kept", Some(at))).await.unwrap();
    t.arm(&job("removed-job", Some(at))).await.unwrap();
    t.arm(&job("moved", Some(future(1)))).await.unwrap();
    let mut done = job("done", None);
    done.state = JobState::Completed;
    let jobs = vec![job("kept", Some(at)), job("missing", Some(at)), job("moved", Some(at)), done];
    let r = t.reconcile(&jobs).await.unwrap();
    assert_eq!((r.armed, r.cancelled, r.unchanged), (2, 2, 1));
    let mut want = vec![schedule_name("kept", at), schedule_name("missing", at), schedule_name("moved", at)];
    want.sort();
    assert_eq!(names(&c, &group).await, want);
    let again = t.reconcile(&jobs).await.unwrap();
    assert_eq!((again.armed, again.cancelled, again.unchanged), (0, 0, 3));
}

#[tokio::test]
async fn a_wake_is_a_one_shot_watchdog_schedule_that_reconcile_leaves_alone() {
    let Some(ep) = moto("a_wake_is_a_one_shot_watchdog_schedule_that_reconcile_leaves_alone") else { return };
    let (t, c, group) = adapter(&ep);
    let at = future(1);
    assert!(t.arm_wake(at).await.unwrap());
    assert!(t.arm_wake(at).await.unwrap(), "arming the same wake again is fine");
    let name = wake_name(at);
    assert_eq!(names(&c, &group).await, vec![name.clone()]);
    let s = c.get_schedule().name(&name).group_name(&group).send().await.unwrap();
    assert_eq!(s.schedule_expression(), Some(format!("at({})", at.format("%Y-%m-%dT%H:%M:%S")).as_str()));
    assert_eq!(s.action_after_completion(), Some(&ActionAfterCompletion::Delete));
    let target = s.target().unwrap();
    assert_eq!(target.arn(), TARGET);
    let input: serde_json::Value = serde_json::from_str(target.input().unwrap()).unwrap();
    assert_eq!(input, serde_json::json!({"hermes_zero_tick": {}}));
    // The wake is no job's: a reconcile (here, of no jobs at all) keeps it.
    let r = t.reconcile(&[]).await.unwrap();
    assert_eq!((r.armed, r.cancelled), (0, 0));
    assert_eq!(names(&c, &group).await, vec![name]);
}
