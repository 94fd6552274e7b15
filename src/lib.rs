//! # hermes-zero
//!
//! A scale-to-zero gateway for a Hermes-style chat agent. It wakes on a chat message or a
//! timer callback, verifies the caller, claims the work with a compare-and-set write,
//! rebuilds the session from the store, runs one agent turn, and goes back to sleep.
//!
//! # Layout
//!
//! The data path is one straight line: transport → authenticate → use case → core rules →
//! ports → adapters.
//!
//! - [`core`]: pure domain — ids, session state, prompt assembly, text splitting. No I/O.
//! - [`ports`]: the traits the app needs — `Store`, `Llm`, `Delivery`, `Clock`.
//! - [`app`]: use cases written against ports only (`handle_inbound`, the agent turn).
//! - [`store`]: store adapters — SQLite (always), and the conformance suite every adapter passes.
//! - [`clients`]: outbound adapters — OpenAI-compatible and offline models, Telegram, Discord.
//! - [`http`]: the one router (`http::router`), extractors (API key, signatures, fire-token
//!   verification in `http::fire_auth`), error mapping, and the dashboard page (`http/ui/`,
//!   served by `routes::ui`).
//! - [`runtime`]: process wiring, `serve` and its ticker.
//! - [`dev`]: `chronos-dev`, the local NAS emulator.
//! - [`config`]: typed settings from defaults, `config.yaml` and the environment.
//! - [`cli`]: the command line.

pub mod app;
pub mod cli;
pub mod clients;
pub mod config;
pub mod core;
pub mod dev;
pub mod http;
pub mod ports;
pub mod runtime;
pub mod store;
