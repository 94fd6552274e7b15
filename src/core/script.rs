//! Job scripts' rules (docs/jobs.md#script-jobs), as Hermes 0.19.0 has them
//! (`cron/scheduler.py` `_run_job_script`, `_parse_wake_gate`, `_build_job_prompt`;
//! `tools/cronjob_tools.py` `_validate_cron_script_path`): which interpreter runs a script, the
//! path a user may name, the `{"wakeAgent": false}` gate, how stdout is put into the prompt,
//! and the tail of stderr a failed run records. Pure: the app resolves the path on disk and
//! the script runner port runs the child.

use serde_json::Value;

/// The folder of `$HERMES_HOME` scripts live in.
pub const SCRIPTS_DIR: &str = "scripts";

/// Default limit of one script run, in seconds (Hermes' `_DEFAULT_SCRIPT_TIMEOUT`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 3600;

/// Most bytes of stdout kept (Hermes 0.19.0 keeps all of it; a bound keeps memory and the
/// prompt finite). What is cut is marked with [`TRUNCATED`].
pub const STDOUT_CAP_BYTES: usize = 1024 * 1024;

/// Appended to stdout that was cut at [`STDOUT_CAP_BYTES`].
pub const TRUNCATED: &str = "\n\n[... output truncated ...]";

/// Most characters of stderr a failed run records.
pub const STDERR_TAIL_CHARS: usize = 2000;

/// Hermes' refusal of a `no_agent` job without a script (`cron/jobs.py` `create_job`).
pub const NO_AGENT_NEEDS_SCRIPT: &str =
    "no_agent=True requires a script — with no agent and no script there is nothing for the job to run.";

/// The program that runs a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpreter {
    /// `.sh` and `.bash` files.
    Bash,
    /// Anything else.
    Python,
}

impl Interpreter {
    /// By the file's extension (case-insensitive), never its shebang.
    pub fn for_path(path: &str) -> Self {
        let file = path.rsplit(['/', '\\']).next().unwrap_or_default();
        let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
        if matches!(ext.as_str(), "sh" | "bash") { Self::Bash } else { Self::Python }
    }

    /// The command looked up on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Python => "python3",
        }
    }
}

/// Checks a script path as a user names it (CLI, REST API, `cronjob` tool): relative to the
/// scripts folder, never absolute or `~`, never climbing out of it with `..`. The resolved
/// file is checked again (symlinks included) before every run.
pub fn check_path(script: &str) -> Result<(), String> {
    let raw = script.trim();
    let drive = raw.len() >= 2 && raw.as_bytes()[1] == b':';
    if raw.starts_with('/') || raw.starts_with('~') || raw.starts_with('\\') || drive {
        return Err(format!(
            "Script path must be relative to $HERMES_HOME/scripts/. Got absolute or home-relative path: {raw:?}. Place scripts in $HERMES_HOME/scripts/ and use just the filename."
        ));
    }
    let mut depth = 0i32;
    for part in raw.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => depth -= 1,
            _ => depth += 1,
        }
        if depth < 0 {
            return Err(format!("Script path escapes the scripts directory via traversal: {raw:?}"));
        }
    }
    if depth == 0 {
        return Err(format!("Script path names no file: {raw:?}"));
    }
    Ok(())
}

/// Hermes' wake gate: false when the last non-empty stdout line is a JSON object whose
/// `wakeAgent` is `false`; anything else (no output, not JSON, no flag, `true`) wakes.
pub fn wakes_agent(stdout: &str) -> bool {
    let Some(last) = stdout.lines().rev().map(str::trim).find(|l| !l.is_empty()) else { return true };
    match serde_json::from_str::<Value>(last) {
        Ok(Value::Object(o)) => o.get("wakeAgent") != Some(&Value::Bool(false)),
        _ => true,
    }
}

