//! The OpenAI-compatible API server's pure rules, as Hermes 0.19.0 has them
//! (`gateway/platforms/api_server.py`, CONTRACT §15): the checks of the
//! `X-Hermes-Session-Id` and `X-Hermes-Session-Key` headers, the session id derived from the
//! system prompt and first user message, content-part normalization (with Hermes'
//! `unsupported_content_type` and friends), the chat and responses inputs, and the chat id a
//! Hermes session id maps to. No I/O.

use ring::digest::{SHA256, digest};
use serde_json::Value;

/// Longest accepted session header value (Hermes' `_MAX_SESSION_HEADER_LEN`).
pub const MAX_SESSION_HEADER_LEN: usize = 256;
/// Longest normalized text of one content (Hermes' `MAX_NORMALIZED_TEXT_LENGTH`), in characters.
pub const MAX_NORMALIZED_TEXT_LENGTH: usize = 65_536;
/// Most parts read from one content array (Hermes' `MAX_CONTENT_LIST_SIZE`).
pub const MAX_CONTENT_LIST_SIZE: usize = 1_000;
/// Most stored responses kept (Hermes' `MAX_STORED_RESPONSES`); the least recently used go.
pub const MAX_STORED_RESPONSES: usize = 100;

/// A request refused before any turn: an OpenAI-style `invalid_request_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RequestError {
    /// OpenAI's `code` (Hermes' `unsupported_content_type`, `invalid_image_url`, …).
    pub code: Option<&'static str>,
    /// OpenAI's `param` (e.g. `messages[1].content`).
    pub param: Option<String>,
    /// What is wrong, for the caller.
    pub message: String,
}

impl RequestError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        Self { code: None, param: None, message: message.into() }
    }

    fn part(code: &'static str, param: &str, message: impl Into<String>) -> Self {
        Self { code: Some(code), param: Some(param.to_string()), message: message.into() }
    }
}

fn has_control(v: &str) -> bool {
    v.contains(['\r', '\n', '\0'])
}

