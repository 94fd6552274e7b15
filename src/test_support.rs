//! Shared pieces of the in-process tests: an app on the real in-memory store with a manual
//! clock, its HTTP state, and a model that counts its calls.

use crate::app::App;
use crate::config::{Env, load_settings, parse_yaml};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ManualClock};
use crate::store::sqlite::SqliteStore;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The HTTP state over `app`, with a channel registry from the app's settings.
pub fn http_state(app: App, api_key: Option<&str>, provider: &str) -> Arc<crate::http::HttpState> {
    let channels = Arc::new(crate::channels::Channels::from_config(&app.cfg));
    let api_key = api_key.map(|k| secrecy::SecretString::from(k.to_string()));
    let fire_auth = crate::app::fire_token::FireAuth::from_config(&app.cfg, Arc::new(crate::clients::jwks::HttpJwks::default()));
    Arc::new(crate::http::HttpState { app, channels, api_key, provider: provider.into(), fire_auth })
}

/// An app with settings from `yaml` and secrets from `env`, the in-memory SQLite store, a
/// manual clock at `now`, platform delivery from the same settings, and `llm`.
pub fn app(yaml: &str, env: &Env, now: DateTime<Utc>, llm: Arc<dyn Llm>) -> App {
    let mut loaded = load_settings(std::path::Path::new("/nonexistent"), None, env).unwrap();
    loaded.settings = parse_yaml(yaml, "test").unwrap().0;
    App {
        delivery: Arc::new(crate::channels::Channels::from_config(&loaded)),
        cfg: Arc::new(loaded),
        home: "/nonexistent".into(),
        store: Arc::new(SqliteStore::in_memory().unwrap()),
        llm,
        clock: Arc::new(ManualClock::new(now)),
        live: Arc::default(),
        timers: Arc::new(crate::ports::PollingTimers),
        tools: Arc::new(crate::app::tools::builtin()),
    }
}
