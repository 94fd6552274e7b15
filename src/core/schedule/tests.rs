//! Tests of the schedule parser and the next-occurrence rule.
use super::*;
use chrono_tz::{America::New_York, Europe::Berlin, UTC};
use proptest::prelude::*;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

fn now() -> DateTime<Utc> {
    t("2026-01-15T12:00:00Z")
}

fn cron(expr: &str) -> Schedule {
    Schedule::Cron { expr: expr.into() }
}

#[test]
fn table() {
    use Schedule::{Interval as I, Once as O};
    let ok = |s: Schedule| Ok::<_, &str>(s);
    let cases: Vec<(&str, Result<Schedule, &str>)> = vec![
        ("every 30m", ok(I { seconds: 1800 })),
        ("every 2h", ok(I { seconds: 7200 })),
        ("every 1d", ok(I { seconds: 86_400 })),
        ("30m", ok(O { at: t("2026-01-15T12:30:00Z") })),
        ("2h", ok(O { at: t("2026-01-15T14:00:00Z") })),
        ("45 minutes", ok(O { at: t("2026-01-15T12:45:00Z") })),
        ("0m", Err("positive")),
        ("hourly", ok(I { seconds: 3600 })),
        ("  EVERY 45 Minutes ", ok(I { seconds: 2700 })),
        ("every 3 hrs", ok(I { seconds: 10_800 })),
        ("every hour", ok(I { seconds: 3600 })),
        ("every minute", ok(I { seconds: 60 })),
        ("every day", ok(I { seconds: 86_400 })),
        ("every 90s", ok(I { seconds: 90 })),
        ("every 2 weeks", ok(I { seconds: 1_209_600 })),
        ("every 30s", Err("too short")),
        ("every 0m", Err("positive")),
        ("every -5m", Err("positive")),
        ("every 99999999999999999999m", Err("too large")),
        ("every 4000d", Err("too long")),
        ("in 30m", ok(O { at: t("2026-01-15T12:30:00Z") })),
        ("in 2 hours", ok(O { at: t("2026-01-15T14:00:00Z") })),
        ("in 1d", ok(O { at: t("2026-01-16T12:00:00Z") })),
        ("in 0m", Err("positive")),
        ("0 8 * * *", ok(cron("0 8 * * *"))),
        ("*/30  *   * * *", ok(cron("*/30 * * * *"))),
        ("0 10 * * 1", ok(cron("0 10 * * 1"))),
        ("0 9 * * mon-fri", ok(cron("0 9 * * MON-FRI"))),
        ("0 0 1 jan *", ok(cron("0 0 1 JAN *"))),
        ("0 0 8 * * *", ok(cron("0 0 8 * * *"))),
        ("0 0 * * 0,6", ok(cron("0 0 * * 0,6"))),
        ("@daily", ok(cron("0 0 * * *"))),
        ("@Hourly", ok(cron("0 * * * *"))),
        ("@weekly", ok(cron("0 0 * * 0"))),
        ("@monthly", ok(cron("0 0 1 * *"))),
        ("@yearly", ok(cron("0 0 1 1 *"))),
        ("@fortnightly", Err("unknown macro")),
        ("61 * * * *", Err("invalid cron")),
        ("0 8 * * 8", Err("day-of-week")),
        ("0 0 30 2 *", Err("never fires")),
        ("0 0 0 * * * 2030", Err("expected 5 fields")),
        ("every weekday at 9am", ok(cron("0 9 * * MON-FRI"))),
        ("weekdays at 9:30", ok(cron("30 9 * * MON-FRI"))),
        ("every monday 9:30", ok(cron("30 9 * * MON"))),
        ("every monday at 9:30am", ok(cron("30 9 * * MON"))),
        ("mondays at 10", ok(cron("0 10 * * MON"))),
        ("daily at 14:00", ok(cron("0 14 * * *"))),
        ("every day at 8", ok(cron("0 8 * * *"))),
        ("weekends at noon", ok(cron("0 12 * * SAT,SUN"))),
        ("every saturday at midnight", ok(cron("0 0 * * SAT"))),
        ("every friday at 9:30 pm", ok(cron("30 21 * * FRI"))),
        ("every sunday at 12am", ok(cron("0 0 * * SUN"))),
        ("at 8am every day", ok(cron("0 8 * * *"))),
        ("at 7 pm on tuesdays", ok(cron("0 19 * * TUE"))),
        ("every day at 25:00", Err("hour out of range")),
        ("every monday at 9:75", Err("minute out of range")),
        ("every monday at 13pm", Err("hour out of range")),
        ("every monday 10", Err("not a time of day")),
        ("every monday", Err("needs a time of day")),
        ("2026-12-01T09:00", ok(O { at: t("2026-12-01T08:00:00Z") })),
        ("2026-12-01 09:00:00", ok(O { at: t("2026-12-01T08:00:00Z") })),
        ("2026-12-01T09:00Z", ok(O { at: t("2026-12-01T09:00:00Z") })),
        ("2026-12-01T09:00:30+01:00", ok(O { at: t("2026-12-01T08:00:30Z") })),
        ("2026-07-01T09:00-0500", ok(O { at: t("2026-07-01T14:00:00Z") })),
        ("2026-01-15T11:59Z", ok(O { at: t("2026-01-15T11:59:00Z") })),
        ("2025-01-01T00:00Z", Err("is in the past")),
        ("2026-13-01T09:00", Err("not an ISO 8601")),
        ("2026-12-01", ok(O { at: t("2026-11-30T23:00:00Z") })),
        ("2027-06-15", ok(O { at: t("2027-06-14T22:00:00Z") })),
        ("2025-06-15", Err("is in the past")),
        ("2026-02-30", Err("not an ISO 8601")),
        ("0 30 8 * * *", ok(cron("0 30 8 * * *"))),
        ("0 8 * *", Err("unrecognised")),
        ("hello", Err("unrecognised")),
        ("   ", Err("empty")),
    ];
    for (input, want) in cases {
        match (parse(input, now(), Berlin), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{input}"),
            (Err(e), Err(frag)) => {
                let msg = e.to_string();
                assert!(msg.contains(frag) && msg.ends_with(ACCEPTED), "{input}: {msg}");
            }
            (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
        }
    }
    assert_eq!(parse(&"x".repeat(300), now(), UTC), Err(ScheduleError::TooLong(300)));
}

#[test]
fn six_field_cron_is_seconds_first() {
    // `0 30 8 * * *` is 08:30:00, not minute 0 of hour 30.
    assert_eq!(cron("0 30 8 * * *").next_after(now(), UTC), Some(t("2026-01-16T08:30:00Z")));
    assert_eq!(cron("15 0 * * * *").next_after(now(), UTC), Some(t("2026-01-15T12:00:15Z")));
}

#[test]
fn bare_duration_is_a_one_shot_but_stored_intervals_stay_recurring() {
    // Hermes reads `30m` as "once, in 30 minutes"; only `every 30m` repeats.
    let s = parse("30m", now(), UTC).unwrap();
    assert!(!s.is_recurring());
    assert_eq!(s.next_after(now() + TimeDelta::minutes(30), UTC), None);
    // A job stored before this change kept its parsed schedule; the record still decodes to it.
    let stored: Schedule = serde_json::from_str(r#"{"kind":"interval","seconds":1800}"#).unwrap();
    assert_eq!(stored, Schedule::Interval { seconds: 1800 });
    assert!(stored.is_recurring());
}

#[test]
fn dst_pins() {
    let ny_gap = cron("30 2 * * *").next_after(t("2025-03-09T00:00:00-05:00"), New_York);
    assert_eq!(ny_gap, Some(t("2025-03-09T07:00:00Z")));
    let fold = cron("30 1 * * *");
    let first = fold.next_after(t("2025-11-02T00:00:00-04:00"), New_York);
    assert_eq!(first, Some(t("2025-11-02T05:30:00Z")));
    assert_eq!(fold.next_after(t("2025-11-02T05:30:00Z"), New_York), Some(t("2025-11-03T06:30:00Z")));
    // From inside the repeated hour's second pass, the repeated 01:30 is not run again.
    assert_eq!(fold.next_after(t("2025-11-02T06:10:00Z"), New_York), Some(t("2025-11-03T06:30:00Z")));
    let berlin = cron("30 2 * * *").next_after(t("2026-03-29T00:00:00+01:00"), Berlin);
    assert_eq!(berlin, Some(t("2026-03-29T01:00:00Z")));
    let naive = parse("2025-03-09T02:30", t("2025-03-01T00:00:00Z"), New_York);
    assert_eq!(naive, Ok(Schedule::Once { at: t("2025-03-09T07:00:00Z") }));
    // Per-minute cron in the second pass of the fold continues after the fold, once per wall minute.
    let minutely = cron("* * * * *");
    assert_eq!(minutely.next_after(t("2025-11-02T06:10:00Z"), New_York), Some(t("2025-11-02T07:00:00Z")));
    assert_eq!(minutely.next_after(t("2025-11-02T05:58:00Z"), New_York), Some(t("2025-11-02T05:59:00Z")));
    // Per-second cron: the search jumps past the repeated span instead of walking ~3000 skipped seconds.
    assert_eq!(cron("* * * * * *").next_after(t("2025-11-02T06:10:00Z"), New_York), Some(t("2025-11-02T07:00:00Z")));
}

#[test]
fn day_of_week_numbering_and_or_semantics() {
    let sunday = t("2026-01-18T12:00:00Z");
    let next = |e: &str| cron(e).next_after(sunday, UTC);
    assert_eq!(next("0 10 * * 1"), Some(t("2026-01-19T10:00:00Z")));
    assert_eq!(next("0 10 * * 0"), Some(t("2026-01-25T10:00:00Z")));
    assert_eq!(next("0 10 * * 7"), next("0 10 * * SUN"));
    assert_eq!(next("0 10 * * 5-7"), Some(t("2026-01-23T10:00:00Z")));
    assert_eq!(next("0 10 * * */2"), Some(t("2026-01-20T10:00:00Z")));
    assert_eq!(next("0 10 * * 1-5"), next("0 10 * * MON-FRI"));
    // Standard cron: day-of-month OR day-of-week when both are restricted.
    assert_eq!(next("0 0 1 * 3"), Some(t("2026-01-21T00:00:00Z")));
    assert_eq!(next("0 0 20 * 6"), Some(t("2026-01-20T00:00:00Z")));
}

#[test]
fn describe_and_text() {
    let cases = [
        (Schedule::Interval { seconds: 1800 }, "every 30 minutes", "every 30m"),
        (Schedule::Interval { seconds: 7200 }, "every 2 hours", "every 2h"),
        (Schedule::Interval { seconds: 86_400 }, "every day", "every 1d"),
        (Schedule::Interval { seconds: 90 }, "every 90 seconds", "every 90s"),
        (cron("0 8 * * *"), "at 08:00 every day (cron 0 8 * * *)", "0 8 * * *"),
        (cron("30 9 * * MON-FRI"), "at 09:30 on weekdays (cron 30 9 * * MON-FRI)", "30 9 * * MON-FRI"),
        (cron("0 12 * * SAT,SUN"), "at 12:00 on weekends (cron 0 12 * * SAT,SUN)", "0 12 * * SAT,SUN"),
        (cron("0 10 * * 1"), "at 10:00 every Monday (cron 0 10 * * 1)", "0 10 * * 1"),
        (cron("*/15 * * * *"), "every 15 minutes (cron */15 * * * *)", "*/15 * * * *"),
        (cron("5 * * * *"), "at minute 5 of every hour (cron 5 * * * *)", "5 * * * *"),
        (cron("0 0 1 * *"), "at 00:00 on day 1 of every month (cron 0 0 1 * *)", "0 0 1 * *"),
        (cron("0 9 1-7 * *"), "cron 0 9 1-7 * *", "0 9 1-7 * *"),
        (Schedule::Once { at: t("2026-12-01T09:00:00Z") }, "once at 2026-12-01 09:00 UTC", "2026-12-01T09:00:00Z"),
    ];
    for (s, display, text) in cases {
        assert_eq!((s.display().as_str(), s.to_text().as_str()), (display, text));
    }
    assert!(cron("0 8 * * *").is_recurring() && !Schedule::Once { at: now() }.is_recurring());
    let json = serde_json::to_value(Schedule::Interval { seconds: 60 }).unwrap();
    assert_eq!(json, serde_json::json!({"kind": "interval", "seconds": 60}));
}

#[test]
fn periods_and_grace() {
    assert_eq!(cron("0 8 * * *").period_seconds(now(), UTC), Some(86_400));
    assert_eq!(cron("*/30 * * * *").period_seconds(now(), Berlin), Some(1800));
    assert_eq!(Schedule::Interval { seconds: 600 }.period_seconds(now(), UTC), Some(600));
    assert_eq!(Schedule::Once { at: now() }.period_seconds(now(), UTC), None);
    assert_eq!(
        [grace_seconds(Some(60)), grace_seconds(Some(600)), grace_seconds(Some(86_400)), grace_seconds(None)],
        [120, 300, 7200, 120]
    );
}

#[test]
fn hermes_values() {
    use serde_json::json;
    let pv = |v: Value| parse_value(&v, now(), Berlin);
    assert_eq!(pv(json!({"kind": "cron", "expr": "0 8 * * *"})), Ok(cron("0 8 * * *")));
    assert_eq!(pv(json!({"kind": "interval", "minutes": 30})), Ok(Schedule::Interval { seconds: 1800 }));
    assert_eq!(pv(json!({"kind": "interval", "seconds": 90})), Ok(Schedule::Interval { seconds: 90 }));
    let once = Ok(Schedule::Once { at: t("2026-12-01T09:00:00Z") });
    assert_eq!(pv(json!({"kind": "once", "run_at": "2026-12-01T09:00:00Z"})), once);
    assert_eq!(pv(json!({"kind": "once", "run_at": "2026-12-01T10:00:00"})), once);
    assert_eq!(pv(json!("every 2h")), Ok(Schedule::Interval { seconds: 7200 }));
    for bad in
        [json!({"kind": "interval", "minutes": 0}), json!({"kind": "weekly"}), json!({"expr": "x"}), json!(42), json!({"kind": "cron"})]
    {
        assert!(pv(bad.clone()).is_err_and(|e| e.to_string().ends_with(ACCEPTED)), "{bad}");
    }
    let own = serde_json::to_value(cron("0 9 * * MON-FRI")).unwrap();
    assert_eq!(pv(own), Ok(cron("0 9 * * MON-FRI")));
}

const EXPRS: [&str; 12] = [
    "0 8 * * *",
    "30 2 * * *",
    "30 1 * * *",
    "*/15 * * * *",
    "0 9 * * MON-FRI",
    "0 0 1 * *",
    "15 3 * * 0",
    "0 */6 * * *",
    "0 0 8 * * *",
    "45 0-3 * * 6,0",
    "*/20 * * * * *",
    "10 1,2 * * *",
];
const TZS: [Tz; 5] = [UTC, Berlin, New_York, chrono_tz::Asia::Kolkata, chrono_tz::Australia::Lord_Howe];

fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    // 2000-01-01 ..= 2099-01-01: the `cron` crate knows no year after 2100.
    (946_684_800i64..=4_070_908_800).prop_map(|s| DateTime::from_timestamp(s, 0).unwrap())
}

fn recurring() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        prop::sample::select(EXPRS.to_vec()).prop_map(cron),
        prop::sample::select(vec![60i64, 90, 1800, 3600, 5400, 86_400, 604_800]).prop_map(|seconds| Schedule::Interval { seconds }),
    ]
}

