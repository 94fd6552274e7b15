//! `todo`: the session's task list, Hermes 0.19.0's tool (`tools/todo_tool.py`): `todos`
//! writes (replacing the list, or with `merge` updating items by id and appending new ones),
//! no `todos` reads; every call returns the whole list and its counts. The list is a note of
//! the session in the store (`TurnStore::turn_put_note`, read with `turn_read`), so it
//! survives the turn and the process (on SQLite and DynamoDB alike) and a new session starts
//! with an empty one. Read and written only when the tool is called.

use super::{Tool, ToolCtx, ToolError, ToolOutput};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// The session note the list is kept in.
const TODO_NOTE: &str = "todo";
/// Statuses an item may have (Hermes' `VALID_STATUSES`), in summary order.
const STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "cancelled"];
/// Longest item content kept (Hermes' `MAX_TODO_CONTENT_CHARS`); longer is cut with a marker.
const MAX_CONTENT_CHARS: usize = 4000;
/// Most items kept (Hermes' `MAX_TODO_ITEMS`); the head of the list (its priority order) stays.
const MAX_ITEMS: usize = 256;
/// Most bytes the stored list may take (a store item must stay well under DynamoDB's 400 KB).
const MAX_STORED_BYTES: usize = 256 * 1024;
/// What a cut content ends with (Hermes' `_TRUNCATION_MARKER`).
const TRUNCATION_MARKER: &str = "… [truncated]";

/// The `todo` tool.
pub struct Todo;

/// One item: `{id, content, status}`.
type Item = Map<String, Value>;

#[async_trait]
impl Tool for Todo {
    fn name(&self) -> &str {
        "todo"
    }

    /// The session's own list, seen by no one else: not an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "todo"
    }

    fn description(&self) -> &str {
        "Manage your task list for the current session. Use for complex tasks with 3+ steps or when the user provides \
multiple tasks. Call with no parameters to read the current list.\n\n\
Writing:\n\
- Provide 'todos' array to create/update items\n\
- merge=false (default): replace the entire list with a fresh plan\n\
- merge=true: update existing items by id, add any new ones\n\n\
Each item: {id: string, content: string, status: pending|in_progress|completed|cancelled}\n\
List order is priority. Only ONE item in_progress at a time.\n\
Mark items completed immediately when done. If something fails, cancel it and add a revised item.\n\n\
Always returns the full current list."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "Task items to write. Omit to read current list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Unique item identifier"},
                            "content": {"type": "string", "description": "Task description"},
                            "status": {"type": "string", "enum": STATUSES, "description": "Current status"}
                        },
                        "required": ["id", "content", "status"]
                    }
                },
                "merge": {
                    "type": "boolean",
                    "description": "true: update existing items by id, add new ones. false (default): replace the entire list.",
                    "default": false
                }
            },
            "required": []
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let merge = match args.get("merge") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(ToolError::BadArgs(format!("merge must be true or false, got {other}"))),
        };
        let todos = match args.get("todos") {
            None | Some(Value::Null) => None,
            Some(t) => Some(todo_list(t)?),
        };
        let store = &ctx.app.inner.store;
        let failed = |e: crate::ports::StoreError| ToolError::Failed(format!("the task list could not be read or saved: {e}"));
        let mut read = store.turn_read(ctx.session_id, 0, &[TODO_NOTE]).await.map_err(failed)?;
        let current = read.notes.remove(TODO_NOTE).map(|raw| stored_items(&raw)).unwrap_or_default();
        let items = match todos {
            None => current,
            Some(todos) => {
                let items = write(current, &todos, merge);
                let raw = Value::Array(items.iter().cloned().map(Value::Object).collect()).to_string();
                if raw.len() > MAX_STORED_BYTES {
                    return Err(ToolError::BadArgs(format!(
                        "the task list is too large to keep ({} bytes, at most {MAX_STORED_BYTES}); shorten the items",
                        raw.len()
                    )));
                }
                store.turn_put_note(ctx.session_id, TODO_NOTE, Some(&raw)).await.map_err(failed)?;
                items
            }
        };
        Ok(result(&items).into())
    }
}

/// The `todos` argument as a list (a JSON string holding a list is accepted, as Hermes does).
fn todo_list(v: &Value) -> Result<Vec<Value>, ToolError> {
    let parsed;
    let v = match v {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s)
                .map_err(|_| ToolError::BadArgs("todos must be a list of objects, got unparseable string".into()))?;
            &parsed
        }
        v => v,
    };
    match v {
        Value::Array(a) => Ok(a.clone()),
        other => Err(ToolError::BadArgs(format!("todos must be a list, got {}", json_type(other)))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The stored list (a damaged note reads as empty).
fn stored_items(raw: &str) -> Vec<Item> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Array(a)) => a.into_iter().filter_map(|v| if let Value::Object(m) = v { Some(m) } else { None }).collect(),
        _ => Vec::new(),
    }
}

/// Hermes' `TodoStore.write`: replace, or merge by id (provided fields only, new ids appended).
fn write(current: Vec<Item>, todos: &[Value], merge: bool) -> Vec<Item> {
    let todos = dedupe_by_id(todos);
    let mut items = if !merge {
        todos.iter().map(validate).collect()
    } else {
        let mut items = current;
        for t in todos.iter().filter_map(Value::as_object) {
            let id = text_of(t.get("id"));
            if id.is_empty() {
                continue;
            }
            match items.iter_mut().find(|i| i.get("id").and_then(Value::as_str) == Some(id.as_str())) {
                Some(existing) => {
                    let content = text_of(t.get("content"));
                    if !content.is_empty() {
                        existing.insert("content".into(), Value::String(cap(&content)));
                    }
                    let status = text_of(t.get("status")).to_lowercase();
                    if STATUSES.contains(&status.as_str()) {
                        existing.insert("status".into(), Value::String(status));
                    }
                }
                None => items.push(validate(&Value::Object(t.clone()))),
            }
        }
        items
    };
    items.truncate(MAX_ITEMS);
    items
}

