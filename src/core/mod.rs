//! The pure domain: identities, session state, prompt assembly and text rules.
//!
//! Must not import axum, lambda_http, aws-sdk, reqwest or rusqlite: everything here is a
//! function of its inputs (time included, passed in as a value), so it is unit- and
//! property-tested without I/O.

pub mod access;
pub mod api_server;
pub mod api_sessions;
pub mod child_env;
pub mod commands;
pub mod compress;
pub mod ids;
pub mod inbound;
pub mod job;
pub mod job_api;
pub mod job_options;
pub mod jobfile;
pub mod media;
pub mod memory;
pub mod pairing;
pub mod pricing;
pub mod profile;
pub mod prompt;
pub mod queue;
pub mod recovery;
pub mod reset;
pub mod retry;
pub mod run;
pub mod schedule;
pub mod script;
pub mod search;
pub mod session;
pub mod session_chat;
pub mod skill;
pub mod skill_write;
pub mod spend;
pub mod stable_hash;
pub mod streak;
pub mod text;
pub mod timers;
pub mod tool_preview;
pub mod webhook;
