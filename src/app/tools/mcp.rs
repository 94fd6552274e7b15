//! MCP servers' tools (docs/design.md#mcp): the [`McpHub`] of the configured `mcp_servers`,
//! their tools offered as `mcp_<server>_<tool>`, the tool lists cached in the store
//! (`mcp_tools:<server>`, kept `mcp_cache_seconds`) so a start registers them without
//! connecting, and one connection per server and process, opened on the first call.
//!
//! Servers are reached through the MCP port ([`McpConnector`], chosen at wiring time); an entry
//! becomes an [`McpEndpoint`] here, and the entries this process cannot use (no transport,
//! stdio on Lambda) are refused here, before any connection.
//!
//! Must not know: the rmcp SDK or its transports (the adapter's), transports of the gateway.

use super::{Tool, ToolCtx, ToolError, ToolOutput};
use crate::app::App;
use crate::config::{McpServer, Settings};
use crate::ports::{McpCallResult, McpConnector, McpEndpoint, McpError, McpSession, McpTool};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The longest result text the model sees (bytes); the rest is cut with a note.
pub const MAX_RESULT_BYTES: usize = 100_000;
/// Per-call timeout when the entry has no `timeout` (seconds).
const DEFAULT_CALL_TIMEOUT: f64 = 60.0;
/// Connect timeout when the entry has no `connect_timeout` (seconds).
const DEFAULT_CONNECT_TIMEOUT: f64 = 30.0;

/// The configured MCP servers of this process, in name order.
pub struct McpHub {
    servers: Vec<Arc<Server>>,
}

/// One configured server: its entry, this process's connection and what it last saw.
pub(in crate::app) struct Server {
    name: String,
    /// Its tools' Hermes toolset, `mcp-<server>`.
    toolset: String,
    cfg: McpServer,
    /// How it is reached (`None`: the entry has neither `url` nor `command`).
    endpoint: Option<McpEndpoint>,
    on_lambda: bool,
    cache_secs: u64,
    connector: Arc<dyn McpConnector>,
    conn: tokio::sync::Mutex<Option<Arc<dyn McpSession>>>,
    live: Mutex<Live>,
}

/// What this process knows of a server.
#[derive(Default, Clone)]
struct Live {
    /// Human state: `cached`, `connected`, `error: …`, `refused: …`, `not fetched`.
    state: String,
    /// The tool names registered for it.
    registered: Vec<String>,
    /// When its tool list was fetched.
    fetched_at: Option<DateTime<Utc>>,
}

/// The stored tool list of a server (`mcp_tools:<server>`).
#[derive(Debug, Serialize, Deserialize)]
struct Cached {
    fetched_at: DateTime<Utc>,
    /// The url or command line the list came from: a changed entry makes the list stale.
    source: String,
    tools: Vec<McpTool>,
}

impl McpHub {
    /// The enabled entries of `mcp_servers`, reached through `connector`. `on_lambda` refuses
    /// stdio servers.
    pub fn from_settings(s: &Settings, on_lambda: bool, connector: Arc<dyn McpConnector>) -> Self {
        let servers = s
            .mcp_servers
            .iter()
            .filter(|(_, c)| c.enabled != Some(false))
            .map(|(name, cfg)| {
                Arc::new(Server {
                    name: name.clone(),
                    toolset: format!("mcp-{name}"),
                    cfg: cfg.clone(),
                    endpoint: endpoint(cfg),
                    on_lambda,
                    cache_secs: s.mcp_cache_seconds,
                    connector: connector.clone(),
                    conn: tokio::sync::Mutex::new(None),
                    live: Mutex::new(Live { state: "not fetched".into(), ..Live::default() }),
                })
            })
            .collect();
        Self { servers }
    }
}

impl Server {
    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_state(&self, state: impl Into<String>) {
        self.live().state = state.into();
    }

    /// Why this server cannot be used in this process, if so.
    fn refusal(&self) -> Option<String> {
        match self.endpoint {
            None => Some("refused: the entry has neither `url` nor `command`".into()),
            Some(McpEndpoint::Stdio { .. }) if self.on_lambda => Some("refused: stdio servers run only self-hosted, not on Lambda".into()),
            Some(_) => None,
        }
    }

