//! The MCP client (docs/design.md#mcp), the adapter of the MCP port on the official Rust SDK
//! `rmcp`: opens one session to one server endpoint (Streamable HTTP over our rustls reqwest,
//! or a stdio child process), lists its tools and calls one. Knows nothing of the agent's tools,
//! the store or where it runs: the tool side (`app::tools::mcp`) decides when to connect, what to
//! cache and which entries it refuses.

use crate::ports::{McpCallResult, McpConnector, McpEndpoint, McpError, McpSession, McpTool};
use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The largest JSON body accepted from an HTTP server (a tool result is capped further
/// before the model sees it).
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Opens `rmcp` sessions (the production [`McpConnector`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct RmcpConnector;

#[async_trait]
impl McpConnector for RmcpConnector {
    async fn connect(&self, endpoint: &McpEndpoint, connect_timeout: Duration) -> Result<Arc<dyn McpSession>, McpError> {
        Ok(Arc::new(McpConnection::connect(endpoint, connect_timeout).await?))
    }
}

/// An open session to one server.
struct McpConnection {
    service: RunningService<RoleClient, ()>,
}

impl McpConnection {
    /// Connects and runs the MCP handshake within `connect_timeout`.
    async fn connect(endpoint: &McpEndpoint, connect_timeout: Duration) -> Result<Self, McpError> {
        let service = match endpoint {
            McpEndpoint::Http { url, headers } => {
                let transport = http_transport(url, headers)?;
                tokio::time::timeout(connect_timeout, ().serve(transport)).await
            }
            McpEndpoint::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                // A minimal environment, never the gateway's secrets (docs/design.md#mcp).
                let parent: Vec<(String, String)> =
                    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
                let env = crate::core::child_env::child_env(parent.iter().map(|(k, v)| (k.as_str(), v.as_str())), env);
                cmd.args(args).env_clear().envs(env).stderr(std::process::Stdio::null());
                let transport = TokioChildProcess::new(cmd).map_err(|e| McpError::Connect(format!("cannot start `{command}`: {e}")))?;
                tokio::time::timeout(connect_timeout, ().serve(transport)).await
            }
        };
        match service {
            Err(_) => Err(McpError::Connect(format!("no answer within {} s", connect_timeout.as_secs_f64()))),
            Ok(Err(e)) => Err(McpError::Connect(e.to_string())),
            Ok(Ok(service)) => Ok(Self { service }),
        }
    }
}

#[async_trait]
impl McpSession for McpConnection {
    fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
        let tools = self.service.list_all_tools().await.map_err(service_error)?;
        Ok(tools
            .into_iter()
            .map(|t| McpTool {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<McpCallResult, McpError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let result = self.service.call_tool(params).await.map_err(service_error)?;
        Ok(call_result(result))
    }
}

/// The Streamable HTTP transport for `url` with its headers (rustls reqwest).
fn http_transport(url: &str, custom: &BTreeMap<String, String>) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let mut headers = HashMap::new();
    for (k, v) in custom {
        let name =
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| McpError::Refused(format!("bad header name `{k}`")))?;
        let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| McpError::Refused(format!("bad value for header `{k}`")))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.trim().to_string());
    config.custom_headers = headers;
    config.max_json_response_size = MAX_RESPONSE_BYTES;
    config.max_sse_event_size = MAX_RESPONSE_BYTES;
    let client = crate::clients::client_builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("hermes-zero/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| McpError::Connect(e.to_string()))?;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// Sorts an SDK error into lost connection or server-side error.
fn service_error(e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(data) => McpError::Server(data.message.to_string()),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Lost(e.to_string()),
        other => McpError::Server(other.to_string()),
    }
}

/// The text the model sees of a result: text blocks as they are, other blocks described.
fn call_result(r: CallToolResult) -> McpCallResult {
    let parts: Vec<String> = r
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            other => match serde_json::to_value(other) {
                Ok(v) => format!("[{} content]", v.get("type").and_then(Value::as_str).unwrap_or("other")),
                Err(_) => "[content]".into(),
            },
        })
        .collect();
    McpCallResult { text: parts.join("\n"), structured: r.structured_content, is_error: r.is_error.unwrap_or(false) }
}
