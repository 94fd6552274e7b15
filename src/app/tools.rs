//! The chat agent's tools: their specs for the model and their execution.

use crate::app::App;
use crate::core::session::ToolCall;
use crate::ports::ToolSpec;
use serde_json::json;

/// The tools offered to a chat turn.
pub fn chat_tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "current_time".into(),
        description: "Current date and time in the agent's configured timezone.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    }]
}

/// Runs one tool call and returns the text the model sees. Unknown tools and bad arguments
/// become error text for the model, never a failure of the turn.
pub async fn execute(app: &App, call: &ToolCall) -> String {
    match call.name.as_str() {
        "current_time" => {
            let now = app.clock.now().with_timezone(&app.cfg.tz);
            json!({"now": now.to_rfc3339(), "timezone": app.cfg.settings.timezone}).to_string()
        }
        other => json!({"error": format!("unknown tool `{other}`")}).to_string(),
    }
}