    fn source(&self) -> String {
        match self.endpoint {
            Some(McpEndpoint::Http { .. }) => self.cfg.url.trim().to_string(),
            _ => std::iter::once(self.cfg.command.as_str()).chain(self.cfg.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
        }
    }

    fn cache_key(&self) -> String {
        format!("mcp_tools:{}", self.name)
    }

    fn fresh(&self, now: DateTime<Utc>) -> bool {
        let max = chrono::Duration::seconds(i64::try_from(self.cache_secs).unwrap_or(i64::MAX / 1000));
        self.live().fetched_at.is_some_and(|at| now - at < max)
    }

    fn call_timeout(&self) -> Duration {
        secs(self.cfg.timeout, DEFAULT_CALL_TIMEOUT)
    }

    /// The open connection, opened now if there is none (or it has closed).
    async fn connection(&self) -> Result<Arc<dyn McpSession>, McpError> {
        let mut slot = self.conn.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        match self.open().await {
            Ok(c) => {
                *slot = Some(c.clone());
                self.set_state("connected");
                Ok(c)
            }
            Err(e) => {
                self.set_state(format!("error: {e}"));
                Err(e)
            }
        }
    }

    /// A new session through the connector, unless the entry cannot be used here.
    async fn open(&self) -> Result<Arc<dyn McpSession>, McpError> {
        let endpoint = match &self.endpoint {
            None => return Err(McpError::Refused("the entry has neither `url` nor `command`".into())),
            Some(McpEndpoint::Stdio { .. }) if self.on_lambda => {
                return Err(McpError::Refused(
                    "stdio MCP servers (`command`) run only self-hosted, not on Lambda; use a `url` server".into(),
                ));
            }
            Some(e) => e,
        };
        self.connector.connect(endpoint, secs(self.cfg.connect_timeout, DEFAULT_CONNECT_TIMEOUT)).await
    }

    /// Forgets the connection (it failed); the next use reconnects.
    async fn drop_connection(&self) {
        *self.conn.lock().await = None;
    }
}

/// How an entry is reached: `url` → Streamable HTTP, else `command` → stdio, else `None`.
fn endpoint(cfg: &McpServer) -> Option<McpEndpoint> {
    if !cfg.url.trim().is_empty() {
        Some(McpEndpoint::Http { url: cfg.url.trim().to_string(), headers: cfg.headers.clone() })
    } else if !cfg.command.trim().is_empty() {
        Some(McpEndpoint::Stdio { command: cfg.command.clone(), args: cfg.args.clone(), env: cfg.env.clone() })
    } else {
        None
    }
}

/// Seconds from an optional setting (non-positive or absent: the default).
fn secs(v: Option<f64>, default: f64) -> Duration {
    Duration::try_from_secs_f64(v.filter(|s| *s > 0.0).unwrap_or(default)).unwrap_or(Duration::from_secs(60))
}

/// Hermes' name component: every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn sanitize(component: &str) -> String {
    component.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The name the model calls a server's tool by: `mcp_<server>_<tool>`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp_{}_{}", sanitize(server), sanitize(tool))
}

/// Hermes' schema repair: no schema → an empty object schema; an object without
/// `properties` gets an empty one.
fn normalize_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) if !m.is_empty() => {
            let mut m = m.clone();
            if m.get("type").and_then(Value::as_str) == Some("object") && !m.contains_key("properties") {
                m.insert("properties".into(), json!({}));
            }
            Value::Object(m)
        }
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// Cuts `text` to [`MAX_RESULT_BYTES`] on a character boundary, with a note of the cut.
pub fn cap(text: &str) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[truncated: the result had {} bytes, only the first {end} are shown]", &text[..end], text.len())
}

/// One MCP tool as the agent sees it.
struct McpToolHandle {
    server: Arc<Server>,
    name: String,
    remote: String,
    description: String,
    schema: Value,
}

#[async_trait]
impl Tool for McpToolHandle {
    fn name(&self) -> &str {
        &self.name
    }

    fn toolset(&self) -> &str {
        &self.server.toolset
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.server.call_timeout())
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let server = &self.server;
        let fail = |e: McpError| ToolError::Failed(format!("MCP server `{}`: {e}", server.name));
        let conn = server.connection().await.map_err(fail)?;
        let args = match args {
            Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        let result = match conn.call(&self.remote, args).await {
            Ok(r) => r,
            Err(e @ McpError::Lost(_)) => {
                server.drop_connection().await;
                server.set_state(format!("error: {e}"));
                return Err(fail(e));
            }
            Err(e) => return Err(self.vanished_or(ctx.app, conn.as_ref(), fail(e)).await),
        };
        if !server.fresh(ctx.now()) {
            // The list is stale: fetch it again after answering, outside this call's time.
            let (app, server) = (ctx.app.clone(), server.clone());
            tokio::spawn(async move { refresh_with(&app, &server, conn.as_ref()).await.ok() });
        }
        Ok(output(&result))
    }
}

