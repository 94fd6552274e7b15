//! One agent turn, read top-down: [`runner`] runs turns under a session's lease (one turn,
//! then the pending slot and the FIFO until both are empty) and calls [`agent`], the model
//! loop (prompt → model → tools → … → final answer). The loop builds its prompt with
//! [`context`] (the transcript window and compression), writes under the lease with
//! [`lease`] (fenced appends, renewal, replies sent at most once), streams the reply with
//! [`stream`] (into [`stream_out`]'s destination) and stops a repeating tool call with
//! [`tool_guard`]; [`children`] is what tools may ask of the loop (`clarify` ending the turn,
//! `delegate_task`'s child loops).
//!
//! Calls run one way: `runner` → `agent` → `context` / `stream` / `lease` / `tool_guard` /
//! `children` (→ `tool_guard`);
//! none of those calls back up. The types they share live in [`types`].
//!
//! Owns no HTTP, SQL or vendor type: the store, the model and the platforms are ports.

pub(in crate::app) mod agent;
pub(in crate::app) mod children;
pub(in crate::app) mod context;
pub(in crate::app) mod lease;
pub(in crate::app) mod runner;
pub(in crate::app) mod stream;
pub(in crate::app) mod stream_out;
pub(in crate::app) mod tool_guard;
pub(in crate::app) mod types;

#[cfg(test)]
mod burst_tests;
#[cfg(test)]
mod compress_tests;
#[cfg(test)]
mod fence_tests;
