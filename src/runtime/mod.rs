//! Runtimes: wiring adapters into an [`App`] once per process, and the long-running `serve`.

pub mod idle;
#[cfg(feature = "aws")]
pub mod lambda;
#[cfg(feature = "aws")]
mod lambda_start;
#[cfg(feature = "aws")]
mod lambda_url;
pub mod private;
pub mod process;
pub mod profile_gate;
pub mod profiles;
pub mod ready;
pub mod serve;
pub mod telegram_poll;
pub mod ticker;

use crate::app::{App, Parts};
use crate::channels::Channels;
use crate::clients::nas::{ChronosTimers, NasClient};
use crate::config::{Loaded, StoreKind};
use crate::ports::{Clock, OffsetClock, PollingTimers, Store, SystemClock, TimerProvider, Timers};
use crate::store::sqlite::SqliteStore;
use std::path::Path;
use std::sync::Arc;

/// The real upstreams of the built-in tools: the pinned-address fetcher and the system
/// resolver for the web tools; no search vendor (see [`tool_ports_for`]).
pub fn tool_ports() -> crate::app::tools::ToolPorts {
    crate::app::tools::ToolPorts {
        fetcher: Arc::new(crate::clients::fetch::PinnedFetcher::web_fetch()),
        dns: Arc::new(crate::clients::fetch::SystemDns),
        web_search: None,
        web_extract: None,
        vision: None,
        speech: None,
    }
}

/// [`tool_ports`] with the search vendors `cfg` chooses for `web_search` and `web_extract`
/// (`web.*` and the vendors' variables, docs/tools.md#web-search-and-extract).
pub fn tool_ports_for(cfg: &Loaded) -> crate::app::tools::ToolPorts {
    let web = crate::clients::web::from_config(cfg);
    let s = &cfg.settings;
    // A vision model that cannot be used is reported by `doctor`; the tool is then not offered.
    let vision = match crate::config::vision_endpoint(&s.auxiliary.vision, &cfg.model, s.model.supports_vision, &cfg.env) {
        Ok(ep) => ep.map(|ep| crate::clients::llm::endpoint_llm(&ep, cfg)),
        Err(e) => {
            tracing::warn!(error = %e, "vision_analyze is not offered");
            None
        }
    };
    let speech = crate::clients::speech::from_config(cfg);
    crate::app::tools::ToolPorts { web_search: web.search, web_extract: web.extract, vision, speech, ..tool_ports() }
}

/// Startup failures.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configured store cannot be used by this build or could not be opened.
    #[error("store: {0}")]
    Store(String),
}

/// Opens the configured store (DynamoDB: builds the client once, here), seen as the
/// configured profile's key space.
pub async fn open_store(home: &Path, cfg: &Loaded) -> Result<Arc<dyn Store>, StartError> {
    Ok(open_base(home, cfg).await?.scoped(cfg.profile.clone()))
}

/// The one store handle of a process, before a profile's key space is applied: every
/// profile served by the process shares it (docs/design.md#profiles).
#[derive(Clone)]
pub enum BaseStore {
    /// The embedded SQLite file.
    Sqlite(SqliteStore),
    /// The DynamoDB table.
    #[cfg(feature = "aws")]
    Dynamo(crate::store::dynamodb::DynamoStore),
}

impl BaseStore {
    /// The store seen as `profile`'s key space.
    pub fn scoped(&self, profile: crate::core::profile::Profile) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(s) => Arc::new(s.clone().scoped(profile)),
            #[cfg(feature = "aws")]
            Self::Dynamo(s) => Arc::new(s.clone().scoped(profile)),
        }
    }

    /// Makes sure the store can be used: opens a lazy SQLite file now ([`open_base_lazy`]).
    /// Makes no request to DynamoDB, whose client needs no opening.
    pub async fn ready(&self) -> Result<(), StartError> {
        match self {
            Self::Sqlite(s) => s.ready().await.map_err(|e| StartError::Store(e.to_string())),
            #[cfg(feature = "aws")]
            Self::Dynamo(_) => Ok(()),
        }
    }
}

/// Opens the configured store without a profile's key space.
pub async fn open_base(home: &Path, cfg: &Loaded) -> Result<BaseStore, StartError> {
    open_base_as(home, cfg, false).await
}

