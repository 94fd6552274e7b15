//! Loading: defaults → `config.yaml` → environment, then validation. Unknown keys are
//! warned about; a wrong type or value is a [`ConfigError`] naming file, key and reason.

use super::env::Env;
use super::types::*;
use secrecy::SecretString;
use std::path::{Path, PathBuf};

/// A configuration problem: exit code 78.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key has a wrong type or value.
    #[error("{file}: key `{key}`: {reason}")]
    Invalid {
        /// The file (or `environment`).
        file: String,
        /// Dotted key path.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

/// Secrets, from the environment only.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Bearer key of the HTTP API.
    pub api_server_key: Option<SecretString>,
    /// Telegram bot token.
    pub telegram_bot_token: Option<SecretString>,
    /// Telegram webhook secret token.
    pub telegram_webhook_secret: Option<SecretString>,
    /// Discord bot token.
    pub discord_bot_token: Option<SecretString>,
    /// Discord application public key (hex).
    pub discord_public_key: Option<String>,
    /// Nous access token for the NAS.
    pub nous_access_token: Option<SecretString>,
}

/// The loaded configuration.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Settings after file and environment.
    pub settings: Settings,
    /// Secrets.
    pub secrets: Secrets,
    /// Parsed timezone.
    pub tz: chrono_tz::Tz,
    /// Human warnings (unknown keys), to be logged by the caller.
    pub warnings: Vec<String>,
    /// Hermes sections and keys present in the file that hermes-zero does not read.
    pub ignored: Vec<String>,
    /// The model endpoints: primary (after `auto` detection) and the fallback chain.
    pub model: super::models::ModelChain,
    /// The file that was read, if any.
    pub file: Option<PathBuf>,
    /// The environment snapshot the settings were read with: a channel reads its own
    /// variables (its secrets) from here, so adding one needs no field in this module.
    pub env: Env,
    /// Testing aid: seconds added to the wall clock (`HERMES_CLOCK_OFFSET_SECS`), so
    /// black-box tests can make jobs due without waiting. 0 in normal use.
    pub clock_offset_secs: i64,
    /// The profile this process serves (docs/design.md#profiles); `main` unless the command
    /// line or `HERMES_PROFILE` named another.
    pub profile: crate::core::profile::Profile,
    /// Where a relative `store.path` is resolved: the root home for a named profile (every
    /// profile shares one store, each in its own key space); `None` is the home itself.
    pub store_home: Option<PathBuf>,
    /// Hermes' webhook routes (`platforms.webhook.extra`, CONTRACT §16), parsed at load.
    pub webhooks: crate::core::webhook::WebhookRoutes,
}

impl Loaded {
    /// The settings of the chat platform `name`: its `platforms.<name>` block, then the
    /// environment's `<PREFIX>_ALLOWED_USERS` (comma list) and `<PREFIX>_HOME_CHANNEL`
    /// ([`platform_env_prefix`]). Works for any platform name, so a new channel needs no
    /// settings code of its own.
    pub fn platform(&self, name: &str) -> PlatformSettings {
        let mut p = self.settings.platforms.get(name).cloned().unwrap_or_default();
        let upper = platform_env_prefix(name);
        env_list(&self.env, &format!("{upper}_ALLOWED_USERS"), &mut p.allowed_users);
        env_str(&self.env, &format!("{upper}_HOME_CHANNEL"), &mut p.home_channel);
        p
    }

