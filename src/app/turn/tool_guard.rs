//! The tool-loop guard of one turn (docs/design.md#turn): a model that keeps making the very
//! same call — same tool, same arguments — is stopped at the third one. That call is not run;
//! the model gets a tool result saying so, and the turn goes on (still bounded by
//! `agent.max_turns`). Arguments are compared as JSON (key order and spacing do not matter).
//!
//! Must not know: the tools themselves or the transcript; the turn loop asks it per call.

use crate::app::tools::ToolResult;
use crate::core::session::ToolCall;
use serde_json::{Value, json};
use std::collections::HashMap;

/// How many times the same call runs in one turn; the next one is refused.
pub(in crate::app) const MAX_SAME_CALL: u32 = 2;

/// Counts the calls of one turn by name and arguments.
#[derive(Debug, Default)]
pub(in crate::app) struct RepeatGuard {
    seen: HashMap<(String, String), u32>,
}

impl RepeatGuard {
    /// `None` when `call` may run; otherwise the result the model gets instead of running it.
    pub(in crate::app) fn refuse(&mut self, call: &ToolCall) -> Option<ToolResult> {
        let args = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(v) => v.to_string(),
            Err(_) => call.arguments.trim().to_string(),
        };
        let n = self.seen.entry((call.name.clone(), args)).or_insert(0);
        *n += 1;
        if *n <= MAX_SAME_CALL {
            return None;
        }
        tracing::info!(tool = %call.name, times = *n, "repeated tool call not run");
        let note = format!(
            "Not run: `{}` was already called {MAX_SAME_CALL} times in this turn with these same arguments. Use the earlier \
results, change the arguments, or answer without it.",
            call.name
        );
        Some(ToolResult { content: json!({ "error": note }).to_string(), is_error: true, duration_ms: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall { id: format!("id-{args}"), name: name.into(), arguments: args.into() }
    }

    #[test]
    fn the_third_identical_call_is_refused_and_others_run() {
        let mut g = RepeatGuard::default();
        assert!(g.refuse(&call("web", r#"{"a":1,"b":2}"#)).is_none());
        assert!(g.refuse(&call("web", r#"{ "b": 2, "a": 1 }"#)).is_none(), "same arguments in another order");
        assert!(g.refuse(&call("web", r#"{"a":1,"b":3}"#)).is_none(), "other arguments");
        assert!(g.refuse(&call("other", r#"{"a":1,"b":2}"#)).is_none(), "other tool");
        let r = g.refuse(&call("web", r#"{"b":2,"a":1}"#)).unwrap();
        assert!(r.is_error && r.content.contains("already called 2 times"), "{}", r.content);
        assert!(g.refuse(&call("web", r#"{"a":1,"b":2}"#)).is_some(), "and every later one");
        assert!(g.refuse(&call("bad", "not json")).is_none());
        assert!(g.refuse(&call("bad", " not json ")).is_none());
        assert!(g.refuse(&call("bad", "not json")).is_some());
    }
}
