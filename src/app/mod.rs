//! Use cases, written against the ports only: a chat message, the agent turn, fires, job
//! management, recovery and ticks.
//!
//! Transports see [`App`] only as a handle handing out three services (`services/`):
//! [`Sessions`], [`Jobs`] and [`Recovery`]. The ports and settings live in one private
//! `Inner` shared by all of them; the use-case code (`impl App` blocks in the rooms below,
//! and the tools) reaches them as `self.inner.*`.
//!
//! The rooms, one folder per use case, each with its own doc:
//! - [`sessions`]: a chat message from any platform, chat commands, media, import;
//! - [`turn`]: one agent turn under a lease (the model loop, context, streaming);
//! - [`jobs`]: job management, the one fire path, the run, delivery, fire tokens;
//! - `recovery`: sweeps, resume turns, shutdown, wakes for stored work;
//! - `memory`: the agent's memory stores and the flush turn;
//! - [`tools`]: the agent's tools and their registry;
//! - [`webhooks`]: webhook routes' deliveries: rate window, runs, delivery;
//! - `services`: the three handles the edges call.
//!
//! Beside them, leaves every room may use: `types` (what several rooms share), `cas` (the
//! compare-and-set loop), [`budget`] (a transport's deadline, a job run's spend meter), [`usage`],
//! `spend` (model prices and the jobs' daily spend), `skills`, [`crash`], `model_choice`
//! (which model a turn uses), `homes` (home channels).
//! Calls run one way: `services` → `sessions` / `jobs` / `recovery` → `turn` → `tools`;
//! no `use` line makes a loop between siblings (`tests/app_rooms.rs`).
//!
//! Knows no HTTP, SQL or vendor SDK: transports call in with parsed values, adapters are
//! reached through `Arc<dyn Port>`.

mod access;
pub mod api_server;
pub mod budget;
mod cas;
pub mod crash;
mod homes;
pub mod jobs;
mod memory;
mod model_choice;
mod recovery;
mod services;
pub mod sessions;
mod skill_actions;
mod skill_store;
mod skills;
mod spend;
pub mod tools;
pub mod turn;
mod types;
pub mod usage;
pub mod webhooks;

pub use crate::core::pairing::is_platform_name;
pub use jobs::manage::{SKIPPED_JOBS_KEY, SyncReport};
pub use jobs::status::LAST_TICK_KEY;
pub use memory::Memory;
pub use recovery::wake::Wake;
pub use services::{
    ApiServer, ApprovedView, Jobs, Paired, Pairing, PairingList, PendingView, Recovery, Reset, Sessions, Skills, SkillsImported, Webhooks,
    skill_exists,
};
pub use sessions::inbound::{Inbound, Outcome, ReplyPath};
pub use sessions::pairing::REFUSAL;
pub use tools::job_view;
pub use types::{FireStatus, TurnKind};
pub use webhooks::types::Accepted as WebhookDelivery;

use crate::config::Loaded;
use crate::core::ids::{KeyRules, Origin};
use crate::ports::{Clock, Delivery, Llm, LlmError, Store, StoreError, Target, Timers};
use std::path::PathBuf;
use std::sync::Arc;

/// The process's use cases: a cheap handle (one `Arc`) that hands out the services
/// ([`App::sessions`], [`App::jobs`], [`App::recovery`]) and a few read-only views of the
/// settings the edges need. Its ports and settings are private to `app`.
#[derive(Clone)]
pub struct App {
    pub(in crate::app) inner: Arc<Inner>,
}

/// The app's ports and settings, shared by every service; visible only inside `app`.
pub(in crate::app) struct Inner {
    /// Loaded configuration.
    pub(in crate::app) cfg: Arc<Loaded>,
    /// `$HERMES_HOME`.
    pub(in crate::app) home: PathBuf,
    /// The store.
    pub(in crate::app) store: Arc<dyn Store>,
    /// The model.
    pub(in crate::app) llm: Arc<dyn Llm>,
    /// Outbound platforms.
    pub(in crate::app) delivery: Arc<dyn Delivery>,
    /// Timer provider for job occurrences.
    pub(in crate::app) timers: Arc<dyn Timers>,
    /// Time.
    pub(in crate::app) clock: Arc<dyn Clock>,
    /// This process's live state (accepting flag, running turns). Never needed for
    /// correctness across processes: the store is the truth.
    pub(in crate::app) live: recovery::Live,
    /// The tools the agent may be offered; built once at wiring time.
    pub(in crate::app) tools: Arc<tools::ToolRegistry>,
    /// The fire-token verifier, built once (its JWKS cache lives with the process).
    pub(in crate::app) fire_auth: jobs::fire_token::FireAuth,
    /// Fires running in this process (for the idle check).
    pub(in crate::app) fires: recovery::wake::Fires,
    /// The skills index, scanned lazily and cached with the directory's signature.
    pub(in crate::app) skills: skills::SkillCache,
    /// The configured MCP servers and this process's connections to them.
    pub(in crate::app) mcp: tools::mcp::McpHub,
    /// Usage counted in memory until the next flush (docs/design.md#usage).
    pub(in crate::app) usage: usage::Usage,
    /// The agent's default model (`/model --global`) as last read.
    pub(in crate::app) default_model: model_choice::DefaultModel,
    /// Speech to text for voice notes.
    pub(in crate::app) stt: Arc<dyn crate::ports::Transcriber>,
    /// Runs job scripts.
    pub(in crate::app) scripts: Arc<dyn crate::ports::ScriptRunner>,
    /// Job runs in which a tool call with an effect started (retry of a run that had none).
    pub(in crate::app) effects: types::EffectLog,
    /// The webhook routes' rate windows in this process (CONTRACT §16).
    pub(in crate::app) webhook_rates: webhooks::types::Rates,
}

