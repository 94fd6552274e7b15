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
//! - [`core`]: pure domain — ids, the inbound message, session state, reset policy, the two-level queue rules,
//!   restart-recovery rules, commands, schedules (with DST), jobs and jobs.json, prompt
//!   assembly, text splitting. No I/O.
//! - [`ports`]: the traits the app needs — `Store`, `Llm`, `Delivery`, `Timers`, `Clock`.
//! - [`app`]: use cases written against ports only — `handle_inbound` (commands, lease,
//!   queue, turn), recovery sweeps and clean shutdown, the one fire path, job management,
//!   offered to the edges as three services (`app.sessions()`, `app.jobs()`,
//!   `app.recovery()`) over one private inner struct of ports and settings, and the agent's tools (`app::tools`: the `Tool` trait, one file per tool, and the
//!   registry the turn loop asks; `docs/design.md#add-tool`).
//! - [`store`]: store adapters — SQLite (always), DynamoDB (feature `aws`, `docs/dynamodb.md`),
//!   and the conformance suite every adapter passes.
//! - [`channels`]: the chat platforms (Telegram, Discord) behind one `Channel` trait —
//!   webhook authentication and normalization into a core `Inbound`, outbound send/split
//!   with retries — and the registry that is the `Delivery` port; the API's normalization.
//! - [`clients`]: outbound adapters — OpenAI-compatible, Anthropic and offline models (and the
//!   fallback chain over them), the Chronos NAS, EventBridge Scheduler (feature `aws`).
//! - [`http`]: the one router (`http::router`, webhook routes generated from the channel
//!   registry), extractors (API key, signatures, fire-token
//!   verification in `http::fire_auth`), error mapping, and the dashboard page (`http/ui/`,
//!   served by `routes::ui`).
//! - [`runtime`]: process wiring (app and channel registry built once), `serve` and its ticker, the Lambda entry (feature `aws`).
//! - [`dev`]: `chronos-dev`, the local NAS emulator.
//! - [`config`]: typed settings from defaults, `config.yaml` and the environment; the table of
//!   Hermes' model providers (`config::models`).
//! - [`cli`]: the command line.

pub mod app;
pub mod channels;
pub mod cli;
pub mod clients;
pub mod config;
pub mod core;
pub mod dev;
pub mod http;
pub mod ports;
pub mod runtime;
pub mod store;
#[cfg(test)]
pub(crate) mod test_support;
