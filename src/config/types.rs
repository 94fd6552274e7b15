//! The shape of `config.yaml` with its defaults (docs/design.md#config).

use super::hermes::*;
pub use crate::core::queue::BusyInputMode;
pub use crate::core::reset::{ResetMode, ResetOverride, ResetPolicy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything configurable, with defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// IANA zone for session ids, daily resets and naive job times.
    pub timezone: String,
    /// Which store and where.
    pub store: StoreSettings,
    /// The model provider.
    pub model: ModelSettings,
    /// Default reset policy.
    pub session_reset: ResetPolicy,
    /// Per-platform reset overrides (take precedence over per-type).
    pub session_reset_by_platform: BTreeMap<String, ResetOverride>,
    /// Per-chat-type reset overrides.
    pub session_reset_by_type: BTreeMap<String, ResetOverride>,
    /// Separate sessions per user in groups without a thread.
    pub group_sessions_per_user: bool,
    /// Separate sessions per user in threads.
    pub thread_sessions_per_user: bool,
    /// What a plain message does while a turn runs.
    pub busy_input_mode: BusyInputMode,
    /// Cap on queued items per session.
    pub max_queued: usize,
    /// Seconds `serve` waits for running turns on shutdown.
    pub restart_drain_timeout: u64,
    /// Consecutive interruptions before a key is suspended.
    pub restart_loop_threshold: u32,
    /// Let every platform user talk to the agent (off: allow lists apply).
    pub allow_all_users: bool,
    /// Hermes' `unauthorized_dm_behavior` (`pair` or `ignore`) for every platform; a
    /// platform's own key wins (docs/pairing.md).
    pub unauthorized_dm_behavior: Option<String>,
    /// Users (a bare platform user id, or `platform:user_id`) who see and reach everything
    /// (docs/who-sees-what.md); `cron.admin_users` is read too.
    pub admin_users: Vec<String>,
    /// Linked identities: a person's name to their `platform:user_id`s, so their sessions
    /// and memory profile are one across platforms (docs/who-sees-what.md).
    pub identities: BTreeMap<String, Vec<String>>,
    /// The delivery policy of `send_message` and job `deliver` targets.
    pub delivery: DeliverySettings,
    /// Platform adapters.
    pub platforms: Platforms,
    /// Scheduled jobs and timers.
    pub cron: CronSettings,
    /// Hermes' `agent:` (tool iterations, drain, retries).
    pub agent: AgentSettings,
    /// Hermes' `display:` (busy input mode).
    pub display: DisplaySettings,
    /// Hermes' `memory:`.
    pub memory: MemorySettings,
    /// `tools:` — settings of individual tools (`tools.web` for `web_fetch`).
    pub tools: ToolsSettings,
    /// Hermes' `compression:`.
    pub compression: CompressionSettings,
    /// Hermes' `streaming:`.
    pub streaming: StreamingSettings,
    /// Hermes' `prompt_caching:`.
    pub prompt_caching: PromptCachingSettings,
    /// Hermes' `mcp_servers:` by name.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// How long an MCP server's cached tool list is used before it is fetched again (s).
    pub mcp_cache_seconds: u64,
    /// Hermes' legacy fallback: one entry or a list.
    pub fallback_model: Option<OneOrMany<FallbackEntry>>,
    /// Hermes' fallback chain, tried before `fallback_model`.
    pub fallback_providers: Option<OneOrMany<FallbackEntry>>,
    /// Hermes' `stt:` (voice notes, docs/design.md#media).
    pub stt: SttSettings,
    /// Hermes' `web:` (the `web_search`/`web_extract` backends, docs/tools.md).
    pub web: super::WebSettings,
    /// Hermes' `delegation:` (`delegate_task`'s limits, docs/tools.md).
    pub delegation: super::DelegationSettings,
    /// Hermes' `auxiliary:` (`vision_analyze`'s model, docs/tools.md#vision-and-speech).
    pub auxiliary: super::AuxiliarySettings,
    /// Hermes' `tts:` (`text_to_speech`'s backend).
    pub tts: super::TtsSettings,
    /// Hermes' `toolsets`: the toolsets of every platform without its own list (docs/tools.md#toolsets).
    pub toolsets: Option<Vec<String>>,
    /// Hermes' `platform_toolsets.<platform>`: a platform's own toolsets.
    pub platform_toolsets: BTreeMap<String, Vec<String>>,
    /// Model prices by model name, overriding or adding to the built-in table
    /// (`core::pricing`; the usage view's estimate and `cron.daily_budget_usd` use them).
    pub pricing: BTreeMap<String, crate::core::pricing::ModelPrice>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            timezone: "UTC".into(),
            store: StoreSettings::default(),
            model: ModelSettings::default(),
            session_reset: ResetPolicy::default(),
            session_reset_by_platform: BTreeMap::new(),
            session_reset_by_type: BTreeMap::new(),
            group_sessions_per_user: true,
            thread_sessions_per_user: false,
            busy_input_mode: BusyInputMode::Interrupt,
            max_queued: 32,
            restart_drain_timeout: 30,
            restart_loop_threshold: 3,
            allow_all_users: false,
            unauthorized_dm_behavior: None,
            admin_users: Vec::new(),
            identities: BTreeMap::new(),
            delivery: DeliverySettings::default(),
            platforms: Platforms::default(),
            cron: CronSettings::default(),
            agent: AgentSettings::default(),
            display: DisplaySettings::default(),
            memory: MemorySettings::default(),
            tools: ToolsSettings::default(),
            compression: CompressionSettings::default(),
            streaming: StreamingSettings::default(),
            prompt_caching: PromptCachingSettings::default(),
            mcp_servers: BTreeMap::new(),
            mcp_cache_seconds: 3600,
            fallback_model: None,
            fallback_providers: None,
            stt: SttSettings::default(),
            web: super::WebSettings::default(),
            delegation: super::DelegationSettings::default(),
            auxiliary: super::AuxiliarySettings::default(),
            tts: super::TtsSettings::default(),
            toolsets: None,
            platform_toolsets: BTreeMap::new(),
            pricing: BTreeMap::new(),
        }
    }
}

