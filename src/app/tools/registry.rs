//! The tool registry: the tools this deployment has (built-ins at wiring time, more may be
//! registered at run time, e.g. an MCP server's), the per-turn [`Toolset`] of what a turn is
//! offered, and the execution of one call by name with its error handling and time bound.

use super::{Tool, ToolCtx, ToolError};
use crate::core::session::ToolCall;
use crate::ports::ToolSpec;
use serde_json::{Value, json};
use std::sync::{Arc, PoisonError, RwLock};
use tokio::time::Instant;

/// Every tool of this deployment, by name, in registration order. Shared by all turns.
#[derive(Default)]
pub struct ToolRegistry {
    tools: RwLock<Vec<Entry>>,
}

/// A registered tool with its spec, built once at registration: every turn's model calls
/// share it instead of building (and cloning per call) each schema again; with 100 turns in
/// flight that was the largest heap use after the connections (BENCHMARKS §9).
#[derive(Clone)]
struct Entry {
    tool: Arc<dyn Tool>,
    spec: Arc<ToolSpec>,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>) -> Self {
        let spec =
            Arc::new(ToolSpec { name: tool.name().to_string(), description: tool.description().to_string(), parameters: tool.schema() });
        Self { tool, spec }
    }
}

impl std::ops::Deref for Entry {
    type Target = dyn Tool;
    fn deref(&self) -> &(dyn Tool + 'static) {
        self.tool.as_ref()
    }
}

/// A tool of that name is already registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a tool named `{0}` is already registered")]
pub struct DuplicateTool(pub String);

impl ToolRegistry {
    /// Adds a tool (offered from the next turn on).
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), DuplicateTool> {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if tools.iter().any(|t| t.name() == tool.name()) {
            return Err(DuplicateTool(tool.name().to_string()));
        }
        tools.push(Entry::new(tool));
        Ok(())
    }

    /// Removes the tool called `name`; whether there was one. Turns already running keep
    /// their [`Toolset`].
    pub fn unregister(&self, name: &str) -> bool {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let before = tools.len();
        tools.retain(|t| t.name() != name);
        tools.len() != before
    }

    /// Swaps the tools called `old` for `new` under one lock, so no turn or status read sees
    /// the set half-replaced (an MCP server's refreshed list). Each new tool whose name another
    /// tool still holds is refused; returns the names that were added.
    pub fn replace(&self, old: &[String], new: Vec<Arc<dyn Tool>>) -> Vec<Result<String, DuplicateTool>> {
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        tools.retain(|t| !old.iter().any(|o| o == t.name()));
        new.into_iter()
            .map(|tool| {
                if tools.iter().any(|t| t.name() == tool.name()) {
                    return Err(DuplicateTool(tool.name().to_string()));
                }
                let name = tool.name().to_string();
                tools.push(Entry::new(tool));
                Ok(name)
            })
            .collect()
    }

    /// The names of all registered tools, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner).iter().map(|t| t.name().to_string()).collect()
    }

    /// The names of the tools that belong to any of `toolsets` (Hermes' names: `web`,
    /// `memory`, `mcp-<server>`, …), in registration order: what `enabled_toolsets` or a
    /// platform's `platform_toolsets` switches on. An unknown toolset adds nothing.
    pub fn of_toolsets(&self, toolsets: &[&str]) -> Vec<String> {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        tools.iter().filter(|t| toolsets.contains(&t.toolset())).map(|t| t.name().to_string()).collect()
    }

    /// Every toolset that has a tool here, each once, in the order its first tool was
    /// registered.
    pub fn toolsets(&self) -> Vec<String> {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        let mut sets: Vec<String> = Vec::new();
        for t in tools.iter() {
            if !sets.iter().any(|s| s == t.toolset()) {
                sets.push(t.toolset().to_string());
            }
        }
        sets
    }

    /// The tools offered to the turn `ctx` describes. Taken once per turn, so the set cannot
    /// change under a running turn.
    pub fn toolset(&self, ctx: &ToolCtx<'_>) -> Toolset {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        Toolset { tools: tools.iter().filter(|t| t.offered(ctx)).cloned().collect() }
    }
}

