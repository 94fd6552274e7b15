//! The agent's tools. A tool is one file: a type implementing [`Tool`] (name, description,
//! JSON schema of its arguments, `call`). Everything a tool may touch comes through its
//! [`ToolCtx`] (the app's ports and services, the session, the caller's origin, the turn kind,
//! the clock, the turn's deadline). The [`ToolRegistry`] is built once at wiring time
//! ([`builtin`]), decides what a turn is offered, and runs calls by name: unknown names,
//! malformed arguments, tool errors and time-outs go back to the model as the tool result,
//! never as a failed turn. Every tool names its Hermes toolset, and the registry answers "the
//! tools of these toolsets".
//!
//! Must not know: the turn loop (it only sees the registry), transports or adapters.
//! How to add one: docs/design.md#add-tool.

#[cfg(test)]
mod access_tests;
mod clarify;
mod cronjob;
mod current_time;
mod delegate;
pub mod mcp;
mod memory;
mod registry;
#[cfg(test)]
mod scoped_tests;
#[cfg(test)]
mod search_tests;
mod send_message;
mod session_search;
mod skill_manage;
mod skills;
#[cfg(test)]
mod tests;
mod text_to_speech;
mod todo;
pub mod toolsets;
mod turn_hooks;
mod vision_analyze;
mod web_extract;
mod web_fetch;
mod web_search;

pub use cronjob::job_view;
pub use delegate::CHILD_BLOCKED_TOOLS;
pub use registry::{DuplicateTool, ToolRegistry, ToolResult, Toolset, job_toolsets};
pub use turn_hooks::{ChildOutcome, ChildTask, TurnHooks};
pub use web_fetch::{Limits as WebFetchLimits, WebFetch};

use crate::app::App;
pub use crate::app::types::TurnKind;
use crate::core::ids::{Origin, SessionId};
use crate::ports::{Fetcher, Llm, Resolve, Speaker, WebBackend};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The upstreams the built-in tools reach, chosen at wiring time (`runtime`) and handed in.
#[derive(Clone)]
pub struct ToolPorts {
    /// Pinned GETs for the web tools.
    pub fetcher: Arc<dyn Fetcher>,
    /// Name lookups for the web tools' SSRF checks.
    pub dns: Arc<dyn Resolve>,
    /// `web_search`'s vendor (`None`: no backend configured, the tool is not offered).
    pub web_search: Option<Arc<dyn WebBackend>>,
    /// `web_extract`'s vendor (`None`: not offered).
    pub web_extract: Option<Arc<dyn WebBackend>>,
    /// `vision_analyze`'s model (`auxiliary.vision.*` or the main model with vision; `None`: not offered).
    pub vision: Option<Arc<dyn Llm>>,
    /// `text_to_speech`'s vendor (`tts.*`; `None`: not offered).
    pub speech: Option<Arc<dyn Speaker>>,
}

/// The registry of the tools this build ships, in the order they are offered. Adding a
/// tool is one line here.
pub fn builtin(ports: &ToolPorts) -> ToolRegistry {
    let tools: [Arc<dyn Tool>; 16] = [
        Arc::new(current_time::CurrentTime),
        Arc::new(cronjob::Cronjob),
        Arc::new(memory::MemoryTool),
        Arc::new(send_message::SendMessage),
        Arc::new(skills::SkillsList),
        Arc::new(skills::SkillView),
        Arc::new(skill_manage::SkillManage),
        Arc::new(web_fetch::WebFetch::new(ports.fetcher.clone(), ports.dns.clone(), WebFetchLimits::default())),
        Arc::new(web_search::WebSearch::new(ports.web_search.clone())),
        Arc::new(web_extract::WebExtract::new(ports.web_extract.clone(), ports.dns.clone())),
        Arc::new(session_search::SessionSearch),
        Arc::new(todo::Todo),
        Arc::new(clarify::Clarify),
        Arc::new(delegate::DelegateTask),
        Arc::new(vision_analyze::VisionAnalyze::new(ports.vision.clone(), ports.fetcher.clone(), ports.dns.clone())),
        Arc::new(text_to_speech::TextToSpeech::new(ports.speech.clone())),
    ];
    let registry = ToolRegistry::default();
    for tool in tools {
        if let Err(e) = registry.register(tool) {
            tracing::error!(error = %e, "built-in tool not registered");
        }
    }
    registry
}

