//! The body of `POST /api/sessions/{session_id}/chat` (and `/chat/stream`) as Hermes 0.19.0
//! reads it (`gateway/platforms/api_server.py` `_session_chat_user_message` and the
//! `system_message` check of `_handle_session_chat`): the turn's input from `message`, else
//! `input`, normalized like a chat completion's content, and the turn's ephemeral system
//! prompt from `system_message`, else `instructions`. No I/O.

use crate::core::api_server::{RequestError, normalize_content};
use serde_json::Value;

/// What a session chat body asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionChatInput {
    /// The turn's input text.
    pub message: String,
    /// The ephemeral system prompt of this turn only (never stored); `None` when absent or
    /// empty.
    pub system: Option<String>,
}

/// Python's truthiness of a JSON value (Hermes reads both fields with `a or b`).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// Python's `body.get(a) or body.get(b)`.
fn either<'a>(body: &'a Value, a: &str, b: &str) -> Option<&'a Value> {
    if truthy(body.get(a)) { body.get(a) } else { body.get(b) }
}

/// Hermes' `_content_has_visible_payload`: text with something in it, or a text or image part.
fn visible(content: Option<&Value>) -> bool {
    match content {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(parts)) => parts.iter().any(|p| {
            let kind = p.get("type").and_then(Value::as_str).unwrap_or("").trim().to_lowercase();
            match kind.as_str() {
                "text" | "input_text" | "output_text" => p.get("text").and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty()),
                "image_url" | "input_image" => true,
                _ => false,
            }
        }),
        _ => false,
    }
}

/// Parses a session chat body (already a JSON object) as Hermes does: 400 `missing_message`
/// without a visible message, Hermes' content-part errors at `message`, 400
/// `invalid_system_message` for a system prompt that is not a string. Any error means no turn.
pub fn parse_session_chat(body: &Value) -> Result<SessionChatInput, RequestError> {
    let raw = either(body, "message", "input");
    if !visible(raw) {
        return Err(RequestError { code: Some("missing_message"), param: None, message: "Missing 'message' field".into() });
    }
    let message = normalize_content(raw.unwrap_or(&Value::Null), "message")?;
    let system = match either(body, "system_message", "instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
        Some(_) => {
            return Err(RequestError {
                code: Some("invalid_system_message"),
                param: None,
                message: "system_message must be a string".into(),
            });
        }
    };
    Ok(SessionChatInput { message, system })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn code(body: Value) -> Option<&'static str> {
        parse_session_chat(&body).unwrap_err().code
    }

    #[test]
    fn message_then_input_then_missing() {
        assert_eq!(parse_session_chat(&json!({"message": "hi"})).unwrap().message, "hi");
        assert_eq!(parse_session_chat(&json!({"message": "", "input": "from input"})).unwrap().message, "from input");
        let parts = json!({"message": [{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}]});
        assert_eq!(parse_session_chat(&parts).unwrap().message, "a\nb");
        for body in [json!({}), json!({"message": "   "}), json!({"message": 5}), json!({"message": ["only a string"]})] {
            assert_eq!(code(body), Some("missing_message"));
        }
        let e = parse_session_chat(&json!({"message": [{"type": "text", "text": "x"}, {"type": "input_audio"}]})).unwrap_err();
        assert_eq!((e.code, e.param.as_deref()), (Some("unsupported_content_type"), Some("message")));
    }

    #[test]
    fn system_message_then_instructions_must_be_a_string() {
        let p = |b: Value| parse_session_chat(&b).unwrap().system;
        assert_eq!(p(json!({"message": "m", "system_message": "be brief"})), Some("be brief".into()));
        assert_eq!(p(json!({"message": "m", "system_message": "", "instructions": "pirate"})), Some("pirate".into()));
        assert_eq!(p(json!({"message": "m", "system_message": null})), None);
        assert_eq!(p(json!({"message": "m", "system_message": false})), None, "falls to the absent instructions");
        assert_eq!(p(json!({"message": "m", "instructions": ""})), None);
        for bad in [json!(5), json!(["x"]), json!({"a": 1}), json!(true)] {
            assert_eq!(code(json!({"message": "m", "system_message": bad})), Some("invalid_system_message"));
        }
        // Hermes' `or` hands a falsy `instructions` through, and it is not a string.
        assert_eq!(code(json!({"message": "m", "instructions": false})), Some("invalid_system_message"));
    }
}
