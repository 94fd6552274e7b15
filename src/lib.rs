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
//! - [`core`]: pure domain — ids, the inbound message, session state, reset policy and rules,
//!   the two-level queue rules, restart-recovery rules, commands, schedules (with DST), jobs,
//!   runs (and the retry of a run that had no effect) and jobs.json, the timer-provider kinds, prompt assembly, text splitting. No I/O and
//!   no `config`: config parses into core's types.
//! - [`ports`]: the traits the app needs, one file each under `src/ports/` — `Store` (split by
//!   concern: `SessionStore`, `QueueStore`, `JobStore`, `LedgerStore`, `MetaStore`), `Llm`,
//!   `Delivery`, `Timers`, `JwksSource`, `Transcriber`, `Fetcher`/`Resolve` (the web tools),
//!   `McpConnector`/`McpSession` (MCP servers), `ScriptRunner` (job scripts), `Clock`.
//! - [`app`]: use cases written against ports only, one folder (room) per use case, each with
//!   a module doc — `app::sessions` (a chat message, commands, media, import), `app::turn`
//!   (one agent turn under a lease: model loop, context, streaming), `app::jobs` (CRUD, sync,
//!   the one fire path, the run, delivery, the fire-token verifier), `recovery` (sweeps,
//!   shutdown, wakes), `memory`, and `app::tools` (the `Tool` trait, one file per tool, the
//!   registry with Hermes' toolsets; docs/design.md#add-tool), `app::webhooks` (Hermes' webhook
//!   routes: rate window, delivery ids, the run and its delivery) — offered to the edges as
//!   services: `app.sessions()`, `app.jobs()`, `app.recovery()`, `app.webhooks()`, over one private inner
//!   struct of ports and settings. No `use` loop between sibling modules (`tests/app_rooms.rs`).
//! - [`store`]: store adapters — SQLite (always), DynamoDB (feature `aws`, `docs/dynamodb.md`),
//!   and the conformance suite every adapter passes, one named test per check.
//! - [`channels`]: the chat platforms (Telegram, Discord, Slack, WhatsApp) behind one `Channel` trait —
//!   webhook authentication before parsing and normalization into a core `Inbound`, outbound
//!   send/split with retries — and the registry that is the `Delivery` port
//!   (`docs/design.md#add-channel`); the API's normalization.
//! - [`clients`]: outbound adapters — OpenAI-compatible, Anthropic and offline models (and the
//!   fallback chain over them), the Chronos NAS, JWKS, EventBridge Scheduler (feature `aws`),
//!   MCP servers (`clients::mcp`), the web tools' pinned-address fetcher (`clients::fetch`),
//!   speech to text, job scripts' child processes (`clients::script`). `app` imports none of them; `tests/architecture.rs` checks this rule and
//!   the others of this map (core, http, cli).
//! - [`http`]: the one router (`http::router`, webhook routes generated from the channel
//!   registry, Hermes' webhook routes `/webhooks/{route}` with their signatures in `http::hooks`), extractors (API key, the fire token in `http::fire_auth`), error mapping, and
//!   the dashboard page (`http/ui/`, served by `routes::ui`). Imports no `clients`.
//! - [`runtime`]: process wiring (app, channel registry and fire-token verifier built once),
//!   `serve` and its ticker, the Lambda entry (feature `aws`).
//! - [`dev`]: `chronos-dev`, the local NAS emulator.
//! - [`config`]: typed settings from defaults, `config.yaml` and the environment; the table of
//!   Hermes' model providers (`config::models`).
//! - [`cli`]: the command line (calls the same services the routes call; imports no `http`).

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
