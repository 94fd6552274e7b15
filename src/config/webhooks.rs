//! Hermes' webhook routes (`platforms.webhook.extra`, CONTRACT §16) parsed into
//! [`WebhookRoutes`] at load: `routes.<name>` with `secret` (else `extra.secret`, else
//! `WEBHOOK_SECRET`), `events`, `prompt`, `skills`, `deliver`, `deliver_extra`,
//! `deliver_only`, `enabled` and `rate_limit` (else `extra.rate_limit`, Hermes' 30), and
//! `extra.max_body_bytes`. A route without a secret, a reserved or malformed name, a
//! `deliver_only` route that delivers nowhere, or a wrong type is a [`ConfigError`].
//!
//! Knows key names; knows nothing of signatures or HTTP.

use super::{ConfigError, Env, Settings};
use crate::core::webhook::{DEFAULT_RATE_LIMIT, INSECURE_NO_AUTH, RESERVED, WebhookRoute, WebhookRoutes, valid_route_name};
use secrecy::SecretString;
use serde_json::{Map, Value};

/// The router's body cap (`http::MAX_BODY`): a route's cap may only be lower.
const MAX_BODY: usize = 1024 * 1024;

/// The webhook routes of `settings` (none when `platforms.webhook` is absent).
pub fn webhook_routes(settings: &Settings, env: &Env, file: &str) -> Result<WebhookRoutes, ConfigError> {
    let bad = |key: String, reason: String| ConfigError::Invalid { file: file.to_string(), key, reason };
    let Some(extra) = settings.platforms.other.get("webhook").map(|p| &p.extra) else {
        return Ok(WebhookRoutes { max_body_bytes: MAX_BODY, ..WebhookRoutes::default() });
    };
    let base = "platforms.webhook.extra";
    let global = env.get("WEBHOOK_SECRET").map(str::to_string).or_else(|| extra.get("secret").and_then(Value::as_str).map(str::to_string));
    let rate = match extra.get("rate_limit") {
        None | Some(Value::Null) => DEFAULT_RATE_LIMIT,
        Some(v) => count(v).ok_or_else(|| bad(format!("{base}.rate_limit"), "must be a whole number of at least 1".into()))?,
    };
    let max_body_bytes = match extra.get("max_body_bytes") {
        None | Some(Value::Null) => MAX_BODY,
        Some(v) => count(v)
            .map(|n| (n as usize).min(MAX_BODY))
            .ok_or_else(|| bad(format!("{base}.max_body_bytes"), "must be a whole number of bytes, at least 1".into()))?,
    };
    let mut out = WebhookRoutes { max_body_bytes, ..WebhookRoutes::default() };
    let routes = match extra.get("routes") {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad(format!("{base}.routes"), "must be a mapping of route names to routes".into())),
    };
    for (name, v) in routes {
        let key = format!("{base}.routes.{name}");
        if RESERVED.contains(&name.as_str()) {
            return Err(bad(key, format!("`{name}` is a chat channel's own webhook; choose another route name")));
        }
        if !valid_route_name(name) {
            return Err(bad(key, "a route name is 1–64 letters, digits, `-` or `_`".into()));
        }
        let Value::Object(m) = v else { return Err(bad(key, "must be a mapping".into())) };
        let route = one_route(name, m, global.as_deref(), rate).map_err(|(k, why)| bad(format!("{key}.{k}"), why))?;
        out.routes.insert(name.clone(), route);
    }
    Ok(out)
}

/// A positive whole number (a YAML number or a numeric string).
fn count(v: &Value) -> Option<u32> {
    let n = match v {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    u32::try_from(n).ok().filter(|n| *n >= 1)
}

type Bad = (&'static str, String);

fn text(m: &Map<String, Value>, k: &'static str, default: &str) -> Result<String, Bad> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err((k, "must be a string".into())),
    }
}

fn list(m: &Map<String, Value>, k: &'static str) -> Result<Vec<String>, Bad> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a.iter().map(|v| v.as_str().map(str::to_string).ok_or((k, "must be a list of strings".into()))).collect(),
        Some(_) => Err((k, "must be a list of strings".into())),
    }
}

fn flag(m: &Map<String, Value>, k: &'static str, default: bool) -> Result<bool, Bad> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err((k, "must be true or false".into())),
    }
}

