//! Runtimes: wiring adapters into an [`App`] once per process, and the long-running `serve`.

pub mod serve;
pub mod ticker;

use crate::app::App;
use crate::clients::delivery::PlatformDelivery;
use crate::config::{Loaded, StoreKind};
use crate::ports::{Clock, OffsetClock, PollingTimers, Store, SystemClock};
use crate::store::sqlite::SqliteStore;
use std::path::Path;
use std::sync::Arc;

/// Startup failures.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configured store cannot be used by this build or could not be opened.
    #[error("store: {0}")]
    Store(String),
}

/// Opens the configured store.
pub fn open_store(home: &Path, cfg: &Loaded) -> Result<Arc<dyn Store>, StartError> {
    match cfg.settings.store.kind {
        StoreKind::Sqlite => {
            let path = home.join(&cfg.settings.store.path);
            let s = SqliteStore::open(&path).map_err(|e| StartError::Store(format!("cannot open {}: {e}", path.display())))?;
            Ok(Arc::new(s))
        }
        StoreKind::Dynamodb => Err(StartError::Store("store.kind dynamodb needs a build with `--features aws`".into())),
    }
}

/// Builds the app with real adapters.
pub fn build_app(home: &Path, cfg: Loaded) -> Result<App, StartError> {
    let store = open_store(home, &cfg)?;
    let llm = crate::clients::llm::from_config(&cfg);
    let delivery = Arc::new(PlatformDelivery::from_config(&cfg));
    let clock: Arc<dyn Clock> = match cfg.clock_offset_secs {
        0 => Arc::new(SystemClock),
        s => {
            tracing::warn!(offset_secs = s, "HERMES_CLOCK_OFFSET_SECS is set: the clock is shifted (testing aid)");
            Arc::new(OffsetClock(chrono::Duration::seconds(s)))
        }
    };
    Ok(App {
        cfg: Arc::new(cfg),
        home: home.to_path_buf(),
        store,
        llm,
        delivery,
        clock,
        live: Arc::default(),
        timers: Arc::new(PollingTimers),
    })
}
