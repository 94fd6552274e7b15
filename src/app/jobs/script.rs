//! A job's script (docs/jobs.md#script-jobs), run after the claim and before the model:
//! resolves the file under `$HERMES_HOME/scripts/` (a path that leaves it, through `..`, an
//! absolute path or a symlink, is refused), picks the interpreter by extension, gives the child
//! a minimal environment (`core::child_env`: never a gateway secret) and the job's `workdir`
//! (default the scripts folder), runs it through the [`crate::ports::ScriptRunner`] port within
//! `cron.script_timeout_seconds` (capped by a Lambda invocation's time left), and sorts the end:
//! output for the run, silent (empty stdout or `{"wakeAgent": false}`), or a failure with the
//! tail of stderr.

use crate::app::App;
use crate::core::job::Job;
use crate::core::script::{self, Interpreter};
use crate::ports::ScriptSpec;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a job's script ended, as the run uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::app) enum ScriptEnd {
    /// It printed something worth a run: stdout, trimmed (and marked when cut at the cap).
    Output(String),
    /// Nothing to report: why (empty stdout, or the wake gate).
    Silent(&'static str),
    /// It could not run, exited non-zero or timed out: the run's error.
    Failed(String),
}

impl App {
    /// Runs `job`'s script (`script` is its `script` field).
    pub(in crate::app) async fn run_script(&self, job: &Job, script: &str) -> ScriptEnd {
        let spec = match self.script_spec(job, script) {
            Ok(s) => s,
            Err(e) => return ScriptEnd::Failed(e),
        };
        tracing::info!(job_id = %job.id, script, timeout_s = spec.timeout.as_secs(), "running the job's script");
        let out = match self.inner.scripts.run(&spec).await {
            Ok(o) => o,
            Err(e) => return ScriptEnd::Failed(script::failure(script, &format!("could not start: {e}"), "")),
        };
        if out.timed_out {
            let why = format!("timed out after {} s", spec.timeout.as_secs_f64().round());
            return ScriptEnd::Failed(script::failure(script, &why, &out.stderr_tail));
        }
        match out.status {
            Some(0) => {}
            Some(code) => return ScriptEnd::Failed(script::failure(script, &format!("exited with code {code}"), &out.stderr_tail)),
            None => return ScriptEnd::Failed(script::failure(script, "was killed by a signal", &out.stderr_tail)),
        }
        let mut stdout = script::clean_stdout(&out.stdout);
        if stdout.is_empty() {
            return ScriptEnd::Silent("the script printed nothing");
        }
        if !script::wakes_agent(&stdout) {
            return ScriptEnd::Silent("the script said {\"wakeAgent\": false}");
        }
        if out.truncated {
            stdout.push_str(script::TRUNCATED);
        }
        ScriptEnd::Output(stdout)
    }

    /// Everything the runner needs, decided here; errors are the run's error text.
    fn script_spec(&self, job: &Job, script: &str) -> Result<ScriptSpec, String> {
        let path = self.resolve_script(script)?;
        let cwd = match &job.workdir {
            Some(w) if Path::new(w).is_dir() => PathBuf::from(w),
            Some(w) => return Err(format!("the job's workdir does not exist or is not a directory: {w}")),
            None => path.0.clone(),
        };
        let own = BTreeMap::from([("HERMES_HOME".to_string(), self.inner.home.display().to_string())]);
        let env = crate::core::child_env::child_env(self.inner.cfg.env.pairs(), &own);
        let limit = Duration::from_secs(self.inner.cfg.settings.cron.script_timeout_seconds);
        Ok(ScriptSpec {
            program: Interpreter::for_path(script).program().to_string(),
            script: path.1,
            cwd,
            env,
            timeout: crate::app::budget::turn_budget(limit),
            stdout_cap: script::STDOUT_CAP_BYTES,
        })
    }

    /// The scripts folder and the script's real path inside it (symlinks resolved).
    fn resolve_script(&self, script: &str) -> Result<(PathBuf, PathBuf), String> {
        let dir = self.inner.home.join(script::SCRIPTS_DIR);
        let real_dir =
            std::fs::canonicalize(&dir).map_err(|_| format!("Script not found: {script} (there is no {} folder)", dir.display()))?;
        let raw = Path::new(script.trim());
        let blocked = || format!("Blocked: script path resolves outside the scripts directory ({}): {script:?}", real_dir.display());
        if !raw.is_absolute() && script::check_path(script).is_err() {
            return Err(blocked());
        }
        let joined = if raw.is_absolute() { raw.to_path_buf() } else { real_dir.join(raw) };
        let real = match std::fs::canonicalize(&joined) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(format!("Script not found: {}", joined.display())),
            Err(e) => return Err(format!("Script cannot be read: {}: {e}", joined.display())),
        };
        if !real.starts_with(&real_dir) {
            return Err(blocked());
        }
        if !real.is_file() {
            return Err(format!("Script path is not a file: {}", real.display()));
        }
        Ok((real_dir, real))
    }
}

impl App {
    /// The files of `$HERMES_HOME/scripts/` a job may name (the dashboard's script picker):
    /// paths relative to the folder with `/`, sorted, hidden names and anything whose real path
    /// leaves the folder left out, at most 3 folders deep.
    pub fn script_files(&self) -> Vec<String> {
        let Ok(root) = std::fs::canonicalize(self.inner.home.join(script::SCRIPTS_DIR)) else { return Vec::new() };
        let mut out = Vec::new();
        list_files(&root, &root, 3, &mut out);
        out.sort();
        out
    }
}

/// Adds the files under `dir` (relative to `root`) to `out`, `depth` folders further down.
fn list_files(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(real) = std::fs::canonicalize(e.path()) else { continue };
        if name.starts_with('.') || !real.starts_with(root) {
            continue;
        }
        if real.is_dir() && depth > 0 {
            list_files(root, &e.path(), depth - 1, out);
        } else if real.is_file()
            && let Ok(rel) = e.path().strip_prefix(root)
        {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}