impl Settings {
    /// The reset policies as core's rules (default and overrides).
    pub fn reset_rules(&self) -> crate::core::reset::ResetRules<'_> {
        crate::core::reset::ResetRules {
            default: &self.session_reset,
            by_platform: &self.session_reset_by_platform,
            by_type: &self.session_reset_by_type,
        }
    }
}

/// `delivery:` block (docs/who-sees-what.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DeliverySettings {
    /// Chats (`platform:chat_id[:thread_id]`) that `send_message` and job `deliver` may
    /// reach besides the current chat, the home channels and allowed users' chats.
    pub allow_targets: Vec<String>,
}

/// Store kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Embedded SQLite file (default).
    Sqlite,
    /// AWS DynamoDB (feature `aws`).
    Dynamodb,
}

/// `store:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct StoreSettings {
    /// sqlite | dynamodb.
    pub kind: StoreKind,
    /// SQLite file, relative to the home.
    pub path: String,
    /// DynamoDB table name.
    pub dynamodb_table: String,
    /// DynamoDB endpoint override (else `AWS_ENDPOINT_URL_DYNAMODB`).
    pub endpoint: String,
    /// Write shards of the DynamoDB listing indexes, 1..=64 (docs/design.md#shards). Fixed
    /// per table: a table written with another value is refused.
    pub dynamodb_shards: u32,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            kind: StoreKind::Sqlite,
            path: "state.db".into(),
            dynamodb_table: "hermes-zero".into(),
            endpoint: String::new(),
            dynamodb_shards: crate::store::shard::DEFAULT_SHARDS,
        }
    }
}

/// `model:` block (Hermes' keys and the flat keys of docs/design.md#config; `config::models` resolves
/// it into an endpoint).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSettings {
    /// A Hermes provider name (`auto`, `openrouter`, `anthropic`, `openai`, `custom`, …) or
    /// `offline`.
    pub provider: String,
    /// Base URL (empty: the provider's default).
    pub base_url: String,
    /// Model id (Hermes' `model.default`; wins over `model` and `name`).
    pub default: String,
    /// Model id (Hermes' `model.model`).
    pub model: String,
    /// Model id (the flat key).
    pub name: String,
    /// Inline key (moved into the secrets at load; the provider's variable wins).
    pub api_key: String,
    /// Name of the variable holding the key (empty: the provider's variables).
    pub api_key_env: String,
    /// Tool-calling rounds per turn (`agent.max_turns` wins).
    pub max_iterations: u32,
    /// Transcript messages sent to the model (oldest trimmed first).
    pub max_context_messages: usize,
    /// Hermes' `model.context_length`: the context window in tokens (0 = 128000; never
    /// below 64000), the budget context compression works against.
    pub context_length: u64,
    /// Per-request timeout.
    pub timeout_seconds: u64,
    /// Hermes' `model.supports_vision`: photos reach the model as image parts (off: the
    /// model gets the caption and a note that a photo was left out).
    pub supports_vision: bool,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            provider: "offline".into(),
            base_url: String::new(),
            default: String::new(),
            model: String::new(),
            name: String::new(),
            api_key: String::new(),
            api_key_env: String::new(),
            max_iterations: 8,
            max_context_messages: 200,
            context_length: 0,
            timeout_seconds: 120,
            supports_vision: false,
        }
    }
}

