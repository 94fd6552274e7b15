//! `web_search` (Hermes' `tools/web_tools.py`): the query goes to the configured search
//! vendor (the [`WebBackend`] port, chosen at wiring time from `web.*` and the vendors'
//! variables) and comes back as Hermes' `{"success": true, "data": {"web": [{title, url,
//! description, position}]}}`. Not offered when no backend is configured. A vendor failure
//! (401, 429, garbage) is a tool error in Hermes' words; the turn goes on.
//!
//! Must not know: the vendors' wire formats, the turn loop.

use super::{Tool, ToolCtx, ToolError, ToolOutput};
use crate::ports::WebBackend;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The `web_search` tool.
pub struct WebSearch {
    backend: Option<Arc<dyn WebBackend>>,
}

impl WebSearch {
    /// A `web_search` on `backend` (`None`: not offered).
    pub fn new(backend: Option<Arc<dyn WebBackend>>) -> Self {
        Self { backend }
    }
}

#[async_trait]
impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "web"
    }

    fn description(&self) -> &str {
        "Search the web for information. Returns up to 5 results by default with titles, URLs, and descriptions. The \
query is passed through to the configured backend, so operators such as site:domain, filetype:pdf, intitle:word, -term, \
and \"exact phrase\" may work when the backend supports them."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "The search query to look up on the web. You may include backend-supported operators such as site:example.com, filetype:pdf, intitle:word, -term, or \"exact phrase\"."
                },
                "limit": {
                    "type": "integer",
                    "description": "Maximum number of results to return. Defaults to 5.",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 5
                }
            },
            "required": ["query"]
        })
    }

    fn offered(&self, _ctx: &ToolCtx<'_>) -> bool {
        self.backend.is_some()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(65))
    }

    async fn call(&self, _ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let backend = self
            .backend
            .as_ref()
            .ok_or_else(|| ToolError::Failed("No web search provider configured. Run `hermes tools` to set one up.".into()))?;
        let query = match &args["query"] {
            Value::String(q) if !q.trim().is_empty() => q.clone(),
            Value::String(_) | Value::Null => return Err(ToolError::BadArgs("web_search needs a non-empty `query`".into())),
            other => return Err(ToolError::BadArgs(format!("`query` must be a string, not {other}"))),
        };
        let limit = limit(&args["limit"]);
        let hits = backend.search(&query, limit).await.map_err(|e| ToolError::Failed(e.to_string()))?;
        let web: Vec<Value> = hits
            .into_iter()
            .enumerate()
            .map(|(i, h)| json!({"title": h.title, "url": h.url, "description": h.description, "position": i + 1}))
            .collect();
        Ok(ToolOutput::Json(json!({"success": true, "data": {"web": web}})))
    }
}

/// Hermes' `limit`: an integer (or a numeric string) clamped to 1..=100, else 5.
fn limit(v: &Value) -> u32 {
    let n = match v {
        Value::Number(n) => n.as_f64().map(|f| f as i64),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    n.map_or(5, |n| u32::try_from(n.clamp(1, 100)).unwrap_or(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_clamped_and_defaults_to_five() {
        for (v, want) in [(json!(null), 5), (json!(3), 3), (json!(0), 1), (json!(500), 100), (json!("7"), 7), (json!("x"), 5)] {
            assert_eq!(limit(&v), want, "{v}");
        }
    }
}
