//! Restart recovery (docs/design.md#recovery): sweeps that find interrupted turns and stored
//! work without a running turn, resume turns, and the clean-shutdown protocol of `serve`;
//! and [`wake`], which makes sure every stored message has someone to wake it before a
//! process goes idle (docs/design.md#wakes).
//!
//! Calls run one way: the sweeps reach turns through `app::turn`; `wake` calls nothing here.

pub(in crate::app) mod wake;

use crate::app::{App, AppError};
use crate::core::ids::{Origin, SessionKey};
use crate::core::recovery::{self, RESTART_INTERRUPTED, RESTART_NOTICE, SHUTDOWN_TIMEOUT};
use crate::core::session::Lease;
use crate::ports::StoreError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Store record written only after a complete drain on shutdown; one per host
/// (`clean_shutdown:<host>`, see [`clean_shutdown_key`]).
pub const CLEAN_SHUTDOWN_KEY: &str = "clean_shutdown";

/// The clean-shutdown marker of the host of `owner` (`<host>:<pid>`): each `serve` host
/// sharing a store judges only its own exit (docs/design.md#recovery).
pub fn clean_shutdown_key(owner: &str) -> String {
    format!("{CLEAN_SHUTDOWN_KEY}:{}", recovery::owner_host(owner))
}

/// Store record of a host that has started `serve` on this store (`started:<host>`), so the
/// first start says so instead of reporting an unclean exit that never happened.
pub fn started_key(owner: &str) -> String {
    format!("started:{}", recovery::owner_host(owner))
}

/// Per-process live state: whether new turns are accepted, and the turns running here.
#[derive(Debug)]
pub struct Live {
    accepting: AtomicBool,
    /// `<host>:<pid>` of this process.
    pub owner: String,
    running: Mutex<HashMap<SessionKey, (String, Origin)>>,
    /// Per key: wakes a turn of this process waiting on its model when a stop was stored
    /// here (docs/design.md#turn), so it need not poll the store often.
    stops: Mutex<HashMap<SessionKey, std::sync::Arc<tokio::sync::Notify>>>,
}

impl Default for Live {
    fn default() -> Self {
        let host = std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "localhost".into());
        Self {
            accepting: AtomicBool::new(true),
            owner: recovery::owner_id(&host, std::process::id()),
            running: Mutex::new(HashMap::new()),
            stops: Mutex::default(),
        }
    }
}

impl Live {
    /// Whether new turns may start.
    pub fn accepting(&self) -> bool {
        self.accepting.load(Ordering::SeqCst)
    }

    pub(crate) fn register(&self, key: &SessionKey, token: &str, origin: &Origin) {
        self.lock().insert(key.clone(), (token.to_string(), origin.clone()));
    }

    pub(crate) fn unregister(&self, key: &SessionKey, token: &str) {
        let mut g = self.lock();
        if g.get(key).is_some_and(|(t, _)| t == token) {
            g.remove(key);
            self.stops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(key);
        }
    }

    /// The stop signal of `key`'s turns in this process (created on first use).
    pub(crate) fn stop_signal(&self, key: &SessionKey) -> std::sync::Arc<tokio::sync::Notify> {
        self.stops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(key.clone()).or_default().clone()
    }

    /// Tells a turn of `key` running here that a stop (or a newer message) was stored for it;
    /// the turn confirms it with one read. No-op when no turn of the key waits here.
    pub(crate) fn signal_stop(&self, key: &SessionKey) {
        if let Some(n) = self.stops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(key) {
            n.notify_one();
        }
    }

    /// Whether a turn of this process runs under `token`.
    pub(crate) fn runs_token(&self, token: &str) -> bool {
        self.lock().values().any(|(t, _)| t == token)
    }

