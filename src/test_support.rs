//! Shared pieces of the in-process tests: the [`TestApp`] builder (an app on the real
//! in-memory store with a manual clock), its HTTP state, a model that counts its calls and a
//! delivery port that records what it sent.

use crate::app::{App, Parts};
use crate::clients::llm::offline::OfflineLlm;
use crate::config::{Env, Loaded, load_settings, parse_yaml};
use crate::ports::{ChatRequest, ChatResponse, Clock, Delivery, DeliveryError, Llm, LlmError, ManualClock, Store, Target};
use crate::store::sqlite::SqliteStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The built-in tools' real upstreams, as `runtime` wires them (for tests inside `app`, which
/// may not name the adapters).
pub fn tool_ports() -> crate::app::tools::ToolPorts {
    crate::runtime::tool_ports()
}

/// The real MCP connector, as `runtime` wires it (for tests inside `app`).
pub fn mcp_connector() -> Arc<dyn crate::ports::McpConnector> {
    Arc::new(crate::clients::mcp::RmcpConnector)
}

/// Chronos timers on the NAS agent-cron API at `nas_url` (token `t`), firing at `fire_url`:
/// the adapter `runtime` wires for `cron.provider: chronos` (for tests inside `app`).
pub fn chronos_timers(nas_url: &str, fire_url: &str) -> Arc<dyn crate::ports::Timers> {
    use crate::clients::nas::{ChronosTimers, NasClient};
    Arc::new(ChronosTimers::new(NasClient::new(nas_url, "t".to_string().into()), fire_url))
}

/// The Telegram channel of `loaded` on an HTTP client that gives up on an answer after
/// `answer_timeout` (for tests inside `app` of a lost answer).
pub fn telegram_channels(loaded: &Loaded, answer_timeout: std::time::Duration) -> crate::channels::Channels {
    let http = crate::clients::http_client(answer_timeout);
    crate::channels::Channels::default().with(crate::channels::telegram::Telegram::from_config(loaded, http))
}

/// A model that answers `reply` at once and counts its calls.
pub struct CountingLlm {
    calls: AtomicUsize,
    reply: &'static str,
}

impl CountingLlm {
    /// A counter answering `reply`.
    pub fn new(reply: &'static str) -> Arc<Self> {
        Arc::new(Self { calls: AtomicUsize::new(0), reply })
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Llm for CountingLlm {
    fn name(&self) -> &'static str {
        "counting"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ChatResponse { content: self.reply.into(), ..ChatResponse::default() })
    }
}

/// Answers `echo: <last message>` and records every request.
#[derive(Default)]
pub struct EchoLlm(Mutex<Vec<ChatRequest>>);

#[async_trait]
impl Llm for EchoLlm {
    fn name(&self) -> &'static str {
        "echo"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.lock().unwrap().push(req.clone());
        let last = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        Ok(ChatResponse { content: format!("echo: {last}"), ..ChatResponse::default() })
    }
}

impl EchoLlm {
    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.0.lock().unwrap().clone()
    }
}

/// The HTTP state over `app`, with a channel registry from the app's settings.
pub fn http_state(app: App, api_key: Option<&str>, provider: &str) -> Arc<crate::http::HttpState> {
    let channels = Arc::new(crate::channels::Channels::from_config(app.loaded()));
    let api_key = api_key.map(|k| secrecy::SecretString::from(k.to_string()));
    Arc::new(crate::http::HttpState { app, channels, api_key, provider: provider.into() })
}

/// The one way tests build an [`App`]: settings from YAML over the defaults (its
/// `timezone` included) and secrets from an [`Env`], the real in-memory SQLite store, a
/// manual clock, the offline model, platform delivery from the same settings, the built-in
/// tools and the built-in ticker. Each part can be replaced.
pub struct TestApp {
    home: PathBuf,
    env: Env,
    yaml: Option<String>,
    now: DateTime<Utc>,
    clock: Option<Arc<dyn Clock>>,
    store: Option<Arc<dyn Store>>,
    llm: Arc<dyn Llm>,
    delivery: Option<Arc<dyn Delivery>>,
    timers: Option<Arc<dyn crate::ports::Timers>>,
    owner: Option<String>,
}