fn words() -> impl Strategy<Value = String> {
    let vocab = vec![
        "every",
        "in",
        "at",
        "on",
        "30m",
        "2",
        "h",
        "9am",
        "9:30",
        "pm",
        "noon",
        "monday",
        "mondays",
        "weekdays",
        "daily",
        "*",
        "*/5",
        "0",
        "8",
        "7",
        "mon-fri",
        "1-5",
        "@daily",
        "@",
        "2026-12-01t09:00",
        "2026-12-01",
        "z",
        "+01:00",
        "-5",
        "99999999999999999999",
        "?",
        ",",
        "/",
        "é",
    ];
    prop::collection::vec(prop::sample::select(vocab), 0..8).prop_map(|w| w.join(" "))
}

/// DST transitions (UTC) of the zones under test, to aim walks at folds and gaps.
const TRANSITIONS: [i64; 6] = [1_741_503_600, 1_762_063_200, 1_774_746_000, 1_792_890_000, 1_743_865_200, 1_759_591_800];

fn near_transition() -> impl Strategy<Value = (DateTime<Utc>, Tz)> {
    let zones = [New_York, New_York, Berlin, Berlin, chrono_tz::Australia::Lord_Howe, chrono_tz::Australia::Lord_Howe];
    (0usize..6, -30_000i64..30_000).prop_map(move |(i, d)| (DateTime::from_timestamp(TRANSITIONS[i] + d, 0).unwrap(), zones[i]))
}

