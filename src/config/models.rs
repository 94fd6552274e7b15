//! Model providers by Hermes' names (docs/design.md#models): one table mapping every name Hermes'
//! `config.yaml` accepts to its wire protocol, default base URL and key variable(s), and the
//! resolution of `model:`, `fallback_model` and `fallback_providers` into [`Endpoint`]s —
//! `auto` detection in Hermes' order, then `model.*` from the file, then the environment.
//!
//! Knows names, URLs and variables; builds no client (that is `clients::llm`).

use super::env::Env;
use super::load::ConfigError;
use super::types::Settings;
use super::{FallbackEntry, OneOrMany};
use secrecy::SecretString;
use serde::Serialize;

/// How a provider is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wire {
    /// OpenAI `POST {base_url}/chat/completions`, bearer key.
    OpenaiChat,
    /// Anthropic `POST {base_url}/v1/messages`, `x-api-key`.
    AnthropicMessages,
    /// No model: the built-in automatic reply.
    Offline,
    /// Needs Hermes' interactive OAuth login; a turn answers with one line naming the
    /// key-based alternative.
    OauthOnly,
}

impl Wire {
    /// Spelling used in docs and `doctor`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiChat => "openai-chat",
            Self::AnthropicMessages => "anthropic-messages",
            Self::Offline => "offline",
            Self::OauthOnly => "oauth-only",
        }
    }
}

/// One row of the provider table.
#[derive(Debug, Clone, Copy)]
pub struct ProviderInfo {
    /// Hermes' provider name.
    pub name: &'static str,
    /// Wire protocol.
    pub wire: Wire,
    /// Default base URL (empty: must be configured).
    pub base_url: &'static str,
    /// Variables holding the key, first set wins.
    pub key_env: &'static [&'static str],
    /// Variable overriding the base URL (empty: none).
    pub base_url_env: &'static str,
    /// Model used when the config names none (empty: one must be named).
    pub default_model: &'static str,
    /// For OAuth-only names: the key-based provider to use instead.
    pub alternative: &'static str,
}

const fn p(
    name: &'static str,
    wire: Wire,
    base_url: &'static str,
    key_env: &'static [&'static str],
    base_url_env: &'static str,
) -> ProviderInfo {
    ProviderInfo { name, wire, base_url, key_env, base_url_env, default_model: "", alternative: "" }
}

use Wire::{AnthropicMessages as A, OpenaiChat as O};

