//! `current_time`: the current date and time in the agent's configured timezone.

use super::{Tool, ToolCtx, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};

/// The `current_time` tool.
pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    fn name(&self) -> &str {
        "current_time"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "time"
    }

    fn description(&self) -> &str {
        "Current date and time in the agent's configured timezone."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(&self, ctx: &ToolCtx<'_>, _args: Value) -> Result<ToolOutput, ToolError> {
        let now = ctx.now().with_timezone(&ctx.app.inner.cfg.tz);
        Ok(json!({"now": now.to_rfc3339(), "timezone": ctx.app.inner.cfg.settings.timezone}).into())
    }
}
