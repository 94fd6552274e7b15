//! `delegate_task`: Hermes 0.19.0's subagents (`tools/delegate_tool.py`). One `goal` (with
//! `context`) or a batch of `tasks` (at most `delegation.max_concurrent_children`, default 3)
//! each runs as a child agent loop with a fresh context (a focused system prompt and the goal
//! as its only message) and the parent's tools minus [`CHILD_BLOCKED_TOOLS`], all at once,
//! inside the parent's turn: its deadline bounds them and their model calls count toward its
//! usage. Depth is 1 (children get no `delegate_task`; `role: orchestrator` is treated as a
//! leaf). Only each child's final answer returns, in Hermes' result shape (`results`, one
//! entry per task in task order, and `total_duration_seconds`). Runs synchronously: a gateway
//! that scales to zero has no background to finish in, so Hermes' `background` is ignored.

use super::{ChildOutcome, ChildTask, Tool, ToolCtx, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::time::Instant;

/// Tools a child never gets (Hermes' `DELEGATE_BLOCKED_TOOLS`, plus `todo`: the list is the
/// parent session's record in the store, where Hermes gives each child a throwaway one).
pub const CHILD_BLOCKED_TOOLS: [&str; 7] = ["delegate_task", "clarify", "memory", "send_message", "execute_code", "cronjob", "todo"];

/// The `delegate_task` tool.
pub struct DelegateTask;

#[async_trait]
impl Tool for DelegateTask {
    fn name(&self) -> &str {
        "delegate_task"
    }

    fn toolset(&self) -> &str {
        "delegation"
    }

    fn description(&self) -> &str {
        "Spawn one or more subagents to work on tasks in isolated contexts. Each subagent gets its own conversation and \
toolset. Only the final summary is returned -- intermediate tool results never enter your context window.\n\n\
TWO MODES (one of 'goal' or 'tasks' is required):\n\
1. Single task: provide 'goal' (+ optional context).\n\
2. Batch (parallel): provide 'tasks' array with up to delegation.max_concurrent_children items (default 3), run \
concurrently. Nested delegation is OFF: every child is a leaf and cannot delegate further.\n\n\
The subagents run within this turn and their results are returned by this call.\n\n\
WHEN TO USE delegate_task:\n\
- Reasoning-heavy subtasks (research synthesis, review)\n\
- Tasks that would flood your context with intermediate data\n\
- Parallel independent workstreams (research A and B simultaneously)\n\n\
IMPORTANT:\n\
- Subagents have NO memory of your conversation. Pass all relevant info via the 'context' field.\n\
- If the user is writing in a non-English language, or asked for output in a specific language / tone / style, say \
so in 'context'.\n\
- Subagent summaries are SELF-REPORTS, not verified facts.\n\
- Subagents CANNOT call: delegate_task, clarify, memory, send_message, cronjob, todo.\n\
- Results are always returned as an array, one entry per task."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the subagent should accomplish. Be specific and self-contained -- the subagent knows nothing about your conversation history."},
                "context": {"type": "string", "description": "Background information the subagent needs: file paths, error messages, project structure, constraints. The more specific you are, the better the subagent performs."},
                "tasks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "goal": {"type": "string", "description": "Task goal"},
                            "context": {"type": "string", "description": "Task-specific context"},
                            "role": {"type": "string", "enum": ["leaf", "orchestrator"], "description": "Per-task role override. See top-level 'role' for semantics."}
                        },
                        "required": ["goal"]
                    },
                    "description": "Batch mode: tasks to run in parallel (up to delegation.max_concurrent_children, default 3). Each gets its own subagent with isolated context. When provided, top-level goal/context/role are ignored."
                },
                "role": {"type": "string", "enum": ["leaf", "orchestrator"], "description": "Role of the child agent. Nesting is OFF here: every child is a leaf ('orchestrator' is treated as 'leaf')."},
                "background": {"type": "boolean", "description": "IGNORED. Subagents run within this turn and their results are returned by this call."}
            },
            "required": []
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let Some(turn) = ctx.turn else {
            return Err(ToolError::Failed("delegate_task requires a parent agent context.".into()));
        };
        let settings = &ctx.app.inner.cfg.settings.delegation;
        let tasks = tasks_of(&args, settings.max_children())?;
        let started = Instant::now();
        let runs = tasks.iter().map(|(goal, context)| async move {
            let t0 = Instant::now();
            let task = ChildTask {
                system: child_system_prompt(goal, context.as_deref()),
                goal: goal.clone(),
                max_iterations: settings.max_iterations,
            };
            (turn.run_child(task).await, t0.elapsed().as_secs_f64())
        });
        let outcomes = futures_util::future::join_all(runs).await;
        let results: Vec<Value> =
            outcomes.into_iter().enumerate().map(|(i, (o, secs))| entry(i, o, secs, settings.max_summary_chars)).collect();
        Ok(json!({"results": results, "total_duration_seconds": round2(started.elapsed().as_secs_f64())}).into())
    }
}