/// One capability the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by (unique in a registry; may be built at run time, as
    /// MCP tools' `mcp_<server>_<tool>` are).
    fn name(&self) -> &str;

    /// The Hermes toolset it belongs to (`memory`, `web`, `skills`, `cronjob`, …; an MCP
    /// server's tools are `mcp-<server>`): what `enabled_toolsets` and `platform_toolsets`
    /// name to switch it on ([`ToolRegistry::of_toolsets`]).
    fn toolset(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments (an `object` schema).
    fn schema(&self) -> Value;

    /// Whether this turn is offered the tool (default: always). A tool not offered cannot be
    /// called in that turn either: the call gets "unknown tool".
    fn offered(&self, _ctx: &ToolCtx<'_>) -> bool {
        true
    }

    /// The longest one call may take; the turn's deadline bounds it as well (default: only
    /// the deadline).
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether a call with `args` may change something outside the run (send, write, call
    /// an MCP server): a job run that started one is never retried
    /// (docs/design/jobs.md#retry). Default: yes; read-only tools say no.
    fn has_effect(&self, _args: &Value) -> bool {
        true
    }

    /// Runs one call. `args` is always a JSON object (the registry checks); see
    /// [`parse_args`] for typed arguments.
    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError>;
}

/// What a tool call may see and use, built by the turn loop for one turn.
pub struct ToolCtx<'a> {
    /// The app's ports and services (store, delivery, jobs, settings, clock).
    pub app: &'a App,
    /// The conversation the call happens in.
    pub session_id: &'a SessionId,
    /// The chat the turn runs for (`None` in job runs).
    pub origin: Option<&'a Origin>,
    /// Chat turn or job run.
    pub kind: TurnKind,
    /// When the turn's time budget ends (on Lambda, the invocation's deadline less its
    /// margin); a call still running then is cancelled and reported to the model.
    pub deadline: Option<Instant>,
    /// The id of the tool call being run (set by [`Toolset::execute`] for each call; `None`
    /// when the context is built for a whole turn). Tools with side effects key their
    /// at-most-once records on it, so a replayed call does not act twice.
    pub call_id: Option<&'a str>,
    /// The turn loop running this call, for the tools that steer it (`clarify` ends the
    /// turn, `delegate_task` runs child loops); `None` where no turn loop is behind the call
    /// (a delegated child's own calls).
    pub turn: Option<&'a dyn TurnHooks>,
}

impl ToolCtx<'_> {
    /// The current instant, from the app's clock port.
    pub fn now(&self) -> DateTime<Utc> {
        self.app.inner.clock.now()
    }

    /// Time left before the turn's deadline (`None`: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }
}

/// What a call returns to the model: JSON (sent as its text) or plain text.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A JSON value, serialized for the model.
    Json(Value),
    /// Text, sent as is.
    Text(String),
}

impl ToolOutput {
    /// The text the model sees.
    pub fn into_text(self) -> String {
        match self {
            Self::Json(v) => v.to_string(),
            Self::Text(t) => t,
        }
    }
}

impl From<Value> for ToolOutput {
    fn from(v: Value) -> Self {
        Self::Json(v)
    }
}

impl From<String> for ToolOutput {
    fn from(t: String) -> Self {
        Self::Text(t)
    }
}

/// Why a call failed; the model receives `{"error": "<message>"}` and the turn goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// No tool of that name is offered in this turn.
    #[error("unknown tool `{0}`")]
    Unknown(String),
    /// The arguments are not what the tool takes.
    #[error("{0}")]
    BadArgs(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The call outlived its time and was cancelled.
    #[error("`{0}` did not finish in time and was cancelled")]
    TimedOut(String),
}

/// Decodes a call's arguments into `T`; a mismatch is [`ToolError::BadArgs`].
pub fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::BadArgs(format!("invalid arguments: {e}")))
}
