//! A tool call's one-line preview, as Hermes 0.19.0's `build_tool_preview`
//! (`agent/display.py`) shows it on tool progress events: the call's primary argument (by
//! tool, else the first of Hermes' fallback keys), whitespace collapsed, a list's first item.
//! Hermes' special forms for tools this gateway does not have are left out. No I/O.

use serde_json::Value;

/// The primary argument of the tools this gateway has (Hermes' `primary_args`).
const PRIMARY: &[(&str, &str)] = &[
    ("web_search", "query"),
    ("web_extract", "urls"),
    ("text_to_speech", "text"),
    ("vision_analyze", "question"),
    ("skill_view", "name"),
    ("skills_list", "category"),
    ("cronjob", "action"),
    ("delegate_task", "goal"),
    ("clarify", "question"),
    ("skill_manage", "name"),
];

/// The keys tried, in order, for any other tool.
const FALLBACK: &[&str] = &["query", "text", "command", "path", "name", "prompt", "code", "goal"];

fn oneline(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The preview of a call of `tool` with JSON arguments `args`; `None` when there is nothing
/// to show (no arguments, none of the keys, an empty value).
pub fn preview(tool: &str, args: &Value) -> Option<String> {
    let obj = args.as_object().filter(|o| !o.is_empty())?;
    let key = match PRIMARY.iter().find(|(t, _)| *t == tool) {
        Some((_, k)) => *k,
        None => FALLBACK.iter().copied().find(|k| obj.contains_key(*k))?,
    };
    let value = match obj.get(key)? {
        Value::Array(items) => items.first().cloned().unwrap_or(Value::String(String::new())),
        v => v.clone(),
    };
    let text = match value {
        Value::String(s) => oneline(&s),
        Value::Null => "None".to_string(),
        other => oneline(&other.to_string()),
    };
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn primary_then_fallback_keys() {
        assert_eq!(preview("web_search", &json!({"query": "rust\n  sse", "limit": 3})), Some("rust sse".into()));
        assert_eq!(preview("web_extract", &json!({"urls": ["https://a", "https://b"]})), Some("https://a".into()));
        assert_eq!(preview("current_time", &json!({"tz": "UTC"})), None);
        assert_eq!(preview("mcp_x_lookup", &json!({"name": "n", "query": "q"})), Some("q".into()));
        assert_eq!(preview("web_search", &json!({})), None);
        assert_eq!(preview("web_search", &json!({"query": "  "})), None);
        assert_eq!(preview("web_search", &json!("not an object")), None);
    }
}