/// Hermes' `_is_path_unsafe`: `..`, a separator, or a leading drive letter.
fn path_unsafe(v: &str) -> bool {
    let b = v.as_bytes();
    v.contains("..") || v.contains('/') || v.contains('\\') || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

/// Checks an `X-Hermes-Session-Id` value (already trimmed, not empty) as Hermes does.
pub fn check_session_id(v: &str) -> Result<(), RequestError> {
    if has_control(v) || path_unsafe(v) {
        return Err(RequestError::new("Invalid session ID"));
    }
    if v.chars().count() > MAX_SESSION_HEADER_LEN {
        return Err(RequestError::new("Session ID too long"));
    }
    Ok(())
}

/// Checks an `X-Hermes-Session-Key` value (already trimmed, not empty) as Hermes does.
pub fn check_session_key(v: &str) -> Result<(), RequestError> {
    if has_control(v) {
        return Err(RequestError::new("Invalid session key"));
    }
    if v.chars().count() > MAX_SESSION_HEADER_LEN {
        return Err(RequestError::new("Session key too long"));
    }
    Ok(())
}

fn sha256_hex(s: &str) -> String {
    digest(&SHA256, s.as_bytes()).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Hermes' `_derive_chat_session_id`: `api-` and the first 16 hex digits of the SHA-256 of
/// the system prompt and the first user message, so every turn of one client conversation
/// (which resends both) lands in the same session.
pub fn derive_session_id(system: Option<&str>, first_user: &str) -> String {
    format!("api-{}", &sha256_hex(&format!("{}\n{first_user}", system.unwrap_or("")))[..16])
}

/// The chat id (a part of the session key) of a Hermes session id: the id itself when it is
/// a valid key part (no `:` nor whitespace), else `h-` and a digest of it.
pub fn chat_id_for(session_id: &str) -> String {
    if session_id.is_empty() || session_id.contains(':') || session_id.chars().any(char::is_whitespace) {
        return format!("h-{}", &sha256_hex(session_id)[..32]);
    }
    session_id.to_string()
}

fn truncated(s: &str) -> String {
    s.chars().take(MAX_NORMALIZED_TEXT_LENGTH).collect()
}

/// Hermes' `_normalize_chat_content`: any content flattened to text (system messages).
pub fn flatten_text(content: &Value) -> String {
    fn walk(v: &Value, depth: usize) -> String {
        match v {
            Value::Null => String::new(),
            Value::String(s) => truncated(s),
            Value::Array(items) if depth <= 10 => {
                let mut parts = Vec::new();
                for item in items.iter().take(MAX_CONTENT_LIST_SIZE) {
                    let t = match item {
                        Value::String(s) => truncated(s),
                        Value::Object(o) if matches!(part_type(item).as_str(), "text" | "input_text" | "output_text") => {
                            o.get("text").map(|t| truncated(&text_of(t))).unwrap_or_default()
                        }
                        Value::Array(_) => walk(item, depth + 1),
                        _ => String::new(),
                    };
                    if !t.is_empty() {
                        parts.push(t);
                    }
                }
                truncated(&parts.join("\n"))
            }
            Value::Array(_) => String::new(),
            other => truncated(&other.to_string()),
        }
    }
    walk(content, 0)
}

fn part_type(v: &Value) -> String {
    v.get("type").map(text_of).unwrap_or_default().trim().to_lowercase()
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Hermes' `_normalize_multimodal_content`, for a user or assistant message at `param`: text
/// parts joined by newlines. File parts, non-image data URLs and unknown part types get
/// Hermes' `unsupported_content_type`; image parts are checked as Hermes checks them
/// (`invalid_image_url`, `invalid_content_part`) and then refused as `unsupported_content_type`,
/// since this gateway passes no HTTP images to the model yet.
pub fn normalize_content(content: &Value, param: &str) -> Result<String, RequestError> {
    let items = match content {
        Value::Null => return Ok(String::new()),
        Value::String(s) => return Ok(truncated(s)),
        Value::Array(items) => items,
        other => return Ok(flatten_text(other)),
    };
    let mut texts = Vec::new();
    for item in items.iter().take(MAX_CONTENT_LIST_SIZE) {
        match item {
            Value::String(s) if !s.is_empty() => texts.push(truncated(s)),
            Value::Object(o) => match part_type(item).as_str() {
                "text" | "input_text" | "output_text" => {
                    let t = o.get("text").map(text_of).unwrap_or_default();
                    if !t.is_empty() {
                        texts.push(truncated(&t));
                    }
                }
                "image_url" | "input_image" => return Err(image_error(o, param)),
                "file" | "input_file" => {
                    return Err(RequestError::part(
                        "unsupported_content_type",
                        param,
                        "Inline image inputs are supported, but uploaded files and document inputs are not supported on this endpoint.",
                    ));
                }
                _ => {
                    let raw = o.get("type").map_or("None".to_string(), |t| format!("'{}'", text_of(t)));
                    return Err(RequestError::part(
                        "unsupported_content_type",
                        param,
                        format!("Unsupported content part type {raw}. Only text and image_url/input_image parts are supported."),
                    ));
                }
            },
            _ => {}
        }
    }
    Ok(texts.join("\n"))
}

/// The error of an image part: Hermes' own checks first, then this gateway's refusal.
fn image_error(o: &serde_json::Map<String, Value>, param: &str) -> RequestError {
    let (url, detail) = match o.get("image_url") {
        Some(Value::Object(i)) => (i.get("url").cloned(), i.get("detail").or(o.get("detail")).cloned()),
        other => (other.cloned(), o.get("detail").cloned()),
    };
    let url = url.and_then(|u| u.as_str().map(str::trim).map(str::to_string)).filter(|u| !u.is_empty());
    let Some(url) = url else {
        return RequestError::part("invalid_image_url", param, "Image parts must include a non-empty image URL.");
    };
    let lower = url.to_lowercase();
    if lower.starts_with("data:") && (!lower.starts_with("data:image/") || !url.contains(',')) {
        return RequestError::part(
            "unsupported_content_type",
            param,
            "Only image data URLs are supported. Non-image data payloads are not supported.",
        );
    }
    if !lower.starts_with("data:") && !lower.starts_with("http://") && !lower.starts_with("https://") {
        return RequestError::part("invalid_image_url", param, "Image inputs must use http(s) URLs or data:image/... URLs.");
    }
    if detail.as_ref().is_some_and(|d| d.as_str().is_none_or(|s| s.trim().is_empty())) {
        return RequestError::part("invalid_content_part", param, "Image detail must be a non-empty string when provided.");
    }
    RequestError::part(
        "unsupported_content_type",
        param,
        "Image inputs are not supported by this gateway's API server yet; send text parts.",
    )
}

/// What a `/v1/chat/completions` body asks for: the system prompt, the turn's input (the
/// last user or assistant message, as Hermes takes it) and the first user message (the
/// derived session id's seed). The rest of the body's history is not used: the session's
/// stored history is (CONTRACT §15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatInput {
    /// The system messages, joined by newlines.
    pub system: Option<String>,
    /// The turn's input text.
    pub input: String,
    /// The first user message's text.
    pub first_user: String,
    /// Whether the body asked for SSE (`stream: true`).
    pub stream: bool,
}

/// Parses a `/v1/chat/completions` body as Hermes does; any error means no turn.
pub fn parse_chat(body: &Value) -> Result<ChatInput, RequestError> {
    let Some(messages) = body.get("messages").and_then(Value::as_array).filter(|m| !m.is_empty()) else {
        return Err(RequestError::new("Missing or invalid 'messages' field"));
    };
    let mut system: Option<String> = None;
    let mut turns: Vec<(String, String)> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let Some(o) = m.as_object() else { return Err(RequestError::new(format!("messages[{i}] must be an object"))) };
        let role = o.get("role").and_then(Value::as_str).unwrap_or("");
        let content = o.get("content").unwrap_or(&Value::Null);
        match role {
            "system" => {
                let t = flatten_text(content);
                system = Some(match system {
                    Some(s) => format!("{s}\n{t}"),
                    None => t,
                });
            }
            "user" | "assistant" => turns.push((role.to_string(), normalize_content(content, &format!("messages[{i}].content"))?)),
            _ => {}
        }
    }
    let input = turns.last().map(|(_, c)| c.clone()).unwrap_or_default();
    if input.trim().is_empty() {
        return Err(RequestError::new("No user message found in messages"));
    }
    let first_user = turns.iter().find(|(r, _)| r == "user").map(|(_, c)| c.clone()).unwrap_or_default();
    Ok(ChatInput { system, input, first_user, stream: coerce_bool(body.get("stream"), false) })
}

/// Hermes' `_coerce_request_bool`: booleans, `"true"`/`"1"`/`"yes"`/`"on"` and numbers.
pub fn coerce_bool(v: Option<&Value>, default: bool) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => match s.trim().to_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => default,
        },
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        _ => default,
    }
}

