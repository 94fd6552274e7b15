//! The MCP port (docs/design.md#mcp): what the app needs from an MCP server. An
//! [`McpConnector`] opens a session to one [`McpEndpoint`]; an [`McpSession`] lists the
//! server's tools and calls one. Errors are typed ([`McpError`]) because the app branches on
//! them: a lost session is dropped and reopened, a server error refreshes the tool list.
//!
//! The adapter is `clients::mcp` (the official SDK, `rmcp`). Knows no SDK, transport library
//! or configuration file: the app turns an `mcp_servers` entry into an endpoint.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where a server is and how it is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpEndpoint {
    /// Streamable HTTP at `url` (works everywhere, Lambda included).
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// A child process speaking over stdin/stdout (self-hosted only).
    Stdio {
        /// The executable.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its own environment entries, added to the minimal one (`core::child_env`).
        env: BTreeMap<String, String>,
    },
}

impl McpEndpoint {
    /// The transport's name in `mcp list` and the status JSON: `http` or `stdio`.
    pub fn transport(&self) -> &'static str {
        match self {
            Self::Http { .. } => "http",
            Self::Stdio { .. } => "stdio",
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

/// Opens sessions to MCP servers; built once at wiring time.
#[async_trait]
pub trait McpConnector: Send + Sync {
    /// Connects to `endpoint` and runs the MCP handshake within `connect_timeout`.
    async fn connect(&self, endpoint: &McpEndpoint, connect_timeout: Duration) -> Result<Arc<dyn McpSession>, McpError>;
}

/// An open session to one server.
#[async_trait]
pub trait McpSession: Send + Sync {
    /// Whether the session has ended (the next use should reconnect).
    fn is_closed(&self) -> bool;

    /// Every tool the server offers (all pages).
    async fn list_tools(&self) -> Result<Vec<McpTool>, McpError>;

    /// Calls `tool` with `args` (a JSON object). The caller bounds the time.
    async fn call(&self, tool: &str, args: Map<String, Value>) -> Result<McpCallResult, McpError>;
}