    /// The platforms whose allow lists and home channels count: every chat channel this
    /// build has, and any other `platforms.<name>` block.
    fn access_platforms(&self) -> Vec<String> {
        let mut names: Vec<String> =
            ["telegram", "discord", "slack", "whatsapp", "matrix", "mattermost", "signal"].map(String::from).to_vec();
        names.extend(self.settings.platforms.other.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// What the scoping and delivery checks read (docs/who-sees-what.md).
    pub fn access_rules(&self) -> crate::core::access::AccessRules {
        let s = &self.settings;
        let mut rules = crate::core::access::AccessRules {
            admin_users: s.admin_users.iter().chain(&s.cron.admin_users).cloned().collect(),
            identities: s.identities.clone(),
            allow_targets: s.delivery.allow_targets.clone(),
            allow_all_users: s.allow_all_users,
            ..Default::default()
        };
        for name in self.access_platforms() {
            let p = self.platform(&name);
            if !p.allowed_users.is_empty() {
                rules.allowed.insert(name.clone(), p.allowed_users);
            }
            if !p.home_channel.trim().is_empty() {
                rules.homes.insert(name, p.home_channel.trim().to_string());
            }
        }
        rules
    }

    /// Whether the memory `user` profile is one per user: `memory.user_profile`, else per
    /// user when the allow lists hold more than one user across platforms (`allow_all_users`
    /// counts as many).
    pub fn per_user_profile(&self) -> bool {
        match self.settings.memory.user_profile {
            Some(m) => m == super::hermes::UserProfileMode::PerUser,
            None => self.access_rules().allowed_user_count() > 1,
        }
    }

    /// This agent's instance id: `cron.chronos.instance_id`, else `hermes-zero` (the default
    /// fire-token audience is `agent:<instance id>`).
    pub fn instance_id(&self) -> String {
        let id = &self.settings.cron.chronos.instance_id;
        if id.is_empty() { "hermes-zero".into() } else { id.clone() }
    }

    /// The `aud` this agent's fire tokens must carry: `cron.chronos.expected_audience`, else
    /// `agent:<instance id>` for `main` and `agent:<instance id>:<profile>` for a named
    /// profile (docs/design.md#profiles), so one Chronos instance serves many profiles.
    pub fn fire_audience(&self) -> String {
        let c = &self.settings.cron.chronos;
        match (c.expected_audience.is_empty(), self.profile.is_main()) {
            (false, _) => c.expected_audience.clone(),
            (true, true) => format!("agent:{}", self.instance_id()),
            (true, false) => format!("agent:{}:{}", self.instance_id(), self.profile),
        }
    }
}

/// The prefix of platform `name`'s environment variables: its name in capitals, except
/// `whatsapp`, whose variables use Hermes' WhatsApp Cloud API names (`WHATSAPP_CLOUD_*`;
/// Hermes' plain `WHATSAPP_*` belong to its Baileys bridge).
pub fn platform_env_prefix(name: &str) -> String {
    match name {
        "whatsapp" => "WHATSAPP_CLOUD".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// Loads settings for `home`, from `config_file` (default `<home>/config.yaml`, optional).
pub fn load_settings(home: &Path, config_file: Option<&Path>, env: &Env) -> Result<Loaded, ConfigError> {
    let path = config_file.map_or_else(|| home.join("config.yaml"), Path::to_path_buf);
    let explicit = config_file.is_some();
    let (parsed, file) = match std::fs::read_to_string(&path) {
        Ok(text) => (parse_yaml_full(&text, &path.display().to_string())?, Some(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => (Parsed::default(), None),
        Err(source) => return Err(ConfigError::Read { file: path, source }),
    };
    let Parsed { mut settings, mut warnings, ignored } = parsed;
    apply_env(&mut settings, env)?;
    let file_label = file.as_ref().map_or_else(|| "config".to_string(), |p| p.display().to_string());
    let tz = validate(&settings, &file_label)?;
    let model = super::models::resolve(&settings, env, &file_label, &mut warnings)?;
    let webhooks = super::webhooks::webhook_routes(&settings, env, &file_label)?;
    // The inline key now lives only in `model`'s endpoint (a secret), not in plain settings.
    settings.model.api_key.clear();
    let secrets = Secrets {
        api_server_key: env.secret("API_SERVER_KEY"),
        telegram_bot_token: env.secret("TELEGRAM_BOT_TOKEN"),
        telegram_webhook_secret: env.secret("TELEGRAM_WEBHOOK_SECRET"),
        discord_bot_token: env.secret("DISCORD_BOT_TOKEN"),
        discord_public_key: env.get("DISCORD_PUBLIC_KEY").map(str::to_string),
        nous_access_token: env.secret("NOUS_ACCESS_TOKEN").or_else(|| auth_json_token(home)),
    };
    let clock_offset_secs = clock_offset(env, &mut warnings)?;
    Ok(Loaded {
        settings,
        secrets,
        tz,
        warnings,
        ignored,
        model,
        file,
        clock_offset_secs,
        env: env.clone(),
        profile: crate::core::profile::Profile::main(),
        store_home: None,
        webhooks,
    })
}

/// `HERMES_CLOCK_OFFSET_SECS`, a testing aid read only by builds with the `testing` feature;
/// any other build ignores it with a warning (a release binary's clock cannot be shifted).
fn clock_offset(env: &Env, warnings: &mut Vec<String>) -> Result<i64, ConfigError> {
    let Some(v) = env.get("HERMES_CLOCK_OFFSET_SECS") else { return Ok(0) };
    if !cfg!(feature = "testing") {
        warnings.push("HERMES_CLOCK_OFFSET_SECS is ignored: this build has no `testing` feature".into());
        return Ok(0);
    }
    v.trim().parse().map_err(|_| ConfigError::Invalid {
        file: "environment".into(),
        key: "HERMES_CLOCK_OFFSET_SECS".into(),
        reason: format!("`{v}` is not a whole number of seconds"),
    })
}

/// `access_token` from `$HERMES_HOME/auth.json`, if present.
fn auth_json_token(home: &Path) -> Option<SecretString> {
    let text = std::fs::read_to_string(home.join("auth.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["access_token"].as_str().filter(|t| !t.is_empty()).map(|t| SecretString::from(t.to_string()))
}

/// Settings parsed from one file, with what was not read.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The settings (Hermes places already laid over the flat keys).
    pub settings: Settings,
    /// Unknown keys (likely typos).
    pub warnings: Vec<String>,
    /// Hermes sections and keys hermes-zero does not read.
    pub ignored: Vec<String>,
}

/// Parses YAML text into settings, returning warnings for unknown keys.
pub fn parse_yaml(text: &str, file: &str) -> Result<(Settings, Vec<String>), ConfigError> {
    parse_yaml_full(text, file).map(|p| (p.settings, p.warnings))
}

/// Parses YAML text into settings, with warnings for unknown keys and the list of ignored
/// Hermes sections.
pub fn parse_yaml_full(text: &str, file: &str) -> Result<Parsed, ConfigError> {
    let invalid = |key: String, reason: String| ConfigError::Invalid { file: file.to_string(), key, reason };
    // Why: the YAML parser takes time quadratic in flow nesting (`[[[[…`); refuse absurd
    // nesting up front so a damaged file fails fast instead of hanging the start.
    if flow_depth(text) > MAX_FLOW_DEPTH {
        return Err(invalid("(document)".into(), format!("nesting deeper than {MAX_FLOW_DEPTH} levels")));
    }
    // Same for block nesting (indentation, `- - - …`): the parser walks megabytes before its
    // recursion limit trips; no real config is indented this deep.
    if block_indent(text) > MAX_BLOCK_INDENT {
        return Err(invalid("(document)".into(), format!("indentation deeper than {MAX_BLOCK_INDENT} columns")));
    }
    let value: serde_json::Value = if text.trim().is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        serde_norway::from_str(text).map_err(|e| invalid("(document)".into(), format!("not valid YAML: {e}")))?
    };
    let mut value = match value {
        serde_json::Value::Null => serde_json::Value::Object(Default::default()),
        v @ serde_json::Value::Object(_) => v,
        _ => return Err(invalid("(document)".into(), "the top level must be a mapping".into())),
    };
    super::hermes::normalize(&mut value);
    let (mut warnings, mut ignored) = (Vec::new(), Vec::new());
    let known = serde_json::to_value(Settings::default()).unwrap_or_default();
    unknown_keys(&value, &known, "", &mut warnings, &mut ignored);
    let mut settings: Settings = serde_path_to_error::deserialize(&value).map_err(|e| {
        let key = e.path().to_string();
        invalid(key, e.into_inner().to_string())
    })?;
    // A partly written `platforms.<name>` block must not lose the default API base.
    let defaults = Platforms::default();
    for (p, d) in [(&mut settings.platforms.telegram, defaults.telegram), (&mut settings.platforms.discord, defaults.discord)] {
        if p.api_base.trim().is_empty() {
            p.api_base = d.api_base;
        }
    }
    super::hermes::overlay(&mut settings);
    Ok(Parsed { settings, warnings, ignored })
}

/// Deepest `[`/`{` nesting accepted in a YAML document.
pub const MAX_FLOW_DEPTH: usize = 64;

/// Deepest block indentation accepted in a YAML document, in columns (spaces and `- `).
pub const MAX_BLOCK_INDENT: usize = 256;

/// The widest block indentation of any line: leading spaces and sequence indicators (`- `).
pub fn block_indent(text: &str) -> usize {
    text.lines()
        .map(|line| {
            let b = line.as_bytes();
            let mut i = 0;
            while i < b.len() && (b[i] == b' ' || (b[i] == b'-' && b.get(i + 1) == Some(&b' '))) {
                i += 1;
            }
            i
        })
        .max()
        .unwrap_or(0)
}

/// The deepest flow-collection nesting of YAML text, ignoring quoted text and comments.
pub fn flow_depth(text: &str) -> usize {
    let (mut depth, mut max, mut quote, mut escaped, mut comment) = (0usize, 0usize, None::<char>, false, false);
    let mut prev = ' ';
    for c in text.chars() {
        if comment {
            comment = c != '\n';
        } else if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if q == '"' && c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
        } else {
            match c {
                '"' | '\'' => quote = Some(c),
                '#' if prev.is_whitespace() => comment = true,
                '[' | '{' => {
                    depth += 1;
                    max = max.max(depth);
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = c;
    }
    max
}

/// Maps whose keys are free-form names (platforms, chat types).
const FREE_MAPS: &[&str] = &["session_reset_by_platform", "session_reset_by_type", "identities", "platform_toolsets"];

fn unknown_keys(v: &serde_json::Value, known: &serde_json::Value, prefix: &str, out: &mut Vec<String>, ignored: &mut Vec<String>) {
    use super::hermes::{HERMES_OPEN_SECTIONS, HERMES_SECTIONS, HERMES_SUBKEYS};
    let (serde_json::Value::Object(m), serde_json::Value::Object(k)) = (v, known) else { return };
    for (name, child) in m {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        // `platforms.<name>.extra` is Hermes' free-form map of per-platform options.
        let platform_extra = name == "extra" && prefix.starts_with("platforms.") && prefix.matches('.').count() == 1;
        if FREE_MAPS.contains(&path.as_str()) || HERMES_OPEN_SECTIONS.contains(&path.as_str()) || platform_extra {
            continue;
        }
        match k.get(name) {
            Some(kc) => unknown_keys(child, kc, &path, out, ignored),
            // Any `platforms.<name>` is a platform block (channels added later have none of
            // their own here); its keys are checked like every platform's.
            None if prefix == "platforms" => {
                let shape = serde_json::to_value(super::types::PlatformSettings::default()).unwrap_or_default();
                unknown_keys(child, &shape, &path, out, ignored);
            }
            None if HERMES_SECTIONS.contains(&path.as_str()) || HERMES_SUBKEYS.contains(&path.as_str()) => ignored.push(path),
            None => {
                if prefix.is_empty() {
                    ignored.push(path.clone());
                }
                out.push(format!("unknown config key `{path}` (ignored)"));
            }
        }
    }
}

fn env_enum<T: serde::de::DeserializeOwned>(env: &Env, var: &str, slot: &mut T) -> Result<(), ConfigError> {
    if let Some(v) = env.get(var) {
        *slot = serde_json::from_value(serde_json::Value::String(v.trim().to_ascii_lowercase())).map_err(|_| ConfigError::Invalid {
            file: "environment".into(),
            key: var.into(),
            reason: format!("unsupported value `{v}`"),
        })?;
    }
    Ok(())
}

fn env_str(env: &Env, var: &str, slot: &mut String) {
    if let Some(v) = env.get(var) {
        *slot = v.to_string();
    }
}

fn env_list(env: &Env, var: &str, slot: &mut Vec<String>) {
    if let Some(v) = env.get(var) {
        *slot = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    }
}

fn apply_env(s: &mut Settings, env: &Env) -> Result<(), ConfigError> {
    env_str(env, "HERMES_TIMEZONE", &mut s.timezone);
    env_enum(env, "HERMES_STORE", &mut s.store.kind)?;
    env_str(env, "HERMES_DYNAMODB_TABLE", &mut s.store.dynamodb_table);
    env_str(env, "AWS_ENDPOINT_URL_DYNAMODB", &mut s.store.endpoint);
    // HERMES_MODEL_PROVIDER, HERMES_MODEL_BASE_URL and HERMES_MODEL are read by
    // `models::resolve`, which also knows each provider's own variables.
    env_list(env, "TELEGRAM_ALLOWED_USERS", &mut s.platforms.telegram.allowed_users);
    env_str(env, "TELEGRAM_HOME_CHANNEL", &mut s.platforms.telegram.home_channel);
    env_list(env, "DISCORD_ALLOWED_USERS", &mut s.platforms.discord.allowed_users);
    env_str(env, "DISCORD_HOME_CHANNEL", &mut s.platforms.discord.home_channel);
    let c = &mut s.cron.chronos;
    env_str(env, "HERMES_CHRONOS_PORTAL_URL", &mut c.portal_url);
    env_str(env, "HERMES_CHRONOS_CALLBACK_URL", &mut c.callback_url);
    env_str(env, "HERMES_CHRONOS_JWKS_URL", &mut c.jwks_url);
    env_str(env, "HERMES_CHRONOS_PUBLIC_KEY_PEM", &mut c.public_key_pem);
    env_str(env, "HERMES_CHRONOS_AUDIENCE", &mut c.expected_audience);
    env_str(env, "HERMES_INSTANCE_ID", &mut c.instance_id);
    let eb = &mut s.cron.eventbridge;
    env_str(env, "HERMES_EVENTBRIDGE_GROUP", &mut eb.group);
    env_str(env, "HERMES_EVENTBRIDGE_TARGET_ARN", &mut eb.target_arn);
    env_str(env, "HERMES_EVENTBRIDGE_ROLE_ARN", &mut eb.role_arn);
    if let Some(v) = env.get("HERMES_CRON_SCRIPT_TIMEOUT") {
        s.cron.script_timeout_seconds = crate::core::script::parse_timeout(v).ok_or_else(|| ConfigError::Invalid {
            file: "environment".into(),
            key: "HERMES_CRON_SCRIPT_TIMEOUT".into(),
            reason: format!("must be a positive number of seconds, got `{v}`"),
        })?;
    }
    Ok(())
}

fn validate(s: &Settings, file: &str) -> Result<chrono_tz::Tz, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Invalid { file: file.to_string(), key: key.into(), reason };
    let tz: chrono_tz::Tz =
        s.timezone.parse().map_err(|_| bad("timezone", format!("`{}` is not an IANA timezone such as Europe/Berlin", s.timezone)))?;
    let policies = std::iter::once(("session_reset".to_string(), s.session_reset.clone()))
        .chain(s.session_reset_by_platform.iter().map(|(k, o)| (format!("session_reset_by_platform.{k}"), s.session_reset.overlay(o))))
        .chain(s.session_reset_by_type.iter().map(|(k, o)| (format!("session_reset_by_type.{k}"), s.session_reset.overlay(o))));
    for (key, p) in policies {
        if p.at_hour > 23 {
            return Err(bad(&format!("{key}.at_hour"), format!("must be 0–23, got {}", p.at_hour)));
        }
        if p.idle_minutes == 0 {
            return Err(bad(&format!("{key}.idle_minutes"), "must be at least 1".into()));
        }
    }
    for t in s.session_reset_by_type.keys() {
        crate::core::ids::ChatType::parse(t).map_err(|e| bad(&format!("session_reset_by_type.{t}"), e.to_string()))?;
    }
    let c = &s.compression;
    if !(c.threshold > 0.0 && c.threshold <= 1.0) {
        return Err(bad("compression.threshold", "must be above 0 and at most 1".into()));
    }
    if !(c.target_ratio > 0.0 && c.target_ratio < 1.0) {
        return Err(bad("compression.target_ratio", "must be above 0 and below 1".into()));
    }
    if s.agent.max_turns == Some(0) {
        return Err(bad("agent.max_turns", "must be at least 1".into()));
    }
    let positive = [
        ("model.max_iterations", u64::from(s.model.max_iterations)),
        ("model.max_context_messages", s.model.max_context_messages as u64),
        ("model.timeout_seconds", s.model.timeout_seconds),
        ("max_queued", s.max_queued as u64),
        ("restart_loop_threshold", u64::from(s.restart_loop_threshold)),
        ("cron.tick_interval_seconds", s.cron.tick_interval_seconds),
        ("cron.output_retention", s.cron.output_retention as u64),
        ("cron.script_timeout_seconds", s.cron.script_timeout_seconds),
    ];
    for (key, v) in positive {
        if v == 0 {
            return Err(bad(key, "must be at least 1".into()));
        }
    }
    if let Err(e) = crate::core::schedule::spread::check(u64::from(s.cron.spread_seconds)) {
        return Err(bad("cron.spread_seconds", e));
    }
    if let Err(e) = crate::core::retry::check_delays(&s.cron.retry.delays) {
        return Err(bad("cron.retry.delays", e));
    }
    for t in &s.cron.failure_deliver {
        crate::core::jobfile::check_target(t).map_err(|e| bad("cron.failure_deliver", e))?;
    }
    if let Some(b) = s.cron.daily_budget_usd
        && !(b.is_finite() && b > 0.0)
    {
        return Err(bad("cron.daily_budget_usd", format!("must be a number of US dollars above 0, got {b}")));
    }
    crate::core::pricing::check(&s.pricing).map_err(|e| bad("pricing", e))?;
    if s.store.path.trim().is_empty() {
        return Err(bad("store.path", "must not be empty".into()));
    }
    let max = crate::store::shard::MAX_SHARDS;
    if !(1..=max).contains(&s.store.dynamodb_shards) {
        return Err(bad("store.dynamodb_shards", format!("must be between 1 and {max}, got {}", s.store.dynamodb_shards)));
    }
    Ok(tz)
}

#[cfg(test)]
#[path = "load_tests.rs"]
mod tests;
