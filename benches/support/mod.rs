//! What the benchmarks share: an app on an instant model and a delivery that goes nowhere,
//! percentiles, an API message and a due hourly job.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hermes_zero::app::{App, Inbound, Parts, ReplyPath};
use hermes_zero::config::Loaded;
use hermes_zero::core::ids::{ChatType, Origin};
use hermes_zero::core::job::Job;
use hermes_zero::ports::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A model that answers "ok" at once.
pub struct Instant0;

#[async_trait]
impl Llm for Instant0 {
    fn name(&self) -> &'static str {
        "instant"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse { content: "ok".into(), ..ChatResponse::default() })
    }
}

/// A delivery port with no platform.
pub struct NoDelivery;

#[async_trait]
impl Delivery for NoDelivery {
    fn delivers_to(&self, _: &str) -> bool {
        false
    }
    async fn send(&self, _: &Target, _: &str) -> Result<(), DeliveryError> {
        Ok(())
    }
}

/// The `p` percentile of `v`, in milliseconds.
pub fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// A DM over the HTTP API, answered to the caller.
pub fn msg(chat: &str, text: &str) -> Inbound {
    Inbound {
        origin: Origin::new("api", chat, ChatType::Dm, Some("u"), None).unwrap(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Caller,
        attachments: Vec::new(),
    }
}

/// An hourly job due at `at`.
pub fn job(id: &str, at: DateTime<Utc>) -> Job {
    let v = json!({"id": id, "schedule": "every 1h", "prompt": "p", "deliver": "local"});
    let s = hermes_zero::core::jobfile::parse_job(&v, at, chrono_tz::UTC).unwrap();
    Job { next_run_at: Some(at), ..Job::from_spec(&s, false, at, chrono_tz::UTC) }
}

/// An app on `store` with the settings `cfg`, the instant model, no delivery, the system clock
/// and the built-in ticker's timers.
pub fn app(dir: &std::path::Path, cfg: Loaded, store: Arc<dyn Store>) -> App {
    App::new(Parts {
        cfg: Arc::new(cfg),
        home: dir.to_path_buf(),
        store,
        llm: Arc::new(Instant0),
        delivery: Arc::new(NoDelivery),
        clock: Arc::new(SystemClock),
        timers: Arc::new(PollingTimers),
        tools: Arc::new(hermes_zero::app::tools::builtin(&hermes_zero::runtime::tool_ports())),
        owner: None,
        jwks: Arc::new(hermes_zero::clients::jwks::HttpJwks::default()),
        stt: Arc::new(hermes_zero::ports::NoStt("benchmarks".into())),
        mcp: Arc::new(hermes_zero::clients::mcp::RmcpConnector),
        scripts: Arc::new(hermes_zero::clients::script::ProcessScripts),
    })
}