impl TestApp {
    /// The defaults, with the manual clock at `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        Self {
            home: "/nonexistent".into(),
            env: Env::default(),
            yaml: None,
            now,
            clock: None,
            store: None,
            llm: Arc::new(OfflineLlm),
            delivery: None,
            timers: None,
            owner: None,
        }
    }

    /// The process's owner id `<host>:<pid>` (default: this host and pid).
    pub fn owner(mut self, owner: &str) -> Self {
        self.owner = Some(owner.to_string());
        self
    }

    /// Settings from this YAML (instead of the defaults plus `env`).
    pub fn yaml(mut self, yaml: &str) -> Self {
        self.yaml = Some(yaml.to_string());
        self
    }

    /// The environment settings and secrets are read from.
    pub fn env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    /// `$HERMES_HOME` (default: a path that does not exist).
    pub fn home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = home.into();
        self
    }

    /// A clock the test holds (default: a manual clock at `now`).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// A store the test holds (default: a fresh in-memory SQLite store).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The model.
    pub fn llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = llm;
        self
    }

    /// Outbound delivery (default: the channel registry from the settings).
    pub fn delivery(mut self, delivery: Arc<dyn Delivery>) -> Self {
        self.delivery = Some(delivery);
        self
    }

    /// The timer provider (default: the built-in ticker's).
    pub fn timers(mut self, timers: Arc<dyn crate::ports::Timers>) -> Self {
        self.timers = Some(timers);
        self
    }

    /// The configuration the app will be built with.
    pub fn loaded(&self) -> Loaded {
        let mut loaded = load_settings(&self.home, None, &self.env).unwrap();
        if let Some(yaml) = &self.yaml {
            loaded.settings = parse_yaml(yaml, "test").unwrap().0;
            loaded.tz = loaded.settings.timezone.parse().unwrap();
            loaded.webhooks = crate::config::webhook_routes(&loaded.settings, &self.env, "test").unwrap();
        }
        loaded
    }

    /// Builds the app.
    pub fn build(self) -> App {
        let loaded = self.loaded();
        let stt = crate::clients::stt::from_config(&loaded);
        App::new(Parts {
            delivery: self.delivery.unwrap_or_else(|| Arc::new(crate::channels::Channels::from_config(&loaded))),
            cfg: Arc::new(loaded),
            home: self.home,
            store: self.store.unwrap_or_else(|| Arc::new(SqliteStore::in_memory().unwrap())),
            llm: self.llm,
            clock: self.clock.unwrap_or_else(|| Arc::new(ManualClock::new(self.now))),
            timers: self.timers.unwrap_or_else(|| Arc::new(crate::ports::PollingTimers)),
            tools: Arc::new(crate::app::tools::builtin(&tool_ports())),
            owner: self.owner,
            jwks: Arc::new(crate::clients::jwks::HttpJwks::default()),
            stt,
            mcp: mcp_connector(),
            scripts: Arc::new(crate::clients::script::ProcessScripts),
        })
    }
}

/// One chat message from `origin` through `handle_inbound`; the session it ran in.
pub async fn say(app: &App, origin: &crate::core::ids::Origin, text: &str) -> crate::core::ids::SessionId {
    let msg = crate::app::Inbound {
        origin: origin.clone(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: crate::app::ReplyPath::Origin,
        attachments: Vec::new(),
    };
    crate::core::ids::SessionId::parse(&app.sessions().handle_inbound(msg).await.unwrap().session_id).unwrap()
}

/// A delivery port for Telegram and Discord that records every message it was asked to send.
#[derive(Default)]
pub struct Outbox(Mutex<Vec<(Target, String)>>);

#[async_trait]
impl Delivery for Outbox {
    fn delivers_to(&self, platform: &str) -> bool {
        matches!(platform, "telegram" | "discord")
    }
    async fn send(&self, target: &Target, text: &str) -> Result<(), DeliveryError> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((target.clone(), text.to_string()));
        Ok(())
    }
}

impl Outbox {
    /// Every message sent, with its target, in order.
    pub fn all(&self) -> Vec<(Target, String)> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The texts sent, in order.
    pub fn sent(&self) -> Vec<String> {
        self.all().into_iter().map(|(_, t)| t).collect()
    }
}
