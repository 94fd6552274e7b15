//! The script runner (the adapter of `ports::ScriptRunner`): starts a job script as a child
//! process in its own process group, with exactly the environment it is given (nothing of the
//! gateway's is inherited), reads stdout up to the cap (the rest is read and dropped, so the
//! child never blocks on a full pipe) and keeps the end of stderr. At the timeout the whole
//! group is killed (a script's own children included) and the child is reaped.

use crate::ports::{ScriptError, ScriptOutput, ScriptRunner, ScriptSpec};
use async_trait::async_trait;
use std::process::Stdio;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes of stderr kept (the run record keeps fewer characters still).
const STDERR_KEEP_BYTES: usize = 16 * 1024;

/// Runs scripts with `tokio::process` (the production [`ScriptRunner`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessScripts;

#[async_trait]
impl ScriptRunner for ProcessScripts {
    async fn run(&self, spec: &ScriptSpec) -> Result<ScriptOutput, ScriptError> {
        let mut cmd = tokio::process::Command::new(&spec.program);
        cmd.arg(&spec.script)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(&spec.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| ScriptError { program: spec.program.clone(), reason: e.to_string() })?;
        let pid = child.id();
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let work = async {
            let (out, err, status) = tokio::join!(read_capped(stdout, spec.stdout_cap), read_tail(stderr), child.wait());
            (out, err, status)
        };
        match tokio::time::timeout(spec.timeout, work).await {
            Ok(((stdout, truncated), stderr, status)) => {
                let status = status.map_err(|e| ScriptError { program: spec.program.clone(), reason: e.to_string() })?;
                Ok(ScriptOutput { status: status.code(), stdout, truncated, stderr_tail: stderr, timed_out: false })
            }
            Err(_) => {
                kill_group(pid);
                let _ = child.kill().await;
                Ok(ScriptOutput { status: None, timed_out: true, ..ScriptOutput::default() })
            }
        }
    }
}

/// Kills the process group the child leads (its own children with it).
fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else { return };
    if let Err(e) = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL) {
        tracing::debug!(pid, error = %e, "could not kill the script's process group (it may have ended)");
    }
}

/// Reads all of `r`, keeping the first `cap` bytes; returns them (lossy UTF-8) and whether
/// more came.
async fn read_capped(r: Option<impl AsyncRead + Unpin>, cap: usize) -> (String, bool) {
    let Some(mut r) = r else { return (String::new(), false) };
    let (mut kept, mut buf, mut more) = (Vec::new(), vec![0u8; 8192], false);
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                more |= n > room;
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), more)
}

/// Reads all of `r`, keeping its last [`STDERR_KEEP_BYTES`] bytes.
async fn read_tail(r: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut r) = r else { return String::new() };
    let (mut kept, mut buf) = (Vec::new(), vec![0u8; 8192]);
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * STDERR_KEEP_BYTES {
                    kept.drain(..kept.len() - STDERR_KEEP_BYTES);
                }
            }
        }
    }
    let start = kept.len().saturating_sub(STDERR_KEEP_BYTES);
    String::from_utf8_lossy(&kept[start..]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    fn spec(dir: &std::path::Path, file: &str, body: &str, timeout_ms: u64) -> ScriptSpec {
        let script = dir.join(file);
        std::fs::write(&script, body).unwrap();
        let env = BTreeMap::from([("PATH".to_string(), std::env::var("PATH").unwrap_or_default())]);
        ScriptSpec {
            program: "bash".into(),
            script,
            cwd: dir.to_path_buf(),
            env,
            timeout: Duration::from_millis(timeout_ms),
            stdout_cap: 10,
        }
    }

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("hz-script-{tag}-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[tokio::test]
    async fn stdout_is_capped_and_stderr_and_the_code_come_back() {
        let d = tmp("cap");
        let s = spec(&d, "a.sh", "echo 0123456789abcdef; echo oops >&2; exit 3", 5000);
        let out = ProcessScripts.run(&s).await.unwrap();
        assert_eq!(
            (out.stdout.as_str(), out.truncated, out.stderr_tail.trim(), out.status, out.timed_out),
            ("0123456789", true, "oops", Some(3), false)
        );
        std::fs::remove_dir_all(d).ok();
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let d = tmp("kill");
        let marker = d.join("child.pid");
        let body = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let s = spec(&d, "b.sh", &body, 700);
        let t = Instant::now();
        let out = ProcessScripts.run(&s).await.unwrap();
        assert!(out.timed_out && t.elapsed() < Duration::from_secs(10), "{out:?}");
        let pid = std::fs::read_to_string(&marker).unwrap().trim().to_string();
        // The grandchild (`sleep 30`) died with its group.
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
        });
        assert!(gone, "sleep {pid} still runs");
        std::fs::remove_dir_all(d).ok();
    }

    #[tokio::test]
    async fn a_missing_interpreter_is_a_start_error() {
        let d = tmp("missing");
        let mut s = spec(&d, "c.sh", "true", 1000);
        s.program = "no-such-interpreter-xyz".into();
        assert!(ProcessScripts.run(&s).await.unwrap_err().to_string().contains("no-such-interpreter-xyz"));
        std::fs::remove_dir_all(d).ok();
    }
}