/// Every provider name, with its protocol, default base URL and key variables (docs/models.md's
/// "Models" table lists the same rows).
pub const PROVIDERS: &[ProviderInfo] = &[
    p("offline", Wire::Offline, "", &[], ""),
    ProviderInfo {
        default_model: "nousresearch/hermes-4-70b",
        ..p("openrouter", O, "https://openrouter.ai/api/v1", &["OPENROUTER_API_KEY"], "OPENROUTER_BASE_URL")
    },
    ProviderInfo {
        default_model: "claude-sonnet-4-5",
        ..p("anthropic", A, "https://api.anthropic.com", &["ANTHROPIC_API_KEY"], "ANTHROPIC_BASE_URL")
    },
    p("openai", O, "https://api.openai.com/v1", &["OPENAI_API_KEY"], "OPENAI_BASE_URL"),
    p("nous-api", O, "https://inference-api.nousresearch.com/v1", &["NOUS_API_KEY"], ""),
    p("gemini", O, "https://generativelanguage.googleapis.com/v1beta/openai", &["GEMINI_API_KEY", "GOOGLE_API_KEY"], ""),
    p("zai", O, "https://api.z.ai/api/paas/v4", &["GLM_API_KEY", "ZAI_API_KEY", "Z_AI_API_KEY"], "GLM_BASE_URL"),
    p("kimi-coding", O, "https://api.moonshot.ai/v1", &["KIMI_API_KEY", "KIMI_CODING_API_KEY"], "KIMI_BASE_URL"),
    p("kimi-coding-cn", O, "https://api.moonshot.cn/v1", &["KIMI_CN_API_KEY"], ""),
    p("minimax", O, "https://api.minimax.io/v1", &["MINIMAX_API_KEY"], "MINIMAX_BASE_URL"),
    p("minimax-cn", O, "https://api.minimaxi.com/v1", &["MINIMAX_CN_API_KEY"], "MINIMAX_CN_BASE_URL"),
    p("arcee", O, "https://api.arcee.ai/api/v1", &["ARCEEAI_API_KEY"], "ARCEE_BASE_URL"),
    p("deepseek", O, "https://api.deepseek.com/v1", &["DEEPSEEK_API_KEY"], "DEEPSEEK_BASE_URL"),
    p("xai", O, "https://api.x.ai/v1", &["XAI_API_KEY"], "XAI_BASE_URL"),
    p("alibaba", O, "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", &["DASHSCOPE_API_KEY"], "DASHSCOPE_BASE_URL"),
    p("nvidia", O, "https://integrate.api.nvidia.com/v1", &["NVIDIA_API_KEY"], "NVIDIA_BASE_URL"),
    p("kilocode", O, "https://api.kilo.ai/api/gateway", &["KILOCODE_API_KEY"], "KILOCODE_BASE_URL"),
    p("huggingface", O, "https://router.huggingface.co/v1", &["HF_TOKEN"], "HF_BASE_URL"),
    p("xiaomi", O, "https://api.xiaomimimo.com/v1", &["XIAOMI_API_KEY"], "XIAOMI_BASE_URL"),
    p("ollama-cloud", O, "https://ollama.com/v1", &["OLLAMA_API_KEY"], ""),
    p("deepinfra", O, "https://api.deepinfra.com/v1/openai", &["DEEPINFRA_API_KEY"], "DEEPINFRA_BASE_URL"),
    p("ai-gateway", O, "https://ai-gateway.vercel.sh/v1", &["AI_GATEWAY_API_KEY"], "AI_GATEWAY_BASE_URL"),
    p("azure-foundry", O, "", &["AZURE_FOUNDRY_API_KEY"], "AZURE_FOUNDRY_BASE_URL"),
    p("lmstudio", O, "http://127.0.0.1:1234/v1", &["LM_API_KEY"], "LM_BASE_URL"),
    p("custom", O, "", &[], ""),
    ProviderInfo {
        alternative: "`nous-api` with NOUS_API_KEY",
        ..p("nous", Wire::OauthOnly, "https://inference-api.nousresearch.com/v1", &[], "")
    },
    ProviderInfo {
        alternative: "`openai` with OPENAI_API_KEY",
        ..p("openai-codex", Wire::OauthOnly, "https://chatgpt.com/backend-api/codex", &[], "")
    },
    ProviderInfo {
        alternative: "`openrouter` with OPENROUTER_API_KEY (or `openai` with OPENAI_API_KEY)",
        ..p("copilot", Wire::OauthOnly, "https://api.githubcopilot.com", &[], "")
    },
];

/// Hermes' alternative spellings → the canonical name.
#[rustfmt::skip]
pub const ALIASES: &[(&str, &str)] = &[
    ("ollama", "custom"), ("vllm", "custom"), ("llamacpp", "custom"), ("llama.cpp", "custom"), ("llama-cpp", "custom"),
    ("or", "openrouter"), ("claude", "anthropic"), ("claude-code", "anthropic"), ("openai-api", "openai"),
    ("nous-portal", "nous"), ("google", "gemini"), ("google-gemini", "gemini"), ("google-ai-studio", "gemini"), ("glm", "zai"),
    ("z-ai", "zai"), ("z.ai", "zai"), ("zhipu", "zai"), ("kimi", "kimi-coding"), ("moonshot", "kimi-coding"),
    ("kimi-for-coding", "kimi-coding"), ("kimi-cn", "kimi-coding-cn"), ("moonshot-cn", "kimi-coding-cn"),
    ("minimax-china", "minimax-cn"), ("minimax_cn", "minimax-cn"), ("arcee-ai", "arcee"), ("arceeai", "arcee"), ("grok", "xai"),
    ("x-ai", "xai"), ("x.ai", "xai"), ("dashscope", "alibaba"), ("nvidia-nim", "nvidia"), ("kilo", "kilocode"),
    ("kilo-code", "kilocode"), ("hf", "huggingface"), ("hugging-face", "huggingface"), ("mimo", "xiaomi"),
    ("xiaomi-mimo", "xiaomi"), ("ollama_cloud", "ollama-cloud"), ("azure", "azure-foundry"), ("lm-studio", "lmstudio"),
    ("lm_studio", "lmstudio"), ("codex", "openai-codex"), ("github", "copilot"), ("github-copilot", "copilot"),
    ("github-models", "copilot"),
];

