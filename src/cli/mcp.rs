//! `hermes-zero mcp list`: the configured MCP servers, their state and tools
//! (docs/design.md#mcp).

use super::McpCmd;
use crate::app::App;
use std::process::ExitCode;

/// Runs one `mcp` sub-command.
pub async fn run(app: App, cmd: McpCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCmd::List { json, refresh } => list(&app, json, refresh).await,
    }
}

async fn list(app: &App, json: bool, refresh: bool) -> anyhow::Result<ExitCode> {
    let reports = app.mcp_list(refresh).await;
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(ExitCode::SUCCESS);
    }
    if reports.is_empty() {
        println!("no MCP servers configured (mcp_servers in config.yaml)");
    }
    for r in &reports {
        let cached = r.cached_at.as_deref().map(|t| format!(", listed {t}")).unwrap_or_default();
        println!("{}  {}  {}  {} tools{cached}", r.name, r.transport, r.state, r.tool_count);
        for t in &r.tools {
            println!("  {t}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
