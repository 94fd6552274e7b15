//! Tests of the provider table and model resolution.

use super::*;
use crate::config::parse_yaml;
use secrecy::ExposeSecret;

fn chain(yaml: &str, env: &[(&str, &str)]) -> Result<ModelChain, ConfigError> {
    let (s, _) = parse_yaml(yaml, "config.yaml")?;
    resolve(&s, &Env::from_pairs(env.iter().copied()), "config.yaml", &mut Vec::new())
}

fn key(e: &Endpoint) -> String {
    e.api_key.as_ref().map(|k| k.expose_secret().to_string()).unwrap_or_default()
}

#[test]
fn every_contract_name_is_in_the_table_with_its_wire() {
    let openai = [
        "openai",
        "custom",
        "ollama",
        "vllm",
        "llamacpp",
        "lmstudio",
        "openrouter",
        "nous-api",
        "gemini",
        "zai",
        "kimi-coding",
        "minimax",
        "minimax-cn",
        "huggingface",
        "nvidia",
        "xiaomi",
        "arcee",
        "ollama-cloud",
        "kilocode",
        "azure-foundry",
    ];
    for n in openai {
        assert_eq!(lookup(n).map(|p| p.wire), Some(Wire::OpenaiChat), "{n}");
    }
    assert_eq!(lookup("anthropic").map(|p| p.wire), Some(Wire::AnthropicMessages));
    assert_eq!(lookup("Claude").map(|p| p.name), Some("anthropic"));
    for n in ["nous", "openai-codex", "copilot"] {
        assert_eq!(lookup(n).map(|p| p.wire), Some(Wire::OauthOnly), "{n}");
    }
    assert!(lookup("skynet").is_none());
    for name in AUTO_ORDER {
        assert!(lookup(name).is_some_and(|p| !p.key_env.is_empty()), "{name}");
    }
}

