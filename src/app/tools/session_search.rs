//! `session_search`: full-text search over the agent's past conversations, Hermes' discovery
//! shape (docs/design.md#session-search). The query is parsed into literal terms by
//! `core::search` (so no operator or stray quote is ever a store error); the store finds
//! the matches (SQLite: FTS5 over every conversation; DynamoDB: the newest
//! [`RECENT_SESSIONS`] conversations). The current conversation is left out: it is already in
//! the model's context. A caller who is not an admin searches only their own conversations
//! (`App::search_owners`, docs/who-sees-what.md); the store applies that filter in its query.

use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::core::search::{RECENT_SESSIONS, SearchTerms};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// Results when the model gives no `limit` (Hermes' default).
const DEFAULT_LIMIT: usize = 3;
/// Most results one call returns (Hermes' cap).
const MAX_LIMIT: usize = 10;

/// The `session_search` tool.
pub struct SessionSearch;

/// The call's arguments (Hermes' names).
#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<Value>,
}

/// `limit` as the model sent it (a number or a numeric string), clamped to 1..=10.
fn limit(v: Option<&Value>) -> usize {
    let n = match v {
        Some(Value::Number(n)) => n.as_f64().map(|f| f as i64),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    n.map_or(DEFAULT_LIMIT, |n| n.clamp(1, MAX_LIMIT as i64) as usize)
}

#[async_trait]
impl Tool for SessionSearch {
    fn name(&self) -> &str {
        "session_search"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "session_search"
    }

    fn description(&self) -> &str {
        "Search your past conversations with the user (other sessions of this agent; the current one is already in \
your context). Full-text: every word must appear; put a phrase in double quotes to keep it together. Returns the \
matching user and assistant messages, newest first, each with its session_id, when it was written, the role and a \
snippet with the match marked >>>like this<<<. Use it when the user refers to something discussed before \
(\"like last week\", \"that script we wrote\") or when earlier context would help. This is conversation history, \
not proof of what an external source contains now. On the DynamoDB store only the newest 20 sessions are searched."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to find (all must appear); \"quoted phrases\" stay together."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most messages to return (default 3, max 10)."}
            },
            "required": ["query"]
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: Args = parse_args(args)?;
        let query = a.query.unwrap_or_default();
        let terms = SearchTerms::parse(&query).map_err(|e| ToolError::BadArgs(format!("query: {e}")))?;
        let store = &ctx.app.inner.store;
        // Only the caller's own conversations, unless they are an admin (docs/who-sees-what.md).
        let owners = ctx.app.search_owners(ctx.session_id, ctx.origin).await;
        let hits = store
            .search_messages(&terms, Some(ctx.session_id), owners.as_ref(), limit(a.limit.as_ref()))
            .await
            .map_err(|e| ToolError::Failed(format!("session search is unavailable right now: {e}")))?;
        let tz = &ctx.app.inner.cfg.tz;
        let results: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "session_id": h.session_id.as_str(),
                    "session_key": h.session_key.as_ref().map(|k| k.as_str()),
                    "when": h.at.with_timezone(tz).to_rfc3339(),
                    "role": h.role.as_str(),
                    "snippet": h.snippet,
                })
            })
            .collect();
        let searched =
            if store.kind() == "dynamodb" { format!("the newest {RECENT_SESSIONS} sessions") } else { "all past sessions".to_string() };
        Ok(json!({"success": true, "query": query.trim(), "results": results, "count": results.len(), "searched": searched}).into())
    }
}
