//! The ports: narrow traits the application needs from the world, held as `Arc<dyn Port>`.
//!
//! Adapters live in `store/` and `clients/`; the app in `app/` sees only these traits.
//! Nothing here knows SQL, HTTP or AWS. This file owns the [`Clock`]; each other port has
//! its own file, re-exported here so every port is named `crate::ports::X`:
//! - `store`: [`Store`], split by concern into [`SessionStore`], [`QueueStore`],
//!   [`JobStore`], [`LedgerStore`] and [`MetaStore`]. Through `Arc<dyn Store>` every method
//!   is callable without importing its concern; a concrete adapter needs the concern in scope;
//!   `fire_store`: [`FireStore`], the fire path's folded writes, also part of [`Store`];
//! - `llm`: [`Llm`], the model; `delivery`: [`Delivery`], outbound messages;
//! - `timers`: [`Timers`], whoever wakes the process for a job's next occurrence;
//! - `stt`: [`Transcriber`], speech to text for voice notes;
//! - `fetch`: [`Fetcher`] and [`Resolve`], the web tools' pinned GETs and name lookups;
//! - `mcp`: [`McpConnector`] and [`McpSession`], MCP servers' tools;
//! - `web`: [`WebBackend`], the search vendors of `web_search` and `web_extract`.
//! - `script`: [`ScriptRunner`], job scripts as child processes;
//! - `speech`: [`Speaker`], `text_to_speech`'s vendor.
//! - `session_delete`: [`SessionDeleteStore`], deleting a conversation whole, also part of [`Store`].

mod delivery;
mod fetch;
mod fire_store;
mod keys;
mod llm;
mod mcp;
mod script;
mod session_delete;
mod speech;
mod store;
mod stt;
mod timers;
mod web;

pub use delivery::{Delivery, DeliveryError, StreamTarget, Target};
pub use fetch::{FetchBody, FetchError, FetchResponse, Fetcher, Pin, Resolve};
pub use fire_store::{FireFinish, FireStore, RunAppend};
pub use keys::JwksSource;
pub use llm::{ChatRequest, ChatResponse, Llm, LlmError, ModelRoute, TextSink, ToolSpec};
pub use mcp::{McpCallResult, McpConnector, McpEndpoint, McpError, McpSession, McpTool};
pub use script::{ScriptError, ScriptOutput, ScriptRunner, ScriptSpec};
pub use session_delete::{Deleted, SessionDeleteStore};
pub use speech::{Speaker, SpeechError};
pub use store::{
    Appended, Claim, Counts, InboundId, JobStore, LedgerStore, MAX_SESSION_NOTES, MetaStore, QueueStore, QueuedItem, SearchHit,
    SessionChange, SessionStore, Store, StoreError, TurnRead, TurnStore, note_meta_key,
};
pub use stt::{Audio, NoStt, SttError, Transcriber};
pub use timers::{PollingTimers, ReconcileReport, TimerError, TimerProvider, Timers, WAKE_ID};
pub use web::{WebBackend, WebError, WebHit, WebPage};

use chrono::{DateTime, Utc};
use std::sync::Mutex;

/// The source of "now". Every time rule is a pure function of this value.
pub trait Clock: Send + Sync {
    /// Current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The wall clock shifted by a fixed offset (the `HERMES_CLOCK_OFFSET_SECS` testing aid).
#[derive(Debug)]
pub struct OffsetClock(pub chrono::Duration);

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.0
    }
}

/// A clock moved by hand (tests and simulations).
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        Self(Mutex::new(t))
    }

    /// Moves to `t`.
    pub fn set(&self, t: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = t;
    }

    /// Moves forward.
    pub fn advance(&self, d: chrono::Duration) {
        let mut g = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *g += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
