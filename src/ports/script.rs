//! The script runner port: runs one job script as a child process (docs/jobs.md#script-jobs).
//! The app decides which file, which interpreter, which directory, which environment and how
//! long ([`ScriptSpec`]); the adapter (`clients::script`) starts the child with exactly that
//! environment (nothing inherited), reads its stdout up to the cap and the tail of its stderr,
//! and kills its whole process group when the time is up.

use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One script run, fully decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSpec {
    /// The interpreter, looked up on the child's `PATH` (`bash`, `python3`).
    pub program: String,
    /// The script file (resolved, inside the scripts folder).
    pub script: PathBuf,
    /// Working directory.
    pub cwd: PathBuf,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    /// When the child is killed.
    pub timeout: Duration,
    /// Most stdout bytes kept; the rest is read and dropped.
    pub stdout_cap: usize,
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptOutput {
    /// The exit code (`None`: killed by a signal, or by the timeout).
    pub status: Option<i32>,
    /// Stdout (lossy UTF-8), at most the cap.
    pub stdout: String,
    /// Stdout was longer than the cap.
    pub truncated: bool,
    /// The end of stderr (lossy UTF-8).
    pub stderr_tail: String,
    /// The child ran past its timeout and was killed.
    pub timed_out: bool,
}

/// The child could not be started.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cannot start `{program}`: {reason}")]
pub struct ScriptError {
    /// The interpreter.
    pub program: String,
    /// Why.
    pub reason: String,
}

/// Runs job scripts.
#[async_trait]
pub trait ScriptRunner: Send + Sync {
    /// Runs `spec` to its end or its timeout.
    async fn run(&self, spec: &ScriptSpec) -> Result<ScriptOutput, ScriptError>;
}
