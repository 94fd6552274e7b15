//! Which timer provider runs, and why (docs/design.md#timers): `auto` picks Chronos when it is fully
//! configured, EventBridge on Lambda when configured, else the built-in ticker — and says
//! which setting is missing, so jobs are never left without a trigger silently.

use super::{CronProvider, Loaded};
use crate::core::timers::TimerProvider;
use serde::Serialize;

/// The provider decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderChoice {
    /// `chronos`, `eventbridge` or `builtin`.
    pub provider: TimerProvider,
    /// Human reason.
    pub why: String,
    /// Settings missing for the managed providers.
    pub missing: Vec<String>,
}

/// What Chronos still needs.
pub fn chronos_missing(cfg: &Loaded) -> Vec<String> {
    let c = &cfg.settings.cron.chronos;
    let mut m = Vec::new();
    if c.portal_url.is_empty() {
        m.push("cron.chronos.portal_url (HERMES_CHRONOS_PORTAL_URL)".to_string());
    }
    if c.callback_url.is_empty() {
        m.push("cron.chronos.callback_url (HERMES_CHRONOS_CALLBACK_URL)".to_string());
    }
    if cfg.secrets.nous_access_token.is_none() {
        m.push("a Nous access token (NOUS_ACCESS_TOKEN or $HERMES_HOME/auth.json)".to_string());
    }
    if c.jwks_url.is_empty() && c.public_key_pem.is_empty() {
        m.push("cron.chronos.jwks_url or cron.chronos.public_key_pem (to verify fire tokens)".to_string());
    }
    m
}

/// Decides the provider. `on_lambda` is true inside the Lambda runtime.
pub fn choose(cfg: &Loaded, on_lambda: bool) -> ProviderChoice {
    let missing = chronos_missing(cfg);
    let eb_ready = on_lambda && cfg!(feature = "aws");
    match cfg.settings.cron.provider {
        CronProvider::Builtin => {
            ProviderChoice { provider: TimerProvider::Builtin, why: "cron.provider is builtin".into(), missing: vec![] }
        }
        CronProvider::Chronos if missing.is_empty() => {
            ProviderChoice { provider: TimerProvider::Chronos, why: "cron.provider is chronos".into(), missing }
        }
        CronProvider::Chronos => ProviderChoice {
            provider: TimerProvider::Builtin,
            why: format!("cron.provider is chronos but {} is missing; using the built-in ticker", missing.join(", ")),
            missing,
        },
        CronProvider::Eventbridge if eb_ready => {
            ProviderChoice { provider: TimerProvider::Eventbridge, why: "cron.provider is eventbridge".into(), missing: vec![] }
        }
        CronProvider::Eventbridge => ProviderChoice {
            provider: TimerProvider::Builtin,
            why: "cron.provider is eventbridge but this is not a Lambda build with feature `aws`; using the built-in ticker".into(),
            missing: vec!["AWS Lambda runtime with feature `aws`".into()],
        },
        CronProvider::Auto if missing.is_empty() => {
            ProviderChoice { provider: TimerProvider::Chronos, why: "auto: Chronos is fully configured".into(), missing }
        }
        CronProvider::Auto if eb_ready => {
            ProviderChoice { provider: TimerProvider::Eventbridge, why: "auto: running on AWS Lambda".into(), missing }
        }
        CronProvider::Auto => ProviderChoice {
            provider: TimerProvider::Builtin,
            why: format!("auto: Chronos not configured (missing {}); using the built-in ticker", missing.join(", ")),
            missing,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Env, load_settings, parse_yaml};

    fn loaded(yaml: &str, token: bool) -> Loaded {
        let mut l = load_settings(std::path::Path::new("/nonexistent"), None, &Env::default()).unwrap();
        l.settings = parse_yaml(yaml, "t").unwrap().0;
        if token {
            l.secrets.nous_access_token = Some(secrecy::SecretString::from("t".to_string()));
        }
        l
    }

    const FULL: &str =
        "cron:\n  chronos: {portal_url: 'http://nas', callback_url: 'http://me/api/cron/fire', jwks_url: 'http://nas/jwks'}\n";

    #[test]
    fn auto_uses_chronos_only_when_complete_and_names_what_is_missing() {
        assert_eq!(choose(&loaded(FULL, true), false).provider, TimerProvider::Chronos);
        let c = choose(&loaded(FULL, false), false);
        assert_eq!(c.provider, TimerProvider::Builtin);
        assert!(c.why.contains("NOUS_ACCESS_TOKEN"), "{}", c.why);
        let c = choose(&loaded("", false), false);
        assert_eq!((c.provider, c.missing.len()), (TimerProvider::Builtin, 4));
    }

    #[test]
    fn explicit_choices() {
        assert_eq!(choose(&loaded(&format!("{FULL}  provider: builtin\n"), true), false).provider, TimerProvider::Builtin);
        let c = choose(&loaded("cron: {provider: chronos}", true), false);
        assert_eq!(c.provider, TimerProvider::Builtin, "never without a trigger");
        assert!(c.why.contains("cron.chronos.portal_url"));
        assert_eq!(choose(&loaded("cron: {provider: eventbridge}", false), false).provider, TimerProvider::Builtin);
    }
}
