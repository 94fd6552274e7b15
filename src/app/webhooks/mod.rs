//! Webhook routes (CONTRACT §16, Hermes' `gateway/platforms/webhook.py`): what happens to a
//! delivery once the edge has checked its signature and parsed it — the per-route rate
//! window ([`types::Rates`]), the delivery id spent once for an hour in the store (so a
//! retry on another process is still a duplicate), and the run: a fresh session
//! `webhook:<route>:<delivery_id>` whose one agent turn answers the rendered prompt
//! ([`run`]), its answer delivered to the route's `deliver` target ([`deliver`]), or, for
//! `deliver_only`, the rendered text delivered with no model call.
//!
//! Calls run one way: `run` → `deliver`; both use [`types`]. The turn is `app::turn`'s
//! (a job-like turn: no chat, so neither `cronjob` nor `send_message` is offered).
//! Knows no HTTP: signatures, bodies and status codes are the edge's (`http::hooks`).

pub(in crate::app) mod deliver;
pub(in crate::app) mod run;
pub(in crate::app) mod types;
