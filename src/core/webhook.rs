//! Webhook routes as Hermes' generic `webhook` platform has them (`gateway/platforms/
//! webhook.py`, CONTRACT §16): a route's definition ([`WebhookRoute`]), the event type of a
//! delivery, its delivery id, and the prompt template (`{a.b}` fields, `{__raw__}`,
//! `{event_type}`) rendered over the payload exactly as Hermes renders it.
//!
//! Pure: no I/O, no clock, no HTTP. Signatures are checked at the edge (`http::hooks`);
//! running and delivering is `app::webhooks`.

use secrecy::SecretString;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Route names that stay the chat channels' own webhooks.
pub const RESERVED: [&str; 4] = ["telegram", "discord", "slack", "whatsapp"];
/// How long a delivery id is remembered (Hermes' idempotency TTL: one hour).
pub const DEDUPE_SECS: i64 = 3600;
/// Hermes' default `rate_limit` (requests per minute per route).
pub const DEFAULT_RATE_LIMIT: u32 = 30;
/// The secret that turns signature checks off in Hermes (testing only); refused here.
pub const INSECURE_NO_AUTH: &str = "INSECURE_NO_AUTH";

/// One route of `platforms.webhook.extra.routes`.
#[derive(Debug, Clone)]
pub struct WebhookRoute {
    /// Its name (the last path segment).
    pub name: String,
    /// The HMAC secret (or GitLab token) its senders sign with.
    pub secret: SecretString,
    /// Event types accepted (empty: all).
    pub events: Vec<String>,
    /// The prompt template (empty: Hermes' default, the payload as JSON).
    pub prompt: String,
    /// Skills loaded into the run (the first one installed, as Hermes).
    pub skills: Vec<String>,
    /// Where the answer goes: `log` (nowhere), or a platform name.
    pub deliver: String,
    /// Delivery options (`chat_id`, `thread_id`/`message_thread_id`), templates too.
    pub deliver_extra: Map<String, Value>,
    /// Deliver the rendered template itself, with no model call.
    pub deliver_only: bool,
    /// `enabled: false` refuses every delivery with 403.
    pub enabled: bool,
    /// Requests per minute accepted on this route.
    pub rate_limit: u32,
}

/// Every configured route, by name, and the body cap.
#[derive(Debug, Clone, Default)]
pub struct WebhookRoutes {
    /// The routes.
    pub routes: BTreeMap<String, WebhookRoute>,
    /// Largest body accepted (Hermes' `max_body_bytes`; at most the router's 1 MiB).
    pub max_body_bytes: usize,
}

/// Whether `name` may name a route: 1–64 of `[A-Za-z0-9_-]`, not a channel's.
pub fn valid_route_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') && !RESERVED.contains(&name)
}

/// The event type of a delivery, as Hermes picks it: `X-GitHub-Event`, `X-GitLab-Event`,
/// the payload's `event_type`, its `type`, else `unknown`.
pub fn event_type(github: Option<&str>, gitlab: Option<&str>, payload: &Value) -> String {
    let from_payload = |k: &str| payload.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    github
        .filter(|s| !s.is_empty())
        .or(gitlab.filter(|s| !s.is_empty()))
        .map(str::to_string)
        .or_else(|| from_payload("event_type"))
        .or_else(|| from_payload("type"))
        .unwrap_or_else(|| "unknown".into())
}

/// Python's `str()` of a JSON scalar, and `json.dumps(indent=2)` of the rest cut at `cap`.
fn python_str(v: &Value, cap: usize) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => n.to_string(),
        Value::Array(_) | Value::Object(_) => pretty(v, cap),
    }
}

/// `json.dumps(v, indent=2)[:cap]` (cut on characters, as Python slices).
fn pretty(v: &Value, cap: usize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default().chars().take(cap).collect()
}

/// One `{key}` of a template: `__raw__`, `event_type`, or a dotted path into the payload.
fn resolve(key: &str, payload: &Value, event_type: &str) -> String {
    match key {
        "__raw__" => return pretty(payload, 4000),
        "event_type" => return event_type.to_string(),
        _ => {}
    }
    let mut value = payload;
    for part in key.split('.') {
        match value.as_object() {
            Some(m) => match m.get(part) {
                Some(v) => value = v,
                None => return format!("{{{key}}}"),
            },
            None => return format!("{{{key}}}"),
        }
    }
    python_str(value, 2000)
}

