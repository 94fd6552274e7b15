//! A job's own model endpoint (docs/jobs.md#per-job-model): Hermes' per-job `provider` /
//! `base_url` / `model`, resolved as `model.*` is — the provider's default URL, its URL
//! variable and its key variables — with Hermes 0.19.0's credential guard
//! (`_validate_cron_base_url`): a `base_url` needs an explicit provider, and a named
//! provider's key is only ever sent to that provider's own host; `custom` sends only a key
//! gated on the URL's host (`runtime_provider.py`), never another provider's.

use super::own::{host_derived_key_var, host_matches, host_name};
use super::{Endpoint, ModelChain, Wire, lookup, oauth_line};
use crate::config::env::Env;
use secrecy::SecretString;

/// The endpoint of a job naming `provider` and/or `base_url` (and maybe `model`), given the
/// configured chain. An error says why the job's model cannot be used (the run fails with it).
pub fn resolve_route(
    chain: &ModelChain,
    env: &Env,
    provider: Option<&str>,
    base_url: Option<&str>,
    model: Option<&str>,
) -> Result<Endpoint, String> {
    let primary = &chain.primary;
    let base_url = base_url.map(|u| u.trim().trim_end_matches('/')).filter(|u| !u.is_empty());
    let name = provider.map(str::trim).filter(|p| !p.is_empty() && *p != "auto");
    let Some(name) = name else {
        return match base_url {
            Some(_) => Err("base_url override requires an explicit provider. Set provider to `custom` to use a custom endpoint.".into()),
            None => Ok(primary.clone()),
        };
    };
    let info = lookup(name).ok_or_else(|| format!("unknown provider `{name}`"))?;
    let same = primary.provider == info.name;
    let why = format!("the job's provider: {}", info.name);
    let mut ep = Endpoint {
        provider: info.name,
        wire: info.wire,
        base_url: String::new(),
        model: String::new(),
        api_key: None,
        key_hint: String::new(),
        why,
        oauth_line: None,
    };
    match info.wire {
        Wire::Offline => {
            ep.model = "offline".into();
            return Ok(ep);
        }
        Wire::OauthOnly => {
            ep.oauth_line = Some(oauth_line(info));
            return Ok(ep);
        }
        Wire::OpenaiChat | Wire::AnthropicMessages => {}
    }
    let env_url = (!info.base_url_env.is_empty()).then(|| env.get(info.base_url_env).map(str::to_string)).flatten();
    if info.name == "custom" {
        let url = match base_url {
            Some(u) => u.to_string(),
            None if same => primary.base_url.clone(),
            None => return Err("provider `custom` needs a base_url".into()),
        };
        // Keys gated on the URL's host (Hermes #28660): a cloud key only for its own API.
        let mut vars: Vec<String> = Vec::new();
        if host_matches(&url, "openai.com") {
            vars.push("OPENAI_API_KEY".into());
        }
        if host_matches(&url, "openrouter.ai") {
            vars.push("OPENROUTER_API_KEY".into());
        }
        vars.extend(host_derived_key_var(&url));
        let found = vars.iter().find_map(|v| env.secret(v).map(|k| (k, v.clone())));
        (ep.api_key, ep.key_hint) = match found {
            Some((k, v)) => (Some(k), v),
            None if same && base_url.is_none_or(|u| u == primary.base_url) => (primary.api_key.clone(), primary.key_hint.clone()),
            None => (None, "none (a local endpoint)".into()),
        };
        ep.base_url = url;
    } else {
        let mut own: Vec<String> = vec![info.base_url.to_string()];
        own.extend(env_url.clone());
        if same {
            own.push(primary.base_url.clone());
        }
        ep.base_url = match base_url {
            Some(u) if own.iter().any(|o| !o.is_empty() && same_host(o, u)) => u.to_string(),
            Some(u) => {
                return Err(format!(
                    "base_url `{u}` is not allowed for provider `{}`: its key may only be sent to its own endpoint",
                    info.name
                ));
            }
            None => env_url.or_else(|| same.then(|| primary.base_url.clone())).unwrap_or_else(|| info.base_url.to_string()),
        };
        let found = info.key_env.iter().find_map(|v| env.secret(v).map(|k| (k, (*v).to_string())));
        (ep.api_key, ep.key_hint) = match found {
            Some((k, v)) => (Some(k), v),
            None if same => (primary.api_key.clone(), primary.key_hint.clone()),
            None => (None::<SecretString>, info.key_env.join(" or ")),
        };
    }
    ep.model = model
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_string)
        .or_else(|| same.then(|| primary.model.clone()))
        .unwrap_or_else(|| info.default_model.to_string());
    ep.base_url = ep.base_url.trim_end_matches('/').to_string();
    if !(ep.base_url.starts_with("http://") || ep.base_url.starts_with("https://")) {
        return Err(format!("provider `{}` has no base URL; set the job's base_url", info.name));
    }
    if ep.model.trim().is_empty() {
        return Err(format!("the job must name a model for provider `{}`", info.name));
    }
    Ok(ep)
}

