//! The endpoint of a model picked in a chat with `/model [provider:]model`
//! (docs/sessions.md#commands): the configured provider (or a fallback's) keeps its URL and
//! key with the new model id; another provider is resolved from Hermes' table and the
//! environment, the way `model.provider` is (its `*_BASE_URL` variable or default URL, its
//! key variables). A provider that cannot be reached this way is refused with the reason.

use super::{Endpoint, ModelChain, Wire, first_key, known_names, lookup, oauth_line};
use crate::config::Env;

/// The endpoint of `model` on `provider` (`None`: the configured primary's provider), or
/// why it cannot be used.
pub fn resolve_choice(chain: &ModelChain, env: &Env, provider: Option<&str>, model: &str) -> Result<Endpoint, String> {
    let with_model = |ep: &Endpoint| Endpoint { model: model.to_string(), why: format!("/model: {} {model}", ep.provider), ..ep.clone() };
    let Some(name) = provider else { return Ok(with_model(&chain.primary)) };
    let info = lookup(name).ok_or_else(|| format!("Unknown provider `{name}`. Known providers: {}", known_names()))?;
    if let Some(ep) = std::iter::once(&chain.primary).chain(&chain.fallbacks).find(|e| e.provider == info.name) {
        return Ok(with_model(ep));
    }
    match info.wire {
        Wire::OauthOnly => return Err(oauth_line(info)),
        Wire::Offline => return Ok(with_model(&ModelChain::default().primary)),
        Wire::OpenaiChat | Wire::AnthropicMessages => {}
    }
    let base_url = (!info.base_url_env.is_empty())
        .then(|| env.get(info.base_url_env))
        .flatten()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .unwrap_or(info.base_url)
        .trim_end_matches('/')
        .to_string();
    if base_url.is_empty() {
        return Err(format!("Provider `{}` has no default URL; configure it as model.provider to use it.", info.name));
    }
    let key = first_key(env, info.key_env);
    if key.is_none() && !info.key_env.is_empty() {
        return Err(format!("Provider `{}` has no API key here: set {}.", info.name, info.key_env.join(" or ")));
    }
    let (api_key, key_hint) = match key {
        Some((k, var)) => (Some(k), var),
        None => (None, String::new()),
    };
    Ok(Endpoint {
        provider: info.name,
        wire: info.wire,
        base_url,
        model: model.to_string(),
        api_key,
        key_hint,
        why: format!("/model: {} {model}", info.name),
        oauth_line: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        Env::from_pairs(vars.iter().copied())
    }

    #[test]
    fn the_configured_provider_keeps_its_endpoint_and_others_come_from_the_environment() {
        let mut chain = ModelChain::default();
        chain.primary.provider = "custom";
        chain.primary.wire = Wire::OpenaiChat;
        chain.primary.base_url = "http://127.0.0.1:9/v1".into();
        let same = resolve_choice(&chain, &env(&[]), None, "m2").unwrap();
        assert_eq!((same.provider, same.base_url.as_str(), same.model.as_str()), ("custom", "http://127.0.0.1:9/v1", "m2"));
        let e = env(&[("OPENROUTER_API_KEY", "k"), ("OPENROUTER_BASE_URL", "http://127.0.0.1:8/api/v1/")]);
        let or = resolve_choice(&chain, &e, Some("OpenRouter"), "x/y").unwrap();
        assert_eq!(
            (or.provider, or.base_url.as_str(), or.key_hint.as_str()),
            ("openrouter", "http://127.0.0.1:8/api/v1", "OPENROUTER_API_KEY")
        );
        assert!(resolve_choice(&chain, &env(&[]), Some("openrouter"), "x").unwrap_err().contains("OPENROUTER_API_KEY"));
        assert!(resolve_choice(&chain, &e, Some("nosuch"), "x").unwrap_err().starts_with("Unknown provider `nosuch`"));
        assert!(resolve_choice(&chain, &e, Some("nous"), "x").is_err(), "OAuth-only providers are refused");
        assert_eq!(resolve_choice(&chain, &e, Some("offline"), "x").unwrap().wire, Wire::Offline);
    }
}
