//! The lazy reset rule of docs/design.md#reset: which policy applies to a chat, whether a session is
//! due for reset at `now`, and the exact wording users and the model see.

use crate::core::ids::ChatType;
use crate::core::session::ResetReason;
use chrono::{DateTime, Duration, LocalResult, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A due reset: why, and the human detail for the notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// Why.
    pub reason: ResetReason,
    /// `inactive for 2h 5m`, `daily schedule at 4:00`, `previous session was stopped or interrupted`.
    pub detail: String,
}

/// Reset modes (docs/design.md#reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetMode {
    /// Never by time.
    None,
    /// After `idle_minutes` without activity.
    Idle,
    /// When `at_hour:00` has passed since the last activity.
    Daily,
    /// Whichever comes first.
    Both,
}

/// `session_reset:` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResetPolicy {
    /// Mode.
    pub mode: ResetMode,
    /// Idle threshold in minutes.
    pub idle_minutes: u64,
    /// Daily boundary hour (0–23).
    pub at_hour: u32,
    /// Tell the user after an automatic reset.
    pub notify: bool,
    /// Platforms never told.
    pub notify_exclude_platforms: Vec<String>,
}

impl Default for ResetPolicy {
    fn default() -> Self {
        Self {
            mode: ResetMode::None,
            idle_minutes: 1440,
            at_hour: 4,
            notify: true,
            notify_exclude_platforms: vec!["api".into(), "webhook".into()],
        }
    }
}

/// A partial policy laid over the default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResetOverride {
    /// Mode.
    pub mode: Option<ResetMode>,
    /// Idle threshold.
    pub idle_minutes: Option<u64>,
    /// Daily hour.
    pub at_hour: Option<u32>,
    /// Notify.
    pub notify: Option<bool>,
    /// Excluded platforms.
    pub notify_exclude_platforms: Option<Vec<String>>,
}

impl ResetPolicy {
    /// This policy with `o`'s fields laid over it.
    pub fn overlay(&self, o: &ResetOverride) -> Self {
        Self {
            mode: o.mode.unwrap_or(self.mode),
            idle_minutes: o.idle_minutes.unwrap_or(self.idle_minutes),
            at_hour: o.at_hour.unwrap_or(self.at_hour),
            notify: o.notify.unwrap_or(self.notify),
            notify_exclude_platforms: o.notify_exclude_platforms.clone().unwrap_or_else(|| self.notify_exclude_platforms.clone()),
        }
    }
}

/// Every reset policy of a deployment: the default and its per-chat-type and per-platform
/// overrides, borrowed from the settings (nothing is copied per message).
#[derive(Debug, Clone, Copy)]
pub struct ResetRules<'a> {
    /// The default policy.
    pub default: &'a ResetPolicy,
    /// Overrides by platform (win over chat-type overrides).
    pub by_platform: &'a BTreeMap<String, ResetOverride>,
    /// Overrides by chat type (`dm`, `group`, …).
    pub by_type: &'a BTreeMap<String, ResetOverride>,
}

impl ResetRules<'_> {
    /// The policy in force for a chat: default, then the chat-type override, then the
    /// platform override (platform wins).
    pub fn policy_for(&self, platform: &str, chat_type: ChatType) -> ResetPolicy {
        let mut p = self.default.clone();
        if let Some(o) = self.by_type.iter().find(|(k, _)| ChatType::parse(k).ok() == Some(chat_type)).map(|(_, o)| o) {
            p = p.overlay(o);
        }
        if let Some(o) = self.by_platform.get(platform) {
            p = p.overlay(o);
        }
        p
    }
}

/// `2h 5m`, `45m`, `1d 3h 0m`.
pub fn format_idle(d: Duration) -> String {
    let mins = d.num_minutes().max(0);
    let (days, hours, m) = (mins / 1440, (mins % 1440) / 60, mins % 60);
    match (days, hours) {
        (0, 0) => format!("{m}m"),
        (0, h) => format!("{h}h {m}m"),
        (d, h) => format!("{d}d {h}h {m}m"),
    }
}

/// The local wall time `date at_hour:00` as an instant: a time in a DST gap moves to the
/// first valid instant after it; a repeated time takes the earlier instant.
fn local_instant(tz: Tz, date: chrono::NaiveDate, hour: u32) -> DateTime<Utc> {
    let naive = date.and_time(NaiveTime::from_hms_opt(hour, 0, 0).unwrap_or(NaiveTime::MIN));
    match tz.from_local_datetime(&naive) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, _) => a.with_timezone(&Utc),
        LocalResult::None => {
            // Walk forward minute by minute to the end of the gap (gaps are at most hours).
            (1..=24 * 60)
                .find_map(|m| tz.from_local_datetime(&(naive + Duration::minutes(m))).earliest())
                .map_or_else(|| Utc.from_utc_datetime(&naive), |t| t.with_timezone(&Utc))
        }
    }
}

