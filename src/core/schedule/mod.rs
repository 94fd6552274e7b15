//! Schedules of scheduled jobs: parsing user input (and Hermes' parsed schedule objects) into a
//! [`Schedule`], and computing next occurrences, periods and grace windows (SPEC §2.2, §2.3).
//!
//! Pure: the current instant and the timezone are always passed in; nothing here reads the clock
//! or does I/O. Cron expressions are evaluated on the wall clock of the given timezone: a time that
//! falls into a DST gap runs at the first instant after the gap, and a time repeated by a fall-back
//! transition runs once, at its first (earlier) instance.

use std::str::FromStr;

use chrono::{DateTime, Datelike, FixedOffset, LocalResult, NaiveDateTime, Offset, SecondsFormat, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The forms `parse` accepts; every [`ScheduleError`] message ends with this text.
pub const ACCEPTED: &str = "accepted forms: `every 30m` / `every 2h` / `every 1d` (recurring), `30m` or `in 30m` (one-shot), 5-field cron `0 8 * * *` (6-field with seconds first, names like MON-FRI/JAN, @daily/@hourly/@weekly), phrases like `every weekday at 9am`, `every monday 9:30`, `daily at 14:00`, `weekends at noon`, an ISO time `2026-12-01T09:00` (with `Z` or an offset) or a date `2027-06-15` (local midnight)";

/// How far in the past a one-shot time may lie and still be accepted.
const PAST_TOLERANCE_SECS: i64 = 120;
/// Shortest recurring interval.
const MIN_INTERVAL_SECS: i64 = 60;
/// Longest interval or `in …` offset (ten years).
const MAX_DURATION_SECS: i64 = 3650 * 86_400;
/// Bound on cron candidates examined by one `next_after` call.
const MAX_CANDIDATES: usize = 1000;
/// Longest accepted input, in characters.
const MAX_INPUT_CHARS: usize = 200;
const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// Recurring every `seconds`, added in UTC to the previous fire (or creation) time.
    Interval {
        /// The period in seconds (≥ 60 when parsed).
        seconds: i64,
    },
    /// One-shot at `at`.
    Once {
        /// The instant to run at.
        at: DateTime<Utc>,
    },
    /// Standard cron, evaluated on the wall clock of the job's timezone.
    Cron {
        /// Normalised 5-field (or 6-field, with seconds first) expression: single spaces, upper-case
        /// names, standard day-of-week numbering (0 or 7 = Sunday).
        expr: String,
    },
}

/// Why an input is not a schedule. Every message ends with [`ACCEPTED`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    /// The input was empty or only whitespace.
    #[error("empty schedule; {accepted}", accepted = ACCEPTED)]
    Empty,
    /// The input is longer than 200 characters.
    #[error("schedule too long ({0} characters, at most 200); {accepted}", accepted = ACCEPTED)]
    TooLong(usize),
    /// The input matches none of the accepted forms.
    #[error("unrecognised schedule `{0}`; {accepted}", accepted = ACCEPTED)]
    Unrecognised(String),
    /// An interval or `in …` duration is zero, negative, too short or too long.
    #[error("invalid interval: {0}; {accepted}", accepted = ACCEPTED)]
    InvalidInterval(String),
    /// A time of day in a phrase is missing or out of range.
    #[error("invalid time of day: {0}; {accepted}", accepted = ACCEPTED)]
    InvalidTime(String),
    /// A cron expression does not parse or never fires.
    #[error("invalid cron expression: {0}; {accepted}", accepted = ACCEPTED)]
    InvalidCron(String),
    /// An ISO 8601 time does not parse or cannot be placed on the time line.
    #[error("invalid date-time: {0}; {accepted}", accepted = ACCEPTED)]
    InvalidDateTime(String),
    /// A one-shot time lies more than 120 s before `now`.
    #[error("{0} is in the past; {accepted}", accepted = ACCEPTED)]
    InPast(String),
    /// A JSON schedule object is malformed.
    #[error("invalid schedule object: {0}; {accepted}", accepted = ACCEPTED)]
    InvalidValue(String),
}