/// The tasks of a call (goal, context), checked as Hermes checks them.
fn tasks_of(args: &Value, max_children: usize) -> Result<Vec<(String, Option<String>)>, ToolError> {
    let bad = |m: String| Err(ToolError::BadArgs(m));
    let either = "Provide either 'goal' (single task) or 'tasks' (batch).";
    let parsed;
    let tasks = match args.get("tasks") {
        Some(Value::String(s)) if s.trim().is_empty() => return bad(either.into()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Array(_)) => {
                parsed = v;
                Some(&parsed)
            }
            Ok(_) => return bad("tasks must be a JSON array of task objects.".into()),
            Err(e) => {
                return bad(format!(
                    "tasks must be a JSON array of task objects; received a string that could not be parsed as JSON ({e})."
                ));
            }
        },
        other => other,
    };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let list: Vec<Value> = match (tasks, text(args.get("goal"))) {
        (Some(Value::Array(a)), _) if !a.is_empty() => {
            if a.len() > max_children {
                return bad(format!(
                    "Too many tasks: {} provided, but max_concurrent_children is {max_children}. Either reduce the task count, split \
into multiple delegate_task calls, or increase delegation.max_concurrent_children in config.yaml.",
                    a.len()
                ));
            }
            a.clone()
        }
        (_, Some(goal)) if !goal.trim().is_empty() => vec![json!({"goal": goal, "context": args.get("context")})],
        _ => return bad(either.into()),
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let Some(obj) = t.as_object() else { return bad(format!("Task {i} must be an object.")) };
        match text(obj.get("goal")) {
            Some(goal) if !goal.trim().is_empty() => out.push((goal, text(obj.get("context")).filter(|c| !c.trim().is_empty()))),
            _ => return bad(format!("Task {i} is missing a 'goal'.")),
        }
    }
    Ok(out)
}

/// Hermes' `_build_child_system_prompt` for a leaf child.
fn child_system_prompt(goal: &str, context: Option<&str>) -> String {
    let mut parts =
        vec!["You are a focused subagent working on a specific delegated task.".to_string(), String::new(), format!("YOUR TASK:\n{goal}")];
    if let Some(c) = context {
        parts.push(format!("\nCONTEXT:\n{c}"));
    }
    parts.push(
        "\nComplete this task using the tools available to you. When finished, provide a clear, concise summary of:\n\
- What you did\n- What you found or accomplished\n- Any issues encountered\n\n\
Keep your final summary tight: lead with outcomes, prefer bullet points over paragraphs, and don't replay your whole \
process. Your response is returned to the parent agent as a summary, and overlong summaries crowd out the parent's \
context window."
            .into(),
    );
    parts.join("\n")
}

/// One task's result entry (Hermes' `_run_single_child` shape).
fn entry(index: usize, o: ChildOutcome, secs: f64, cap: usize) -> Value {
    let summary = o.summary.filter(|s| !s.trim().is_empty() && s.trim() != "(empty)");
    let (status, exit_reason) = match (&summary, &o.error) {
        (Some(_), _) => ("completed", if o.completed { "completed" } else { "max_iterations" }),
        (None, Some(_)) => ("error", "error"),
        (None, None) => ("failed", if o.completed { "completed" } else { "max_iterations" }),
    };
    let mut e = json!({
        "task_index": index,
        "status": status,
        "summary": summary.as_deref().map(|s| trim_summary(s, cap, index)),
        "api_calls": o.api_calls,
        "duration_seconds": round2(secs),
        "model": o.model,
        "exit_reason": exit_reason,
        "tokens": {"input": o.input_tokens, "output": o.output_tokens},
        "tool_trace": o.tool_trace,
    });
    if summary.is_none() {
        e["error"] = json!(o.error.unwrap_or_else(|| "Subagent did not produce a response.".into()));
    }
    e
}

