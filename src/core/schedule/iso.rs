//! ISO 8601 one-shot times: with `Z` or an offset, naive times in the zone, a date alone
//! as local midnight, and DST-gap resolution.

use super::*;

pub(super) fn looks_like_iso(tokens: &[&str]) -> bool {
    let b = tokens.first().map_or(&b""[..], |t| t.as_bytes());
    tokens.len() <= 2 && b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// `2026-12-01T09:00[:00[.f]]` with optional `Z` / `±HH[:MM]`; naive times are read in `tz`. A date
/// alone (`2027-06-15`) is local midnight, as Hermes reads it.
pub(super) fn parse_iso(text: &str, tz: Tz) -> Result<DateTime<Utc>, ScheduleError> {
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

pub(super) fn split_offset(s: &str) -> Option<(&str, Option<FixedOffset>)> {
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
pub(super) fn resolve_local(tz: Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
    if !(1900..=9999).contains(&naive.year()) {
        return None;
    }
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.to_utc()),
        LocalResult::None => gap_end(tz, naive),
    }
}

/// The first instant whose local time is later than `naive` (a time inside a DST gap).
pub(super) fn gap_end(tz: Tz, naive: NaiveDateTime) -> Option<DateTime<Utc>> {
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