/// `auto`'s order: the first provider whose key is in the environment answers (docs/design.md#models
/// first, then Hermes' registry order; LM Studio and Copilot only when named, as in Hermes).
#[rustfmt::skip]
pub const AUTO_ORDER: &[&str] = &[
    "openrouter", "anthropic", "openai", "nous-api", "gemini", "zai", "kimi-coding", "kimi-coding-cn", "arcee", "minimax",
    "minimax-cn", "deepseek", "xai", "alibaba", "nvidia", "kilocode", "huggingface", "xiaomi", "ollama-cloud", "deepinfra",
    "ai-gateway", "azure-foundry",
];

/// The row for `name` (any case, Hermes' aliases accepted).
pub fn lookup(name: &str) -> Option<&'static ProviderInfo> {
    let n = name.trim().to_ascii_lowercase();
    let n = ALIASES.iter().find(|(a, _)| *a == n).map_or(n.as_str(), |(_, c)| c);
    PROVIDERS.iter().find(|p| p.name == n)
}

/// Every accepted name, for error messages.
pub fn known_names() -> String {
    let mut v: Vec<&str> = std::iter::once("auto").chain(PROVIDERS.iter().map(|p| p.name)).collect();
    v.extend(ALIASES.iter().map(|(a, _)| *a));
    v.join(", ")
}

/// A resolved model endpoint: everything a client needs.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Canonical provider name.
    pub provider: &'static str,
    /// Wire protocol.
    pub wire: Wire,
    /// Base URL (no trailing slash).
    pub base_url: String,
    /// Model id sent upstream.
    pub model: String,
    /// The key, if any.
    pub api_key: Option<SecretString>,
    /// Where the key would come from (variables or `model.api_key`), for `doctor`.
    pub key_hint: String,
    /// How this endpoint was chosen, in words.
    pub why: String,
    /// For OAuth-only providers: the line a turn answers with.
    pub oauth_line: Option<String>,
}

/// The primary endpoint and the fallback chain, in order.
#[derive(Debug, Clone)]
pub struct ModelChain {
    /// The configured (or detected) model.
    pub primary: Endpoint,
    /// `fallback_providers` then `fallback_model`, duplicates dropped (Hermes' order).
    pub fallbacks: Vec<Endpoint>,
}

impl Default for ModelChain {
    fn default() -> Self {
        Self { primary: offline("model.provider is offline".into()), fallbacks: Vec::new() }
    }
}

fn offline(why: String) -> Endpoint {
    Endpoint {
        provider: "offline",
        wire: Wire::Offline,
        base_url: String::new(),
        model: "offline".into(),
        api_key: None,
        key_hint: String::new(),
        why,
        oauth_line: None,
    }
}

/// The line an OAuth-only provider answers with (and `doctor` reports).
pub fn oauth_line(info: &ProviderInfo) -> String {
    format!(
        "model.provider `{}` needs Hermes' interactive OAuth login, which hermes-zero does not do; use {} instead.",
        info.name, info.alternative
    )
}

