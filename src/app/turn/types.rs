//! The types the files of a turn share: how a turn is run ([`TurnSpec`]), what it produced
//! ([`TurnOutput`]), the leased turn's entry and settling write ([`Leased`], [`Settled`]) and
//! its streaming plan ([`StreamPlan`]). It imports no other file of `turn`, except the
//! stream's destination type.

use crate::app::turn::stream_out::StreamOut;
use crate::app::types::TurnKind;
use crate::core::ids::SessionId;
use crate::core::session::{Fence, Message, SessionEntry};
use crate::ports::TurnRead;
use chrono::Duration;

/// What one turn produced.
#[derive(Debug, Clone, Default)]
pub struct TurnOutput {
    /// The final answer.
    pub reply: String,
    /// Prompt tokens used.
    pub input_tokens: u64,
    /// Completion tokens used.
    pub output_tokens: u64,
    /// The turn stopped at a step boundary because it was asked to.
    pub interrupted: bool,
    /// The reply already reached the platform as a streamed message (docs/design.md#streaming):
    /// the turn sends nothing more.
    pub streamed: bool,
    /// A job run's final answer, not stored yet: the fire stores it in the write of its
    /// delivery's ledger row or of its finish (docs/design.md#store-cost).
    pub held: Option<Message>,
    /// Messages the turn appended to the transcript.
    pub appended: u64,
    /// A job run's prompt that was not stored yet ([`TurnSpec::prompt_unstored`]) and that no
    /// append wrote: the fire stores it in front of the held answer.
    pub held_prompt: Option<Message>,
    /// A leased turn's final answer was stored by its settling write (see [`Leased`]).
    pub(in crate::app) settled: Option<Settled>,
}

/// What a leased turn's settling write left (docs/design.md#store-cost).
#[derive(Debug, Clone)]
pub(in crate::app) struct Settled {
    /// The entry as the write left it (still leased unless `released`).
    pub entry: Box<SessionEntry>,
    /// Whether the reply is to be sent now (its once key, if it needs one, was taken in
    /// that write; false when the key was taken before: it may have been sent).
    pub send: bool,
    /// The write also released the lease: a whole reply the caller's transport returns, with
    /// nothing waiting (the turn's second and last commit, docs/design/scale.md#store-cost).
    pub released: bool,
}

/// A chat turn under a lease, with the entry as the lease write returned it: its context
/// comes from one folded read made before the model, and its final answer is stored in one
/// write with the token update and the reply's once key, conditioned on the entry's version
/// (docs/design.md#store-cost).
pub(in crate::app) struct Leased<'a> {
    /// The entry in hand (holding the turn's lease).
    pub entry: &'a SessionEntry,
    /// Where the reply goes.
    pub path: crate::core::inbound::ReplyPath,
    /// The turn's folded read (transcript tail, count, memory snapshot, summary index).
    pub read: TurnRead,
    /// Wakes the model wait when a stop was stored in this process.
    pub signal: std::sync::Arc<tokio::sync::Notify>,
}

/// How a turn is run.
pub struct TurnSpec<'a> {
    /// The conversation.
    pub session_id: &'a SessionId,
    /// Extra system notes (reset, resume, job preamble).
    pub notes: Vec<String>,
    /// Chat turn or job run (decides the tools offered).
    pub kind: TurnKind,
    /// When the turn's time budget ends; tool calls still running then are cancelled.
    pub deadline: Option<tokio::time::Instant>,
    /// Model override (a job's `model`, the session's `/model`).
    pub model: Option<String>,
    /// A job's own provider / base URL (`None`: the configured model).
    pub route: Option<crate::ports::ModelRoute>,
    /// A job's `enabled_toolsets` (empty: every tool the turn may be offered).
    pub toolsets: Vec<String>,
    /// System prompt (SOUL.md or the job's own).
    pub system: String,
    /// The chat the turn runs for (tools that create jobs record it as their origin).
    pub origin: Option<crate::core::ids::Origin>,
    /// The lease the turn runs under (chat turns): every append is fenced by it, and a lost
    /// lease ends the turn with [`crate::ports::StoreError::Fenced`] (docs/design.md#lease).
    pub fence: Option<Fence>,
    /// Where the model's text streams while it answers (`None`: the reply is sent whole).
    pub stream: Option<StreamPlan>,
    /// The whole transcript when the caller knows it (a job run's fresh session holds only
    /// the prompt it just wrote): the context is built without reading the store.
    pub transcript: Option<Vec<Message>>,
    /// The first message of `transcript` is not stored yet (a script job's prompt, known only
    /// once its script ran after the claim): the turn's first append writes it in front, and
    /// a job's held answer hands it back ([`TurnOutput::held_prompt`]).
    pub prompt_unstored: bool,
}

/// How often a running model call reads the store to see whether its turn should stop: a
/// stop stored by this process wakes it at once (`Live::signal_stop`); this poll is for a
/// stop stored by another process (docs/design.md#turn).
pub(in crate::app) const STOP_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// How one turn streams its reply: where to, and Hermes' `streaming` settings.
#[derive(Clone)]
pub(in crate::app) struct StreamPlan {
    pub(in crate::app::turn) out: StreamOut,
    pub(in crate::app::turn) fence: Fence,
    pub(in crate::app::turn) interval: Duration,
    pub(in crate::app::turn) threshold: usize,
    pub(in crate::app::turn) cursor: String,
}
