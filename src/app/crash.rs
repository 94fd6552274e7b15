//! Test-only fault injection: `HERMES_CRASH_AT=<point>` makes the process abort (like a
//! SIGKILL: no unwinding, no cleanup) when it reaches that named point;
//! `HERMES_CRASH_AT=<point>#<n>` aborts on the n-th time the point is reached (n ≥ 1), so a
//! crash can land in the middle of a drain. Used by the crash suite (tests/crash.rs) to check
//! the invariants of docs/design.md#guarantees. After the first call a point costs one
//! `OnceLock` read and, only for the named point, one atomic increment.
//!
//! Only builds with the `testing` cargo feature read the variable; without it (every release
//! build) [`crash_point`] is an empty inline function and the variable has no effect.

#[cfg(feature = "testing")]
use std::sync::OnceLock;
#[cfg(feature = "testing")]
use std::sync::atomic::{AtomicU64, Ordering};

/// The parsed `HERMES_CRASH_AT`: the point's name and the hit that aborts.
#[cfg(feature = "testing")]
fn target() -> Option<&'static (String, u64)> {
    static AT: OnceLock<Option<(String, u64)>> = OnceLock::new();
    AT.get_or_init(|| std::env::var("HERMES_CRASH_AT").ok().and_then(|s| parse(&s))).as_ref()
}

/// `<point>` or `<point>#<n>`; an empty name or a hit count that is not a positive number
/// disables the crash (it never aborts on a typo'd count).
#[cfg(feature = "testing")]
fn parse(s: &str) -> Option<(String, u64)> {
    let (name, n) = match s.rsplit_once('#') {
        Some((name, n)) => (name, n.parse::<u64>().ok().filter(|n| *n >= 1)?),
        None => (s, 1),
    };
    (!name.is_empty()).then(|| (name.to_string(), n))
}

/// Aborts the process if `HERMES_CRASH_AT` names `point` and this is the chosen hit
/// (`testing` builds only).
#[cfg(feature = "testing")]
pub fn crash_point(point: &str) {
    static HITS: AtomicU64 = AtomicU64::new(0);
    if let Some((name, n)) = target()
        && name == point
        && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *n
    {
        eprintln!("HERMES_CRASH_AT={point}#{n}: aborting");
        std::process::abort();
    }
}

/// Does nothing: this build has no `testing` feature, so `HERMES_CRASH_AT` is ignored.
#[cfg(not(feature = "testing"))]
#[inline(always)]
pub fn crash_point(_point: &str) {}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::parse;

    #[test]
    fn point_and_hit_count() {
        assert_eq!(parse("fire:claimed"), Some(("fire:claimed".into(), 1)));
        assert_eq!(parse("queue:popped#3"), Some(("queue:popped".into(), 3)));
        assert_eq!(parse("queue:popped#0"), None);
        assert_eq!(parse("queue:popped#x"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("#2"), None);
    }
}
