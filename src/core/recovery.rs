//! Restart-recovery rules of docs/design.md#recovery: when a lease counts as an interrupted turn, how an
//! entry is marked, loop detection, and whether a resume turn is due.

use crate::core::session::{Lease, SessionEntry};
use chrono::{DateTime, Duration, Utc};

/// Resume marks older than this are dropped instead of resumed.
pub const RESUME_WINDOW_SECS: i64 = 3600;
/// Reason for a lease found abandoned.
pub const RESTART_INTERRUPTED: &str = "restart_interrupted";
/// Reason for turns still running when a clean shutdown began.
pub const SHUTDOWN_TIMEOUT: &str = "shutdown_timeout";
/// Told to chats with a running turn when `serve` stops.
pub const RESTART_NOTICE: &str =
    "⚠️ Gateway restarting — your current task will be interrupted. Send any message after restart and I'll try to resume.";

/// The system note of a resume turn.
pub const RESUME_NOTE: &str = "Note: your previous turn in this conversation was interrupted by a gateway restart. \
Do not re-run tool calls from before the interruption. If the user has written since, answer that first; \
otherwise tell the user the session was restored after a restart and ask how they would like to continue.";

/// Who holds a lease: `<host>:<pid>`.
pub fn owner_id(host: &str, pid: u32) -> String {
    format!("{host}:{pid}")
}

/// The host part of an owner id (`<host>:<pid>`).
pub fn owner_host(owner: &str) -> &str {
    owner.rsplit_once(':').map_or(owner, |(h, _)| h)
}

/// Whether `lease` is an interrupted turn. `me` is this process's owner id; `alive` says
/// whether a pid on this host still runs; `unclean_start` is true during the startup sweep
/// after this host exited without its clean-shutdown marker. Another host's lease (or an
/// old lease without owner) is abandoned only once it has expired: that host may be alive.
pub fn abandoned(lease: &Lease, now: DateTime<Utc>, me: &str, alive: impl Fn(u32) -> bool, unclean_start: bool) -> bool {
    if lease.expires_at <= now {
        return true;
    }
    let (my_host, my_pid) = me.rsplit_once(':').unwrap_or((me, ""));
    match lease.owner.rsplit_once(':') {
        // This host after an unclean exit: every other pid's lease is from before the crash
        // (pids may have been reused since), so its liveness proves nothing.
        Some((host, pid)) if host == my_host => pid != my_pid && (unclean_start || pid.parse().is_ok_and(|p| !alive(p))),
        _ => false,
    }
}

/// Marks an interrupted turn: resume pending, lease cleared, one more consecutive
/// interruption, and suspension at the threshold.
pub fn mark_interrupted(e: &mut SessionEntry, reason: &str, now: DateTime<Utc>, threshold: u32) {
    e.resume_pending = true;
    e.resume_reason = Some(reason.to_string());
    e.last_resume_marked_at = Some(now);
    e.lease = None;
    e.interrupt_requested = false;
    e.interruptions += 1;
    if e.interruptions >= threshold {
        e.suspended = true;
    }
}

/// Whether a resume turn should run for this entry now.
pub fn resume_due(e: &SessionEntry, now: DateTime<Utc>) -> bool {
    e.resume_pending && !e.suspended && e.last_resume_marked_at.is_some_and(|t| now - t <= Duration::seconds(RESUME_WINDOW_SECS))
}

/// Whether a resume mark is too old to act on.
pub fn resume_expired(e: &SessionEntry, now: DateTime<Utc>) -> bool {
    e.resume_pending && e.last_resume_marked_at.is_none_or(|t| now - t > Duration::seconds(RESUME_WINDOW_SECS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};

    fn lease(owner: &str, exp: i64) -> Lease {
        Lease {
            token: "t".into(),
            epoch: 1,
            owner: owner.into(),
            started_at: DateTime::UNIX_EPOCH,
            expires_at: DateTime::from_timestamp(exp, 0).unwrap(),
        }
    }

    #[test]
    fn abandonment_rules() {
        let now = DateTime::from_timestamp(1000, 0).unwrap();
        let dead = |_| false;
        let live = |_| true;
        assert!(abandoned(&lease("h:1", 999), now, "h:2", live, false), "expired");
        assert!(abandoned(&lease("h:1", 2000), now, "h:2", dead, false), "dead pid on this host");
        assert!(!abandoned(&lease("h:1", 2000), now, "h:2", live, false), "live pid on this host");
        assert!(abandoned(&lease("h:1", 2000), now, "h:2", live, true), "any other pid on this host at an unclean start");
        assert!(!abandoned(&lease("h:2", 2000), now, "h:2", dead, true), "my own lease");
        assert!(!abandoned(&lease("other:1", 2000), now, "h:2", dead, true), "another host's live lease, even at an unclean start");
        assert!(!abandoned(&lease("other:1", 2000), now, "h:2", live, false), "another host otherwise");
        assert!(!abandoned(&lease("", 2000), now, "h:2", live, true), "no owner: only expiry counts");
        assert!(abandoned(&lease("other:1", 1000), now, "h:2", live, false), "another host's expired lease");
    }

    #[test]
    fn three_interruptions_suspend() {
        let o = Origin::new("api", "c", ChatType::Dm, None, None).unwrap();
        let now = DateTime::from_timestamp(1000, 0).unwrap();
        let mut e = SessionEntry::new(SessionKey::derive(&o, Default::default()), SessionId::generate(now, &Utc), o, now);
        for i in 1..=3 {
            assert!(!e.suspended);
            mark_interrupted(&mut e, RESTART_INTERRUPTED, now, 3);
            assert_eq!(e.interruptions, i);
        }
        assert!(e.suspended);
        assert!(!resume_due(&e, now));
        e.suspended = false;
        assert!(resume_due(&e, now + Duration::seconds(3600)));
        assert!(!resume_due(&e, now + Duration::seconds(3601)));
        assert!(resume_expired(&e, now + Duration::seconds(3601)));
    }
}
