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

fn profile(name: &str) -> Profile {
    Profile::parse(name).unwrap()
}

/// An adapter on `group` arming for `routed` (None: the process's own profile).
fn adapter_in(c: &Client, group: &str, routed: Option<&str>) -> EventBridgeTimers {
    let p = routed.map(profile);
    EventBridgeTimers::with_client(&settings(group, ROLE), c.clone(), wall()).for_profile(p.as_ref())
}

/// A schedule's target input, parsed.
async fn input_of(c: &Client, group: &str, name: &str) -> serde_json::Value {
    let s = c.get_schedule().name(name).group_name(group).send().await.unwrap();
    serde_json::from_str(s.target().unwrap().input().unwrap()).unwrap()
}

fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
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
fn a_routed_profile_has_names_of_its_own() {
    let at = utc("2026-12-01T08:00:00Z");
    let (own, a, ab) = (Naming::default(), Naming::of(Some(&profile("a"))), Naming::of(Some(&profile("ab"))));
    assert_eq!(own.schedule_name("daily", at), schedule_name("daily", at));
    assert_eq!(a.prefix(), "hzp.a.");
    let name = a.schedule_name("daily-news", at);
    assert_eq!(name, "hzp.a.daily-news-20261201T080000Z");
    assert_eq!(a.parse_name(&name), Some(("daily-news", at)));
    // Each profile parses only its own names: not the process's (`hz-`), not a longer
    // profile name that starts with the same letters.
    assert_eq!(own.parse_name(&name), None);
    assert_eq!(parse_name(&name), None);
    assert!(!name.starts_with(NAME_PREFIX));
    assert_eq!(a.parse_name(&schedule_name("daily-news", at)), None);
    assert_eq!(a.parse_name(&ab.schedule_name("daily-news", at)), None);
    assert_eq!(ab.parse_name(&a.schedule_name("daily-news", at)), None);
    // The same job id in two profiles: two names.
    assert_ne!(a.schedule_name("j1", at), ab.schedule_name("j1", at));
    // `main` routed (the process's own profile being another) is a profile like any other.
    assert_eq!(Naming::of(Some(&profile("main"))).schedule_name("j1", at), "hzp.main.j1-20261201T080000Z");
}

#[test]
fn long_profile_names_and_job_ids_fit_and_stay_distinct() {
    let at = utc("2026-12-01T08:00:00Z");
    let profiles: Vec<String> = (1..=64).map(|n| "p".repeat(n)).chain(["a".repeat(63) + "-", "a".repeat(63) + "_"]).collect();
    let ids: Vec<String> = (1..=64).map(|n| "j".repeat(n)).chain(["weird id/ü".to_string()]).collect();
    let mut seen = std::collections::BTreeSet::new();
    for p in &profiles {
        let naming = Naming::of(Some(&profile(p)));
        assert!(naming.prefix().starts_with(PROFILE_PREFIX) && !naming.prefix().starts_with(NAME_PREFIX), "{p}");
        for id in &ids {
            let name = naming.schedule_name(id, at);
            assert!(valid_name(&name), "{p} {id}: `{name}` ({} chars)", name.len());
            assert_eq!(naming.parse_name(&name).map(|(_, t)| t), Some(at), "{name}");
            assert!(seen.insert(name.clone()), "{p} {id}: `{name}` is another's too");
            assert_eq!(Naming::default().parse_name(&name), None, "{name}");
        }
    }
    // Another profile never parses a name that is not its own, long names included.
    let (long_a, long_b) = (Naming::of(Some(&profile(&"a".repeat(64)))), Naming::of(Some(&profile(&"a".repeat(63)))));
    assert_ne!(long_a.prefix(), long_b.prefix());
    assert_eq!(long_a.parse_name(&long_b.schedule_name("j1", at)), None);
    assert_eq!(long_b.parse_name(&long_a.schedule_name("j1", at)), None);
    // A shortened profile part is longer than any verbatim one: a 21-character name never
    // shares the prefix of a 20-character one.
    let short = Naming::of(Some(&profile(&"q".repeat(20))));
    let shortened = Naming::of(Some(&profile(&"q".repeat(21))));
    assert_eq!(short.prefix().len() + 1, shortened.prefix().len());
    // Stable across builds (the hash is part of the names in use).
    assert_eq!(Naming::of(Some(&profile(&"a".repeat(64)))), long_a);
}