/// Parses user input. `now` is the current instant, `tz` the timezone for naive ISO times and cron.
pub fn parse(input: &str, now: DateTime<Utc>, tz: Tz) -> Result<Schedule, ScheduleError> {
    let text = input.trim();
    if text.is_empty() {
        return Err(ScheduleError::Empty);
    }
    let len = text.chars().count();
    if len > MAX_INPUT_CHARS {
        return Err(ScheduleError::TooLong(len));
    }
    let lower = text.to_lowercase();
    let tokens: Vec<&str> = lower.split_whitespace().collect();
    if lower.starts_with('@') || looks_like_cron(&tokens) {
        return cron_schedule(&lower, now, tz);
    }
    if looks_like_iso(&tokens) {
        return once_at(parse_iso(&tokens.join("T"), tz)?, now);
    }
    // `in 30m`, and a bare `30m` as Hermes reads it: a one-shot, never a repeating reminder.
    let one_shot = match tokens.as_slice() {
        ["in", rest @ ..] => Some(duration(rest, false, 1)?.ok_or_else(|| ScheduleError::Unrecognised(text.to_string()))?),
        rest if !matches!(rest, ["every" | "each", ..]) => duration(rest, false, 1)?,
        _ => None,
    };
    if let Some(secs) = one_shot {
        let at = TimeDelta::try_seconds(secs).and_then(|d| now.checked_add_signed(d));
        return at.map(|at| Schedule::Once { at }).ok_or_else(|| ScheduleError::InvalidInterval(format!("`{text}` is out of range")));
    }
    if let Some(seconds) = interval_secs(&tokens)? {
        return Ok(Schedule::Interval { seconds });
    }
    if let Some(expr) = parse_phrase(&tokens)? {
        return cron_schedule(&expr, now, tz);
    }
    Err(ScheduleError::Unrecognised(text.to_string()))
}

/// Parses Hermes' own parsed schedule object: `{"kind":"cron","expr":"0 8 * * *"}`,
/// `{"kind":"interval","minutes":30}`, `{"kind":"once","run_at":"2026-12-01T09:00:00Z"}` (`run_at` may
/// be naive, then it is read in `tz`). Also accepts this module's serialised form (`seconds`, `at`)
/// and a JSON string, which goes through [`parse`].
pub fn parse_value(v: &Value, now: DateTime<Utc>, tz: Tz) -> Result<Schedule, ScheduleError> {
    let obj = match v {
        Value::String(s) => return parse(s, now, tz),
        Value::Object(obj) => obj,
        _ => return Err(ScheduleError::InvalidValue("expected a string or an object with `kind`".into())),
    };
    let kind = obj.get("kind").and_then(Value::as_str).ok_or_else(|| ScheduleError::InvalidValue("missing `kind`".into()))?;
    match kind.to_ascii_lowercase().as_str() {
        "cron" => cron_schedule(str_field(obj, &["expr", "expression"])?, now, tz),
        "once" => once_at(parse_iso(str_field(obj, &["run_at", "at"])?, tz)?, now),
        "interval" => {
            let (value, scale) = match (obj.get("minutes"), obj.get("seconds")) {
                (Some(m), _) => (m.as_f64(), 60.0),
                (None, Some(s)) => (s.as_f64(), 1.0),
                (None, None) => (None, 1.0),
            };
            let secs = value.ok_or_else(|| ScheduleError::InvalidValue("interval needs a numeric `minutes`".into()))? * scale;
            if !secs.is_finite() || secs < MIN_INTERVAL_SECS as f64 || secs > MAX_DURATION_SECS as f64 {
                return Err(ScheduleError::InvalidInterval(format!("{secs} s is outside 60 s ..= 3650 days")));
            }
            Ok(Schedule::Interval { seconds: secs.round() as i64 })
        }
        other => Err(ScheduleError::InvalidValue(format!("unknown kind `{other}`"))),
    }
}

