//! Which timer provider runs, and why (SPEC §3): `auto` picks Chronos when it is fully
//! configured, EventBridge on Lambda when configured, else the built-in ticker — and says
//! which setting is missing, so jobs are never left without a trigger silently.

use super::{CronProvider, Loaded};
use serde::Serialize;

/// The provider decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderChoice {
    /// `chronos`, `eventbridge` or `builtin`.
    pub provider: &'static str,
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
        CronProvider::Builtin => ProviderChoice { provider: "builtin", why: "cron.provider is builtin".into(), missing: vec![] },
        CronProvider::Chronos if missing.is_empty() => {
            ProviderChoice { provider: "chronos", why: "cron.provider is chronos".into(), missing }
        }
        CronProvider::Chronos => ProviderChoice {
            provider: "builtin",
            why: format!("cron.provider is chronos but {} is missing; using the built-in ticker", missing.join(", ")),
            missing,
        },
        CronProvider::Eventbridge if eb_ready => {
            ProviderChoice { provider: "eventbridge", why: "cron.provider is eventbridge".into(), missing: vec![] }
        }
        CronProvider::Eventbridge => ProviderChoice {
            provider: "builtin",
            why: "cron.provider is eventbridge but this is not a Lambda build with feature `aws`; using the built-in ticker".into(),
            missing: vec!["AWS Lambda runtime with feature `aws`".into()],
        },
        CronProvider::Auto if missing.is_empty() => {
            ProviderChoice { provider: "chronos", why: "auto: Chronos is fully configured".into(), missing }
        }
        CronProvider::Auto if eb_ready => ProviderChoice { provider: "eventbridge", why: "auto: running on AWS Lambda".into(), missing },
        CronProvider::Auto => ProviderChoice {
            provider: "builtin",
            why: format!("auto: Chronos not configured (missing {}); using the built-in ticker", missing.join(", ")),
            missing,
        },
    }
}
