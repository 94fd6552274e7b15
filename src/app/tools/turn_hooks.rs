//! What a tool may ask of the turn loop that runs it ([`TurnHooks`]): end the turn after this
//! step with a given reply (`clarify`), and run one child agent loop with its own fresh
//! context (`delegate_task`). The turn loop implements the trait and hands it in through
//! [`super::ToolCtx::turn`]; a call with no turn loop behind it (a delegated child's own
//! calls, tests) sees `None` and refuses.
//!
//! Must not know: how the turn loop stores, streams or counts; it only states the requests.

use async_trait::async_trait;
use serde_json::Value;

/// One delegated task, as `delegate_task` hands it to the turn loop.
#[derive(Debug, Clone)]
pub struct ChildTask {
    /// The child's system prompt (built from the goal and its context).
    pub system: String,
    /// The child's one user message: the goal.
    pub goal: String,
    /// Most model calls the child may make (`delegation.max_iterations`).
    pub max_iterations: u32,
}

/// What one child loop produced. Only `summary` (its final answer) reaches the parent model;
/// the rest is bookkeeping for the result's metadata.
#[derive(Debug, Clone, Default)]
pub struct ChildOutcome {
    /// The child's final answer (`None`: it gave none).
    pub summary: Option<String>,
    /// Whether it reached a final answer (false: it ran out of iterations or failed).
    pub completed: bool,
    /// Why it failed (a model error), if it did.
    pub error: Option<String>,
    /// Model calls it made.
    pub api_calls: u32,
    /// Prompt tokens its model calls used (already counted toward the parent turn).
    pub input_tokens: u64,
    /// Completion tokens its model calls used (already counted toward the parent turn).
    pub output_tokens: u64,
    /// The model id that answered last.
    pub model: Option<String>,
    /// One entry per tool call it made: `{tool, args_bytes, result_bytes, status}` (sizes
    /// only, never contents).
    pub tool_trace: Vec<Value>,
}

/// The requests a tool may make of the turn that runs it.
#[async_trait]
pub trait TurnHooks: Send + Sync {
    /// Ends the turn once the current step's calls have run, with `reply` as its final
    /// answer (stored and sent as an answer would be). The user's next message then starts
    /// the next turn.
    fn end_turn(&self, reply: String);

    /// Runs one child agent loop: a fresh context (`task.system`, then `task.goal` as the
    /// user message), the parent's tools minus those a child may not use, the parent's model
    /// and deadline. Its model calls count toward the parent turn's usage.
    async fn run_child(&self, task: ChildTask) -> ChildOutcome;
}