#[test]
fn auto_detects_in_hermes_order_and_falls_back_to_offline() {
    let c = chain("model: {provider: auto}", &[("OPENAI_API_KEY", "o"), ("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!((c.primary.provider, key(&c.primary).as_str()), ("anthropic", "a"));
    assert!(c.primary.why.contains("ANTHROPIC_API_KEY"));
    let c = chain("model: {provider: auto}", &[("OPENAI_API_KEY", "o"), ("OPENROUTER_API_KEY", "r")]).unwrap();
    assert_eq!(c.primary.provider, "openrouter");
    assert_eq!(chain("model: {provider: auto, default: m}", &[("NOUS_API_KEY", "n")]).unwrap().primary.provider, "nous-api");
    assert_eq!(chain("model: {provider: auto, default: m}", &[("GOOGLE_API_KEY", "g")]).unwrap().primary.provider, "gemini");
    assert_eq!(chain("model: {provider: auto, default: m}", &[("OPENAI_API_KEY", "o")]).unwrap().primary.provider, "openai");
    let c = chain("model: {provider: auto}", &[("GITHUB_TOKEN", "x"), ("LM_API_KEY", "y")]).unwrap();
    assert_eq!(c.primary.wire, Wire::Offline, "Copilot and LM Studio only when named");
    assert!(c.primary.why.contains("OPENROUTER_API_KEY") && c.primary.why.contains("ANTHROPIC_API_KEY"), "{}", c.primary.why);
}

#[test]
fn base_url_and_key_precedence() {
    // Hermes' example: auto + OpenRouter's URL; an Anthropic key must not go to OpenRouter.
    let ex = "model: {provider: auto, default: m, base_url: 'https://openrouter.ai/api/v1'}";
    let c = chain(ex, &[("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!(c.primary.base_url, "https://api.anthropic.com");
    let c = chain("model: {provider: anthropic, base_url: 'http://127.0.0.1:9/'}", &[("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!((c.primary.base_url.as_str(), c.primary.model.as_str()), ("http://127.0.0.1:9", "claude-sonnet-4-5"));
    let env = [("ANTHROPIC_BASE_URL", "http://e:1"), ("ANTHROPIC_API_KEY", "env")];
    let c = chain("model: {provider: anthropic, base_url: 'http://c:1', api_key: cfg}", &env).unwrap();
    assert_eq!((c.primary.base_url.as_str(), key(&c.primary).as_str()), ("http://e:1", "env"), "environment wins");
    let c = chain("model: {provider: anthropic, api_key: cfg}", &[("HERMES_MODEL_BASE_URL", "http://h:2"), ("HERMES_MODEL", "x")]).unwrap();
    assert_eq!((c.primary.base_url.as_str(), key(&c.primary).as_str(), c.primary.model.as_str()), ("http://h:2", "cfg", "x"));
    let c = chain("model: {provider: openai, base_url: 'http://l/v1', name: m, api_key_env: MY_KEY}", &[("MY_KEY", "k")]).unwrap();
    assert_eq!(key(&c.primary), "k");
    let c = chain("model: {provider: openrouter}", &[]).unwrap();
    assert_eq!((c.primary.model.as_str(), c.primary.api_key.is_none()), ("nousresearch/hermes-4-70b", true));
}

#[test]
fn configuration_errors_name_the_key() {
    let k = |y: &str| match chain(y, &[]) {
        Err(ConfigError::Invalid { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(k("model: {provider: custom, name: m}"), "model.base_url");
    assert_eq!(k("model: {provider: openai, base_url: ftp://x, name: m}"), "model.base_url");
    assert_eq!(k("model: {provider: openai}"), "model.default");
    assert_eq!(k("fallback_providers: [{provider: openai, model: m, base_url: 'ftp://x'}]"), "fallback_providers[0].base_url");
}

#[test]
fn oauth_only_names_load_and_say_what_to_use() {
    let c = chain("model: {provider: nous}", &[]).unwrap();
    assert_eq!(c.primary.wire, Wire::OauthOnly);
    let line = c.primary.oauth_line.unwrap_or_default();
    assert!(line.contains("`nous`") && line.contains("nous-api") && line.contains("NOUS_API_KEY"), "{line}");
}

#[test]
fn fallback_chain_in_hermes_order_without_duplicates() {
    let y = "model: {provider: openrouter, default: p}\n\
fallback_model: {provider: anthropic, model: claude-x}\n\
fallback_providers:\n  - {provider: openai, model: gpt, base_url: 'http://o/v1', key_env: OK}\n  - {provider: anthropic, model: claude-x}\n  - {provider: openrouter, model: p}\n  - {provider: nous, model: h}\n  - {model: lonely}\n";
    let (s, _) = parse_yaml(y, "c").unwrap();
    let mut w = Vec::new();
    let c = resolve(&s, &Env::from_pairs([("OK", "ok"), ("ANTHROPIC_API_KEY", "a")]), "c", &mut w).unwrap();
    let got: Vec<(&str, &str)> = c.fallbacks.iter().map(|e| (e.provider, e.model.as_str())).collect();
    assert_eq!(got, vec![("openai", "gpt"), ("anthropic", "claude-x")]);
    assert_eq!((key(&c.fallbacks[0]), key(&c.fallbacks[1])), ("ok".to_string(), "a".to_string()));
    assert_eq!(w.len(), 2, "{w:?}");
}

#[test]
fn auto_with_a_base_url_on_the_users_own_host_speaks_openai_to_it_with_no_cloud_key() {
    let env = [("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o"), ("OPENROUTER_API_KEY", "r")];
    let local = "model: {provider: auto, default: llama3, base_url: 'http://127.0.0.1:11434/v1/'}";
    let c = chain(local, &env).unwrap();
    let p = &c.primary;
    assert_eq!(
        (p.provider, p.wire, p.base_url.as_str(), p.model.as_str()),
        ("custom", Wire::OpenaiChat, "http://127.0.0.1:11434/v1", "llama3")
    );
    assert!(p.api_key.is_none(), "no cloud key goes to a local server");
    assert!(p.why.contains("127.0.0.1") && p.why.contains("not a cloud API"), "{}", p.why);
    // An unset provider is `auto` too; the config's own key goes with it.
    let c = chain("model: {provider: '', default: m, base_url: 'http://gpu.lan:8000/v1', api_key: mine}", &env).unwrap();
    assert_eq!((c.primary.provider, key(&c.primary).as_str()), ("custom", "mine"));
    // HERMES_MODEL_BASE_URL is model.base_url from the environment.
    let c =
        chain("model: {provider: auto, default: m}", &[("ANTHROPIC_API_KEY", "a"), ("HERMES_MODEL_BASE_URL", "http://localhost:1234/v1")])
            .unwrap();
    assert_eq!(
        (c.primary.provider, c.primary.base_url.as_str(), c.primary.api_key.is_none()),
        ("custom", "http://localhost:1234/v1", true)
    );
    // As Hermes: the host's own <VENDOR>_API_KEY, OLLAMA_API_KEY only for ollama.com.
    let c = chain(
        "model: {provider: auto, default: m, base_url: 'https://api.groq.com/openai/v1'}",
        &[("GROQ_API_KEY", "g"), ("OPENAI_API_KEY", "o")],
    )
    .unwrap();
    assert_eq!((c.primary.provider, key(&c.primary).as_str()), ("custom", "g"));
    let c =
        chain("model: {provider: auto, default: m, base_url: 'http://127.0.0.1:9/ollama.com/v1'}", &[("OLLAMA_API_KEY", "ol")]).unwrap();
    assert!(c.primary.api_key.is_none(), "a path naming ollama.com is not ollama.com");
    // A look-alike host is not the cloud: the cloud key stays home.
    let c = chain("model: {provider: auto, default: m, base_url: 'http://api.anthropic.com.attacker.test/v1'}", &env).unwrap();
    assert_eq!((c.primary.provider, c.primary.api_key.is_none()), ("custom", true));
    // The cloud hosts (and their subdomains) keep today's detection.
    let c = chain("model: {provider: auto, default: m, base_url: 'https://api.openai.com/v1'}", &[("OPENAI_API_KEY", "o")]).unwrap();
    assert_eq!((c.primary.provider, c.primary.base_url.as_str(), key(&c.primary).as_str()), ("openai", "https://api.openai.com/v1", "o"));
    // A named provider is not `auto`: its key goes to the URL it was given.
    let c = chain("model: {provider: anthropic, base_url: 'http://127.0.0.1:9'}", &[("ANTHROPIC_API_KEY", "a")]).unwrap();
    assert_eq!((c.primary.provider, key(&c.primary).as_str()), ("anthropic", "a"));
    // No model named for a local server: a clear error naming the key.
    assert!(
        matches!(chain("model: {provider: auto, base_url: 'http://127.0.0.1:9/v1'}", &env), Err(ConfigError::Invalid { key, .. }) if key == "model.default")
    );
}

#[test]
fn host_matching_is_by_host_name() {
    assert!(host_matches("https://api.anthropic.com", "anthropic.com"));
    assert!(host_matches("https://user:pw@OpenRouter.ai:443/api/v1", "openrouter.ai"));
    assert!(!host_matches("https://evil.test/openai.com/v1", "openai.com"));
    assert!(!host_matches("https://notopenai.com/v1", "openai.com"));
    assert!(!host_matches("http://[::1]:8080/v1", "openai.com"));
    assert_eq!(own::host_derived_key_var("https://api.deepseek.com/v1").as_deref(), Some("DEEPSEEK_API_KEY"));
    assert_eq!(own::host_derived_key_var("https://api.deepseek.com.attacker.test/v1").as_deref(), Some("ATTACKER_API_KEY"));
    assert_eq!(own::host_derived_key_var("http://192.168.1.5:8000/v1"), None);
    assert_eq!(own::host_derived_key_var("http://localhost:8000/v1"), None);
    assert_eq!(own::host_derived_key_var("https://ollama.com/v1"), None);
}