#[test]
fn expression_and_input() {
    let now = utc("2026-12-01T07:00:00Z");
    assert_eq!(at_expression(utc("2026-12-01T08:00:00Z"), now), "at(2026-12-01T08:00:00)");
    // Overdue occurrences are scheduled a minute from now; the input keeps the real time.
    assert_eq!(at_expression(utc("2026-12-01T06:00:00Z"), now), "at(2026-12-01T07:01:00)");
    let input: serde_json::Value = serde_json::from_str(&fire_input("j1", utc("2026-12-01T06:00:00Z"))).unwrap();
    assert_eq!(input, serde_json::json!({"hermes_zero_fire": {"job_id": "j1", "fire_at": "2026-12-01T06:00:00Z"}}));
    let routed: serde_json::Value =
        serde_json::from_str(&Naming::of(Some(&profile("a"))).fire_input("j1", utc("2026-12-01T06:00:00Z"))).unwrap();
    let want = serde_json::json!({"hermes_zero_fire": {"job_id": "j1", "fire_at": "2026-12-01T06:00:00Z", "profile": "a"}});
    assert_eq!(routed, want);
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

#[tokio::test]
async fn a_routed_profile_arms_schedules_of_its_own_that_carry_its_name() {
    let Some(ep) = moto("a_routed_profile_arms_schedules_of_its_own_that_carry_its_name") else { return };
    let (_, c, group) = adapter(&ep);
    let t = adapter_in(&c, &group, Some("team-a"));
    let at = future(2);
    t.arm(&job("job-a", Some(at))).await.unwrap();
    t.arm(&job("job-a", Some(at))).await.unwrap();
    let name = Naming::of(Some(&profile("team-a"))).schedule_name("job-a", at);
    assert!(name.starts_with("hzp.team-a.job-a-"), "{name}");
    assert_eq!(names(&c, &group).await, vec![name.clone()]);
    let s = c.get_schedule().name(&name).group_name(&group).send().await.unwrap();
    assert_eq!(s.action_after_completion(), Some(&ActionAfterCompletion::Delete));
    assert_eq!(s.target().map(|t| (t.arn(), t.role_arn())), Some((TARGET, ROLE)));
    let fire_at = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let want = serde_json::json!({"hermes_zero_fire": {"job_id": "job-a", "fire_at": fire_at, "profile": "team-a"}});
    assert_eq!(input_of(&c, &group, &name).await, want);
    // Moving the job replaces its one schedule.
    let later = future(3);
    t.arm(&job("job-a", Some(later))).await.unwrap();
    assert_eq!(names(&c, &group).await, vec![Naming::of(Some(&profile("team-a"))).schedule_name("job-a", later)]);
}

#[tokio::test]
async fn profiles_in_one_group_never_touch_each_others_schedules() {
    let Some(ep) = moto("profiles_in_one_group_never_touch_each_others_schedules") else { return };
    let (own, c, group) = adapter(&ep);
    let (a, ab) = (adapter_in(&c, &group, Some("a")), adapter_in(&c, &group, Some("ab")));
    let at = future(2);
    // The same job id in the process's own profile and in two routed ones: three schedules,
    // each with its own input.
    own.arm(&job("j1", Some(at))).await.unwrap();
    a.arm(&job("j1", Some(at))).await.unwrap();
    ab.arm(&job("j1", Some(at))).await.unwrap();
    let (n_own, n_a, n_ab) = (
        schedule_name("j1", at),
        Naming::of(Some(&profile("a"))).schedule_name("j1", at),
        Naming::of(Some(&profile("ab"))).schedule_name("j1", at),
    );
    let mut all = vec![n_own.clone(), n_a.clone(), n_ab.clone()];
    all.sort();
    assert_eq!(names(&c, &group).await, all);
    assert_eq!(input_of(&c, &group, &n_own).await["hermes_zero_fire"].get("profile"), None);
    assert_eq!(input_of(&c, &group, &n_a).await["hermes_zero_fire"]["profile"], serde_json::json!("a"));
    assert_eq!(input_of(&c, &group, &n_ab).await["hermes_zero_fire"]["profile"], serde_json::json!("ab"));

    // A reconcile of no jobs deletes only its own profile's schedules.
    let r = own.reconcile(&[]).await.unwrap();
    assert_eq!((r.armed, r.cancelled, r.unchanged), (0, 1, 0));
    assert_eq!(names(&c, &group).await, vec![n_a.clone(), n_ab.clone()]);
    let r = a.reconcile(&[]).await.unwrap();
    assert_eq!((r.armed, r.cancelled, r.unchanged), (0, 1, 0));
    assert_eq!(names(&c, &group).await, vec![n_ab.clone()]);
    // A routed profile's reconcile leaves the process's own profile's schedules alone too,
    // and a cancel in one profile is only that profile's.
    own.arm(&job("j1", Some(at))).await.unwrap();
    a.arm(&job("j1", Some(at))).await.unwrap();
    let r = ab.reconcile(&[job("j1", Some(at)), job("j2", Some(at))]).await.unwrap();
    assert_eq!((r.armed, r.cancelled, r.unchanged), (1, 0, 1));
    let n_ab2 = Naming::of(Some(&profile("ab"))).schedule_name("j2", at);
    let mut want = vec![n_own.clone(), n_a.clone(), n_ab.clone(), n_ab2.clone()];
    want.sort();
    assert_eq!(names(&c, &group).await, want);
    own.cancel("j1").await.unwrap();
    a.cancel("j1").await.unwrap();
    assert_eq!(names(&c, &group).await, vec![n_ab, n_ab2]);
}

#[tokio::test]
async fn a_long_profile_name_and_job_id_make_a_valid_name_moto_accepts() {
    let Some(ep) = moto("a_long_profile_name_and_job_id_make_a_valid_name_moto_accepts") else { return };
    let (_, c, group) = adapter(&ep);
    let (p1, p2) = ("p".repeat(64), "p".repeat(63));
    let (t1, t2) = (adapter_in(&c, &group, Some(&p1)), adapter_in(&c, &group, Some(&p2)));
    let (id1, id2) = ("j".repeat(64), "j".repeat(63));
    let at = future(2);
    for t in [&t1, &t2] {
        t.arm(&job(&id1, Some(at))).await.unwrap();
        t.arm(&job(&id2, Some(at))).await.unwrap();
    }
    let got = names(&c, &group).await;
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.iter().all(|n| valid_name(n)), "{got:?}");
    let input = input_of(&c, &group, &Naming::of(Some(&profile(&p1))).schedule_name(&id1, at)).await;
    assert_eq!(
        (&input["hermes_zero_fire"]["job_id"], &input["hermes_zero_fire"]["profile"]),
        (&serde_json::json!(id1), &serde_json::json!(p1))
    );
    // Each profile's reconcile keeps its two and leaves the other's.
    let r = t1.reconcile(&[job(&id1, Some(at)), job(&id2, Some(at))]).await.unwrap();
    assert_eq!((r.armed, r.cancelled, r.unchanged), (0, 0, 2));
    t2.reconcile(&[]).await.unwrap();
    let left = names(&c, &group).await;
    let mut want = vec![Naming::of(Some(&profile(&p1))).schedule_name(&id1, at), Naming::of(Some(&profile(&p1))).schedule_name(&id2, at)];
    want.sort();
    assert_eq!(left, want);
}
