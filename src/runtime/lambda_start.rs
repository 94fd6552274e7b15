//! Lazy start on Lambda (docs/design.md#lazy-start): the init makes no store request
//! and creates no file, so the start-up work a sandbox owes runs on its first invocation
//! instead, split by what the first event needs.
//!
//! - Before the first event is handled: open the store (a SQLite file is created here; an
//!   open that fails fails this invocation, and the next one tries again), offer the MCP
//!   servers' cached tools, and sync a bundled `jobs.json`. The event may read what these
//!   give: a fire event for a job the deployed `jobs.json` changed or removed must fire the
//!   deployed job (or nothing), a turn must see the MCP tools and the declared jobs.
//! - After the first response is posted (the settle phase): one recovery sweep, then the
//!   timer reconcile. Neither changes how the first event is answered: the sweep wakes
//!   other sandboxes' interrupted work, whose turns finish in the same settle phase.
//!
//! Not `startup_sweep`: many sandboxes start and stop independently, so there is no
//! clean-shutdown marker to trust; expired leases are the only evidence of interruption.

use crate::app::App;
use crate::runtime::BaseStore;
use std::sync::atomic::{AtomicBool, Ordering};

/// The first-invocation work of one sandbox, done once.
pub(super) struct FirstStart {
    app: App,
    base: BaseStore,
    before: tokio::sync::OnceCell<()>,
    after: AtomicBool,
}

/// The store could not be opened for the first event (logged; the invocation fails with it).
#[derive(Debug, thiserror::Error)]
#[error("cannot start: {0}")]
pub(super) struct NotStarted(String);

impl FirstStart {
    /// The work owed by `app` (the function's own profile) over `base`, not done yet.
    pub(super) fn new(app: App, base: BaseStore) -> Self {
        Self { app, base, before: tokio::sync::OnceCell::new(), after: AtomicBool::new(false) }
    }

    /// Before an event is handled: on the first one (and after an open that failed), opens
    /// the store, warms the MCP tools and syncs `jobs.json`; later, nothing.
    pub(super) async fn before_event(&self) -> Result<(), NotStarted> {
        let started = self.before.get_or_try_init(|| async {
            if let Err(e) = self.base.ready().await {
                tracing::error!(error = %e, "cannot open the store: this invocation fails, the next one tries again");
                return Err(NotStarted(e.to_string()));
            }
            super::offer_tools_and_sync_jobs(&self.app).await;
            Ok(())
        });
        started.await.map(|_| ())
    }

    /// After a response is posted (the settle phase), the first time the work before the
    /// event was done: one recovery sweep (its turns waited for), then the timers reconciled
    /// (the function ARN is known by now). Later, nothing.
    pub(super) async fn after_event(&self) {
        if !self.before.initialized() || self.after.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.app.recovery().sweep(false, true).await {
            Ok(n) => tracing::info!(woken = n, "first-invocation recovery sweep"),
            Err(e) => tracing::error!(error = %e, "first-invocation recovery sweep failed"),
        }
        self.app.recovery().reconcile_if_managed().await;
    }
}
