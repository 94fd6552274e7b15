//! Test-only fault injection: `HERMES_CRASH_AT=<point>` makes the process abort (like a
//! SIGKILL: no unwinding, no cleanup) when it reaches that named point. Used by the crash
//! suite to check that no occurrence runs twice and no stored message is lost. Unset in
//! normal use; reading it costs one atomic load after the first call.

use std::sync::OnceLock;

/// Aborts the process if `HERMES_CRASH_AT` names `point`.
pub fn crash_point(point: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    if AT.get_or_init(|| std::env::var("HERMES_CRASH_AT").ok().filter(|s| !s.is_empty())).as_deref() == Some(point) {
        eprintln!("HERMES_CRASH_AT={point}: aborting");
        std::process::abort();
    }
}