impl McpToolHandle {
    /// After a failed call: fetches the list again; a tool no longer listed is unregistered
    /// and the model told so, otherwise `err` stands.
    async fn vanished_or(&self, app: &App, conn: &dyn McpSession, err: ToolError) -> ToolError {
        match refresh_with(app, &self.server, conn).await {
            Ok(tools) if !tools.iter().any(|t| t.name == self.remote) => ToolError::Failed(format!(
                "`{}` is no longer offered by MCP server `{}` (its tool list changed); it was removed",
                self.name, self.server.name
            )),
            _ => err,
        }
    }
}

/// What the model sees of a call: Hermes' `{"result": …}`, or an error with the server's text.
fn output(r: &McpCallResult) -> ToolOutput {
    let text = cap(&r.text);
    if r.is_error {
        let msg = if text.trim().is_empty() { "MCP tool returned an error".to_string() } else { text };
        return ToolOutput::Json(json!({ "error": msg }));
    }
    ToolOutput::Json(result_json(r, &text))
}

/// Hermes' shape of a successful result: `{"result": text}` (plus `structuredContent`).
fn result_json(r: &McpCallResult, text: &str) -> Value {
    let mut v = json!({ "result": text });
    if let Some(s) = &r.structured {
        v["structuredContent"] = s.clone();
    }
    v
}

/// Fetches the tool list over `conn`, stores it and registers the tools.
async fn refresh_with(app: &App, server: &Arc<Server>, conn: &dyn McpSession) -> Result<Vec<McpTool>, McpError> {
    let tools = match conn.list_tools().await {
        Ok(t) => t,
        Err(e) => {
            server.set_state(format!("error: {e}"));
            return Err(e);
        }
    };
    let now = app.inner.clock.now();
    let cached = Cached { fetched_at: now, source: server.source(), tools };
    match serde_json::to_string(&cached) {
        Ok(text) => {
            if let Err(e) = app.inner.store.put_meta(&server.cache_key(), &text).await {
                tracing::warn!(server = %server.name, error = %e, "MCP tool list not cached");
            }
        }
        Err(e) => tracing::warn!(server = %server.name, error = %e, "MCP tool list not cached"),
    }
    register(app, server, &cached.tools, now);
    Ok(cached.tools)
}

/// Connects (if needed) and fetches the tool list.
async fn refresh(app: &App, server: &Arc<Server>) -> Result<Vec<McpTool>, McpError> {
    let conn = server.connection().await?;
    refresh_with(app, server, conn.as_ref()).await
}

/// Replaces the server's registered tools with `tools`, in one step: a turn or a status read
/// meanwhile sees the old list or the new one, never none.
fn register(app: &App, server: &Arc<Server>, tools: &[McpTool], fetched_at: DateTime<Utc>) {
    let mut live = server.live();
    let handles: Vec<Arc<dyn Tool>> = tools
        .iter()
        .map(|t| {
            let description =
                if t.description.trim().is_empty() { format!("MCP tool {} from {}", t.name, server.name) } else { t.description.clone() };
            Arc::new(McpToolHandle {
                server: server.clone(),
                name: tool_name(&server.name, &t.name),
                remote: t.name.clone(),
                description,
                schema: normalize_schema(&t.input_schema),
            }) as Arc<dyn Tool>
        })
        .collect();
    let mut registered = Vec::with_capacity(handles.len());
    for added in app.inner.tools.replace(&live.registered, handles) {
        match added {
            Ok(name) => registered.push(name),
            Err(e) => tracing::warn!(server = %server.name, error = %e, "MCP tool not offered"),
        }
    }
    live.registered = registered;
    live.fetched_at = Some(fetched_at);
}

/// The stored list of `server`, if it came from the entry as configured now.
async fn load_cache(app: &App, server: &Server) -> Option<Cached> {
    let text = app.inner.store.get_meta(&server.cache_key()).await.ok()??;
    serde_json::from_str::<Cached>(&text).ok().filter(|c| c.source == server.source())
}

mod app_side;
pub use app_side::McpReport;

#[cfg(test)]
mod tests;
