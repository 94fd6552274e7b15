//! The turn loop's side of [`TurnHooks`] (docs/tools.md#todo-clarify-and-delegation): one
//! [`Hooks`] per turn records a `clarify` request to end the turn, and runs `delegate_task`'s
//! child loops — a fresh context (the child's system prompt and its goal), the turn's tools
//! minus [`CHILD_BLOCKED_TOOLS`], the turn's model, route and deadline. Nothing a child says
//! is stored: only its final answer goes back, through the tool result. Every child model
//! call's tokens are added to what the turn reports ([`Hooks::take_usage`]), so they count
//! where the turn's own calls count (session totals, the usage counters, job budgets).

use crate::app::App;
use crate::app::tools::{CHILD_BLOCKED_TOOLS, ChildOutcome, ChildTask, ToolCtx, Toolset, TurnHooks};
use crate::app::turn::tool_guard::RepeatGuard;
use crate::core::prompt::assemble;
use crate::core::session::{Message, Role};
use crate::ports::{ChatRequest, ModelRoute};
use async_trait::async_trait;
use serde_json::json;
use std::sync::{Mutex, PoisonError};

/// One turn's hooks: what its tools asked of it, and what its children used.
pub(in crate::app) struct Hooks<'a> {
    /// The context child tool calls run in (the turn's, with no hooks of its own).
    ctx: ToolCtx<'a>,
    /// What a child is offered.
    tools: Toolset,
    model: Option<String>,
    route: Option<ModelRoute>,
    /// Tokens (input, output) children used and the turn has not taken yet.
    usage: Mutex<(u64, u64)>,
    /// The reply a `clarify` call asked the turn to end with.
    end: Mutex<Option<String>>,
}

impl<'a> Hooks<'a> {
    /// Hooks for the turn whose tool context (with no hooks) is `ctx` and whose tools are
    /// `toolset`.
    pub(in crate::app) fn new(ctx: &ToolCtx<'a>, toolset: &Toolset, model: Option<String>, route: Option<ModelRoute>) -> Self {
        Self {
            ctx: ToolCtx { turn: None, call_id: None, ..*ctx },
            tools: toolset.without(&CHILD_BLOCKED_TOOLS),
            model,
            route,
            usage: Mutex::new((0, 0)),
            end: Mutex::new(None),
        }
    }

    /// The tokens children used since the last call (input, output).
    pub(in crate::app) fn take_usage(&self) -> (u64, u64) {
        std::mem::take(&mut *self.usage.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The reply the turn was asked to end with, if it was.
    pub(in crate::app) fn take_end(&self) -> Option<String> {
        self.end.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn add_usage(&self, input: u64, output: u64) {
        let mut u = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        u.0 += input;
        u.1 += output;
    }
}

#[async_trait]
impl TurnHooks for Hooks<'_> {
    fn end_turn(&self, reply: String) {
        *self.end.lock().unwrap_or_else(PoisonError::into_inner) = Some(reply);
    }

    async fn run_child(&self, task: ChildTask) -> ChildOutcome {
        let app: &App = self.ctx.app;
        let goal = Message::text(Role::User, task.goal, app.inner.clock.now());
        let mut prompt = assemble(&task.system, &[], &[goal], usize::MAX, app.inner.clock.now());
        let specs = self.tools.specs();
        let mut out = ChildOutcome::default();
        let mut repeats = RepeatGuard::default();
        for _ in 0..task.max_iterations {
            // A child's calls are the job's calls: it stops where the parent would (`app::budget`).
            if let Err(e) = crate::app::budget::before_call() {
                out.error = Some(e);
                return out;
            }
            let req = ChatRequest { messages: prompt.clone(), tools: specs.clone(), model: self.model.clone(), route: self.route.clone() };
            let resp = match app.inner.llm.complete(&req).await {
                Ok(r) => r,
                Err(e) => {
                    out.error = Some(format!("the model call failed: {e}"));
                    return out;
                }
            };
            out.api_calls += 1;
            out.input_tokens += resp.input_tokens;
            out.output_tokens += resp.output_tokens;
            self.add_usage(resp.input_tokens, resp.output_tokens);
            app.charge_call(&resp.model, self.model.as_deref(), resp.input_tokens, resp.output_tokens);
            out.model = (!resp.model.is_empty()).then(|| resp.model.clone());
            if resp.tool_calls.is_empty() {
                out.summary = Some(resp.content);
                out.completed = true;
                return out;
            }
            let mut msg = Message::text(Role::Assistant, resp.content, app.inner.clock.now());
            msg.tool_calls = resp.tool_calls.clone();
            prompt.push(msg);
            for call in &resp.tool_calls {
                let result = match repeats.refuse(call) {
                    Some(refused) => refused,
                    None => self.tools.execute(&self.ctx, call).await,
                };
                let status = if result.is_error { "error" } else { "ok" };
                out.tool_trace.push(
                    json!({"tool": call.name, "args_bytes": call.arguments.len(), "result_bytes": result.content.len(), "status": status}),
                );
                let mut t = Message::text(Role::Tool, result.content, app.inner.clock.now());
                t.tool_call_id = Some(call.id.clone());
                prompt.push(t);
            }
        }
        out
    }
}