/// A field as trimmed text (numbers and other values as their JSON text).
fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(other) => other.to_string(),
    }
}

/// Hermes' `_validate`: a clean `{id, content, status}` (`?`, `(no description)`, `pending`
/// stand in for what is missing or invalid).
fn validate(t: &Value) -> Item {
    let Some(t) = t.as_object() else {
        return item("?", "(invalid item)", "pending");
    };
    let id = text_of(t.get("id"));
    let content = text_of(t.get("content"));
    let status = text_of(t.get("status")).to_lowercase();
    let status = if STATUSES.contains(&status.as_str()) { status } else { "pending".into() };
    let content = if content.is_empty() { "(no description)".into() } else { cap(&content) };
    item(if id.is_empty() { "?" } else { &id }, &content, &status)
}

fn item(id: &str, content: &str, status: &str) -> Item {
    let mut m = Map::new();
    m.insert("id".into(), json!(id));
    m.insert("content".into(), json!(content));
    m.insert("status".into(), json!(status));
    m
}

/// Content cut to [`MAX_CONTENT_CHARS`] characters, marker included.
fn cap(content: &str) -> String {
    if content.chars().count() <= MAX_CONTENT_CHARS {
        return content.to_string();
    }
    let keep = MAX_CONTENT_CHARS - TRUNCATION_MARKER.chars().count();
    content.chars().take(keep).collect::<String>() + TRUNCATION_MARKER
}

/// Hermes' `_dedupe_by_id`: a repeated id keeps its last occurrence, in that position.
fn dedupe_by_id(todos: &[Value]) -> Vec<Value> {
    let key = |i: usize, t: &Value| match t.as_object() {
        Some(m) => Some(text_of(m.get("id"))).filter(|s| !s.is_empty()).unwrap_or_else(|| "?".into()),
        None => format!("__invalid_{i}"),
    };
    let keys: Vec<String> = todos.iter().enumerate().map(|(i, t)| key(i, t)).collect();
    todos.iter().enumerate().filter(|(i, _)| !keys[i + 1..].contains(&keys[*i])).map(|(_, t)| t.clone()).collect()
}

/// The tool's answer: the whole list and its counts per status.
fn result(items: &[Item]) -> Value {
    let count = |s: &str| items.iter().filter(|i| i.get("status").and_then(Value::as_str) == Some(s)).count();
    json!({
        "todos": items,
        "summary": {
            "total": items.len(),
            "pending": count("pending"),
            "in_progress": count("in_progress"),
            "completed": count("completed"),
            "cancelled": count("cancelled"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(items: &[Item]) -> Vec<&str> {
        items.iter().map(|i| i["id"].as_str().unwrap_or_default()).collect()
    }

    #[test]
    fn replace_dedupes_validates_and_merge_updates_by_id() {
        let todos = json!([
            {"id": "a", "content": "first", "status": "pending"},
            {"id": "b", "content": "", "status": "weird"},
            {"id": "a", "content": "again", "status": "in_progress"},
            "not an object"
        ]);
        let items = write(Vec::new(), todos.as_array().unwrap(), false);
        assert_eq!(ids(&items), ["b", "a", "?"]);
        assert_eq!((items[0]["content"].as_str(), items[0]["status"].as_str()), (Some("(no description)"), Some("pending")));
        assert_eq!(items[1]["content"], "again");
        assert_eq!(items[2]["content"], "(invalid item)");
        let merged = write(
            items,
            json!([{"id": "b", "status": "completed"}, {"id": "c", "content": "new"}, {"content": "no id"}]).as_array().unwrap(),
            true,
        );
        assert_eq!(ids(&merged), ["b", "a", "?", "c"]);
        assert_eq!((merged[0]["content"].as_str(), merged[0]["status"].as_str()), (Some("(no description)"), Some("completed")));
        let r = result(&merged);
        assert_eq!(r["summary"], json!({"total": 4, "pending": 2, "in_progress": 1, "completed": 1, "cancelled": 0}));
    }

    #[test]
    fn long_content_and_long_lists_are_capped_and_bad_todos_are_errors() {
        let long = "x".repeat(MAX_CONTENT_CHARS + 10);
        let items = write(Vec::new(), &[json!({"id": "1", "content": long, "status": "pending"})], false);
        let c = items[0]["content"].as_str().unwrap();
        assert_eq!(c.chars().count(), MAX_CONTENT_CHARS);
        assert!(c.ends_with(TRUNCATION_MARKER));
        let many: Vec<Value> = (0..MAX_ITEMS + 5).map(|i| json!({"id": i.to_string(), "content": "t"})).collect();
        assert_eq!(write(Vec::new(), &many, false).len(), MAX_ITEMS);
        assert!(todo_list(&json!("[{\"id\": \"1\"}]")).is_ok(), "a list sent as a JSON string");
        assert_eq!(todo_list(&json!("nope")), Err(ToolError::BadArgs("todos must be a list of objects, got unparseable string".into())));
        assert_eq!(todo_list(&json!({"id": 1})), Err(ToolError::BadArgs("todos must be a list, got dict".into())));
    }
}