/// A cron result is either a matching local wall-clock time or the first instant after a gap.
fn matches_wall_clock(expr: &str, at: DateTime<Utc>, tz: Tz) -> bool {
    let offset = |t: DateTime<Utc>| t.with_timezone(&tz).offset().fix();
    let local = at.with_timezone(&tz).naive_local().and_utc();
    compile(expr).unwrap().iter().any(|c| c.includes(local)) || offset(at) != offset(at - TimeDelta::seconds(1))
}

/// Differential test: a walk of `next_after` across each transition equals a minute-by-minute
/// enumeration of matching wall-clock times (gap → first existing minute; fold → earlier instance).
#[test]
fn cron_matches_brute_force_around_transitions() {
    let zones = [New_York, New_York, Berlin, Berlin, chrono_tz::Australia::Lord_Howe, chrono_tz::Australia::Lord_Howe];
    for (ts, tz) in TRANSITIONS.into_iter().zip(zones) {
        let (start, end) = (DateTime::from_timestamp(ts - 86_400, 0).unwrap(), DateTime::from_timestamp(ts + 86_400, 0).unwrap());
        for expr in EXPRS.into_iter().filter(|e| e.split_whitespace().count() == 5) {
            let schedules = compile(expr).unwrap();
            let mut expected = std::collections::BTreeSet::new();
            let mut m = start.with_timezone(&tz).naive_local() - TimeDelta::hours(3);
            while m < end.with_timezone(&tz).naive_local() + TimeDelta::hours(3) {
                if schedules.iter().any(|c| c.includes(m.and_utc())) {
                    let mut first = m;
                    while tz.from_local_datetime(&first).earliest().is_none() {
                        first += TimeDelta::minutes(1);
                    }
                    expected.insert(tz.from_local_datetime(&first).earliest().unwrap().to_utc());
                }
                m += TimeDelta::minutes(1);
            }
            let expected: Vec<_> = expected.into_iter().filter(|t| *t > start && *t <= end).collect();
            let mut walked = vec![];
            let mut cur = start;
            while let Some(next) = cron(expr).next_after(cur, tz).filter(|n| *n <= end) {
                walked.push(next);
                cur = next;
            }
            assert_eq!(walked, expected, "{expr} in {tz} around {ts}");
        }
    }
}