fn one_route(name: &str, m: &Map<String, Value>, global: Option<&str>, rate: u32) -> Result<WebhookRoute, Bad> {
    let secret = match m.get("secret") {
        None | Some(Value::Null) => global.unwrap_or_default().to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(("secret", "must be a string".into())),
    };
    if secret.is_empty() {
        return Err(("secret", "is required: set it on the route, in platforms.webhook.extra.secret or in WEBHOOK_SECRET".into()));
    }
    if secret == INSECURE_NO_AUTH {
        return Err(("secret", format!("`{INSECURE_NO_AUTH}` is not supported: every route checks its signature")));
    }
    let deliver = text(m, "deliver", "log")?;
    let deliver_only = flag(m, "deliver_only", false)?;
    if deliver_only && (deliver.is_empty() || deliver == "log") {
        return Err(("deliver", format!("deliver_only needs a real target (telegram, discord, slack…), not `{deliver}`")));
    }
    let deliver_extra = match m.get("deliver_extra") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(("deliver_extra", "must be a mapping".into())),
    };
    let rate_limit = match m.get("rate_limit") {
        None | Some(Value::Null) => rate,
        Some(v) => count(v).ok_or(("rate_limit", "must be a whole number of at least 1".into()))?,
    };
    Ok(WebhookRoute {
        name: name.to_string(),
        secret: SecretString::from(secret),
        events: list(m, "events")?,
        prompt: text(m, "prompt", "")?,
        skills: list(m, "skills")?,
        deliver,
        deliver_extra,
        deliver_only,
        enabled: flag(m, "enabled", true)?,
        rate_limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn routes(yaml: &str, env: &[(&str, &str)]) -> Result<WebhookRoutes, String> {
        let (settings, _) = crate::config::parse_yaml(yaml, "config.yaml").map_err(|e| e.to_string())?;
        let env = Env::from_pairs(env.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())));
        webhook_routes(&settings, &env, "config.yaml").map_err(|e| e.to_string())
    }

    #[test]
    fn hermes_routes_parse_with_their_defaults() {
        let yaml = "platforms:\n  webhook:\n    extra:\n      secret: g\n      rate_limit: 5\n      routes:\n        gh:\n          events: [push]\n          prompt: 'Push to {repository.full_name}'\n          deliver: telegram\n          deliver_extra: {chat_id: '-100'}\n        alert:\n          secret: own\n          deliver: telegram\n          deliver_only: true\n          rate_limit: 2\n";
        let r = routes(yaml, &[]).unwrap();
        let gh = &r.routes["gh"];
        assert_eq!(
            (gh.secret.expose_secret(), gh.rate_limit, gh.events.as_slice(), gh.enabled),
            ("g", 5, ["push".to_string()].as_slice(), true)
        );
        assert_eq!(gh.deliver_extra["chat_id"], "-100");
        let alert = &r.routes["alert"];
        assert_eq!((alert.secret.expose_secret(), alert.deliver_only, alert.rate_limit), ("own", true, 2));
        assert_eq!(r.max_body_bytes, MAX_BODY);
        let env = routes("platforms: {webhook: {extra: {routes: {a: {}}}}}", &[("WEBHOOK_SECRET", "e")]).unwrap();
        assert_eq!(env.routes["a"].secret.expose_secret(), "e");
        assert_eq!(env.routes["a"].deliver, "log");
        assert!(routes("timezone: UTC", &[]).unwrap().routes.is_empty());
    }

    #[test]
    fn bad_routes_name_the_key_and_the_reason() {
        let cases = [
            ("platforms: {webhook: {extra: {routes: {a: {}}}}}", "routes.a.secret", "required"),
            ("platforms: {webhook: {extra: {routes: {telegram: {secret: s}}}}}", "routes.telegram", "channel"),
            ("platforms: {webhook: {extra: {routes: {'a b': {secret: s}}}}}", "routes.a b", "route name"),
            ("platforms: {webhook: {extra: {routes: {a: {secret: s, deliver_only: true}}}}}", "routes.a.deliver", "real target"),
            ("platforms: {webhook: {extra: {routes: {a: {secret: INSECURE_NO_AUTH}}}}}", "routes.a.secret", "not supported"),
            ("platforms: {webhook: {extra: {routes: {a: {secret: s, rate_limit: 0}}}}}", "routes.a.rate_limit", "at least 1"),
            ("platforms: {webhook: {extra: {routes: {a: {secret: s, events: 3}}}}}", "routes.a.events", "list"),
            ("platforms: {webhook: {extra: {routes: [a]}}}", "extra.routes", "mapping"),
        ];
        for (yaml, key, why) in cases {
            let e = routes(yaml, &[]).unwrap_err();
            assert!(e.contains(key) && e.contains(why), "{yaml}: {e}");
        }
    }
}