/// What a `/v1/responses` body asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsesInput {
    /// The turn's input text (the last input message).
    pub input: String,
    /// `instructions`.
    pub instructions: Option<String>,
    /// `previous_response_id`.
    pub previous: Option<String>,
    /// `store` (default true).
    pub store: bool,
    /// `stream`.
    pub stream: bool,
}

/// Parses a `/v1/responses` body as Hermes does; any error means no turn.
pub fn parse_responses(body: &Value) -> Result<ResponsesInput, RequestError> {
    let raw = body.get("input").filter(|v| !v.is_null()).ok_or_else(|| RequestError::new("Missing 'input' field"))?;
    let previous = body.get("previous_response_id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    if body.get("conversation").is_some_and(|c| !c.is_null()) && previous.is_some() {
        return Err(RequestError::new("Cannot use both 'conversation' and 'previous_response_id'"));
    }
    let mut inputs = Vec::new();
    match raw {
        Value::String(s) => inputs.push(s.clone()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => inputs.push(s.clone()),
                    Value::Object(o) => {
                        inputs.push(normalize_content(o.get("content").unwrap_or(&Value::Null), &format!("input[{i}].content"))?)
                    }
                    _ => {}
                }
            }
        }
        _ => return Err(RequestError::new("'input' must be a string or array")),
    }
    let input = inputs.pop().unwrap_or_default();
    if input.trim().is_empty() {
        return Err(RequestError::new("No user message found in input"));
    }
    Ok(ResponsesInput {
        input,
        instructions: body.get("instructions").and_then(Value::as_str).map(str::to_string),
        previous,
        store: coerce_bool(body.get("store"), true),
        stream: coerce_bool(body.get("stream"), false),
    })
}

#[cfg(test)]
#[path = "api_server_tests.rs"]
mod tests;