/// [`open_base`], except that a SQLite file is opened (created, migrated) by the store's first
/// call, not now (the Lambda init: docs/design.md#lazy-start). Neither store makes a
/// request here.
pub async fn open_base_lazy(home: &Path, cfg: &Loaded) -> Result<BaseStore, StartError> {
    open_base_as(home, cfg, true).await
}

async fn open_base_as(home: &Path, cfg: &Loaded, lazy: bool) -> Result<BaseStore, StartError> {
    match cfg.settings.store.kind {
        StoreKind::Sqlite => {
            let path = cfg.store_home.as_deref().unwrap_or(home).join(&cfg.settings.store.path);
            if lazy {
                return Ok(BaseStore::Sqlite(SqliteStore::lazy(&path)));
            }
            let s = SqliteStore::open(&path).map_err(|e| StartError::Store(format!("cannot open {}: {e}", path.display())))?;
            Ok(BaseStore::Sqlite(s))
        }
        #[cfg(feature = "aws")]
        StoreKind::Dynamodb => Ok(BaseStore::Dynamo(connect_dynamodb(cfg).await?)),
        #[cfg(not(feature = "aws"))]
        StoreKind::Dynamodb => Err(StartError::Store("store.kind dynamodb needs a build with `--features aws`".into())),
    }
}

/// Connects to the configured DynamoDB table (`store.dynamodb_table`, `store.endpoint`).
#[cfg(feature = "aws")]
async fn connect_dynamodb(cfg: &Loaded) -> Result<crate::store::dynamodb::DynamoStore, StartError> {
    let st = &cfg.settings.store;
    let endpoint = Some(st.endpoint.as_str()).filter(|e| !e.is_empty());
    crate::store::dynamodb::DynamoStore::connect(&st.dynamodb_table, endpoint)
        .await
        .map(|s| s.with_shards(st.dynamodb_shards))
        .map_err(|e| StartError::Store(format!("cannot use DynamoDB table {}: {e}", st.dynamodb_table)))
}

/// `doctor --create-table`: creates the DynamoDB table if the store is DynamoDB; says what
/// it did.
pub async fn create_table(cfg: &Loaded) -> Result<String, StartError> {
    let table = &cfg.settings.store.dynamodb_table;
    match cfg.settings.store.kind {
        StoreKind::Sqlite => Ok("nothing to create: store.kind is sqlite (the file is created on first use)".into()),
        #[cfg(feature = "aws")]
        StoreKind::Dynamodb => match connect_dynamodb(cfg).await?.create_table().await {
            Ok(true) => Ok(format!("created DynamoDB table {table} (on-demand, 4 indexes, TTL on `ttl`)")),
            Ok(false) => Ok(format!("DynamoDB table {table} already exists")),
            Err(e) => Err(StartError::Store(format!("cannot create DynamoDB table {table}: {e}"))),
        },
        #[cfg(not(feature = "aws"))]
        StoreKind::Dynamodb => Err(StartError::Store(format!("cannot create DynamoDB table {table}: needs a build with `--features aws`"))),
    }
}

/// The clock: the wall clock, shifted by `HERMES_CLOCK_OFFSET_SECS` when set (testing aid).
pub fn clock(cfg: &Loaded) -> Arc<dyn Clock> {
    match cfg.clock_offset_secs {
        0 => Arc::new(SystemClock),
        s => {
            tracing::warn!(offset_secs = s, "HERMES_CLOCK_OFFSET_SECS is set: the clock is shifted (testing aid)");
            Arc::new(OffsetClock(chrono::Duration::seconds(s)))
        }
    }
}

