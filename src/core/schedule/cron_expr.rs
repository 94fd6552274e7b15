//! Cron expressions: 5- and 6-field forms, names, `@daily`-style macros, evaluation on the
//! wall clock of a zone (DST gaps and repeats), and human descriptions.

use super::*;

pub(super) fn looks_like_cron(tokens: &[&str]) -> bool {
    let cron_char = |c: char| c.is_ascii_alphanumeric() || "*,/-?".contains(c);
    (5..=7).contains(&tokens.len())
        && tokens[0].starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == '?')
        && tokens.iter().all(|t| t.chars().all(cron_char))
}

pub(super) fn cron_schedule(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<Schedule, ScheduleError> {
    let schedule = Schedule::Cron { expr: normalise_cron(text)? };
    match schedule.next_after(now, tz) {
        Some(_) => Ok(schedule),
        None => Err(ScheduleError::InvalidCron(format!("`{}` never fires", schedule.to_text()))),
    }
}

/// Expands macros, collapses whitespace, upper-cases names, and validates.
pub(super) fn normalise_cron(text: &str) -> Result<String, ScheduleError> {
    let lower = text.trim().to_lowercase();
    let expanded = match lower.as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        s if s.starts_with('@') => return Err(ScheduleError::InvalidCron(format!("unknown macro `{s}`"))),
        s => s,
    };
    let expr = expanded.split_whitespace().map(str::to_uppercase).collect::<Vec<_>>().join(" ");
    compile(&expr)?;
    Ok(expr)
}

/// Builds the `cron` crate schedules (6-field, day-of-week 1-7 = SUN-SAT) for a standard expression.
/// When both day-of-month and day-of-week are restricted, standard cron fires when *either* matches,
/// while the crate requires both: such expressions compile to two schedules whose union is taken.
pub(super) fn compile(expr: &str) -> Result<Vec<cron::Schedule>, ScheduleError> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let (sec, rest) = match fields.len() {
        5 => ("0", &fields[..]),
        6 => (fields[0], &fields[1..]),
        n => return Err(ScheduleError::InvalidCron(format!("expected 5 fields (or 6 with seconds), got {n}"))),
    };
    let [min, hour, dom, month, dow] = rest else { return Err(ScheduleError::InvalidCron("expected 5 fields".into())) };
    let days = dow_to_crate(dow)?;
    let restricted = |f: &str| !f.starts_with('*') && f != "?";
    let variants = if restricted(dom) && restricted(dow) { vec![(*dom, "*".to_string()), ("*", days)] } else { vec![(*dom, days)] };
    variants
        .into_iter()
        .map(|(d, w)| cron::Schedule::from_str(&format!("{sec} {min} {hour} {d} {month} {w}")))
        .collect::<Result<_, _>>()
        .map_err(|e| ScheduleError::InvalidCron(format!("`{expr}`: {e}")))
}

/// The shortest time between two fires of a normalised expression, in seconds: a 5-field
/// expression (or a 6-field one whose seconds field is one second) fires at most once a
/// minute, so 60; otherwise the smallest gap between the seconds it names, across the minute
/// boundary too (`* * * * * *` → 1, `0,30 …` → 30). A seconds field this cannot read counts
/// as every second (the caller refuses rather than guesses).
pub(super) fn shortest_gap_secs(expr: &str) -> i64 {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    if fields.len() != 6 {
        return 60;
    }
    let Some(mut secs) = seconds_of(fields[0]) else { return 1 };
    secs.sort_unstable();
    secs.dedup();
    let (Some(first), Some(last)) = (secs.first(), secs.last()) else { return 1 };
    let wrap = 60 - last + first;
    secs.windows(2).map(|w| w[1] - w[0]).chain(std::iter::once(wrap)).min().unwrap_or(60)
}

/// The seconds (0–59) a cron seconds field names: lists of `*`, `?`, `n`, `a-b`, each with an
/// optional `/step`.
fn seconds_of(field: &str) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, s.parse::<i64>().ok().filter(|s| *s > 0)?),
            None => (item, 1),
        };
        let (lo, hi) = match range {
            "*" | "?" => (0, 59),
            r => match r.split_once('-') {
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                None => {
                    let a: i64 = r.parse().ok()?;
                    (a, if item.contains('/') { 59 } else { a })
                }
            },
        };
        if !(0..=59).contains(&lo) || !(0..=59).contains(&hi) || lo > hi {
            return None;
        }
        out.extend((lo..=hi).step_by(usize::try_from(step).ok()?));
    }
    Some(out)
}

/// Standard day-of-week number (0-7, 0 and 7 = Sunday) or name (SUN = 0 … SAT = 6).
pub(super) fn dow_num(s: &str) -> Option<usize> {
    if let Ok(n) = s.parse::<usize>() {
        return (n <= 7).then_some(n);
    }
    let names = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
    let s = s.to_ascii_lowercase();
    let alias = match s.as_str() {
        "tues" => "tue",
        "weds" => "wed",
        "thur" | "thurs" => "thu",
        other => other,
    };
    names.iter().position(|n| alias.len() >= 3 && n.starts_with(alias) && (alias.len() == 3 || alias == *n))
}