/// Whether two URLs name the same host (any port).
fn same_host(a: &str, b: &str) -> bool {
    let (x, y) = (host_name(a), host_name(b));
    !x.is_empty() && x == y
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn chain(env: &Env) -> ModelChain {
        let yaml = "model: {provider: openai, base_url: 'http://127.0.0.1:1/v1', default: m1}";
        let (s, _) = crate::config::parse_yaml(yaml, "config.yaml").unwrap();
        super::super::resolve(&s, env, "config.yaml", &mut Vec::new()).unwrap()
    }

    #[test]
    fn a_job_route_uses_its_providers_url_and_key_and_never_another_key() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "k1"), ("LM_API_KEY", "k2"), ("DEEPSEEK_API_KEY", "kd")]);
        let c = chain(&env);
        // custom to a local URL: no key at all (the configured provider's stays home).
        let ep = resolve_route(&c, &env, Some("custom"), Some("http://127.0.0.1:2/v1/"), Some("m2")).unwrap();
        assert_eq!((ep.base_url.as_str(), ep.model.as_str()), ("http://127.0.0.1:2/v1", "m2"));
        assert!(ep.api_key.is_none(), "{}", ep.key_hint);
        // custom to a vendor host: that vendor's own variable (Hermes' host-derived key).
        let ep = resolve_route(&c, &env, Some("custom"), Some("https://api.deepseek.com/v1"), Some("x")).unwrap();
        assert_eq!(ep.api_key.unwrap().expose_secret(), "kd");
        // A named provider on its own host: its key variable.
        let ep = resolve_route(&c, &env, Some("lmstudio"), Some("http://127.0.0.1:3/v1"), Some("m3")).unwrap();
        assert_eq!((ep.api_key.unwrap().expose_secret(), ep.key_hint.as_str()), ("k2", "LM_API_KEY"));
        // The default URL when the job names none; the provider's default model.
        let ep = resolve_route(&c, &env, Some("openrouter"), None, None).unwrap();
        assert_eq!((ep.base_url.as_str(), ep.model.as_str()), ("https://openrouter.ai/api/v1", "nousresearch/hermes-4-70b"));
        // The configured provider keeps the configured URL, key and model.
        let ep = resolve_route(&c, &env, Some("openai"), None, None).unwrap();
        assert_eq!((ep.base_url.as_str(), ep.model.as_str()), ("http://127.0.0.1:1/v1", "m1"));
    }

    #[test]
    fn hermes_credential_guard() {
        let env = Env::from_pairs([("OPENROUTER_API_KEY", "kor")]);
        let c = chain(&env);
        let e = resolve_route(&c, &env, None, Some("http://evil.example/v1"), None).unwrap_err();
        assert!(e.contains("requires an explicit provider"), "{e}");
        let e = resolve_route(&c, &env, Some("openrouter"), Some("http://evil.example/v1"), Some("m")).unwrap_err();
        assert!(e.contains("not allowed for provider `openrouter`"), "{e}");
        assert!(resolve_route(&c, &env, Some("nonesuch"), None, None).unwrap_err().contains("unknown provider"));
        assert!(resolve_route(&c, &env, Some("custom"), None, None).unwrap_err().contains("needs a base_url"));
        assert!(resolve_route(&c, &env, Some("openai-codex"), None, None).unwrap().oauth_line.is_some());
    }
}