/// Grace window of SPEC §2.3: half the period clamped to [120 s, 7200 s]; one-shots (`None`): 120 s.
pub fn grace_seconds(period: Option<i64>) -> i64 {
    period.map_or(120, |p| (p / 2).clamp(120, 7200))
}

impl Schedule {
    /// The next occurrence strictly after `after` (cron evaluated on the wall clock of `tz`).
    /// Interval: `after + seconds` (pass the last scheduled fire time, or the creation time).
    /// Once: `Some(at)` if `at > after`, else `None`. `None` also when nothing exists (cron beyond 2100).
    pub fn next_after(&self, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Interval { seconds } if *seconds > 0 => TimeDelta::try_seconds(*seconds).and_then(|d| after.checked_add_signed(d)),
            Schedule::Interval { .. } => None,
            Schedule::Once { at } => (*at > after).then_some(*at),
            Schedule::Cron { expr } => cron_next(expr, after, tz),
        }
    }

    /// Whether the schedule fires more than once (interval and cron).
    pub fn is_recurring(&self) -> bool {
        !matches!(self, Schedule::Once { .. })
    }

    /// Nominal period in seconds for grace computation: Interval → seconds; Cron → the gap between
    /// the next two occurrences after `at`; Once → `None`.
    pub fn period_seconds(&self, at: DateTime<Utc>, tz: Tz) -> Option<i64> {
        match self {
            Schedule::Interval { seconds } => Some(*seconds),
            Schedule::Once { .. } => None,
            Schedule::Cron { .. } => {
                let first = self.next_after(at, tz)?;
                Some((self.next_after(first, tz)? - first).num_seconds())
            }
        }
    }

    /// Human description, e.g. "every 30 minutes", "at 08:00 every day (cron 0 8 * * *)",
    /// "once at 2026-12-01 09:00 UTC"; uncommon cron shapes read "cron <expr>".
    pub fn display(&self) -> String {
        match self {
            Schedule::Interval { seconds } => {
                let (n, long, _) = split_unit(*seconds);
                if n == 1 { format!("every {long}") } else { format!("every {n} {long}s") }
            }
            Schedule::Once { at } if at.timestamp() % 60 == 0 => format!("once at {}", at.format("%Y-%m-%d %H:%M UTC")),
            Schedule::Once { at } => format!("once at {}", at.format("%Y-%m-%d %H:%M:%S UTC")),
            Schedule::Cron { expr } => describe_cron(expr).map_or_else(|| format!("cron {expr}"), |d| format!("{d} (cron {expr})")),
        }
    }

    /// The canonical text form that [`parse`] accepts back: "every 30m", the cron expression, or an
    /// RFC 3339 UTC time such as "2026-12-01T09:00:00Z".
    pub fn to_text(&self) -> String {
        match self {
            Schedule::Interval { seconds } => {
                let (n, _, short) = split_unit(*seconds);
                format!("every {n}{short}")
            }
            Schedule::Once { at } => at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            Schedule::Cron { expr } => expr.clone(),
        }
    }
}

// ---------------------------------------------------------------- intervals and one-shots

fn split_unit(seconds: i64) -> (i64, &'static str, &'static str) {
    let units = [(86_400, "day", "d"), (3_600, "hour", "h"), (60, "minute", "m")];
    units.into_iter().find(|(u, _, _)| seconds != 0 && seconds % u == 0).map_or((seconds, "second", "s"), |(u, l, s)| (seconds / u, l, s))
}

fn unit_secs(unit: &str) -> Option<i64> {
    Some(match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        "w" | "wk" | "week" | "weeks" => 604_800,
        _ => return None,
    })
}

