//! Natural phrases (`every weekday at 9am`, `daily at 14:00`, `weekends at noon`) turned
//! into cron expressions.

use super::*;

/// `every weekday at 9am`, `mondays at 10`, `daily at 14:00`, `at 8am every day`… → cron text.
pub(super) fn parse_phrase(tokens: &[&str]) -> Result<Option<String>, ScheduleError> {
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

pub(super) fn strip_filler<'a, 'b>(tokens: &'a [&'b str]) -> &'a [&'b str] {
    match tokens {
        ["every" | "each" | "on", rest @ ..] => rest,
        _ => tokens,
    }
}

pub(super) fn day_spec(token: &str) -> Option<&'static str> {
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
pub(super) fn parse_time(s: &str, bare_hour: bool) -> Result<(u32, u32), ScheduleError> {
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
