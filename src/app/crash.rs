//! Test-only fault injection: `HERMES_CRASH_AT=<point>` makes the process abort (like a
//! SIGKILL: no unwinding, no cleanup) when it reaches that named point. Used by the crash
//! suite to check that no occurrence runs twice and no stored message is lost.
//!
//! Only builds with the `testing` cargo feature read the variable; without it (every release
//! build) [`crash_point`] is an empty inline function and the variable has no effect.

/// Aborts the process if `HERMES_CRASH_AT` names `point` (`testing` builds only).
#[cfg(feature = "testing")]
pub fn crash_point(point: &str) {
    use std::sync::OnceLock;
    static AT: OnceLock<Option<String>> = OnceLock::new();
    if AT.get_or_init(|| std::env::var("HERMES_CRASH_AT").ok().filter(|s| !s.is_empty())).as_deref() == Some(point) {
        eprintln!("HERMES_CRASH_AT={point}: aborting");
        std::process::abort();
    }
}

/// Does nothing: this build has no `testing` feature, so `HERMES_CRASH_AT` is ignored.
#[cfg(not(feature = "testing"))]
#[inline(always)]
pub fn crash_point(_point: &str) {}