/// The timer provider chosen by `cron.provider` (see `config::provider::choose`). A `routed`
/// profile's EventBridge schedules carry its name (docs/design.md#timers-eventbridge).
#[cfg_attr(not(feature = "aws"), expect(unused_variables, reason = "only EventBridge reads the clock and the profile"))]
pub fn timers(cfg: &Loaded, clock: &Arc<dyn Clock>, routed: bool) -> Arc<dyn Timers> {
    let choice = crate::config::provider::choose(cfg, std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some());
    match choice.provider {
        TimerProvider::Chronos => {
            let c = &cfg.settings.cron.chronos;
            match &cfg.secrets.nous_access_token {
                Some(token) => Arc::new(ChronosTimers::new(NasClient::new(&c.portal_url, token.clone()), &c.callback_url)),
                None => Arc::new(PollingTimers),
            }
        }
        #[cfg(feature = "aws")]
        TimerProvider::Eventbridge => Arc::new(
            crate::clients::eventbridge::EventBridgeTimers::new(&cfg.settings.cron.eventbridge, None, clock.clone())
                .for_profile(routed.then_some(&cfg.profile)),
        ),
        _ => Arc::new(PollingTimers),
    }
}

/// The process's parts, built once: the use cases, and the channel registry they deliver
/// through (also held by the HTTP state, which serves its webhooks).
pub struct Wired {
    /// The use cases.
    pub app: App,
    /// The platform channels.
    pub channels: Arc<Channels>,
    /// What the profiles routed by this process share with it (docs/design.md#profiles).
    pub shared: profiles::Shared,
}

/// Builds the app and the channels with real adapters, nothing started. Nothing is read
/// from the store yet: the MCP servers' cached tools and jobs.json come with the caller's
/// start-up phase ([`offer_tools_and_sync_jobs`]: `serve` after it listens, Lambda on its
/// first invocation).
pub async fn wire(home: &Path, cfg: Loaded) -> Result<Wired, StartError> {
    let base = open_base(home, &cfg).await?;
    Ok(wire_on(home, cfg, None, base, false))
}

/// The start-up work a turn or a fire may read: the MCP servers' cached tools offered, and
/// a bundled `jobs.json` synced (`Jobs::sync_file` logs what changed; a refused file is
/// logged here and changes nothing).
pub async fn offer_tools_and_sync_jobs(app: &App) {
    app.mcp_warm().await;
    if let Err(e) = app.jobs().sync_file().await {
        tracing::error!(error = %e, "jobs.json refused; the stored jobs are unchanged");
    }
}

/// Builds the app and the channels over `base` seen as the configured profile's key
/// space. A `routed` profile (one of many in the process, docs/design.md#profiles) arms
/// EventBridge schedules of its own names, whose fire events carry its name.
pub fn wire_on(home: &Path, cfg: Loaded, owner: Option<String>, base: BaseStore, routed: bool) -> Wired {
    let store = base.scoped(cfg.profile.clone());
    let shared = profiles::Shared {
        base,
        root: cfg.store_home.clone().unwrap_or_else(|| home.to_path_buf()),
        env: cfg.env.clone(),
        owner: owner.clone(),
        eventbridge: cfg.settings.cron.eventbridge.clone(),
    };
    // Every store call is counted for the dashboard's usage chart (docs/design.md#usage).
    let counting = Arc::new(crate::store::counting::CountingStore::new(store));
    let tally = counting.tally();
    let store: Arc<dyn crate::ports::Store> = counting;
    let channels = Arc::new(Channels::from_config(&cfg));
    let clock = clock(&cfg);
    let timers = timers(&cfg, &clock, routed);
    let stt = crate::clients::stt::from_config(&cfg);
    let cfg = Arc::new(cfg);
    let llm = crate::clients::llm::routed(&cfg);
    let tools = Arc::new(crate::app::tools::builtin(&tool_ports_for(&cfg)));
    let app = App::new(Parts {
        cfg,
        home: home.to_path_buf(),
        store,
        llm,
        delivery: channels.clone(),
        clock,
        timers,
        tools,
        owner,
        jwks: Arc::new(crate::clients::jwks::HttpJwks::default()),
        stt,
        mcp: Arc::new(crate::clients::mcp::RmcpConnector),
        scripts: Arc::new(crate::clients::script::ProcessScripts),
    });
    app.count_store_requests(tally);
    Wired { app, channels, shared }
}

/// Builds the app with real adapters (for commands that serve no webhooks and run no agent
/// turns: MCP tools are not warmed).
pub async fn build_app(home: &Path, cfg: Loaded) -> Result<App, StartError> {
    Ok(wire(home, cfg).await?.app)
}