/// The job prompt with the script's stdout in front of it, in Hermes' words.
pub fn with_output(stdout: &str, prompt: &str) -> String {
    format!(
        "## Script Output\nThe following data was collected by a pre-run script. Use it as context for your analysis.\n\n```\n{stdout}\n```\n\n{prompt}"
    )
}

/// The last [`STDERR_TAIL_CHARS`] characters of `stderr`, trimmed.
pub fn stderr_tail(stderr: &str) -> String {
    let t = stderr.trim();
    let n = t.chars().count();
    if n <= STDERR_TAIL_CHARS {
        return t.to_string();
    }
    let tail: String = t.chars().skip(n - STDERR_TAIL_CHARS).collect();
    format!("…{tail}")
}

/// A script's stdout as a run uses it: trimmed (as Hermes strips it).
pub fn clean_stdout(stdout: &str) -> String {
    stdout.trim().to_string()
}

/// The error a failed run records: why it failed, then stderr's tail when there is one.
pub fn failure(script: &str, why: &str, stderr: &str) -> String {
    let tail = stderr_tail(stderr);
    if tail.is_empty() { format!("script `{script}` {why}") } else { format!("script `{script}` {why}\nstderr:\n{tail}") }
}

/// Hermes' `HERMES_CRON_SCRIPT_TIMEOUT` value: a positive number of seconds (a fraction is
/// cut), else `None`.
pub fn parse_timeout(v: &str) -> Option<u64> {
    let f: f64 = v.trim().parse().ok()?;
    (f >= 1.0 && f.is_finite()).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_by_extension() {
        assert_eq!(Interpreter::for_path("check.sh"), Interpreter::Bash);
        assert_eq!(Interpreter::for_path("sub/check.BASH"), Interpreter::Bash);
        assert_eq!(Interpreter::for_path("feed.py"), Interpreter::Python);
        assert_eq!(Interpreter::for_path("noext"), Interpreter::Python);
        assert_eq!(Interpreter::for_path("dir.sh/noext"), Interpreter::Python);
        assert_eq!(Interpreter::Bash.program(), "bash");
    }

    #[test]
    fn user_paths_stay_inside() {
        assert!(check_path("a.sh").is_ok());
        assert!(check_path("sub/../b.py").is_ok());
        assert!(check_path("./sub/c.py").is_ok());
        for bad in ["/etc/passwd", "~/x.sh", "C:\\x.py", "../x.sh", "sub/../../x.sh", "", ".", "sub/.."] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        assert!(check_path("../x").unwrap_err().contains("traversal"));
    }

    #[test]
    fn the_wake_gate_reads_only_the_last_non_empty_line() {
        assert!(!wakes_agent("checked\n{\"wakeAgent\": false}\n\n"));
        assert!(wakes_agent("{\"wakeAgent\": false}\nmore"));
        assert!(wakes_agent("{\"wakeAgent\": true}"));
        assert!(wakes_agent("{\"wakeAgent\": 0}"));
        assert!(wakes_agent("[false]"));
        assert!(wakes_agent(""));
        assert!(wakes_agent("plain"));
    }

    #[test]
    fn hermes_wording_and_tails() {
        assert_eq!(
            with_output("a\nb", "Summarize."),
            "## Script Output\nThe following data was collected by a pre-run script. Use it as context for your analysis.\n\n```\na\nb\n```\n\nSummarize."
        );
        let long = format!("{}END", "x".repeat(5000));
        let t = stderr_tail(&long);
        assert!(t.ends_with("END") && t.chars().count() == STDERR_TAIL_CHARS + 1);
        assert_eq!(failure("a.sh", "exited with code 2", " boom \n"), "script `a.sh` exited with code 2\nstderr:\nboom");
        assert_eq!(failure("a.sh", "timed out after 2 s", ""), "script `a.sh` timed out after 2 s");
        assert_eq!((parse_timeout("2"), parse_timeout("2.9"), parse_timeout("0"), parse_timeout("x")), (Some(2), Some(2), None, None));
    }
}
