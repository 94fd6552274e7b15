//! The MCP client (docs/design.md#mcp), on the official Rust SDK `rmcp`: opens one session to
//! one configured server (`url` → Streamable HTTP over our rustls reqwest, `command` → a
//! stdio child process), lists its tools and calls one. Knows nothing of the agent's tools
//! or the store: the tool side (`app::tools::mcp`) decides when to connect and what to cache.

use crate::config::McpServer;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// The largest JSON body accepted from an HTTP server (a tool result is capped further
/// before the model sees it).
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `url`: Streamable HTTP (works everywhere, Lambda included).
    Http,
    /// `command`: a child process speaking over stdin/stdout (self-hosted only).
    Stdio,
}

impl Transport {
    /// The transport a server entry asks for (`None`: neither `url` nor `command`).
    pub fn of(cfg: &McpServer) -> Option<Self> {
        if !cfg.url.trim().is_empty() {
            Some(Self::Http)
        } else if !cfg.command.trim().is_empty() {
            Some(Self::Stdio)
        } else {
            None
        }
    }

    /// Its name in `mcp list` and the status JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Stdio => "stdio",
        }
    }
}

/// Why a connection or a request failed (the text goes to the model or the operator).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The entry cannot be used here (no transport, stdio on Lambda, a bad header).
    #[error("{0}")]
    Refused(String),
    /// Connecting or the handshake failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The session is gone (the server closed it or crashed); the next call reconnects.
    #[error("the connection was lost: {0}")]
    Lost(String),
    /// The server answered the request with an error.
    #[error("{0}")]
    Server(String),
}

/// One tool as a server lists it (the part the model needs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// The server's name for it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

/// What a call returned: its text (content blocks joined) and whether the server flagged it
/// as an error.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCallResult {
    /// Text of the content blocks, one per line (non-text blocks are described).
    pub text: String,
    /// The structured result, when the server sent one.
    pub structured: Option<Value>,
    /// `isError` from the server.
    pub is_error: bool,
}

/// An open session to one server.
pub struct McpConnection {
    service: RunningService<RoleClient, ()>,
}

impl McpConnection {
    /// Connects and runs the MCP handshake within `connect_timeout`. `on_lambda` refuses stdio
    /// servers (no child processes in a Lambda sandbox).
    pub async fn connect(cfg: &McpServer, on_lambda: bool, connect_timeout: Duration) -> Result<Self, McpError> {
        let service = match Transport::of(cfg) {
            None => return Err(McpError::Refused("the entry has neither `url` nor `command`".into())),
            Some(Transport::Stdio) if on_lambda => {
                return Err(McpError::Refused(
                    "stdio MCP servers (`command`) run only self-hosted, not on Lambda; use a `url` server".into(),
                ));
            }
            Some(Transport::Http) => {
                let transport = http_transport(cfg)?;
                tokio::time::timeout(connect_timeout, ().serve(transport)).await
            }
            Some(Transport::Stdio) => {
                let mut cmd = tokio::process::Command::new(&cfg.command);
                // A minimal environment, never the gateway's secrets (docs/design.md#mcp).
                let parent: Vec<(String, String)> =
                    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
                let env = crate::core::child_env::child_env(parent.iter().map(|(k, v)| (k.as_str(), v.as_str())), &cfg.env);
                cmd.args(&cfg.args).env_clear().envs(env).stderr(std::process::Stdio::null());
                let transport =
                    TokioChildProcess::new(cmd).map_err(|e| McpError::Connect(format!("cannot start `{}`: {e}", cfg.command)))?;
                tokio::time::timeout(connect_timeout, ().serve(transport)).await
            }
        };
        match service {
            Err(_) => Err(McpError::Connect(format!("no answer within {} s", connect_timeout.as_secs_f64()))),
            Ok(Err(e)) => Err(McpError::Connect(e.to_string())),
            Ok(Ok(service)) => Ok(Self { service }),
        }
    }

    /// Whether the session has ended (the next use should reconnect).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&self) -> Result<Vec<McpTool>, McpError> {
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

    /// Calls `tool` with `args` (a JSON object). The caller bounds the time.
    pub async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<McpCallResult, McpError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let result = self.service.call_tool(params).await.map_err(service_error)?;
        Ok(call_result(result))
    }
}

/// The Streamable HTTP transport for `cfg.url` with its headers (rustls reqwest).
fn http_transport(cfg: &McpServer) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    let mut headers = HashMap::new();
    for (k, v) in &cfg.headers {
        let name =
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| McpError::Refused(format!("bad header name `{k}`")))?;
        let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| McpError::Refused(format!("bad value for header `{k}`")))?;
        headers.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(cfg.url.trim().to_string());
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

/// Hermes' shape of a successful result: `{"result": text}` (plus `structuredContent`).
pub fn result_json(r: &McpCallResult, text: &str) -> Value {
    let mut v = json!({ "result": text });
    if let Some(s) = &r.structured {
        v["structuredContent"] = s.clone();
    }
    v
}