fn interval_secs(tokens: &[&str]) -> Result<Option<i64>, ScheduleError> {
    match tokens {
        ["hourly"] => Ok(Some(3_600)),
        ["daily"] => Ok(Some(86_400)),
        ["weekly"] => Ok(Some(604_800)),
        ["every" | "each", rest @ ..] => duration(rest, true, MIN_INTERVAL_SECS),
        _ => Ok(None),
    }
}

/// `30m`, `30 m`, `30 minutes` (and a bare unit if `bare_unit`): `Ok(None)` when not a duration.
fn duration(tokens: &[&str], bare_unit: bool, min: i64) -> Result<Option<i64>, ScheduleError> {
    let (num, unit) = match tokens {
        [u] if bare_unit && unit_secs(u).is_some() => ("1", *u),
        [t] => t.split_at(t.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(t.len())),
        [n, u] => (*n, *u),
        _ => return Ok(None),
    };
    let (Some(unit), digits) = (unit_secs(unit), num.strip_prefix('-').unwrap_or(num)) else { return Ok(None) };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let text = tokens.join(" ");
    let n: i64 = digits.parse().map_err(|_| ScheduleError::InvalidInterval(format!("`{text}` is too large")))?;
    let secs = n.checked_mul(unit).ok_or_else(|| ScheduleError::InvalidInterval(format!("`{text}` is too large")))?;
    if num.starts_with('-') || secs == 0 {
        Err(ScheduleError::InvalidInterval(format!("`{text}` must be positive")))
    } else if secs < min {
        Err(ScheduleError::InvalidInterval(format!("`{text}` is too short (at least {min} s)")))
    } else if secs > MAX_DURATION_SECS {
        Err(ScheduleError::InvalidInterval(format!("`{text}` is too long (at most 3650 days)")))
    } else {
        Ok(Some(secs))
    }
}

fn once_at(at: DateTime<Utc>, now: DateTime<Utc>) -> Result<Schedule, ScheduleError> {
    let limit = now.checked_sub_signed(TimeDelta::seconds(PAST_TOLERANCE_SECS));
    if limit.is_some_and(|limit| at < limit) {
        return Err(ScheduleError::InPast(at.to_rfc3339_opts(SecondsFormat::AutoSi, true)));
    }
    Ok(Schedule::Once { at })
}

fn str_field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Result<&'a str, ScheduleError> {
    names
        .iter()
        .find_map(|n| obj.get(*n).and_then(Value::as_str))
        .ok_or_else(|| ScheduleError::InvalidValue(format!("missing string `{}`", names[0])))
}

// ---------------------------------------------------------------- ISO 8601

