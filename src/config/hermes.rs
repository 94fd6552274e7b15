//! Hermes' own config sections read in their Hermes places (docs/design.md#hermes): `agent`, `display`,
//! `memory`, `compression`, `streaming`, `prompt_caching`, `mcp_servers`, `fallback_model`
//! and `fallback_providers`, the overlay that lets them win over the flat keys of §5, and the
//! list of Hermes sections hermes-zero ignores.

use super::types::{BusyInputMode, Settings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `agent:` (Hermes). Only the keys hermes-zero acts on.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSettings {
    /// Tool-calling iterations per turn (wins over `model.max_iterations`).
    pub max_turns: Option<u32>,
    /// Seconds `serve` drains on shutdown (wins over the flat `restart_drain_timeout`).
    pub restart_drain_timeout: Option<u64>,
    /// Attempts per model before the fallback chain takes over (429/5xx/timeout).
    pub api_max_retries: u32,
    /// Toolsets never offered, whatever else says (Hermes applies it last).
    pub disabled_toolsets: Vec<String>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self { max_turns: None, restart_drain_timeout: None, api_max_retries: 3, disabled_toolsets: Vec::new() }
    }
}

/// `display:` (Hermes). Only `busy_input_mode` matters to a gateway.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DisplaySettings {
    /// interrupt | queue | steer (steer behaves as interrupt); wins over the flat key.
    pub busy_input_mode: Option<BusyInputMode>,
}

/// `memory:` (Hermes), kept for the memory tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySettings {
    /// Agent notes (`memories/MEMORY.md`) on.
    pub memory_enabled: bool,
    /// User profile (`memories/USER.md`) on.
    pub user_profile_enabled: bool,
    /// Character cap of MEMORY.md.
    pub memory_char_limit: usize,
    /// Character cap of USER.md.
    pub user_char_limit: usize,
    /// Remind the agent to save memories every N user turns (0: never).
    pub nudge_interval: u32,
    /// User turns a session needs before a reset gives the agent a turn to save memories.
    pub flush_min_turns: usize,
    /// External memory provider (empty: built-in).
    pub provider: String,
    /// One `user` profile per user or one shared (Hermes); unset: per user when the allow
    /// lists hold more than one user (docs/who-sees-what.md).
    pub user_profile: Option<UserProfileMode>,
}

/// `memory.user_profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UserProfileMode {
    /// Each user has their own profile.
    PerUser,
    /// One profile for everybody (Hermes' `USER.md`).
    Shared,
}

impl MemorySettings {
    /// Whether the store `t` is on.
    pub fn enabled(&self, t: crate::core::memory::Target) -> bool {
        match t {
            crate::core::memory::Target::Memory => self.memory_enabled,
            crate::core::memory::Target::User => self.user_profile_enabled,
        }
    }

    /// The char limit of the store `t`.
    pub fn limit(&self, t: crate::core::memory::Target) -> usize {
        match t {
            crate::core::memory::Target::Memory => self.memory_char_limit,
            crate::core::memory::Target::User => self.user_char_limit,
        }
    }
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            memory_enabled: true,
            user_profile_enabled: true,
            memory_char_limit: 2200,
            user_char_limit: 1375,
            nudge_interval: 10,
            flush_min_turns: 6,
            provider: String::new(),
            user_profile: None,
        }
    }
}

/// `compression:` (Hermes), kept for context compression.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionSettings {
    /// Compress long conversations.
    pub enabled: bool,
    /// Share of the context window that triggers compression.
    pub threshold: f64,
    /// Share of the threshold kept as recent tail.
    pub target_ratio: f64,
    /// Newest messages never compressed.
    pub protect_last_n: usize,
    /// Oldest non-system messages never compressed.
    pub protect_first_n: usize,
}

impl Default for CompressionSettings {
    fn default() -> Self {
        Self { enabled: true, threshold: 0.5, target_ratio: 0.2, protect_last_n: 20, protect_first_n: 3 }
    }
}

/// `streaming.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamTransport {
    /// Hermes' default; means `edit` here.
    Auto,
    /// Native drafts; means `edit` here.
    Draft,
    /// Progressive message edits.
    Edit,
    /// No streaming.
    Off,
}

/// `streaming:` (Hermes), kept for reply streaming.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamingSettings {
    /// Master switch.
    pub enabled: bool,
    /// How partial replies reach the platform.
    pub transport: StreamTransport,
    /// Minimum seconds between edits.
    pub edit_interval: f64,
    /// Characters buffered before an edit.
    pub buffer_threshold: usize,
    /// Glyph shown while the reply grows.
    pub cursor: String,
}

impl Default for StreamingSettings {
    fn default() -> Self {
        Self { enabled: false, transport: StreamTransport::Auto, edit_interval: 0.8, buffer_threshold: 24, cursor: " \u{2589}".into() }
    }
}

/// `prompt_caching:` (Hermes): Anthropic cache TTL.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PromptCachingSettings {
    /// `5m` (default) or `1h`; other values mean `5m`, as in Hermes.
    pub cache_ttl: String,
}

