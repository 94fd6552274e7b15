//! Tests of config loading: defaults, the contract example, errors naming keys, Hermes places.

use super::*;
use crate::config::StreamTransport;

fn parse(text: &str) -> Result<Settings, ConfigError> {
    let (s, _) = parse_yaml(text, "config.yaml")?;
    validate(&s, "config.yaml")?;
    crate::config::models::resolve(&s, &Env::default(), "config.yaml", &mut Vec::new())?;
    Ok(s)
}

fn err_key(text: &str) -> String {
    match parse(text) {
        Err(ConfigError::Invalid { key, .. }) => key,
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn empty_file_gives_defaults() {
    let s = parse("").unwrap();
    assert_eq!(s.model.provider, "offline");
    assert_eq!(s.max_queued, 32);
    assert_eq!(s.session_reset.at_hour, 4);
    assert_eq!(s.cron.tick_interval_seconds, 60);
}

#[test]
fn contract_example_parses() {
    let text = "timezone: Europe/Berlin\nstore: {kind: sqlite, path: state.db}\nmodel: {provider: openai, base_url: 'http://x/v1', name: m, max_iterations: 3}\nsession_reset_by_platform: {telegram: {mode: idle, idle_minutes: 240}}\nplatforms:\n  telegram: {allowed_users: ['123'], home_channel: '-100123'}\ncron: {provider: builtin, chronos: {fire_mode: async}}\n";
    let s = parse(text).unwrap();
    assert_eq!(s.model.max_iterations, 3);
    assert_eq!(s.session_reset_by_platform["telegram"].idle_minutes, Some(240));
    assert_eq!(s.platforms.telegram.allowed_users, vec!["123"]);
    assert_eq!(s.platforms.telegram.api_base, "https://api.telegram.org");
    assert_eq!(s.cron.chronos.fire_mode, FireMode::Async);
}

#[test]
fn wrong_types_and_values_name_the_key() {
    assert_eq!(err_key("model: {max_iterations: lots}"), "model.max_iterations");
    assert_eq!(err_key("store: {kind: postgres}"), "store.kind");
    assert_eq!(err_key("timezone: Mars/Olympus"), "timezone");
    assert_eq!(err_key("session_reset: {at_hour: 24}"), "session_reset.at_hour");
    assert_eq!(err_key("busy_input_mode: shout"), "busy_input_mode");
    assert_eq!(err_key("max_queued: 0"), "max_queued");
    assert_eq!(err_key("store: {dynamodb_shards: 0}"), "store.dynamodb_shards");
    assert_eq!(err_key("store: {dynamodb_shards: 65}"), "store.dynamodb_shards");
    assert_eq!(err_key("store: {dynamodb_shards: many}"), "store.dynamodb_shards");
    assert_eq!(err_key("- a\n- b"), "(document)");
    assert_eq!(err_key("model: {provider: openai, base_url: ftp://x}"), "model.base_url");
    assert_eq!(err_key("session_reset_by_type: {room: {mode: idle}}"), "session_reset_by_type.room");
}

#[test]
fn unknown_keys_warn_not_fail() {
    let (_, w) = parse_yaml("colour: blue\nmodel: {flavour: 1}\nsession_reset_by_platform: {telegram: {mode: idle}}", "c").unwrap();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("colour") && w[1].contains("model.flavour"));
}

#[test]
fn environment_overrides_file() {
    let home = std::env::temp_dir().join(format!("hz-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.yaml"),
        "timezone: Europe/Berlin\nmodel: {provider: openai, base_url: 'http://x/v1', name: file-model}\n",
    )
    .unwrap();
    let env = Env::from_pairs([("HERMES_MODEL", "env-model"), ("TELEGRAM_ALLOWED_USERS", "1, 2"), ("API_SERVER_KEY", "k")]);
    let l = load_settings(&home, None, &env).unwrap();
    assert_eq!(l.model.primary.model, "env-model");
    assert_eq!(l.settings.platforms.telegram.allowed_users, vec!["1", "2"]);
    assert_eq!(l.tz, chrono_tz::Europe::Berlin);
    assert!(l.secrets.api_server_key.is_some());
    let bad = Env::from_pairs([("HERMES_STORE", "mongo")]);
    assert!(matches!(load_settings(&home, None, &bad), Err(ConfigError::Invalid { key, .. }) if key == "HERMES_STORE"));
    std::fs::remove_dir_all(&home).ok();
}

#[test]
fn explicit_missing_file_is_an_error() {
    let r = load_settings(Path::new("/nonexistent"), Some(Path::new("/nonexistent/x.yaml")), &Env::default());
    assert!(matches!(r, Err(ConfigError::Read { .. })));
}

fn load(yaml: &str, env: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
    let dir = std::env::temp_dir().join(format!("hz-cfg-h-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.yaml"), yaml).unwrap();
    let r = load_settings(&dir, None, &Env::from_pairs(env.iter().copied()));
    std::fs::remove_dir_all(&dir).ok();
    r
}

#[test]
fn hermes_places_win_over_flat_keys() {
    let text = "busy_input_mode: queue\ndisplay: {busy_input_mode: steer, skin: ares}\nrestart_drain_timeout: 5\n\
agent: {max_turns: 12, restart_drain_timeout: 9, api_max_retries: 1, reasoning_effort: high}\nmodel: {max_iterations: 3}\n\
cron: {chronos: {jwks_url: 'http://a/jwks', nas_jwks_url: 'http://nas/jwks'}}\n";
    let s = parse(text).unwrap();
    assert_eq!(s.busy_input_mode, BusyInputMode::Interrupt, "steer behaves as interrupt and wins");
    assert_eq!((s.model.max_iterations, s.restart_drain_timeout, s.agent.api_max_retries), (12, 9, 1));
    assert_eq!(s.cron.chronos.jwks_url, "http://nas/jwks");
    let s = parse("busy_input_mode: queue\nmodel: {max_iterations: 3}").unwrap();
    assert_eq!((s.busy_input_mode, s.model.max_iterations), (BusyInputMode::Queue, 3), "flat keys still work alone");
    assert_eq!(err_key("display: {busy_input_mode: shout}"), "display.busy_input_mode");
    assert_eq!(err_key("agent: {max_turns: 0}"), "agent.max_turns");
    assert_eq!(err_key("agent: {api_max_retries: lots}"), "agent.api_max_retries");
}

#[test]
fn hermes_sections_are_typed_or_listed_as_ignored() {
    let text = "memory: {memory_char_limit: 100}\ncompression: {threshold: 0.7}\nstreaming: {enabled: true, transport: edit}\n\
mcp_servers: {time: {command: uvx, args: [mcp-server-time]}}\nterminal: {backend: local}\nbrowser: {}\ncolour: blue\n\
cron: {catch_up_missed: true}\nmodel: {context_length: 1000}\n";
    let p = parse_yaml_full(text, "c").unwrap();
    assert_eq!(p.settings.memory.memory_char_limit, 100);
    assert!((p.settings.compression.threshold - 0.7).abs() < 1e-9);
    assert!(p.settings.streaming.enabled && p.settings.streaming.transport == StreamTransport::Edit);
    assert_eq!(p.settings.mcp_servers["time"].args, vec!["mcp-server-time"]);
    assert_eq!(p.settings.model.context_length, 1000);
    for k in ["terminal", "browser", "colour", "cron.catch_up_missed"] {
        assert!(p.ignored.iter().any(|i| i == k), "{k} not in {:?}", p.ignored);
    }
    assert_eq!(p.warnings.len(), 1, "only the non-Hermes key warns: {:?}", p.warnings);
    assert_eq!(err_key("streaming: {transport: smoke}"), "streaming.transport");
    assert_eq!(err_key("memory: {memory_char_limit: -1}"), "memory.memory_char_limit");
    assert_eq!(err_key("compression: {threshold: 0}"), "compression.threshold");
    assert_eq!(err_key("compression: {threshold: 1.5}"), "compression.threshold");
    assert_eq!(err_key("compression: {target_ratio: 1}"), "compression.target_ratio");
}

#[test]
fn model_as_a_bare_string_and_model_id_keys() {
    let l = load("model: anthropic/claude-opus-4.6\n", &[("OPENROUTER_API_KEY", "k")]).unwrap();
    assert_eq!(l.model.primary.model, "anthropic/claude-opus-4.6");
    let l = load("model: {provider: openrouter, model: a, name: b}\n", &[]).unwrap();
    assert_eq!(l.model.primary.model, "a");
    let l = load("model: {provider: openrouter, default: d, model: a}\n", &[]).unwrap();
    assert_eq!(l.model.primary.model, "d");
}

#[test]
fn unknown_provider_names_the_known_ones() {
    let Err(ConfigError::Invalid { key, reason, file }) = load("model: {provider: skynet}\n", &[]) else { panic!() };
    assert_eq!(key, "model.provider");
    assert!(file.ends_with("config.yaml"));
    assert!(reason.contains("skynet") && reason.contains("anthropic") && reason.contains("openrouter"), "{reason}");
    let Err(ConfigError::Invalid { key, .. }) = load("", &[("HERMES_MODEL_PROVIDER", "skynet")]) else { panic!() };
    assert_eq!(key, "HERMES_MODEL_PROVIDER");
    let Err(ConfigError::Invalid { key, .. }) = load("fallback_model: {provider: skynet, model: m}\n", &[]) else { panic!() };
    assert_eq!(key, "fallback_model.provider");
}

#[test]
fn any_platform_name_has_settings_from_its_block_and_its_variables() {
    // A platform no field names (a channel added later): its block parses, its keys are
    // checked like every platform's, and <NAME>_ALLOWED_USERS / <NAME>_HOME_CHANNEL apply.
    let l = load("platforms: {slack: {allowed_users: [U1], home_channel: C1, bogus: 1}}\n", &[("SLACK_HOME_CHANNEL", "C9")]).unwrap();
    let slack = l.platform("slack");
    assert_eq!((slack.allowed_users, slack.home_channel), (vec!["U1".to_string()], "C9".to_string()));
    assert!(l.warnings.iter().any(|w| w.contains("platforms.slack.bogus")), "{:?}", l.warnings);
    assert!(!l.warnings.iter().any(|w| w.contains("`platforms.slack`")), "{:?}", l.warnings);
    let mx = load("{}", &[("MATRIX_ALLOWED_USERS", "@a:x, @b:x")]).unwrap().platform("matrix");
    assert_eq!(mx.allowed_users, ["@a:x", "@b:x"]);
    // WhatsApp's variables carry Hermes' Cloud API prefix (its plain WHATSAPP_* are the Baileys bridge's).
    let wa = load("{}", &[("WHATSAPP_CLOUD_ALLOWED_USERS", "4915, 4916"), ("WHATSAPP_ALLOWED_USERS", "1")]).unwrap().platform("whatsapp");
    assert_eq!(wa.allowed_users, ["4915", "4916"]);
    assert_eq!(l.platform("telegram").api_base, "https://api.telegram.org", "the built-in platforms keep their defaults");
    // The environment snapshot never prints its values (they may be secrets).
    let dbg = format!("{:?}", Env::from_pairs([("SLACK_BOT_TOKEN", "xoxb-secret")]));
    assert!(dbg.contains("SLACK_BOT_TOKEN") && !dbg.contains("xoxb-secret"), "{dbg}");
}

/// The clock-shift testing aid is honoured only by `testing` builds (issue #17 item 8).
#[test]
fn the_clock_offset_needs_the_testing_feature() {
    let l = load("{}", &[("HERMES_CLOCK_OFFSET_SECS", "3600")]).unwrap();
    if cfg!(feature = "testing") {
        assert_eq!(l.clock_offset_secs, 3600);
        assert!(load("{}", &[("HERMES_CLOCK_OFFSET_SECS", "soon")]).is_err());
    } else {
        assert_eq!(l.clock_offset_secs, 0, "a release build's clock cannot be shifted");
        assert!(l.warnings.iter().any(|w| w.contains("HERMES_CLOCK_OFFSET_SECS is ignored")), "{:?}", l.warnings);
    }
}

#[test]
fn tools_web_allow_private_is_off_by_default_and_typo_checked() {
    assert!(!parse("").unwrap().tools.web.allow_private);
    let p = parse_yaml_full("tools: {web: {allow_private: true}}\n", "c").unwrap();
    assert!(p.settings.tools.web.allow_private && p.warnings.is_empty(), "{:?}", p.warnings);
    let p = parse_yaml_full("tools: {web: {allow_privat: true}}\n", "c").unwrap();
    assert!(!p.settings.tools.web.allow_private);
    assert!(p.warnings.iter().any(|w| w.contains("tools.web.allow_privat")), "{:?}", p.warnings);
    assert_eq!(err_key("tools: {web: {allow_private: maybe}}"), "tools.web.allow_private");
}

#[test]
fn platform_extra_is_hermes_free_map_read_as_hermes_reads_flags() {
    let y = "platforms:\n  slack:\n    extra: {reply_in_thread: false, dm_top_level_threads_as_sessions: 'no', require_mention: true}\n    extar: 1\n";
    let (s, w) = parse_yaml(y, "c").unwrap();
    assert_eq!(w, vec!["unknown config key `platforms.slack.extar` (ignored)".to_string()], "only the typo warns");
    let slack = s.platforms.get("slack").cloned().unwrap_or_default();
    assert!(!slack.extra_flag("reply_in_thread", true));
    assert!(!slack.extra_flag("dm_top_level_threads_as_sessions", true));
    assert!(slack.extra_flag("unset", true) && !slack.extra_flag("unset", false));
    let (s, _) = parse_yaml("platforms: {slack: {extra: {reply_in_thread: 'ON', dm_top_level_threads_as_sessions: 0}}}", "c").unwrap();
    let slack = s.platforms.get("slack").cloned().unwrap_or_default();
    assert!(slack.extra_flag("reply_in_thread", false) && !slack.extra_flag("dm_top_level_threads_as_sessions", true));
}