    /// Turns running in this process.
    pub fn running(&self) -> Vec<(SessionKey, String, Origin)> {
        self.lock().iter().map(|(k, (t, o))| (k.clone(), t.clone(), o.clone())).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionKey, (String, Origin)>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether a process with this pid runs on this host.
fn pid_alive(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    if proc.is_dir() { proc.join(pid.to_string()).exists() } else { false }
}

impl App {
    /// Whether a lease is an interrupted turn (see [`recovery::abandoned`]).
    pub(in crate::app) fn lease_abandoned(&self, lease: &Lease, unclean_start: bool) -> bool {
        // After an unclean exit a restarted process can have the same owner id as the dead
        // one (a container's pid 1 on the same host name): a lease with our id that no turn
        // of ours runs is the dead process's.
        if unclean_start && lease.owner == self.inner.live.owner && !self.inner.live.runs_token(&lease.token) {
            return true;
        }
        recovery::abandoned(lease, self.inner.clock.now(), &self.inner.live.owner, pid_alive, unclean_start)
    }

    /// Marks the key's interrupted turn, if its lease is still the one observed.
    pub(in crate::app) async fn mark_interrupted(&self, key: &SessionKey, observed: &Lease) -> Result<(), AppError> {
        let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok(()) };
        if e.lease.as_ref().is_none_or(|l| l.token != observed.token) {
            return Ok(());
        }
        recovery::mark_interrupted(&mut e, RESTART_INTERRUPTED, self.inner.clock.now(), self.inner.cfg.settings.restart_loop_threshold);
        tracing::warn!(session_key = %key, interruptions = e.interruptions, suspended = e.suspended, "interrupted turn found");
        match self.inner.store.put_entry(&e, &[]).await {
            Ok(_) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// One sweep over keys that need attention: marks interrupted turns, then wakes every
    /// key with stored work and no running turn. With `wait`, returns after those turns.
    pub(in crate::app) async fn sweep(&self, unclean_start: bool, wait: bool) -> Result<usize, AppError> {
        self.recover_jobs(unclean_start).await?;
        let keys = self.inner.store.wake_candidates(self.inner.clock.now(), unclean_start).await?;
        let mut tasks = Vec::new();
        for key in keys {
            if unclean_start
                && let Some(e) = self.inner.store.get_entry(&key).await?
                && let Some(l) = e.lease.as_ref().filter(|l| self.lease_abandoned(l, true))
            {
                self.mark_interrupted(&key, l).await?;
            }
            let app = self.clone();
            tasks.push(tokio::spawn(async move {
                if let Err(e) = app.wake_key(&key).await {
                    tracing::error!(session_key = %key, error = %e, "wake failed");
                }
            }));
        }
        let n = tasks.len();
        if wait {
            for t in tasks {
                t.await.ok();
            }
        }
        Ok(n)
    }

    /// Startup recovery of `serve`: consumes this host's clean-shutdown marker; without it
    /// every lease of this host (another pid) counts as interrupted. Other hosts' leases are
    /// taken only once expired. The first start of a host on this store (no `started:` record)
    /// is logged as such, not as an unclean exit; it sweeps as one all the same.
    pub(in crate::app) async fn startup_sweep(&self) -> Result<bool, AppError> {
        let owner = &self.inner.live.owner;
        let marker = clean_shutdown_key(owner);
        let clean = self.inner.store.get_meta(&marker).await?.is_some();
        let first = !clean && self.inner.store.get_meta(&started_key(owner)).await?.is_none();
        self.inner.store.put_meta(&started_key(owner), &self.inner.clock.now().to_rfc3339()).await?;
        self.inner.store.delete_meta(&marker).await?;
        let n = self.sweep(!clean, false).await?;
        let previous_exit = match (clean, first) {
            (true, _) => "clean",
            (false, true) => "none (first start)",
            (false, false) => "unclean",
        };
        tracing::info!(previous_exit, woken = n, "startup recovery sweep");
        Ok(clean)
    }

    /// Clean shutdown, step 1: stop taking turns, tell each chat with a running turn, and
    /// mark those sessions `resume_pending(shutdown_timeout)` before draining.
    pub(in crate::app) async fn begin_shutdown(&self) {
        self.inner.live.accepting.store(false, Ordering::SeqCst);
        for (key, token, origin) in self.inner.live.running() {
            self.send_to_origin(&origin, RESTART_NOTICE).await;
            for _ in 0..16 {
                let Ok(Some(mut e)) = self.inner.store.get_entry(&key).await else { break };
                if e.lease.as_ref().is_none_or(|l| l.token != token) {
                    break;
                }
                e.resume_pending = true;
                e.resume_reason = Some(SHUTDOWN_TIMEOUT.into());
                e.last_resume_marked_at = Some(self.inner.clock.now());
                match self.inner.store.put_entry(&e, &[]).await {
                    Err(StoreError::Conflict(_)) => continue,
                    Ok(_) => break,
                    Err(err) => {
                        tracing::error!(session_key = %key, error = %err, "could not mark session for resume");
                        break;
                    }
                }
            }
        }
    }

    /// Clean shutdown, step 2: waits up to `timeout` for running turns; writes the
    /// clean-shutdown marker only if they all finished. Returns whether they did.
    pub(in crate::app) async fn finish_shutdown(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.inner.live.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let drained = self.inner.live.running().is_empty();
        if drained {
            let marker = clean_shutdown_key(&self.inner.live.owner);
            if let Err(e) = self.inner.store.put_meta(&marker, &self.inner.clock.now().to_rfc3339()).await {
                tracing::error!(error = %e, "could not write the clean-shutdown marker");
                return false;
            }
        } else {
            tracing::warn!(still_running = self.inner.live.running().len(), "drain timed out; sessions stay marked for resume");
        }
        drained
    }
}