/// Resolves `model:` and the fallback chain against the environment. `file` names the config
/// file in errors; `warnings` receives skipped fallback entries.
pub fn resolve(s: &Settings, env: &Env, file: &str, warnings: &mut Vec<String>) -> Result<ModelChain, ConfigError> {
    let primary = resolve_primary(s, env, file)?;
    let mut fallbacks: Vec<Endpoint> = Vec::new();
    let mut seen = vec![(primary.provider, primary.model.clone(), primary.base_url.clone())];
    let lists = [("fallback_providers", &s.fallback_providers), ("fallback_model", &s.fallback_model)];
    for (key, list) in lists {
        let entries: Vec<&FallbackEntry> = match list {
            None => vec![],
            Some(OneOrMany::One(e)) => vec![e],
            Some(OneOrMany::Many(v)) => v.iter().collect(),
        };
        for (i, e) in entries.into_iter().enumerate() {
            let at = if matches!(list, Some(OneOrMany::Many(_))) { format!("{key}[{i}]") } else { key.to_string() };
            let Some(ep) = resolve_fallback(e, env, file, &at, warnings)? else { continue };
            let id = (ep.provider, ep.model.clone(), ep.base_url.clone());
            if !seen.contains(&id) {
                seen.push(id);
                fallbacks.push(ep);
            }
        }
    }
    Ok(ModelChain { primary, fallbacks })
}

fn invalid(file: &str, key: &str, reason: String) -> ConfigError {
    ConfigError::Invalid { file: file.to_string(), key: key.to_string(), reason }
}

fn first_key(env: &Env, vars: &[&str]) -> Option<(SecretString, String)> {
    vars.iter().find_map(|v| env.secret(v).map(|k| (k, (*v).to_string())))
}

fn resolve_primary(s: &Settings, env: &Env, file: &str) -> Result<Endpoint, ConfigError> {
    let m = &s.model;
    let (raw, key_label, src) = match env.get("HERMES_MODEL_PROVIDER") {
        Some(v) => (v.to_string(), "HERMES_MODEL_PROVIDER", "environment"),
        None => (m.provider.clone(), "model.provider", file),
    };
    let name = raw.trim().to_ascii_lowercase();
    let own_url = match env.get("HERMES_MODEL_BASE_URL").map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => Some(("HERMES_MODEL_BASE_URL", u)),
        None => Some(("model.base_url", m.base_url.trim())).filter(|(_, u)| !u.is_empty()),
    };
    if (name == "auto" || name.is_empty())
        && let Some((url_key, url)) = own_url.filter(|(_, u)| !CLOUD_HOSTS.iter().any(|h| host_matches(u, h)))
    {
        return auto_own_endpoint(s, env, file, url_key, url);
    }
    let (info, why, auto) = if name == "auto" || name.is_empty() {
        match AUTO_ORDER.iter().filter_map(|n| lookup(n)).find_map(|p| first_key(env, p.key_env).map(|(_, v)| (p, v))) {
            Some((p, var)) => (p, format!("auto: {var} is set"), true),
            None => {
                let checked: Vec<&str> = AUTO_ORDER.iter().filter_map(|n| lookup(n)).flat_map(|p| p.key_env.iter().copied()).collect();
                let (named, rest) = checked.split_at(checked.len().min(6));
                return Ok(offline(format!(
                    "auto: no model key in the environment (checked {} and {} more), so replies are automatic",
                    named.join(", "),
                    rest.len()
                )));
            }
        }
    } else {
        let info = lookup(&name)
            .ok_or_else(|| invalid(src, key_label, format!("unknown provider `{raw}`; known providers: {}", known_names())))?;
        (info, format!("{key_label}: {name}"), false)
    };
    if info.wire == Wire::Offline {
        return Ok(offline(why));
    }
    let env_url = env.get("HERMES_MODEL_BASE_URL").map(|u| ("HERMES_MODEL_BASE_URL", u.to_string())).or_else(|| {
        (!info.base_url_env.is_empty()).then(|| env.get(info.base_url_env).map(|u| (info.base_url_env, u.to_string()))).flatten()
    });
    // Why: with `auto`, a `model.base_url` left over from another provider (Hermes' example
    // config ships OpenRouter's) must not send this provider's key elsewhere; Hermes applies
    // it only when it points at the detected provider's host.
    let cfg_url = m.base_url.trim();
    let cfg_applies = !cfg_url.is_empty() && (!auto || host(cfg_url) == host(info.base_url));
    let (url_key, base_url) = match env_url {
        Some((var, u)) => (var.to_string(), u),
        None if cfg_applies => ("model.base_url".to_string(), cfg_url.to_string()),
        None => ("model.base_url".to_string(), info.base_url.to_string()),
    };
    let model = env
        .get("HERMES_MODEL")
        .map(str::to_string)
        .or_else(|| [&m.default, &m.model, &m.name].into_iter().find(|v| !v.trim().is_empty()).cloned())
        .unwrap_or_else(|| info.default_model.to_string());
    let key_vars: Vec<&str> = if m.api_key_env.trim().is_empty() { info.key_env.to_vec() } else { vec![m.api_key_env.trim()] };
    let (api_key, key_hint) = match first_key(env, &key_vars) {
        Some((k, var)) => (Some(k), var),
        None if !m.api_key.is_empty() => (Some(SecretString::from(m.api_key.clone())), "model.api_key".to_string()),
        None => (None, key_vars.join(" or ")),
    };
    let ep = Endpoint { provider: info.name, wire: info.wire, base_url, model, api_key, key_hint, why, oauth_line: None };
    finish(ep, info, file, &url_key, "model.default")
}

