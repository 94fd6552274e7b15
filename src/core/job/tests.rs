//! Tests of the due rule, occurrences, overlap and spread placement.

use super::*;
use proptest::prelude::*;

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn job(s: Schedule) -> Job {
    let created = utc("2026-01-01T00:00:00Z");
    let spec =
        crate::core::jobfile::parse_job(&serde_json::json!({"id": "j", "schedule": "every 1h", "prompt": "p"}), created, Tz::UTC).unwrap();
    Job { schedule: s, ..Job::from_spec(&spec, false, created, Tz::UTC) }
}

#[test]
fn one_shot_grace_and_missed() {
    let j = job(Schedule::Once { at: utc("2026-01-01T08:00:00Z") });
    let occ = utc("2026-01-01T08:00:00Z");
    assert_eq!(decide(&j, occ, utc("2026-01-01T07:59:59Z"), Tz::UTC, 0), Decision::NotDue);
    assert_eq!(decide(&j, occ, utc("2026-01-01T08:02:00Z"), Tz::UTC, 0), Decision::Run { next: None, late: false, offset: 0 });
    assert_eq!(decide(&j, occ, utc("2026-01-01T08:02:01Z"), Tz::UTC, 0), Decision::Missed);
}

#[test]
fn late_recurring_runs_once_and_skips_the_backlog() {
    let j = job(Schedule::Cron { expr: "0 8 * * *".into() });
    let occ = utc("2026-01-01T08:00:00Z");
    // Three days late: run once, next is tomorrow 08:00 after now.
    let d = decide(&j, occ, utc("2026-01-04T09:00:00Z"), Tz::UTC, 0);
    assert_eq!(d, Decision::Run { next: Some(utc("2026-01-05T08:00:00Z")), late: true, offset: 0 });
    // On time.
    let d = decide(&j, occ, utc("2026-01-01T08:00:30Z"), Tz::UTC, 0);
    assert_eq!(d, Decision::Run { next: Some(utc("2026-01-02T08:00:00Z")), late: false, offset: 0 });
    // Grace for a daily job is 2 h.
    assert!(matches!(decide(&j, occ, utc("2026-01-01T10:00:00Z"), Tz::UTC, 0), Decision::Run { late: false, .. }));
    assert!(matches!(decide(&j, occ, utc("2026-01-01T10:00:01Z"), Tz::UTC, 0), Decision::Run { late: true, .. }));
}

#[test]
fn repeat_times_completes() {
    let mut j = job(Schedule::Interval { seconds: 600 });
    j.repeat = Repeat { times: Some(2), completed: 1 };
    let occ = utc("2026-01-01T08:00:00Z");
    assert_eq!(decide(&j, occ, occ, Tz::UTC, 0), Decision::Run { next: None, late: false, offset: 0 });
    j.repeat.completed = 0;
    assert_eq!(decide(&j, occ, occ, Tz::UTC, 0), Decision::Run { next: Some(utc("2026-01-01T08:10:00Z")), late: false, offset: 0 });
}

#[test]
fn occurrence_key_and_ids() {
    let o = Occurrence::new("daily", utc("2026-12-01T08:00:00.700Z"));
    assert_eq!(o.key(), "daily:2026-12-01T08:00:00Z");
    assert!(valid_id("daily-news_1.x") && !valid_id("a b") && !valid_id("") && !valid_id(&"x".repeat(65)));
    assert!(valid_id(&new_id()));
}

proptest! {
    #[test]
    fn next_is_always_in_the_future_and_on_the_grid(occ in 0i64..4_000_000_000, late in 0i64..10_000_000, secs in 60i64..200_000) {
        let occ = DateTime::from_timestamp(occ, 0).unwrap();
        let now = occ + Duration::seconds(late);
        let j = job(Schedule::Interval { seconds: secs });
        match decide(&j, occ, now, Tz::UTC, 0) {
            Decision::Run { next: Some(n), late: l, .. } => {
                prop_assert!(n > now);
                prop_assert!(n - now <= Duration::seconds(secs));
                prop_assert_eq!((n - occ).num_seconds() % secs, 0);
                prop_assert_eq!(l, late > grace_seconds(Some(secs)));
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

#[test]
fn spread_moves_recurring_occurrences_by_the_job_offset() {
    let mut j = job(Schedule::Cron { expr: "0 8 * * *".into() });
    let off = crate::core::schedule::spread::offset("j", 600);
    assert!((0..600).contains(&off));
    let shift = Duration::seconds(off);
    j.place_first(utc("2026-01-01T07:00:00Z"), Tz::UTC, 600);
    assert_eq!((j.next_run_at, j.spread_offset), (Some(utc("2026-01-01T08:00:00Z") + shift), off));
    // Placed after the base time but before the shifted one: today's occurrence still comes.
    j.place_first(utc("2026-01-01T08:00:00Z"), Tz::UTC, 600);
    assert_eq!(j.next_run_at, Some(utc("2026-01-01T08:00:00Z") + shift).filter(|_| off > 0).or(Some(utc("2026-01-02T08:00:00Z"))));
    // The fire of the shifted occurrence moves to the next day's shifted occurrence.
    j.place_first(utc("2026-01-01T07:00:00Z"), Tz::UTC, 600);
    let occ = j.next_run_at.unwrap();
    assert_eq!(
        decide(&j, occ, occ, Tz::UTC, 600),
        Decision::Run { next: Some(utc("2026-01-02T08:00:00Z") + shift), late: false, offset: off }
    );
    // A job's own spread wins over the configured one; one-shots are never moved.
    j.spread = Some(0);
    assert_eq!(j.offset(600), 0);
    let mut once = job(Schedule::Once { at: utc("2026-01-01T09:00:00Z") });
    once.place_first(utc("2026-01-01T07:00:00Z"), Tz::UTC, 600);
    assert_eq!((once.next_run_at, once.spread_offset), (Some(utc("2026-01-01T09:00:00Z")), 0));
}

#[test]
fn a_change_of_spread_never_brings_back_an_occurrence_that_ran() {
    // Armed with spread 0 at 08:00 and fired: the next occurrence is tomorrow's, whatever
    // the spread became meanwhile (its base is after today's base).
    let mut j = job(Schedule::Cron { expr: "0 8 * * *".into() });
    j.place_first(utc("2026-01-01T07:00:00Z"), Tz::UTC, 0);
    let occ = utc("2026-01-01T08:00:00Z");
    assert_eq!(j.next_run_at, Some(occ));
    let off = crate::core::schedule::spread::offset("j", 3600);
    let Decision::Run { next, offset, .. } = decide(&j, occ, occ, Tz::UTC, 3600) else { panic!() };
    assert_eq!((next, offset), (Some(utc("2026-01-02T08:00:00Z") + Duration::seconds(off)), off));
    // And back: from a shifted occurrence to spread 0, tomorrow at 08:00, not today's 08:00.
    let mut adv = j.advance(&Decision::Run { next, late: false, offset }, occ, "me", occ);
    adv.finish(RunStatus::Ok, None, occ);
    let shifted = adv.next_run_at.unwrap();
    let Decision::Run { next, .. } = decide(&adv, shifted, shifted, Tz::UTC, 0) else { panic!() };
    assert_eq!(next, Some(utc("2026-01-03T08:00:00Z")));
    // An edit of the spread moves the pending occurrence and keeps its base.
    adv.respread(0);
    assert_eq!((adv.next_run_at, adv.spread_offset), (Some(utc("2026-01-02T08:00:00Z")), 0));
    adv.spread = Some(3600);
    adv.respread(0);
    assert_eq!(adv.next_run_at, Some(shifted));
}
