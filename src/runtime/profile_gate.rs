//! The gate in front of a routed profile (docs/design.md#profiles): a request under
//! `/p/<name>/` is authenticated *before* the profile's app is built, so an unauthenticated
//! caller builds nothing, loads no agent, opens no MCP session and spawns no child, and
//! cannot tell a profile that exists from one that does not (the same status and body).
//!
//! What each kind of route is checked with, without building the app:
//! - the dashboard's static files (`/`, `/ui`, `/ui/app.css`, `/ui/app.js`): the same for
//!   every profile, served by the process's own router; nothing of the profile is read;
//! - the fire callback (`/api/cron/fire`): the fire token's signature and claims (not yet its
//!   `jti`, which the built app spends), by a verifier from the profile's settings;
//! - the channels' webhooks (`/webhooks/…`): the channel's own signature check (Telegram's
//!   secret token, Slack's and WhatsApp's HMAC, Discord's Ed25519), with the channel built
//!   from the profile's settings; a webhook route (`/webhooks/<route>`, CONTRACT §16): the
//!   route's signature (`http::hooks::signature`) with the route's secret from those settings;
//! - everything else (`/healthz`, `/api/…`): the profile's API key, its `API_SERVER_KEY`
//!   from `<home>/.env` (else, under `serve`, the key in `<home>/api_key`).
//!
//! "The profile's settings" are its `config.yaml` and `.env` *parsed* (files read, nothing
//! started: no store, no network, no child): the keys those two checks need live there.
//! The API-key check reads `.env` only. A gate is kept per profile, so an unauthenticated
//! flood parses a profile's files once, not once per request.

use crate::app::jobs::fire_token::FireAuth;
use crate::channels::{Channels, RawRequest};
use crate::config::Env;
use crate::core::profile::Profile;
use crate::http::error::ApiError;
use crate::http::extract::ct_eq;
use crate::http::fire_auth::FireTokenRejection;
use axum::http::{HeaderMap, Method};
use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use std::path::Path;
use tokio::sync::OnceCell;

/// What kind of check a path under the prefix needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The dashboard's static files: no check, the process's own router serves them.
    Static,
    /// `POST /api/cron/fire`: a fire token.
    Fire,
    /// `/webhooks/…`: the channel's signature (the body is needed).
    Webhook,
    /// Everything else: the API key.
    Api,
}

impl Kind {
    /// The kind of `path` (the part after `/p/<name>`) for `method`.
    pub fn of(method: &Method, path: &str) -> Self {
        let read = method == Method::GET || method == Method::HEAD;
        match path {
            "/" | "/ui" | "/ui/app.css" | "/ui/app.js" if read => Self::Static,
            "/api/cron/fire" => Self::Fire,
            p if p.starts_with("/webhooks/") => Self::Webhook,
            _ => Self::Api,
        }
    }

    /// The one answer an unauthenticated caller gets for this kind, whether the profile
    /// exists or not (what the built app's own check answers).
    pub fn refusal(self) -> ApiError {
        match self {
            Self::Fire => FireTokenRejection::response(),
            _ => ApiError::unauthorized(),
        }
    }
}

/// The parts of a request the gate looks at.
pub struct Asked<'a> {
    /// Its method.
    pub method: &'a Method,
    /// Its path after the prefix.
    pub path: &'a str,
    /// Its query.
    pub query: Option<&'a str>,
    /// Its headers.
    pub headers: &'a HeaderMap,
    /// Its body (read only for webhooks; empty otherwise).
    pub body: &'a [u8],
    /// The clock's now.
    pub now: DateTime<Utc>,
}

/// The pre-build checks of one routed profile.
pub struct Gate {
    profile: Profile,
    home: std::path::PathBuf,
    env: Env,
    api_key: Option<SecretString>,
    settings: OnceCell<Option<Checks>>,
}

/// What is built from the profile's parsed settings (webhooks and fire only).
struct Checks {
    channels: Channels,
    fire: FireAuth,
    webhooks: crate::core::webhook::WebhookRoutes,
}

impl Gate {
    /// The gate of `profile` at `home`: its environment (deployment-wide names of
    /// `process` plus `<home>/.env`) and its API key. `local_keys`: a profile without
    /// `API_SERVER_KEY` has the key in `<home>/api_key` (created now if missing, as the
    /// built app would). An unreadable `.env` is an error (logged by the caller).
    pub fn open(profile: &Profile, home: &Path, process: &Env, local_keys: bool) -> Result<Self, String> {
        let env = crate::config::profile_env::routed_env(process, home)?;
        let configured = env.get("API_SERVER_KEY").map(|k| SecretString::from(k.to_string()));
        let api_key =
            if local_keys { Some(super::serve::api_key_at(configured, home).map_err(|e| format!("API key: {e}"))?) } else { configured };
        Ok(Self { profile: profile.clone(), home: home.to_path_buf(), env, api_key, settings: OnceCell::new() })
    }

    /// Whether `asked` is authenticated for this profile, checked as its `kind` needs.
    pub async fn admits(&self, kind: Kind, asked: &Asked<'_>) -> bool {
        match kind {
            Kind::Static => true,
            Kind::Api => {
                let given = bearer(asked.headers);
                matches!((given, &self.api_key), (Some(g), Some(k)) if ct_eq(g.as_bytes(), k.expose_secret().as_bytes()))
            }
            Kind::Fire => {
                let (Some(token), Some(checks)) = (bearer(asked.headers), self.checks().await) else { return false };
                match &checks.fire {
                    FireAuth::Ready(v) => v.check(token, asked.now).await.is_ok(),
                    FireAuth::NotConfigured | FireAuth::Broken(_) => false,
                }
            }
            Kind::Webhook => {
                let Some(checks) = self.checks().await else { return false };
                let req = RawRequest { method: asked.method, headers: asked.headers, query: asked.query, body: asked.body, now: asked.now };
                let channel = checks.channels.iter().any(|c| {
                    let routed = c.routes().iter().any(|r| r.path == asked.path && r.method == *asked.method);
                    routed && c.authenticate(&req).is_ok()
                });
                // A webhook route (CONTRACT §16): its own signature.
                let route = asked.path.strip_prefix("/webhooks/").and_then(|n| checks.webhooks.routes.get(n));
                channel
                    || route.is_some_and(|r| {
                        crate::http::hooks::signature::verify(asked.headers, asked.body, r.secret.expose_secret(), asked.now.timestamp())
                            .is_ok()
                    })
            }
        }
    }

    /// The checks built from the profile's parsed settings (None: they do not parse; the
    /// reason is logged once).
    async fn checks(&self) -> Option<&Checks> {
        let built = self.settings.get_or_init(|| async {
            let mut cfg = match crate::config::load_settings(&self.home, None, &self.env) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(profile = %self.profile, error = %e, "profile cannot be served: configuration error");
                    return None;
                }
            };
            cfg.profile = self.profile.clone();
            let jwks = std::sync::Arc::new(crate::clients::jwks::HttpJwks::default());
            Some(Checks { fire: FireAuth::from_config(&cfg, jwks), channels: Channels::from_config(&cfg), webhooks: cfg.webhooks.clone() })
        });
        built.await.as_ref()
    }
}

/// The bearer token of a request.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim)
}
