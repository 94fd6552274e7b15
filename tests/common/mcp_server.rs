//! A real MCP server for the tests, written with `rmcp`'s server side: Streamable HTTP on
//! 127.0.0.1:0 with `add(a, b)`, `slow` (sleeps 30 s), `big-output` (300 kB of text); it
//! counts HTTP requests and can drop `add` from its list mid-session.

use super::spawn_server;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams};
use rmcp::model::{ServerCapabilities, ServerConfig, Tool};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{StreamableHttpService, session::local::LocalSessionManager};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the test server counts and how it behaves.
#[derive(Default)]
pub struct Knobs {
    /// HTTP requests received (any method).
    pub hits: AtomicUsize,
    /// `add` is no longer listed nor callable.
    pub add_gone: AtomicBool,
}

#[derive(Clone)]
struct Calc(Arc<Knobs>);

fn tool(name: &str, desc: &str, schema: Value) -> Tool {
    Tool::new(name.to_string(), desc.to_string(), Arc::new(schema.as_object().unwrap().clone()))
}

impl ServerHandler for Calc {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let ab = json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]});
        let mut tools = vec![
            tool("slow", "Sleeps a long time.", json!({"type": "object"})),
            tool("big-output", "Returns 300 kB of text.", json!({"type": "object"})),
        ];
        if !self.0.add_gone.load(Ordering::SeqCst) {
            tools.insert(0, tool("add", "Adds two numbers.", ab));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, req: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let args = req.arguments.clone().unwrap_or_default();
        let text = match req.name.as_ref() {
            "add" if !self.0.add_gone.load(Ordering::SeqCst) => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                format!("{}", n("a") + n("b"))
            }
            "slow" => {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                "late".into()
            }
            "big-output" => "x".repeat(300_000),
            other => return Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Serves the calculator on 127.0.0.1:0 at `/mcp`; returns its URL.
pub async fn start_server(knobs: Arc<Knobs>) -> String {
    let k = knobs.clone();
    let service: StreamableHttpService<Calc, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(Calc(k.clone())), Default::default(), Default::default());
    let counter = knobs.clone();
    let router = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            counter.hits.fetch_add(1, Ordering::SeqCst);
            next.run(req)
        },
    ));
    format!("{}/mcp", spawn_server(router).await)
}
