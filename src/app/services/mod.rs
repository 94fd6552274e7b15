//! The app's public face: three services handed out by [`App`], each a cheap handle over the
//! shared ports and settings, plus the read-only views of the settings the edges need.
//! Transports (HTTP routes, channels, the CLI, the ticker, `serve`, the Lambda entry) call
//! these methods and never reach a store, a port or a setting themselves.
//!
//! - [`Sessions`]: inbound messages (commands, turns, the queue), listing, showing and
//!   resetting conversations, importing Hermes sessions.
//! - [`Jobs`]: job CRUD, jobs.json sync, fires and manual runs, run history, timer
//!   reconciliation, scheduler status.
//! - [`Pairing`]: DM pairing's pending codes and approved users (list, approve, revoke).
//! - [`Skills`]: the agent's skills (list, show, export, delete, import).
//! - [`Recovery`]: sweeps, the ticker's pass, shutdown and drain.
//! - [`Webhooks`]: webhook routes (lookup, rate window, delivery ids, runs).

mod api_server;
mod jobs;
mod pairing;
mod recovery;
mod sessions;
mod skills;
mod webhooks;

pub use api_server::ApiServer;
pub use jobs::Jobs;
pub use pairing::{ApprovedView, Paired, Pairing, PairingList, PendingView};
pub use recovery::Recovery;
pub use sessions::{Reset, Sessions};
pub use skills::{Skills, SkillsImported, skill_exists};
pub use webhooks::Webhooks;

use crate::app::App;
use crate::config::provider::ProviderChoice;
use crate::ports::TimerProvider;
use chrono::{DateTime, Utc};
use secrecy::SecretString;
use std::path::{Path, PathBuf};

impl App {
    /// Conversations: inbound messages, listing, showing, resetting, importing.
    pub fn sessions(&self) -> Sessions {
        Sessions { app: self.clone() }
    }

    /// Scheduled jobs: CRUD, sync, fires, runs, timers, status.
    pub fn jobs(&self) -> Jobs {
        Jobs { app: self.clone() }
    }

    /// Restart recovery, the ticker's pass, shutdown and drain.
    pub fn recovery(&self) -> Recovery {
        Recovery { app: self.clone() }
    }

    /// Webhook routes: lookup, rate window, delivery ids, runs (CONTRACT §16).
    pub fn webhooks(&self) -> Webhooks {
        Webhooks { app: self.clone() }
    }

    /// The current instant, from the clock port.
    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// The configured timezone (cron and naive times, display).
    pub fn timezone(&self) -> chrono_tz::Tz {
        self.inner.cfg.tz
    }

    /// `$HERMES_HOME`.
    pub fn home(&self) -> &Path {
        &self.inner.home
    }

    /// Installed skills: `$HERMES_HOME/skills`.
    pub fn skills_dir(&self) -> PathBuf {
        self.inner.home.join("skills")
    }

    /// The declared-jobs file (`cron.jobs_file` under the home).
    pub fn jobs_file(&self) -> PathBuf {
        self.inner.home.join(&self.inner.cfg.settings.cron.jobs_file)
    }

    /// `API_SERVER_KEY`, when set.
    pub fn configured_api_key(&self) -> Option<SecretString> {
        self.inner.cfg.secrets.api_server_key.clone()
    }

    /// The timer provider in use.
    pub fn provider(&self) -> TimerProvider {
        self.inner.timers.provider()
    }

    /// Tells the timer provider what its timers should call (the Lambda entry's own ARN,
    /// learned from an invocation context).
    pub fn learn_timer_target(&self, target: &str) {
        self.inner.timers.learn_target(target);
    }

    /// Which timer provider the settings choose, and why (`on_lambda`: inside the Lambda
    /// runtime).
    pub fn provider_choice(&self, on_lambda: bool) -> ProviderChoice {
        crate::config::provider::choose(&self.inner.cfg, on_lambda)
    }

    /// The store adapter's name (`sqlite`, `dynamodb`), for health and logs.
    pub fn store_kind(&self) -> &'static str {
        self.inner.store.kind()
    }

    /// The model client's name, for logs.
    pub fn model_name(&self) -> &'static str {
        self.inner.llm.name()
    }

    /// The loaded settings, for tests that build more wiring (a channel registry) from them.
    #[cfg(test)]
    pub fn loaded(&self) -> &crate::config::Loaded {
        &self.inner.cfg
    }

    /// The store, for tests outside `app` that set up or inspect records directly.
    #[cfg(test)]
    pub(crate) fn test_store(&self) -> &std::sync::Arc<dyn crate::ports::Store> {
        &self.inner.store
    }
}