/// What an [`App`] is built from: settings and adapters, chosen once at wiring time.
pub struct Parts {
    /// Loaded configuration.
    pub cfg: Arc<Loaded>,
    /// `$HERMES_HOME`.
    pub home: PathBuf,
    /// The store.
    pub store: Arc<dyn Store>,
    /// The model.
    pub llm: Arc<dyn Llm>,
    /// Outbound platforms.
    pub delivery: Arc<dyn Delivery>,
    /// Timer provider for job occurrences.
    pub timers: Arc<dyn Timers>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The tools the agent may be offered.
    pub tools: Arc<tools::ToolRegistry>,
    /// The lease owner id of this process (default: `<host>:<pid>`).
    pub owner: Option<String>,
    /// Where the fire-token verifier fetches a JWKS (`cron.chronos.jwks_url`).
    pub jwks: Arc<dyn crate::ports::JwksSource>,
    /// Speech to text for voice notes.
    pub stt: Arc<dyn crate::ports::Transcriber>,
    /// Opens sessions to the configured MCP servers.
    pub mcp: Arc<dyn crate::ports::McpConnector>,
    /// Runs job scripts.
    pub scripts: Arc<dyn crate::ports::ScriptRunner>,
}

/// Use-case failures; mapped to HTTP in `http/error.rs`.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request is malformed; nothing was changed.
    #[error("{0}")]
    BadRequest(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The model failed; the user's message is kept in the transcript.
    #[error("the model failed: {0}")]
    Model(#[from] LlmError),
    /// A compare-and-set kept losing (heavy contention).
    #[error("the session is busy; try again")]
    Contended,
    /// No such job (or session).
    #[error("{0}")]
    NotFound(String),
    /// A policy refuses what was asked (a job target outside the delivery policy,
    /// docs/who-sees-what.md); nothing was changed. A 400 on the API, exit 2 on the CLI.
    #[error("{0}")]
    NotAllowed(String),
}

impl App {
    /// Builds the app from its parts (once per process, or per test).
    pub fn new(parts: Parts) -> Self {
        let Parts { cfg, home, store, llm, delivery, timers, clock, tools, owner, jwks, stt, mcp, scripts } = parts;
        let fire_auth = jobs::fire_token::FireAuth::from_config(&cfg, jwks);
        let mcp = tools::mcp::McpHub::from_settings(&cfg.settings, std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some(), mcp);
        let mut live = recovery::Live::default();
        if let Some(owner) = owner {
            live.owner = owner;
        }
        Self {
            inner: Arc::new(Inner {
                cfg,
                home,
                store,
                llm,
                delivery,
                timers,
                clock,
                live,
                tools,
                fire_auth,
                fires: recovery::wake::Fires::default(),
                skills: skills::SkillCache::default(),
                mcp,
                usage: usage::Usage::default(),
                default_model: model_choice::DefaultModel::default(),
                stt,
                scripts,
                effects: types::EffectLog::default(),
                webhook_rates: webhooks::types::Rates::default(),
            }),
        }
    }

    /// The profile whose sessions this app serves.
    pub fn profile(&self) -> &crate::core::profile::Profile {
        &self.inner.cfg.profile
    }

    /// The session-key switches from settings.
    pub(in crate::app) fn key_rules(&self) -> KeyRules {
        KeyRules {
            group_sessions_per_user: self.inner.cfg.settings.group_sessions_per_user,
            thread_sessions_per_user: self.inner.cfg.settings.thread_sessions_per_user,
        }
    }

    /// Whether replies to this origin go out through a platform channel (not only returned
    /// to the caller): the delivery port knows which platforms it reaches.
    pub(in crate::app) fn delivers_to(&self, origin: &Origin) -> bool {
        self.inner.delivery.delivers_to(&origin.platform)
    }

    /// Sends a reply produced while handling one message along its [`ReplyPath`]: to the
    /// origin, or nowhere when the transport answers from the outcome itself.
    pub(in crate::app) async fn reply(&self, origin: &Origin, path: ReplyPath, text: &str) -> bool {
        match path {
            ReplyPath::Origin => self.send_to_origin(origin, text).await,
            ReplyPath::Caller => false,
        }
    }

    /// Sends `text` to an origin's chat; failures are logged, never lost silently.
    pub(in crate::app) async fn send_to_origin(&self, origin: &Origin, text: &str) -> bool {
        if !self.delivers_to(origin) || text.is_empty() {
            return false;
        }
        let target = Target { platform: origin.platform.clone(), chat_id: origin.chat_id.clone(), thread_id: origin.thread_id.clone() };
        match self.inner.delivery.send(&target, text).await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(platform = %target.platform, chat_id = %target.chat_id, error = %e, "delivery to origin failed");
                false
            }
        }
    }

    /// The system prompt: `$HERMES_HOME/SOUL.md` when present, else the default.
    pub(in crate::app) fn system_prompt(&self) -> String {
        std::fs::read_to_string(self.inner.home.join("SOUL.md"))
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| crate::core::prompt::DEFAULT_SYSTEM_PROMPT.to_string())
    }
}

#[cfg(test)]
pub(crate) mod budget_tests;
#[cfg(test)]
pub(crate) mod skill_tests;
#[cfg(test)]
mod tests;
