//! `model.provider: auto` with a base URL on the user's own host (docs/design.md#models): the
//! OpenAI protocol to that URL and no cloud key from the environment, as Hermes'
//! `runtime_provider.py` (the fix for Hermes #3846); and the host matching it rests on.

use super::{Endpoint, PROVIDERS, Wire, finish, lookup};
use crate::config::env::Env;
use crate::config::load::ConfigError;
use crate::config::types::Settings;
use secrecy::SecretString;

pub(super) fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or_default()
}

/// The cloud API roots `auto` may detect a key for; a `model.base_url` on any other host is
/// the user's own endpoint (Hermes' `_known_cloud_hosts` in `runtime_provider.py`).
pub(super) const CLOUD_HOSTS: &[&str] = &["openrouter.ai", "anthropic.com", "openai.com"];

/// The URL's host name, lower case, without port or user info.
pub(super) fn host_name(url: &str) -> String {
    let h = host(url.trim());
    let h = h.rsplit_once('@').map_or(h, |(_, h)| h);
    let h =
        if let Some(v6) = h.strip_prefix('[') { v6.split(']').next().unwrap_or_default() } else { h.split(':').next().unwrap_or_default() };
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// Whether `url`'s host is `domain` or one of its subdomains (Hermes' `base_url_host_matches`:
/// a look-alike host or a path naming the domain does not match).
pub(super) fn host_matches(url: &str, domain: &str) -> bool {
    let h = host_name(url);
    !h.is_empty() && (h == domain || h.ends_with(&format!(".{domain}")))
}

/// Hermes' `_host_derived_api_key`: `<VENDOR>_API_KEY` from the host's registrable label
/// (`api.groq.com` → `GROQ_API_KEY`); none for IPs, `localhost` and single-label hosts, and
/// none for the vendors whose keys are host-gated explicitly.
pub(super) fn host_derived_key_var(url: &str) -> Option<String> {
    let h = host_name(url);
    let last = h.rsplit('.').next().unwrap_or_default();
    if h.is_empty() || h == "localhost" || h.contains(':') || last.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut labels: Vec<&str> = h.split('.').filter(|l| !l.is_empty()).collect();
    while labels.first().is_some_and(|l| *l == "api" || *l == "www") {
        labels.remove(0);
    }
    let vendor = labels.len().checked_sub(2).and_then(|i| labels.get(i))?;
    let v: String = vendor.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    (v.starts_with(|c: char| c.is_ascii_alphabetic()) && !["OPENAI", "OPENROUTER", "OLLAMA"].contains(&v.as_str()))
        .then(|| format!("{v}_API_KEY"))
}

/// `auto` with a base URL on the user's own host (Ollama, LM Studio, vLLM, a LAN box): the
/// OpenAI protocol to that URL, never a cloud key found in the environment (Hermes #3846).
/// The key is `model.api_key_env`'s, else `model.api_key`, else — as Hermes — `OLLAMA_API_KEY`
/// for ollama.com or the host's own `<VENDOR>_API_KEY`; none is fine for a local server.
pub(super) fn auto_own_endpoint(s: &Settings, env: &Env, file: &str, url_key: &str, url: &str) -> Result<Endpoint, ConfigError> {
    let m = &s.model;
    let info = lookup("custom").unwrap_or(&PROVIDERS[0]);
    let named = m.api_key_env.trim();
    let mut vars: Vec<String> = Vec::new();
    if !named.is_empty() {
        vars.push(named.to_string());
    }
    let mut later: Vec<String> = Vec::new();
    if host_matches(url, "ollama.com") {
        later.push("OLLAMA_API_KEY".into());
    }
    later.extend(host_derived_key_var(url));
    let from = |vars: &[String]| vars.iter().find_map(|v| env.secret(v).map(|k| (k, v.clone())));
    let (api_key, key_hint) = match from(&vars) {
        Some((k, v)) => (Some(k), v),
        None if !m.api_key.is_empty() => (Some(SecretString::from(m.api_key.clone())), "model.api_key".to_string()),
        None => match from(&later) {
            Some((k, v)) => (Some(k), v),
            None => (None, vars.into_iter().chain(later).chain(["model.api_key".to_string()]).collect::<Vec<_>>().join(" or ")),
        },
    };
    let model = env
        .get("HERMES_MODEL")
        .map(str::to_string)
        .or_else(|| [&m.default, &m.model, &m.name].into_iter().find(|v| !v.trim().is_empty()).cloned())
        .unwrap_or_default();
    let why = format!(
        "auto: {url_key} {} is not a cloud API ({}), so the OpenAI protocol goes to it and no cloud key from the environment",
        host_name(url),
        CLOUD_HOSTS.join(", ")
    );
    let ep = Endpoint {
        provider: info.name,
        wire: Wire::OpenaiChat,
        base_url: url.to_string(),
        model,
        api_key,
        key_hint,
        why,
        oauth_line: None,
    };
    finish(ep, info, file, url_key, "model.default")
}
