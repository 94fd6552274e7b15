//! `memory`: the agent's curated memory, Hermes' tool (docs/design.md#memory). Offered in
//! chat turns while at least one store is enabled; the rules live in `core::memory`, the
//! stored records in `app::memory`.

use super::{Tool, ToolCtx, ToolError, ToolOutput, TurnKind, parse_args};
use crate::core::memory::{Op, Target};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The `memory` tool.
pub struct MemoryTool;

/// The call's arguments (Hermes' names).
#[derive(Debug, Deserialize)]
struct Args {
    action: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    old_text: Option<String>,
}

#[async_trait]
impl Tool for MemoryTool {
    fn name(&self) -> &str {
        "memory"
    }

    fn toolset(&self) -> &str {
        "memory"
    }

    fn description(&self) -> &str {
        "Save durable facts to persistent memory that survive across sessions. Memory is injected into every future \
session's system prompt, so keep entries compact and high-signal.\n\n\
WHEN: save proactively when the user states a preference, correction, or personal detail, or you learn a stable fact \
about their environment, conventions, or workflow. Priority: user preferences & corrections > environment facts > \
procedures. The best memory stops the user repeating themselves.\n\n\
IF FULL: an add is rejected with the current usage and entries shown. 'replace' overlapping entries with shorter ones \
or 'remove' stale ones, then retry.\n\n\
TARGETS: 'user' = who the user is (name, role, preferences, style). 'memory' = your notes (environment, conventions, \
tool quirks, lessons).\n\n\
SKIP: trivial/obvious info, easily re-discovered facts, raw data dumps, task progress, temporary TODO state."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "replace", "remove"], "description": "The action to perform."},
                "target": {"type": "string", "enum": ["memory", "user"], "description": "Which memory store: 'memory' for personal notes, 'user' for user profile."},
                "content": {"type": "string", "description": "The entry content. Required for 'add' and 'replace'."},
                "old_text": {"type": "string", "description": "REQUIRED for 'replace' and 'remove': a short unique substring identifying the existing entry to modify."}
            },
            "required": ["action", "target"]
        })
    }

    /// Chat turns, while a store is enabled (Hermes' job runs skip memory too).
    fn offered(&self, ctx: &ToolCtx<'_>) -> bool {
        let m = &ctx.app.inner.cfg.settings.memory;
        ctx.kind == TurnKind::Chat && (m.memory_enabled || m.user_profile_enabled)
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: Args = parse_args(args)?;
        let target = Target::parse(a.target.as_deref().unwrap_or("memory")).map_err(ToolError::BadArgs)?;
        if !ctx.app.inner.cfg.settings.memory.enabled(target) {
            let key = if target == Target::User { "memory.user_profile_enabled" } else { "memory.memory_enabled" };
            return Err(ToolError::Failed(format!("The '{}' store is disabled ({key} is false).", target.as_str())));
        }
        let content = a.content.unwrap_or_default();
        let old = a.old_text.unwrap_or_default();
        let op = match a.action.trim() {
            "add" if content.trim().is_empty() => return Err(ToolError::BadArgs("Content is required for 'add' action.".into())),
            "add" => Op::Add(content),
            "replace" if content.trim().is_empty() => {
                return Err(ToolError::BadArgs("content is required for 'replace' action. Use 'remove' to delete entries.".into()));
            }
            "replace" => Op::Replace { old, new: content },
            "remove" => Op::Remove(old),
            other => return Err(ToolError::BadArgs(format!("Unknown action '{other}'. Use: add, replace, remove"))),
        };
        match ctx.app.memory_apply(&ctx.app.memory_shelf(target, ctx.origin), &op).await {
            Ok(Ok(v)) => Ok(ToolOutput::Json(v)),
            Ok(Err(refusal)) => Err(ToolError::Failed(refusal)),
            Err(e) => Err(ToolError::Failed(format!("memory is unavailable right now: {e}"))),
        }
    }
}
