//! Schedules of scheduled jobs: parsing user input (and Hermes' parsed schedule objects) into a
//! [`Schedule`], and computing next occurrences, periods and grace windows (docs/design.md#schedules, #due).
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

/// Grace window of docs/design.md#due: half the period clamped to [120 s, 7200 s]; one-shots (`None`): 120 s.
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

    /// The shortest time between two fires, in seconds (`None` for a one-shot): an interval's
    /// period; a cron expression's smallest gap (below 60 only with a 6-field seconds field
    /// naming more than one second). What a chat's 60 s minimum is held against.
    pub fn shortest_gap_secs(&self) -> Option<i64> {
        match self {
            Schedule::Interval { seconds } => Some(*seconds),
            Schedule::Once { .. } => None,
            Schedule::Cron { expr } => Some(cron_expr::shortest_gap_secs(expr)),
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
    /// "once at 2026-12-01 09:00 UTC"; uncommon cron shapes read `"cron <expr>"`.
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

mod cron_expr;
mod hermes;
mod iso;
mod phrase;
pub mod spread;
use cron_expr::*;
use iso::*;
use phrase::*;

#[cfg(test)]
mod tests;
