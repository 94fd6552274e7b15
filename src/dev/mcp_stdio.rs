//! A tiny MCP server on stdin/stdout (feature `testing`, hidden command `mcp-dev-stdio`):
//! what the black-box tests start as a stdio `mcp_servers` entry. One tool, `echo`, which
//! returns its `text` argument, and `env`, which returns its own environment as a JSON object
//! (what the tests check for secrets). With `HZ_MCP_MARKER` set (a server `env` entry) it
//! writes that file when it starts, so a test can tell whether the gateway spawned it.

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams};
use rmcp::model::{ServerCapabilities, ServerConfig, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;

/// The server's handler.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
        let none = Arc::new(json!({"type": "object", "properties": {}}).as_object().cloned().unwrap_or_default());
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Returns its text.", schema),
            Tool::new("env", "Returns this server's environment.", none),
        ]))
    }

    async fn call_tool(&self, req: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        if req.name == "env" {
            let env: serde_json::Map<String, Value> = std::env::vars_os()
                .map(|(k, v)| (k.to_string_lossy().into_owned(), Value::String(v.to_string_lossy().into_owned())))
                .collect();
            return Ok(CallToolResult::success(vec![ContentBlock::text(Value::Object(env).to_string())]).into());
        }
        if req.name != "echo" {
            return Err(ErrorData::invalid_params(format!("unknown tool {}", req.name), None));
        }
        let text = req.arguments.as_ref().and_then(|a| a.get("text")).and_then(Value::as_str).unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("echo: {text}"))]).into())
    }
}

/// Serves [`Echo`] on stdin/stdout until the client closes the pipe.
pub async fn run() -> anyhow::Result<()> {
    if let Some(marker) = std::env::var_os("HZ_MCP_MARKER") {
        std::fs::write(marker, "started")?;
    }
    let service = Echo.serve(rmcp::transport::io::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