/// A summary over `cap` characters cut as Hermes' `_trim_summary_with_footer` does (75% head,
/// 25% tail, snapped to lines), with its footer; nothing is spilled to disk here.
fn trim_summary(summary: &str, cap: usize, index: usize) -> String {
    let chars: Vec<char> = summary.chars().collect();
    if cap == 0 || chars.len() <= cap {
        return summary.to_string();
    }
    let head_budget = cap * 3 / 4;
    let tail_budget = cap - head_budget;
    let mut head: String = chars[..head_budget].iter().collect();
    let mut tail: String = chars[chars.len() - tail_budget..].iter().collect();
    if let Some(nl) = head.rfind('\n').filter(|nl| *nl * 2 > head_budget) {
        head.truncate(nl);
    }
    if let Some(nl) = tail.find('\n').filter(|nl| nl * 2 < tail_budget) {
        tail = tail[nl + 1..].to_string();
    }
    let rule = "─".repeat(8);
    format!(
        "{head}\n\n[... middle omitted — see footer ...]\n\n{tail}\n{rule} [SUMMARY TRUNCATED] {rule}\nShowing {} chars (head) + {} chars (tail) of {} total \
— trimmed to protect the parent's context window.\nFull output could not be stored to disk; the head+tail above is all \
that was preserved (task {index}).\n{}",
        head.chars().count(),
        tail.chars().count(),
        chars.len(),
        "─".repeat(37)
    )
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_checked_as_hermes_checks_them() {
        let err = |args: Value| tasks_of(&args, 3).unwrap_err().to_string();
        assert_eq!(err(json!({})), "Provide either 'goal' (single task) or 'tasks' (batch).");
        assert_eq!(err(json!({"goal": "  "})), "Provide either 'goal' (single task) or 'tasks' (batch).");
        assert!(
            err(json!({"tasks": [{"goal": "a"}, {"goal": "b"}, {"goal": "c"}, {"goal": "d"}]})).starts_with("Too many tasks: 4 provided")
        );
        assert_eq!(err(json!({"tasks": [{"goal": "a"}, {"context": "x"}]})), "Task 1 is missing a 'goal'.");
        assert_eq!(err(json!({"tasks": ["a"]})), "Task 0 must be an object.");
        assert!(err(json!({"tasks": "[oops"})).starts_with("tasks must be a JSON array"));
        let one = tasks_of(&json!({"goal": "find x", "context": "in y"}), 3).unwrap();
        assert_eq!(one, [("find x".to_string(), Some("in y".to_string()))]);
        let batch = tasks_of(&json!({"tasks": "[{\"goal\": \"a\"}, {\"goal\": \"b\", \"context\": \"\"}]"}), 3).unwrap();
        assert_eq!(batch, [("a".to_string(), None), ("b".to_string(), None)]);
    }

    #[test]
    fn a_long_summary_keeps_head_and_tail_with_the_footer() {
        let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let cut = trim_summary(&long, 400, 2);
        assert!(cut.starts_with("line 0\n") && cut.contains("line 199"), "{cut}");
        assert!(cut.contains("[SUMMARY TRUNCATED]") && cut.contains(&format!("of {} total", long.chars().count())), "{cut}");
        assert!(!cut.contains("line 100\n"));
        assert_eq!(trim_summary("short", 400, 0), "short");
    }

    #[test]
    fn entries_say_completed_failed_or_error() {
        let ok = ChildOutcome { summary: Some("done".into()), completed: true, api_calls: 2, ..ChildOutcome::default() };
        let e = entry(0, ok, 1.234, 100);
        assert_eq!(
            (e["status"].as_str(), e["summary"].as_str(), e["exit_reason"].as_str()),
            (Some("completed"), Some("done"), Some("completed"))
        );
        assert_eq!(e["duration_seconds"], 1.23);
        let none = entry(1, ChildOutcome::default(), 0.0, 100);
        assert_eq!((none["status"].as_str(), none["error"].as_str()), (Some("failed"), Some("Subagent did not produce a response.")));
        let failed = entry(2, ChildOutcome { error: Some("model down".into()), ..ChildOutcome::default() }, 0.0, 100);
        assert_eq!((failed["status"].as_str(), failed["error"].as_str()), (Some("error"), Some("model down")));
    }
}