proptest! {
    #[test]
    fn cron_walks_across_dst(expr in prop::sample::select(EXPRS.to_vec()), (start, tz) in near_transition()) {
        let (s, mut cur, mut seen) = (cron(expr), start, std::collections::HashSet::new());
        for _ in 0..12 {
            let next = s.next_after(cur, tz).unwrap();
            prop_assert!(next > cur && matches_wall_clock(expr, next, tz), "{expr} after {cur} in {tz}: {next}");
            let wall = next.with_timezone(&tz).naive_local();
            prop_assert!(seen.insert(wall), "{expr} in {tz}: wall-clock {next} repeated");
            prop_assert_eq!(tz.from_local_datetime(&wall).earliest().map(|t| t.to_utc()), Some(next), "later instance of a repeated time");
            cur = next;
        }
    }

    #[test]
    fn next_after_is_strictly_increasing(s in recurring(), start in instant(), tz in prop::sample::select(TZS.to_vec())) {
        let mut cur = start;
        for _ in 0..4 {
            let next = s.next_after(cur, tz);
            prop_assert!(next.is_some_and(|n| n > cur), "{s:?} after {cur} in {tz}: {next:?}");
            let next = next.unwrap();
            if let Schedule::Interval { seconds } = s {
                prop_assert_eq!((next - cur).num_seconds(), seconds);
            }
            cur = next;
        }
    }

    #[test]
    fn parse_never_panics(
        input in "\\PC{0,40}", combo in words(), fields in prop::collection::vec("([0-9]{1,2}|\\*)([-/,][0-9]{1,2})?|MON-FRI|jan|[0-9a-z*/,?-]{1,5}", 5..=6), tz in prop::sample::select(TZS.to_vec()),
    ) {
        let _ = parse(&input, now(), tz);
        let _ = parse(&combo, now(), tz);
        let _ = parse_value(&Value::String(combo.clone()), now(), tz);
        let _ = parse_value(&serde_json::json!({"kind": "cron", "expr": input}), now(), tz);
        let _ = parse_value(&serde_json::json!({"kind": "once", "run_at": combo}), now(), tz);
        let _ = parse(&fields.join(" "), now(), tz);
    }

    #[test]
    fn text_round_trips(
        min in 0u32..60, hour in 0u32..24, dow in prop::sample::select(vec!["*", "MON-FRI", "1-5", "SAT,SUN", "0", "7", "*/2", "tue,thu"]),
        minutes in 1i64..=200_000, ahead in 200i64..=300_000_000, pick in 0u8..3,
    ) {
        let s = match pick {
            0 => parse(&format!("{min} {hour} * * {dow}"), now(), Berlin).unwrap(),
            1 => Schedule::Interval { seconds: minutes * 60 },
            _ => Schedule::Once { at: now() + TimeDelta::seconds(ahead) },
        };
        prop_assert_eq!(parse(&s.to_text(), now(), Berlin), Ok(s));
    }
}