/// The most recent daily boundary (`at_hour:00` local) at or before `now`.
pub fn daily_boundary(now: DateTime<Utc>, at_hour: u32, tz: Tz) -> DateTime<Utc> {
    let today = now.with_timezone(&tz).date_naive();
    let b = local_instant(tz, today, at_hour);
    if b <= now { b } else { local_instant(tz, today.pred_opt().unwrap_or(today), at_hour) }
}

/// Whether a session last active at `last` is due for reset at `now` (idle checked first).
pub fn check(p: &ResetPolicy, last: DateTime<Utc>, now: DateTime<Utc>, tz: Tz) -> Option<Due> {
    let idle = matches!(p.mode, ResetMode::Idle | ResetMode::Both);
    let daily = matches!(p.mode, ResetMode::Daily | ResetMode::Both);
    let idle_for = now - last;
    if idle && idle_for >= Duration::minutes(p.idle_minutes as i64) {
        return Some(Due { reason: ResetReason::Idle, detail: format!("inactive for {}", format_idle(idle_for)) });
    }
    if daily && last < daily_boundary(now, p.at_hour, tz) {
        return Some(Due { reason: ResetReason::Daily, detail: format!("daily schedule at {}:00", p.at_hour) });
    }
    None
}

/// The reset caused by loop detection.
pub fn suspended() -> Due {
    Due { reason: ResetReason::Suspended, detail: "previous session was stopped or interrupted".into() }
}

/// The notice shown to the user.
pub fn notice(detail: &str) -> String {
    format!("◐ Session automatically reset ({detail}). Conversation history cleared.")
}

/// Whether the user is told: always for `suspended`; otherwise only when `notify` is on,
/// the old session had activity and the platform is not excluded.
pub fn should_notify(p: &ResetPolicy, reason: ResetReason, had_activity: bool, platform: &str) -> bool {
    reason == ResetReason::Suspended || (p.notify && had_activity && !p.notify_exclude_platforms.iter().any(|x| x == platform))
}