fn looks_like_iso(tokens: &[&str]) -> bool {
    let b = tokens.first().map_or(&b""[..], |t| t.as_bytes());
    tokens.len() <= 2 && b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// `2026-12-01T09:00[:00[.f]]` with optional `Z` / `±HH[:MM]`; naive times are read in `tz`. A date
/// alone (`2027-06-15`) is local midnight, as Hermes reads it.
fn parse_iso(text: &str, tz: Tz) -> Result<DateTime<Utc>, ScheduleError> {
    let bad = || ScheduleError::InvalidDateTime(format!("`{text}` is not an ISO 8601 time like 2026-12-01T09:00"));
    let s = text.trim().to_ascii_uppercase().replacen(' ', "T", 1);
    if let Ok(date) = chrono::NaiveDate::parse_from_str(&s, "%Y-%m-%d") {
        return resolve_local(tz, date.and_time(chrono::NaiveTime::MIN)).ok_or_else(bad);
    }
    let (body, offset) = split_offset(&s).ok_or_else(bad)?;
    let naive =
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"].iter().find_map(|f| NaiveDateTime::parse_from_str(body, f).ok()).ok_or_else(bad)?;
    if !(1900..=9999).contains(&naive.year()) {
        return Err(bad());
    }
    match offset {
        Some(offset) => offset.from_local_datetime(&naive).single().map(|t| t.to_utc()).ok_or_else(bad),
        None => resolve_local(tz, naive).ok_or_else(bad),
    }
}

fn split_offset(s: &str) -> Option<(&str, Option<FixedOffset>)> {
    if let Some(body) = s.strip_suffix('Z') {
        return Some((body, FixedOffset::east_opt(0)));
    }
    let t = s.find('T')?;
    let Some(i) = s[t..].rfind(['+', '-']) else { return Some((s, None)) };
    let (body, off) = s.split_at(t + i);
    let digits = off[1..].replace(':', "");
    if !matches!(digits.len(), 2 | 4) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i32 = digits[..2].parse().ok()?;
    let m: i32 = if digits.len() == 4 { digits[2..].parse().ok()? } else { 0 };
    let secs = (h * 3600 + m * 60) * if off.starts_with('-') { -1 } else { 1 };
    Some((body, Some(FixedOffset::east_opt(secs).filter(|_| h < 24 && m < 60)?)))
}

/// Maps a local wall-clock time to an instant: ambiguous → the earlier; in a gap → the transition.
fn resolve_local(tz: Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
    if !(1900..=9999).contains(&naive.year()) {
        return None;
    }
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.to_utc()),
        LocalResult::None => gap_end(tz, naive),
    }
}

/// The first instant whose local time is later than `naive` (a time inside a DST gap).
fn gap_end(tz: Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
    let later = |ts: i64| DateTime::from_timestamp(ts, 0).is_some_and(|t| t.with_timezone(&tz).naive_local() > naive);
    let base = naive.and_utc().timestamp();
    let (mut lo, mut hi) = (base - 16 * 3600, base + 16 * 3600);
    if later(lo) || !later(hi) {
        return None;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if later(mid) { hi = mid } else { lo = mid }
    }
    DateTime::from_timestamp(hi, 0)
}

// ---------------------------------------------------------------- phrases

/// `every weekday at 9am`, `mondays at 10`, `daily at 14:00`, `at 8am every day`… → cron text.
fn parse_phrase(tokens: &[&str]) -> Result<Option<String>, ScheduleError> {
    let rest = strip_filler(tokens);
    if let Some((first, tail)) = rest.split_first()
        && let Some(dow) = day_spec(first)
    {
        let (has_at, time) = match tail.split_first() {
            Some((&"at", time)) => (true, time),
            _ => (false, tail),
        };
        if time.is_empty() {
            return Err(ScheduleError::InvalidTime(format!("`{}` needs a time of day, e.g. `{first} at 9am`", tokens.join(" "))));
        }
        let (h, m) = parse_time(&time.concat(), has_at)?;
        return Ok(Some(format!("{m} {h} * * {dow}")));
    }
    if let Some((&"at", tail)) = rest.split_first() {
        for n in [1, 2] {
            if let [day] = strip_filler(tail.get(n..).unwrap_or_default())
                && let Some(dow) = day_spec(day)
            {
                let (h, m) = parse_time(&tail[..n].concat(), true)?;
                return Ok(Some(format!("{m} {h} * * {dow}")));
            }
        }
    }
    Ok(None)
}

fn strip_filler<'a, 'b>(tokens: &'a [&'b str]) -> &'a [&'b str] {
    match tokens {
        ["every" | "each" | "on", rest @ ..] => rest,
        _ => tokens,
    }
}

fn day_spec(token: &str) -> Option<&'static str> {
    match token {
        "day" | "days" | "daily" | "everyday" => Some("*"),
        "weekday" | "weekdays" => Some("MON-FRI"),
        "weekend" | "weekends" => Some("SAT,SUN"),
        _ => dow_num(token)
            .or_else(|| token.strip_suffix('s').and_then(dow_num))
            .filter(|_| !token.starts_with(|c: char| c.is_ascii_digit()))
            .map(|d| DAY_NAMES[d % 7]),
    }
}