/// The toolsets a job's `enabled_toolsets` switches on, as Hermes 0.19.0's
/// `_merge_mcp_into_per_job_toolsets`: the named toolsets, plus every MCP server's
/// (`mcp-<server>`, of `known`) unless the list names one itself (then it is the allowlist)
/// or holds the `no_mcp` sentinel (then none).
pub fn job_toolsets(per_job: &[String], known: &[String]) -> Vec<String> {
    let mcp = |t: &str| t.starts_with("mcp-") && known.iter().any(|k| k == t);
    let named_mcp = |t: &str| mcp(t) || known.iter().any(|k| k.strip_prefix("mcp-") == Some(t));
    let mut out: Vec<String> = Vec::new();
    for t in per_job.iter().filter(|t| *t != "no_mcp") {
        // A server named bare (Hermes' spelling) stands for its `mcp-<server>` toolset.
        let t = if !mcp(t) && named_mcp(t) { format!("mcp-{t}") } else { t.clone() };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if per_job.iter().any(|t| t == "no_mcp") || out.iter().any(|t| mcp(t)) {
        return out;
    }
    out.extend(known.iter().filter(|k| mcp(k)).cloned());
    out
}

/// The tools one turn is offered; only these can be called in it.
pub struct Toolset {
    tools: Vec<Entry>,
}

/// One executed call, ready for the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// What the model sees (`{"error": …}` when the call failed).
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

impl Toolset {
    /// The specs sent to the model (shared, built at registration).
    pub fn specs(&self) -> Vec<Arc<ToolSpec>> {
        self.tools.iter().map(|t| t.spec.clone()).collect()
    }

    /// This set narrowed to the tools named (a flush turn offers only `memory`).
    pub fn only(self, names: &[&str]) -> Self {
        Self { tools: self.tools.into_iter().filter(|t| names.contains(&t.name())).collect() }
    }

    /// This set narrowed to the tools of `toolsets` (the turn's enabled toolsets).
    pub fn in_toolsets(self, toolsets: &[&str]) -> Self {
        Self { tools: self.tools.into_iter().filter(|t| toolsets.contains(&t.toolset())).collect() }
    }

    /// A copy of this set without the tools named (what a delegated child is offered).
    pub fn without(&self, names: &[&str]) -> Self {
        Self { tools: self.tools.iter().filter(|t| !names.contains(&t.name())).cloned().collect() }
    }

    /// Whether no tool is offered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs `call` and returns what the model sees. Never fails: an unknown name, arguments
    /// that are not a JSON object, a tool error or a time-out become an error result.
    pub async fn execute(&self, ctx: &ToolCtx<'_>, call: &ToolCall) -> ToolResult {
        let started = Instant::now();
        let ctx = &ToolCtx { call_id: Some(&call.id), ..*ctx };
        let outcome = match self.tools.iter().find(|t| t.name() == call.name) {
            None => Err(ToolError::Unknown(call.name.clone())),
            Some(tool) => match object_args(&call.arguments) {
                Err(e) => Err(e),
                Ok(args) => {
                    if ctx.kind == super::TurnKind::Job && tool.has_effect(&args) {
                        // Marked before the call starts: a run cut off mid-call had an effect.
                        ctx.app.inner.effects.mark(ctx.session_id.as_str());
                    }
                    bounded(tool.tool.as_ref(), ctx, args, started).await
                }
            },
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match outcome {
            Ok(out) => ToolResult { content: out.into_text(), is_error: false, duration_ms },
            Err(e) => {
                tracing::info!(tool = %call.name, error = %e, duration_ms, "tool call failed");
                ToolResult { content: json!({"error": e.to_string()}).to_string(), is_error: true, duration_ms }
            }
        }
    }
}

/// Runs the call, cancelled at the earlier of the tool's own timeout and the turn's deadline.
async fn bounded(tool: &dyn Tool, ctx: &ToolCtx<'_>, args: Value, started: Instant) -> Result<super::ToolOutput, ToolError> {
    let own = tool.timeout().map(|t| started + t);
    match own.into_iter().chain(ctx.deadline).min() {
        None => tool.call(ctx, args).await,
        Some(at) => {
            tokio::time::timeout_at(at, tool.call(ctx, args)).await.unwrap_or_else(|_| Err(ToolError::TimedOut(tool.name().to_string())))
        }
    }
}

/// The model's argument text as a JSON object. Empty text and `null` count as no arguments
/// (some models send them for tools without parameters).
fn object_args(text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(Value::Null) => Ok(json!({})),
        Ok(_) => Err(ToolError::BadArgs("arguments must be a JSON object".into())),
        Err(e) => Err(ToolError::BadArgs(format!("arguments must be a JSON object: {e}"))),
    }
}
