//! The MCP use cases the edges call: warming the tools at start (from the store cache,
//! never connecting on the start path), the status rows (dashboard, `mcp list`).

use super::{Server, load_cache, refresh, register};
use crate::app::App;
use crate::ports::McpEndpoint;
use serde::Serialize;
use std::sync::Arc;

/// One server as `mcp list` and `/api/status` show it.
#[derive(Debug, Clone, Serialize)]
pub struct McpReport {
    /// Its key in `mcp_servers`.
    pub name: String,
    /// `http` | `stdio` | `none`.
    pub transport: String,
    /// `cached`, `connected`, `not fetched`, `error: …` or `refused: …`.
    pub state: String,
    /// How many of its tools are offered.
    pub tool_count: usize,
    /// The names the model calls them by.
    pub tools: Vec<String>,
    /// When the list was fetched (RFC 3339), if it was.
    pub cached_at: Option<String>,
}

impl App {
    /// Offers the cached tools of every configured MCP server without connecting; a list
    /// that is missing or older than `mcp_cache_seconds` is fetched in the background.
    pub async fn mcp_warm(&self) {
        let now = self.inner.clock.now();
        for server in &self.inner.mcp.servers {
            if let Some(why) = server.refusal() {
                tracing::warn!(server = %server.name, "MCP server not used: {why}");
                server.set_state(why);
                continue;
            }
            if let Some(c) = load_cache(self, server).await {
                register(self, server, &c.tools, c.fetched_at);
                server.set_state("cached");
            }
            if !server.fresh(now) {
                let (app, server) = (self.clone(), server.clone());
                tokio::spawn(async move {
                    if let Err(e) = refresh(&app, &server).await {
                        tracing::warn!(server = %server.name, error = %e, "MCP tool list not fetched");
                    }
                });
            }
        }
    }

    /// The servers' states without connecting (the dashboard's Status tab).
    pub fn mcp_status(&self) -> Vec<McpReport> {
        self.inner.mcp.servers.iter().map(report).collect()
    }

    /// `mcp list`: every server with its tools, fetched now when the cached list is missing
    /// or stale (or `refresh`).
    pub async fn mcp_list(&self, refresh_all: bool) -> Vec<McpReport> {
        let now = self.inner.clock.now();
        for server in &self.inner.mcp.servers {
            if let Some(why) = server.refusal() {
                server.set_state(why);
                continue;
            }
            if let Some(c) = load_cache(self, server).await {
                register(self, server, &c.tools, c.fetched_at);
                server.set_state("cached");
            }
            if refresh_all || !server.fresh(now) {
                refresh(self, server).await.ok();
            }
        }
        self.mcp_status()
    }
}

fn report(s: &Arc<Server>) -> McpReport {
    let live = s.live().clone();
    McpReport {
        name: s.name.clone(),
        transport: s.endpoint.as_ref().map_or("none", McpEndpoint::transport).to_string(),
        state: live.state,
        tool_count: live.registered.len(),
        tools: live.registered,
        cached_at: live.fetched_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    }
}
