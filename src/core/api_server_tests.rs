//! Hermes' API server rules: session headers, derived ids, content parts, bodies.

use super::*;
use serde_json::json;

#[test]
fn session_ids_are_checked_as_hermes_checks_them() {
    assert!(check_session_id("api-0123456789abcdef").is_ok());
    assert!(check_session_id("agent:main:webui").is_ok(), "a colon is a valid id");
    for bad in ["../etc", "a/b", "a\\b", "C:x", "a\nb", "a\0b"] {
        assert_eq!(check_session_id(bad).unwrap_err().message, "Invalid session ID", "{bad:?}");
    }
    assert_eq!(check_session_id(&"x".repeat(257)).unwrap_err().message, "Session ID too long");
    assert!(check_session_id(&"x".repeat(256)).is_ok());
    assert!(check_session_key("agent:main:webui:dm:user-42").is_ok());
    assert_eq!(check_session_key("a\rb").unwrap_err().message, "Invalid session key");
    assert_eq!(check_session_key(&"k".repeat(300)).unwrap_err().message, "Session key too long");
}

#[test]
fn the_derived_id_is_hermes_digest_of_system_and_first_user() {
    // Python: "api-" + hashlib.sha256(b"be brief\nhello").hexdigest()[:16]
    assert_eq!(derive_session_id(Some("be brief"), "hello"), "api-74303aa7304df6af");
    assert_eq!(derive_session_id(None, "hello"), derive_session_id(Some(""), "hello"));
    assert_ne!(derive_session_id(None, "hello"), derive_session_id(None, "hello!"));
}

#[test]
fn chat_ids_are_valid_key_parts() {
    assert_eq!(chat_id_for("api-1"), "api-1");
    let c = chat_id_for("agent:main:x y");
    assert!(c.starts_with("h-") && !c.contains(':') && c.len() == 34, "{c}");
    assert_eq!(c, chat_id_for("agent:main:x y"), "stable");
}

#[test]
fn content_parts_follow_hermes() {
    let text = json!([{"type": "text", "text": "a"}, "b", {"type": "input_text", "text": "c"}]);
    assert_eq!(normalize_content(&text, "p").unwrap(), "a\nb\nc");
    let file = normalize_content(&json!([{"type": "file", "file": {}}]), "messages[0].content").unwrap_err();
    assert_eq!((file.code, file.param.as_deref()), (Some("unsupported_content_type"), Some("messages[0].content")));
    let odd = normalize_content(&json!([{"type": "audio"}]), "p").unwrap_err();
    assert_eq!(odd.code, Some("unsupported_content_type"));
    assert!(odd.message.contains("'audio'"), "{}", odd.message);
    let no_url = normalize_content(&json!([{"type": "image_url", "image_url": {}}]), "p").unwrap_err();
    assert_eq!(no_url.code, Some("invalid_image_url"));
    let data = normalize_content(&json!([{"type": "image_url", "image_url": {"url": "data:text/plain,hi"}}]), "p").unwrap_err();
    assert_eq!(data.code, Some("unsupported_content_type"));
    assert_eq!(flatten_text(&json!([{"type": "text", "text": "sys"}, {"type": "image_url"}])), "sys");
}

#[test]
fn chat_bodies_parse_as_hermes_reads_them() {
    let body = json!({"model": "m", "stream": "true", "messages": [
        {"role": "system", "content": "s1"}, {"role": "system", "content": "s2"},
        {"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "last"}]});
    let c = parse_chat(&body).unwrap();
    assert_eq!(c, ChatInput { system: Some("s1\ns2".into()), input: "last".into(), first_user: "first".into(), stream: true });
    assert_eq!(parse_chat(&json!({})).unwrap_err().message, "Missing or invalid 'messages' field");
    assert_eq!(parse_chat(&json!({"messages": []})).unwrap_err().message, "Missing or invalid 'messages' field");
    assert_eq!(
        parse_chat(&json!({"messages": [{"role": "system", "content": "x"}]})).unwrap_err().message,
        "No user message found in messages"
    );
    assert!(parse_chat(&json!({"messages": ["hi"]})).is_err());
    assert!(!parse_chat(&json!({"messages": [{"role": "user", "content": "x"}], "stream": "maybe"})).unwrap().stream);
}

#[test]
fn responses_bodies_parse_as_hermes_reads_them() {
    let r = parse_responses(&json!({"input": "hi", "previous_response_id": "resp_1", "store": false})).unwrap();
    assert_eq!((r.input.as_str(), r.previous.as_deref(), r.store), ("hi", Some("resp_1"), false));
    let list = parse_responses(&json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}, "b"]})).unwrap();
    assert_eq!(list.input, "b");
    assert!(list.store, "store defaults to true");
    assert_eq!(parse_responses(&json!({})).unwrap_err().message, "Missing 'input' field");
    assert_eq!(parse_responses(&json!({"input": 3})).unwrap_err().message, "'input' must be a string or array");
    assert!(parse_responses(&json!({"input": "x", "conversation": "c", "previous_response_id": "r"})).is_err());
}