/// The system note for the first turn of the new session.
pub fn system_note(detail: &str) -> String {
    format!(
        "Note: this is a fresh conversation. The previous session was reset automatically ({detail}); \
its history is not available. Do not refer to earlier messages as if you remembered them."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pol(mode: ResetMode, idle: u64, hour: u32) -> ResetPolicy {
        ResetPolicy { mode, idle_minutes: idle, at_hour: hour, ..ResetPolicy::default() }
    }

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn idle_wording_and_threshold() {
        let p = pol(ResetMode::Idle, 120, 4);
        let last = utc("2026-01-01T10:00:00Z");
        assert_eq!(check(&p, last, utc("2026-01-01T11:59:59Z"), Tz::UTC), None);
        let due = check(&p, last, utc("2026-01-01T12:05:00Z"), Tz::UTC).unwrap();
        assert_eq!(due, Due { reason: ResetReason::Idle, detail: "inactive for 2h 5m".into() });
        assert_eq!(notice(&due.detail), "◐ Session automatically reset (inactive for 2h 5m). Conversation history cleared.");
    }

    #[test]
    fn daily_boundary_across_midnight_in_berlin() {
        let p = pol(ResetMode::Daily, 1440, 4);
        let tz = chrono_tz::Europe::Berlin;
        // 23:30 local on Jan 1 → 03:59 local Jan 2: no boundary passed.
        assert_eq!(check(&p, utc("2026-01-01T22:30:00Z"), utc("2026-01-02T02:59:00Z"), tz), None);
        // 04:00 local (03:00Z) passed.
        let due = check(&p, utc("2026-01-01T22:30:00Z"), utc("2026-01-02T03:00:00Z"), tz).unwrap();
        assert_eq!(due.detail, "daily schedule at 4:00");
    }

    #[test]
    fn daily_boundary_in_a_dst_gap_moves_forward() {
        // Europe/Berlin 2026-03-29: 02:00 → 03:00. A 2:00 boundary happens at 03:00 CEST = 01:00Z.
        let tz = chrono_tz::Europe::Berlin;
        assert_eq!(daily_boundary(utc("2026-03-29T05:00:00Z"), 2, tz), utc("2026-03-29T01:00:00Z"));
        // Fall back 2026-10-25: 02:00 happens twice; the boundary is the first one (00:00Z).
        assert_eq!(daily_boundary(utc("2026-10-25T05:00:00Z"), 2, tz), utc("2026-10-25T00:00:00Z"));
    }

    #[test]
    fn both_checks_idle_first() {
        let p = pol(ResetMode::Both, 60, 4);
        let due = check(&p, utc("2026-01-01T01:00:00Z"), utc("2026-01-01T05:00:00Z"), Tz::UTC).unwrap();
        assert_eq!(due.reason, ResetReason::Idle);
        let p = pol(ResetMode::Both, 600, 4);
        let due = check(&p, utc("2026-01-01T03:30:00Z"), utc("2026-01-01T04:30:00Z"), Tz::UTC).unwrap();
        assert_eq!(due.reason, ResetReason::Daily);
        assert_eq!(check(&pol(ResetMode::None, 1, 4), utc("2020-01-01T00:00:00Z"), utc("2026-01-01T00:00:00Z"), Tz::UTC), None);
    }

    #[test]
    fn platform_override_beats_type_override() {
        let default = ResetPolicy::default();
        let by_type =
            BTreeMap::from([("group".to_string(), ResetOverride { mode: Some(ResetMode::Daily), at_hour: Some(6), ..Default::default() })]);
        let by_platform = BTreeMap::from([("telegram".to_string(), ResetOverride { mode: Some(ResetMode::Idle), ..Default::default() })]);
        let s = ResetRules { default: &default, by_platform: &by_platform, by_type: &by_type };
        let p = s.policy_for("telegram", ChatType::Group);
        assert_eq!((p.mode, p.at_hour), (ResetMode::Idle, 6));
        assert_eq!(s.policy_for("discord", ChatType::Group).mode, ResetMode::Daily);
        assert_eq!(s.policy_for("discord", ChatType::Dm).mode, ResetMode::None);
    }

    #[test]
    fn notify_rules() {
        let p = ResetPolicy::default();
        assert!(should_notify(&p, ResetReason::Idle, true, "telegram"));
        assert!(!should_notify(&p, ResetReason::Idle, false, "telegram"));
        assert!(!should_notify(&p, ResetReason::Idle, true, "api"));
        assert!(should_notify(&p, ResetReason::Suspended, false, "api"));
        let quiet = ResetPolicy { notify: false, ..p };
        assert!(!should_notify(&quiet, ResetReason::Daily, true, "telegram"));
    }

    fn zones() -> impl Strategy<Value = Tz> {
        prop_oneof![
            Just(Tz::UTC),
            Just(chrono_tz::Europe::Berlin),
            Just(chrono_tz::America::New_York),
            Just(chrono_tz::Australia::Lord_Howe)
        ]
    }

    proptest! {
        #[test]
        fn idle_resets_exactly_past_the_threshold(last in 0i64..2_000_000_000, gap in 0i64..400_000, idle in 1u64..10_000) {
            let last = Utc.timestamp_opt(last, 0).unwrap();
            let now = last + Duration::seconds(gap);
            let due = check(&pol(ResetMode::Idle, idle, 4), last, now, Tz::UTC);
            prop_assert_eq!(due.is_some(), gap >= idle as i64 * 60);
        }

        #[test]
        fn daily_boundary_is_recent_and_at_the_hour(now in 0i64..4_000_000_000, hour in 0u32..24, tz in zones()) {
            let now = Utc.timestamp_opt(now, 0).unwrap();
            let b = daily_boundary(now, hour, tz);
            prop_assert!(b <= now);
            // At most a day (plus a DST hour) back.
            prop_assert!(now - b <= Duration::hours(26));
            // Never skips a boundary: the next day's boundary is after now.
            let next = local_instant(tz, b.with_timezone(&tz).date_naive().succ_opt().unwrap(), hour);
            prop_assert!(next > now || next <= b, "next {next} now {now} b {b}");
        }

        #[test]
        fn daily_reset_iff_a_boundary_lies_between(last in 0i64..4_000_000_000, gap in 0i64..200_000, hour in 0u32..24, tz in zones()) {
            let last = Utc.timestamp_opt(last, 0).unwrap();
            let now = last + Duration::seconds(gap);
            let due = check(&pol(ResetMode::Daily, 1440, hour), last, now, tz).is_some();
            prop_assert_eq!(due, last < daily_boundary(now, hour, tz));
            if gap >= 27 * 3600 { prop_assert!(due); }
        }

        #[test]
        fn both_is_the_union(last in 0i64..4_000_000_000, gap in 0i64..200_000, idle in 1u64..3000, hour in 0u32..24, tz in zones()) {
            let last = Utc.timestamp_opt(last, 0).unwrap();
            let now = last + Duration::seconds(gap);
            let i = check(&pol(ResetMode::Idle, idle, hour), last, now, tz);
            let d = check(&pol(ResetMode::Daily, idle, hour), last, now, tz);
            let b = check(&pol(ResetMode::Both, idle, hour), last, now, tz);
            prop_assert_eq!(b.is_some(), i.is_some() || d.is_some());
            if i.is_some() { prop_assert_eq!(b.map(|x| x.reason), Some(ResetReason::Idle)); }
        }
    }
}