/// Converts a standard day-of-week field (lists, ranges, steps, names) into the crate's form.
pub(super) fn dow_to_crate(field: &str) -> Result<String, ScheduleError> {
    let bad = || ScheduleError::InvalidCron(format!("invalid day-of-week field `{field}` (use 0-7 or SUN-SAT)"));
    let mut days = [false; 7];
    for item in field.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((b, s)) => (b, s.parse::<usize>().ok().filter(|s| (1..=7).contains(s)).ok_or_else(bad)?),
            None => (item, 1),
        };
        let (lo, hi) = match base.split_once('-') {
            _ if base == "*" || base == "?" => (0, 6),
            Some((a, b)) => (dow_num(a).ok_or_else(bad)?, dow_num(b).ok_or_else(bad)?),
            None if item.contains('/') => (dow_num(base).ok_or_else(bad)?, 6),
            None => dow_num(base).map(|d| (d, d)).ok_or_else(bad)?,
        };
        if lo > hi {
            return Err(bad());
        }
        (lo..=hi).step_by(step).for_each(|d| days[d % 7] = true);
    }
    if days.iter().all(|d| *d) {
        return Ok("*".into());
    }
    Ok((0..7).filter(|d| days[*d]).map(|d| DAY_NAMES[d]).collect::<Vec<_>>().join(","))
}

/// Next cron occurrence strictly after `after`, evaluated on the local wall clock of `tz`.
pub(super) fn cron_next(expr: &str, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    if !(1900..=2100).contains(&after.year()) {
        return None;
    }
    let schedules = compile(expr).ok()?;
    let mut cursor = local_start(after, tz)?;
    for _ in 0..MAX_CANDIDATES {
        let candidate = schedules.iter().filter_map(|s| s.after(&cursor.and_utc()).next()).min()?.naive_utc();
        if let Some(t) = resolve_local(tz, candidate)
            && t > after
        {
            return Some(t);
        }
        cursor = candidate;
    }
    None
}

/// The local wall-clock time to search from. If `after` lies in the second pass of a repeated
/// (fall-back) hour, every wall-clock time up to the end of that hour already ran in the first pass,
/// so the search starts at the end of the repeated span.
pub(super) fn local_start(after: DateTime<Utc>, tz: Tz) -> Option<NaiveDateTime> {
    let local = after.with_timezone(&tz);
    let naive = local.naive_local();
    let LocalResult::Ambiguous(first, _) = tz.from_local_datetime(&naive) else { return Some(naive) };
    if first.to_utc() >= after {
        return Some(naive);
    }
    let offset_at = |ts: i64| DateTime::from_timestamp(ts, 0).map(|t| t.with_timezone(&tz).offset().fix());
    let later = local.offset().fix();
    let (mut lo, mut hi) = (first.timestamp(), after.timestamp());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if offset_at(mid) == Some(later) { hi = mid } else { lo = mid }
    }
    DateTime::from_timestamp(lo, 0).map(|t| t.with_timezone(&tz).naive_local())
}

/// Describes common cron shapes; `None` for the rest.
pub(super) fn describe_cron(expr: &str) -> Option<String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let rest = match fields.as_slice() {
        ["0", rest @ ..] if rest.len() == 5 => rest,
        rest => rest,
    };
    let [min, hour, dom, month, dow] = rest else { return None };
    let num = |s: &str| s.parse::<u32>().ok();
    match (num(min), num(hour), *dom, *month, *dow) {
        (Some(m), Some(h), "*", "*", _) => Some(format!("at {h:02}:{m:02} {}", describe_days(dow)?)),
        (Some(m), Some(h), d, "*", "*") => num(d).map(|d| format!("at {h:02}:{m:02} on day {d} of every month")),
        (Some(m), None, "*", "*", "*") if *hour == "*" => Some(format!("at minute {m} of every hour")),
        (None, None, "*", "*", "*") if *hour == "*" && *min == "*" => Some("every minute".into()),
        (None, None, "*", "*", "*") if *hour == "*" => min.strip_prefix("*/").and_then(num).map(|n| format!("every {n} minutes")),
        _ => None,
    }
}

pub(super) fn describe_days(dow: &str) -> Option<String> {
    const FULL: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    match dow {
        "*" => Some("every day".into()),
        "MON-FRI" | "1-5" => Some("on weekdays".into()),
        "SAT,SUN" | "SUN,SAT" | "0,6" | "6,0" => Some("on weekends".into()),
        d => dow_num(d).map(|d| format!("every {}", FULL[d % 7])),
    }
}

#[cfg(test)]
mod gap_tests {
    use super::*;

    #[test]
    fn the_shortest_gap_of_every_form() {
        let now: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        let gap = |s: &str| parse(s, now, chrono_tz::UTC).unwrap().shortest_gap_secs();
        for (text, want) in [
            ("* * * * * *", Some(1)),
            ("*/30 * * * * *", Some(30)),
            ("0,50 * * * * *", Some(10)),
            ("5-7 0 8 * * *", Some(1)),
            ("10/20 * * * * *", Some(20)),
            ("0 * * * * *", Some(60)),
            ("* * * * *", Some(60)),
            ("0 8 * * *", Some(60)),
            ("every 2h", Some(7200)),
            ("in 2h", None),
        ] {
            assert_eq!(gap(text), want, "{text}");
        }
        assert_eq!(shortest_gap_secs("1-x * * * * *"), 1, "unreadable seconds count as every second");
    }
}