/// `platforms:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Platforms {
    /// Telegram Bot API.
    pub telegram: PlatformSettings,
    /// Discord.
    pub discord: PlatformSettings,
    /// Every other platform (`platforms.<name>`), for channels added later.
    #[serde(flatten)]
    pub other: BTreeMap<String, PlatformSettings>,
}

impl Default for Platforms {
    fn default() -> Self {
        Self {
            telegram: PlatformSettings { api_base: "https://api.telegram.org".into(), ..PlatformSettings::default() },
            discord: PlatformSettings { api_base: "https://discord.com/api/v10".into(), ..PlatformSettings::default() },
            other: BTreeMap::new(),
        }
    }
}

impl Platforms {
    /// The settings of the platform named `name` (as in origins and targets).
    pub fn get(&self, name: &str) -> Option<&PlatformSettings> {
        match name {
            "telegram" => Some(&self.telegram),
            "discord" => Some(&self.discord),
            other => self.other.get(other),
        }
    }
}

/// One platform.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PlatformSettings {
    /// User ids allowed to talk to the agent.
    pub allowed_users: Vec<String>,
    /// Where `deliver: <platform>` goes.
    pub home_channel: String,
    /// What an unknown DM sender gets here: `pair` or `ignore` (docs/pairing.md).
    pub unauthorized_dm_behavior: Option<String>,
    /// API base URL (tests point it at a local fake).
    pub api_base: String,
    /// API version, for platforms whose URLs carry one (WhatsApp's Graph API: empty means
    /// `v21.0`).
    pub api_version: String,
    /// How updates arrive (Telegram): `webhook` or `polling`; unset: polling when the bot
    /// token is set and the webhook secret is not (docs/design.md#telegram-polling).
    pub mode: Option<IntakeMode>,
    /// Hermes' free-form per-platform options (`platforms.<name>.extra`); the channels read
    /// the keys they know (Slack: `reply_in_thread`, `dm_top_level_threads_as_sessions`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl PlatformSettings {
    /// The flag `extra.<key>` as Hermes reads it: unset or null → `default`; a boolean; a
    /// string `1`/`true`/`yes`/`on` (any case) is true and any other string false; a number
    /// is true unless zero.
    pub fn extra_flag(&self, key: &str, default: bool) -> bool {
        use serde_json::Value;
        match self.extra.get(key) {
            None | Some(Value::Null) => default,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"),
            Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
            Some(Value::Array(_) | Value::Object(_)) => default,
        }
    }
}

/// `platforms.<name>.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IntakeMode {
    /// The platform calls our webhook route.
    Webhook,
    /// `serve` long-polls the platform.
    Polling,
}

/// Timer providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CronProvider {
    /// Chronos when configured, else EventBridge on Lambda, else the built-in ticker.
    Auto,
    /// NAS one-shot timers.
    Chronos,
    /// AWS EventBridge Scheduler.
    Eventbridge,
    /// The in-process ticker.
    Builtin,
}

/// `tools:` block: settings of individual tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolsSettings {
    /// `web_fetch`.
    pub web: WebToolSettings,
}

/// `tools.web:` block (docs/design.md#web-fetch).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WebToolSettings {
    /// Let `web_fetch` reach private, loopback and link-local addresses (off: refused).
    /// Cloud metadata endpoints stay refused either way.
    pub allow_private: bool,
}

/// `cron:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct CronSettings {
    /// Provider choice.
    pub provider: CronProvider,
    /// jobs.json path, relative to the home.
    pub jobs_file: String,
    /// Ticker period.
    pub tick_interval_seconds: u64,
    /// Put a header on delivered job output.
    pub wrap_response: bool,
    /// Also append a job's delivered text to its chat's session (Hermes' default for jobs
    /// without `attach_to_session`; off by default).
    pub mirror_delivery: bool,
    /// Outputs kept per job.
    pub output_retention: usize,
    /// Users (platform user ids, or `platform:user_id`) whose `cronjob` tool sees every job,
    /// not only the jobs made from their chat.
    pub admin_users: Vec<String>,
    /// The shortest time between two runs of a job an admin (`admin_users`) makes with the
    /// `cronjob` tool, in seconds (default 60; other chat users are held to 60 whatever
    /// this says). The CLI, REST API and jobs.json are not limited by it.
    pub min_interval_seconds: u64,
    /// Chronos (NAS) settings.
    pub chronos: ChronosSettings,
    /// EventBridge Scheduler settings.
    pub eventbridge: EventBridgeSettings,
    /// Moves each recurring occurrence by a fixed per-job offset in `[0, spread_seconds)`
    /// (default 0; a job's `spread` overrides it; docs/design.md#spread).
    pub spread_seconds: u32,
    /// Limit of one job script run, in seconds (Hermes' key; env `HERMES_CRON_SCRIPT_TIMEOUT`
    /// wins; on Lambda the invocation's time left caps it).
    pub script_timeout_seconds: u64,
    /// Retry of a run that had no effect (docs/design/jobs.md#retry).
    pub retry: RetrySettings,
    /// Where a job's failure alert and "recovered" line go when the job names no
    /// `failure_deliver` (empty: the job's own targets; docs/jobs.md#failure-alerts).
    pub failure_deliver: Vec<String>,
    /// The most the agent's job runs may spend on the model per UTC day, in US dollars,
    /// priced as the usage view prices it (None: no limit; docs/jobs.md#budgets).
    pub daily_budget_usd: Option<f64>,
}