/// `9am`, `9:30`, `9:30pm`, `14:00`, `noon`, `midnight`; a bare hour `10` only if `bare_hour`.
fn parse_time(s: &str, bare_hour: bool) -> Result<(u32, u32), ScheduleError> {
    match s {
        "noon" | "midday" => return Ok((12, 0)),
        "midnight" => return Ok((0, 0)),
        _ => {}
    }
    let bad = |why: &str| ScheduleError::InvalidTime(format!("`{s}` {why}"));
    let (body, pm) = match (s.strip_suffix("am"), s.strip_suffix("pm")) {
        (Some(b), _) => (b, Some(false)),
        (_, Some(b)) => (b, Some(true)),
        _ => (s, None),
    };
    let (hs, ms) = body.split_once(':').map_or((body, None), |(h, m)| (h, Some(m)));
    if pm.is_none() && ms.is_none() && !bare_hour {
        return Err(bad("is not a time of day (write `at 10` or `10:00`)"));
    }
    let num = |t: &str, lens: std::ops::RangeInclusive<usize>| {
        Some(t).filter(|t| lens.contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit()))?.parse::<u32>().ok()
    };
    let h = num(hs, 1..=2).ok_or_else(|| bad("is not a time of day"))?;
    let m = ms.map_or(Some(0), |m| num(m, 2..=2)).ok_or_else(|| bad("is not a time of day"))?;
    if m > 59 {
        return Err(bad("has its minute out of range (00-59)"));
    }
    match pm {
        Some(pm) if (1..=12).contains(&h) => Ok((h % 12 + if pm { 12 } else { 0 }, m)),
        Some(_) => Err(bad("has its hour out of range (1-12 with am/pm)")),
        None if h <= 23 => Ok((h, m)),
        None => Err(bad("has its hour out of range (0-23)")),
    }
}

// ---------------------------------------------------------------- cron

fn looks_like_cron(tokens: &[&str]) -> bool {
    let cron_char = |c: char| c.is_ascii_alphanumeric() || "*,/-?".contains(c);
    (5..=7).contains(&tokens.len())
        && tokens[0].starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == '?')
        && tokens.iter().all(|t| t.chars().all(cron_char))
}

fn cron_schedule(text: &str, now: DateTime<Utc>, tz: Tz) -> Result<Schedule, ScheduleError> {
    let schedule = Schedule::Cron { expr: normalise_cron(text)? };
    match schedule.next_after(now, tz) {
        Some(_) => Ok(schedule),
        None => Err(ScheduleError::InvalidCron(format!("`{}` never fires", schedule.to_text()))),
    }
}

/// Expands macros, collapses whitespace, upper-cases names, and validates.
fn normalise_cron(text: &str) -> Result<String, ScheduleError> {
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
fn compile(expr: &str) -> Result<Vec<cron::Schedule>, ScheduleError> {
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

/// Standard day-of-week number (0-7, 0 and 7 = Sunday) or name (SUN = 0 … SAT = 6).
fn dow_num(s: &str) -> Option<usize> {
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
fn dow_to_crate(field: &str) -> Result<String, ScheduleError> {
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
fn cron_next(expr: &str, after: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
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
fn local_start(after: DateTime<Utc>, tz: Tz) -> Option<NaiveDateTime> {
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
fn describe_cron(expr: &str) -> Option<String> {
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

fn describe_days(dow: &str) -> Option<String> {
    const FULL: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    match dow {
        "*" => Some("every day".into()),
        "MON-FRI" | "1-5" => Some("on weekdays".into()),
        "SAT,SUN" | "SUN,SAT" | "0,6" | "6,0" => Some("on weekends".into()),
        d => dow_num(d).map(|d| format!("every {}", FULL[d % 7])),
    }
}

#[cfg(test)]
mod tests;