/// Renders `template` over `payload` as Hermes does: `{a.b}` reads nested fields (objects
/// and lists as indented JSON, cut at 2000 characters; a missing field stays as written),
/// `{__raw__}` is the whole payload as JSON (cut at 4000), `{event_type}` the event. An
/// empty template gives Hermes' default prompt.
pub fn render(template: &str, payload: &Value, event_type: &str, route: &str) -> String {
    if template.is_empty() {
        return format!("Webhook event '{event_type}' on route '{route}':\n\n```json\n{}\n```", pretty(payload, 4000));
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let key_len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.').count();
        if key_len > 0 && after.as_bytes().get(key_len) == Some(&b'}') {
            out.push_str(&resolve(&after[..key_len], payload, event_type));
            rest = &after[key_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `deliver_extra` with each string value rendered over the payload (Hermes renders them
/// with an empty event type and route).
pub fn render_extra(extra: &Map<String, Value>, payload: &Value) -> Map<String, Value> {
    extra
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => (k.clone(), Value::String(render(s, payload, "", ""))),
            other => (k.clone(), other.clone()),
        })
        .collect()
}

/// The session chat id of one delivery (`webhook:<route>:<delivery_id>`, Hermes').
pub fn session_chat_id(route: &str, delivery_id: &str) -> String {
    format!("webhook:{route}:{delivery_id}")
}

/// A delivery id made safe for a session key part: characters other than
/// `[A-Za-z0-9._-]` become `_`, at most 128 kept.
pub fn key_part(delivery_id: &str) -> String {
    delivery_id.chars().take(128).map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect()
}

/// Hermes' generic V2 signature of `body` at `timestamp` (unix seconds, as sent in
/// `X-Webhook-Timestamp`): hex HMAC-SHA256 by `secret` of `"{timestamp}.{body}"`, the value
/// of `X-Webhook-Signature-V2` (`hermes-zero webhook test` signs with it).
pub fn sign_generic_v2(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let mut ctx = ring::hmac::Context::with_key(&key);
    ctx.update(timestamp.as_bytes());
    ctx.update(b".");
    ctx.update(body);
    ctx.sign().as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_render_as_hermes_renders_them() {
        let p = json!({"pull_request": {"title": "Fix", "number": 7, "draft": false, "labels": ["a"]}, "n": null});
        assert_eq!(render("PR {pull_request.title} #{pull_request.number}", &p, "pr", "r"), "PR Fix #7");
        assert_eq!(render("{pull_request.draft} {n}", &p, "pr", "r"), "False None");
        assert_eq!(render("{pull_request.labels}", &p, "pr", "r"), "[\n  \"a\"\n]");
        assert_eq!(render("{missing.key} {pull_request.title.x}", &p, "pr", "r"), "{missing.key} {pull_request.title.x}");
        assert_eq!(render("{event_type}: {not a key} {}", &p, "push", "r"), "push: {not a key} {}");
        assert!(render("{__raw__}", &p, "e", "r").starts_with("{\n  \"n\": null"));
        let default = render("", &json!({"a": 1}), "push", "gh");
        assert_eq!(default, "Webhook event 'push' on route 'gh':\n\n```json\n{\n  \"a\": 1\n}\n```");
        let big = json!({"s": "x".repeat(5000)});
        assert_eq!(render("{__raw__}", &big, "e", "r").chars().count(), 4000);
    }

    #[test]
    fn the_event_type_and_route_names_follow_hermes() {
        assert_eq!(event_type(Some("push"), Some("Push Hook"), &json!({})), "push");
        assert_eq!(event_type(None, Some("Push Hook"), &json!({"type": "x"})), "Push Hook");
        assert_eq!(event_type(None, None, &json!({"event_type": "a", "type": "b"})), "a");
        assert_eq!(event_type(Some(""), None, &json!({"type": "b"})), "b");
        assert_eq!(event_type(None, None, &json!([1])), "unknown");
        assert!(valid_route_name("github-push_1"));
        for bad in ["", "a/b", "a b", "telegram", "whatsapp", &"x".repeat(65)] {
            assert!(!valid_route_name(bad), "{bad}");
        }
        assert_eq!(key_part("msg 1:2/ü"), "msg_1_2__");
        let extra = serde_json::Map::from_iter([("chat_id".to_string(), json!("{chat}")), ("n".to_string(), json!(3))]);
        assert_eq!(Value::Object(render_extra(&extra, &json!({"chat": "-100"}))), json!({"chat_id": "-100", "n": 3}));
    }
}