/// `cron.retry:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrySettings {
    /// Delays in seconds after a failed attempt before the next (default `[60, 300, 900]`;
    /// `[]` turns retries off; a job's `retry` overrides it).
    pub delays: Vec<u32>,
}

impl Default for RetrySettings {
    fn default() -> Self {
        Self { delays: crate::core::retry::DEFAULT_DELAYS.to_vec() }
    }
}

impl Default for CronSettings {
    fn default() -> Self {
        Self {
            provider: CronProvider::Auto,
            jobs_file: "cron/jobs.json".into(),
            tick_interval_seconds: 60,
            wrap_response: true,
            mirror_delivery: false,
            output_retention: 50,
            admin_users: Vec::new(),
            min_interval_seconds: 60,
            chronos: ChronosSettings::default(),
            eventbridge: EventBridgeSettings::default(),
            spread_seconds: 0,
            script_timeout_seconds: crate::core::script::DEFAULT_TIMEOUT_SECS,
            retry: RetrySettings::default(),
            failure_deliver: Vec::new(),
            daily_budget_usd: None,
        }
    }
}

/// Fire modes for `/api/cron/fire`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FireMode {
    /// Run the job before answering (serverless).
    Sync,
    /// Answer 202 and run in the background (always-on hosts).
    Async,
}

/// `cron.chronos:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ChronosSettings {
    /// NAS portal base URL.
    pub portal_url: String,
    /// Our `/api/cron/fire` URL as the NAS should call it.
    pub callback_url: String,
    /// JWKS for fire tokens.
    pub jwks_url: String,
    /// Hermes' name for `jwks_url` (wins when set).
    pub nas_jwks_url: String,
    /// Pinned public key (PEM text or a path).
    pub public_key_pem: String,
    /// Expected `aud` (default `agent:<instance_id>`).
    pub expected_audience: String,
    /// This agent's instance id.
    pub instance_id: String,
    /// sync | async.
    pub fire_mode: FireMode,
}

impl Default for ChronosSettings {
    fn default() -> Self {
        Self {
            portal_url: String::new(),
            callback_url: String::new(),
            jwks_url: String::new(),
            nas_jwks_url: String::new(),
            public_key_pem: String::new(),
            expected_audience: String::new(),
            instance_id: String::new(),
            fire_mode: FireMode::Sync,
        }
    }
}

/// `cron.eventbridge:` block.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EventBridgeSettings {
    /// Schedule group.
    pub group: String,
    /// Target (default: this function).
    pub target_arn: String,
    /// Role the scheduler assumes.
    pub role_arn: String,
}

impl Default for EventBridgeSettings {
    fn default() -> Self {
        Self { group: "hermes-zero".into(), target_arn: String::new(), role_arn: String::new() }
    }
}

/// Hermes' `stt:` block: speech to text for voice notes through an OpenAI-compatible
/// `/audio/transcriptions` (docs/design.md#media). Other Hermes keys pass silently.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SttSettings {
    /// Transcribe voice notes at all (Hermes' default: on).
    pub enabled: bool,
    /// Hermes' provider name; `openai` (the default here) is the one read.
    pub provider: String,
    /// Alias of `stt.openai.base_url`.
    pub base_url: String,
    /// Alias of `stt.openai.model`.
    pub model: String,
    /// `stt.openai:` (wins over the aliases).
    pub openai: SttOpenAi,
}

impl Default for SttSettings {
    fn default() -> Self {
        Self { enabled: true, provider: String::new(), base_url: String::new(), model: String::new(), openai: SttOpenAi::default() }
    }
}

/// `stt.openai:`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SttOpenAi {
    /// Base URL (default `https://api.openai.com/v1`).
    pub base_url: String,
    /// Model (default `whisper-1`).
    pub model: String,
}

impl SttSettings {
    /// The base URL in effect.
    pub fn base_url(&self) -> &str {
        [&self.openai.base_url, &self.base_url].into_iter().find(|s| !s.trim().is_empty()).map_or("https://api.openai.com/v1", |s| s.trim())
    }

    /// The model in effect.
    pub fn model(&self) -> &str {
        [&self.openai.model, &self.model].into_iter().find(|s| !s.trim().is_empty()).map_or("whisper-1", |s| s.trim())
    }
}