impl Default for PromptCachingSettings {
    fn default() -> Self {
        Self { cache_ttl: "5m".into() }
    }
}

/// One `mcp_servers.<name>` entry (stdio `command` or HTTP `url`), kept for MCP tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServer {
    /// Executable of a stdio server.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its environment.
    pub env: BTreeMap<String, String>,
    /// Endpoint of an HTTP server.
    pub url: String,
    /// Headers sent to it.
    pub headers: BTreeMap<String, String>,
    /// Tool-call timeout, seconds.
    pub timeout: Option<f64>,
    /// Connect timeout, seconds.
    pub connect_timeout: Option<f64>,
    /// Off switch.
    pub enabled: Option<bool>,
}

/// One fallback model (`{provider, model, base_url?}`, Hermes' shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FallbackEntry {
    /// Provider name (the same table as `model.provider`).
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Base URL (default: the provider's).
    pub base_url: String,
    /// Inline key (Hermes allows it; prefer `key_env`).
    pub api_key: String,
    /// Variable holding the key (`api_key_env` accepted).
    #[serde(alias = "api_key_env")]
    pub key_env: String,
}

/// One entry or a list of them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single entry.
    One(T),
    /// A list.
    Many(Vec<T>),
}

/// Top-level sections of a Hermes `config.yaml` that hermes-zero does not read. They are
/// listed by `doctor` as ignored, never warned about as typos.
pub const HERMES_SECTIONS: &[&str] = &[
    "_config_version",
    "providers",
    "credential_pool_strategies",
    "max_concurrent_sessions",
    "max_live_sessions",
    "terminal",
    "browser",
    "checkpoints",
    "context_file_max_chars",
    "file_read_max_chars",
    "mcp_discovery_timeout",
    "mcp",
    "tool_output",
    "tool_loop_guardrails",
    "kanban",
    "openrouter",
    "bedrock",
    "dashboard",
    "privacy",
    "voice",
    "human_delay",
    "context",
    "prefill_messages_file",
    "goals",
    "moa",
    "skills",
    "curator",
    "honcho",
    "slack",
    "discord",
    "whatsapp",
    "telegram",
    "mattermost",
    "matrix",
    "approvals",
    "command_allowlist",
    "quick_commands",
    "platform_hints",
    "hooks",
    "hooks_auto_accept",
    "personalities",
    "security",
    "code_execution",
    "logging",
    "model_catalog",
    "network",
    "gateway",
    "sessions",
    "onboarding",
    "updates",
    "lsp",
    "x_search",
    "secrets",
    "paste_collapse_threshold",
    "paste_collapse_threshold_fallback",
    "paste_collapse_char_threshold",
    "computer_use",
    "desktop",
    "vertex",
    "database",
    "runtime",
    "attachments",
    "plugins",
    "telemetry",
    "auth",
    "timeouts",
    "provider_routing",
    "worktree",
    "worktree_sync",
    "tool_budget",
    "vision",
    "model_aliases",
    "wake_word",
    "image_gen",
    "custom_providers",
];

/// Hermes keys inside sections hermes-zero reads, accepted without a typo warning.
pub const HERMES_SUBKEYS: &[&str] = &[
    "model.ollama_num_ctx",
    "model.default_headers",
    "model.extra_headers",
    "model.auth_mode",
    "model.entra",
    "model.streaming",
    "model.api_mode",
    "model.key_cmd",
    "cron.catch_up_missed",
    "cron.max_parallel_jobs",
    "cron.session_db_timeout_seconds",
];

/// Sections whose sub-keys are Hermes' business: only the ones above are read, the rest
/// pass silently.
pub const HERMES_OPEN_SECTIONS: &[&str] = &[
    "agent",
    "display",
    "memory",
    "compression",
    "streaming",
    "prompt_caching",
    "mcp_servers",
    "fallback_model",
    "fallback_providers",
    "stt",
    "web",
    "delegation",
    "auxiliary",
    "tts",
];

/// Lays the Hermes places over the flat keys (the Hermes place wins where both are set).
pub fn overlay(s: &mut Settings) {
    if let Some(m) = s.display.busy_input_mode {
        s.busy_input_mode = m;
    }
    if let Some(n) = s.agent.max_turns {
        s.model.max_iterations = n;
    }
    if let Some(t) = s.agent.restart_drain_timeout {
        s.restart_drain_timeout = t;
    }
    let c = &mut s.cron.chronos;
    if !c.nas_jwks_url.trim().is_empty() {
        c.jwks_url = c.nas_jwks_url.clone();
    }
}

/// Turns Hermes' `model: "<id>"` (a bare string) into `model: {default: <id>, provider: auto}`
/// — in Hermes a model without a provider is auto-detected.
pub fn normalize(value: &mut serde_json::Value) {
    if let Some(m) = value.get_mut("model")
        && let serde_json::Value::String(id) = m
    {
        *m = serde_json::json!({ "default": id.clone(), "provider": "auto" });
    }
}