fn finish(mut ep: Endpoint, info: &ProviderInfo, file: &str, url_key: &str, model_key: &str) -> Result<Endpoint, ConfigError> {
    if info.wire == Wire::OauthOnly {
        ep.oauth_line = Some(oauth_line(info));
        return Ok(ep);
    }
    let u = ep.base_url.trim().trim_end_matches('/').to_string();
    let src = if url_key.contains('.') { file } else { "environment" };
    if u.is_empty() {
        return Err(invalid(src, url_key, format!("provider `{}` has no default URL; set model.base_url", info.name)));
    }
    if !(u.starts_with("http://") || u.starts_with("https://")) {
        return Err(invalid(src, url_key, format!("`{u}` is not an http(s) URL")));
    }
    if ep.model.trim().is_empty() {
        return Err(invalid(file, model_key, format!("must name a model for provider `{}`", info.name)));
    }
    ep.base_url = u;
    Ok(ep)
}

fn resolve_fallback(
    e: &FallbackEntry,
    env: &Env,
    file: &str,
    at: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<Endpoint>, ConfigError> {
    if e.provider.trim().is_empty() || e.model.trim().is_empty() || e.provider.trim() == "auto" {
        warnings.push(format!("`{at}` needs both `provider` and `model` (skipped)"));
        return Ok(None);
    }
    let info = lookup(&e.provider).ok_or_else(|| {
        invalid(file, &format!("{at}.provider"), format!("unknown provider `{}`; known providers: {}", e.provider, known_names()))
    })?;
    if info.wire == Wire::OauthOnly {
        warnings.push(format!("`{at}`: {} (skipped)", oauth_line(info)));
        return Ok(None);
    }
    let base_url = if e.base_url.trim().is_empty() { info.base_url.to_string() } else { e.base_url.trim().to_string() };
    let from_entry = (!e.key_env.trim().is_empty()).then(|| first_key(env, &[e.key_env.trim()])).flatten();
    let (api_key, key_hint) = match (e.api_key.is_empty(), from_entry) {
        (false, _) => (Some(SecretString::from(e.api_key.clone())), format!("{at}.api_key")),
        (true, Some((k, v))) => (Some(k), v),
        (true, None) => match first_key(env, info.key_env) {
            Some((k, v)) => (Some(k), v),
            None => (None, info.key_env.join(" or ")),
        },
    };
    let why = format!("{at}: {} {}", info.name, e.model.trim());
    let ep = Endpoint {
        provider: info.name,
        wire: info.wire,
        base_url,
        model: e.model.trim().to_string(),
        api_key,
        key_hint,
        why,
        oauth_line: None,
    };
    if info.wire == Wire::Offline {
        return Ok(Some(offline(ep.why)));
    }
    finish(ep, info, file, &format!("{at}.base_url"), &format!("{at}.model")).map(Some)
}

#[path = "models_own.rs"]
mod own;
#[path = "models_route.rs"]
mod route;
#[path = "models_switch.rs"]
mod switch;
use own::{CLOUD_HOSTS, auto_own_endpoint, host, host_matches};
pub use route::resolve_route;
pub use switch::resolve_choice;

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
