//! Verification of Chronos fire tokens (docs/design.md#fire-token). Every failure is the same 401
//! `invalid fire token` to the caller (`http::fire_auth`); the reason is only logged.
//!
//! Built once at wiring time ([`FireAuth::from_config`]) and held in the HTTP state: the JWKS
//! cache lives as long as the process, and keys are fetched through the [`JwksSource`] port.
//!
//! Keys come from a JWKS (selected by `kid`; an unknown `kid` refreshes at most once per
//! 30 s; keys cached for at most 15 min) or a pinned PEM. The algorithm is pinned to the
//! key's family (RSA: RS256/384/512, EC: ES256/384, Ed25519: EdDSA); `none` and HMAC never
//! verify. `exp`/`nbf`/lifetime are checked against the app clock with 30 s leeway.

use crate::config::Loaded;
use crate::ports::{JwksSource, Store};
use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Clock leeway for `exp`/`nbf`.
pub const LEEWAY_SECS: i64 = 30;
/// Longest accepted token lifetime (`exp − iat`).
pub const MAX_LIFETIME_SECS: i64 = 600;
const JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
const JWKS_MIN_REFRESH: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Rsa,
    Ec,
    Ed,
}

impl Family {
    fn algorithms(self) -> Vec<Algorithm> {
        match self {
            Self::Rsa => vec![Algorithm::RS256, Algorithm::RS384, Algorithm::RS512],
            Self::Ec => vec![Algorithm::ES256, Algorithm::ES384],
            Self::Ed => vec![Algorithm::EdDSA],
        }
    }
}

#[derive(Default)]
struct JwksCache {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    last_attempt: Option<Instant>,
}

enum Source {
    Pem(DecodingKey, Family),
    Jwks { url: String, cache: tokio::sync::Mutex<JwksCache>, fetcher: Arc<dyn JwksSource> },
}

/// A configured verifier (built once per configuration).
pub struct FireVerifier {
    source: Source,
    audience: String,
    issuer: Option<String>,
}

fn pem_key(text: &str) -> Result<(DecodingKey, Family), String> {
    let pem = if text.trim_start().starts_with("-----BEGIN") {
        text.to_string()
    } else {
        std::fs::read_to_string(text.trim()).map_err(|e| format!("cron.chronos.public_key_pem: cannot read {}: {e}", text.trim()))?
    };
    let b = pem.as_bytes();
    DecodingKey::from_rsa_pem(b)
        .map(|k| (k, Family::Rsa))
        .or_else(|_| DecodingKey::from_ec_pem(b).map(|k| (k, Family::Ec)))
        .or_else(|_| DecodingKey::from_ed_pem(b).map(|k| (k, Family::Ed)))
        .map_err(|e| format!("cron.chronos.public_key_pem is not an RSA, EC or Ed25519 public key: {e}"))
}

impl FireVerifier {
    /// Builds the verifier from settings; None when no key source is configured. JWKS
    /// documents are fetched through `fetcher`.
    pub fn from_config(cfg: &Loaded, fetcher: Arc<dyn JwksSource>) -> Result<Option<Self>, String> {
        let c = &cfg.settings.cron.chronos;
        let audience = cfg.fire_audience();
        let issuer = (!c.portal_url.is_empty()).then(|| c.portal_url.trim_end_matches('/').to_string());
        let source = if !c.public_key_pem.is_empty() {
            let (k, f) = pem_key(&c.public_key_pem)?;
            Source::Pem(k, f)
        } else if !c.jwks_url.is_empty() {
            Source::Jwks { url: c.jwks_url.clone(), cache: tokio::sync::Mutex::new(JwksCache::default()), fetcher }
        } else {
            return Ok(None);
        };
        Ok(Some(Self { source, audience, issuer }))
    }

    async fn key_for(&self, kid: Option<&str>) -> Result<(DecodingKey, Family), String> {
        let (url, cache, fetcher) = match &self.source {
            Source::Pem(k, f) => return Ok((k.clone(), *f)),
            Source::Jwks { url, cache, fetcher } => (url, cache, fetcher),
        };
        let mut c = cache.lock().await;
        let stale = c.fetched.is_none_or(|t| t.elapsed() > JWKS_MAX_AGE);
        let unknown = c.set.as_ref().is_none_or(|s| find(s, kid).is_none());
        let may_refresh = c.last_attempt.is_none_or(|t| t.elapsed() >= JWKS_MIN_REFRESH);
        if stale || (unknown && may_refresh) {
            c.last_attempt = Some(Instant::now());
            match fetcher.fetch(url).await {
                Ok(set) => {
                    c.set = Some(set);
                    c.fetched = Some(Instant::now());
                }
                Err(e) => tracing::warn!(error = %e, "could not refresh the fire-token JWKS"),
            }
        }
        let set = c.set.as_ref().ok_or("no JWKS available")?;
        let jwk = find(set, kid).ok_or("unknown kid")?;
        let family = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Family::Rsa,
            AlgorithmParameters::EllipticCurve(_) => Family::Ec,
            AlgorithmParameters::OctetKeyPair(_) => Family::Ed,
            AlgorithmParameters::OctetKey(_) => return Err("symmetric keys are not accepted".into()),
        };
        Ok((DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?, family))
    }

    /// Verifies a fire token at `now` (signature, algorithm family, audience, issuer, times,
    /// lifetime, purpose) and consumes its `jti` (if any) in the store, all before the request
    /// body is read. Returns the claims, or the (log-only) reason.
    pub async fn verify(&self, token: &str, now: DateTime<Utc>, store: &dyn Store) -> Result<FireClaims, String> {
        let claims = self.check(token, now).await?;
        if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
            let exp = claims["exp"].as_i64().unwrap_or_default() + LEEWAY_SECS;
            let until = DateTime::from_timestamp(exp, 0).unwrap_or(now);
            if !store.use_once(&format!("jti:{jti}"), until, now).await.map_err(|e| format!("jti store: {e}"))? {
                return Err("replayed jti".into());
            }
        }
        Ok(FireClaims { job_id: claims.get("job_id").and_then(Value::as_str).map(str::to_string) })
    }

    /// [`FireVerifier::verify`] without spending the `jti`: signature, algorithm family,
    /// audience, issuer, times, lifetime and purpose. What a routed profile's gate checks
    /// before the profile is built (its app then verifies again and spends the `jti`).
    pub async fn check(&self, token: &str, now: DateTime<Utc>) -> Result<Value, String> {
        let header = decode_header(token).map_err(|e| format!("bad header: {e}"))?;
        let (key, family) = self.key_for(header.kid.as_deref()).await?;
        let mut v = Validation::new(header.alg);
        v.algorithms = family.algorithms();
        v.validate_exp = false;
        v.validate_nbf = false;
        v.set_audience(&[&self.audience]);
        let mut required = vec!["exp", "aud"];
        if let Some(iss) = &self.issuer {
            v.set_issuer(&[iss]);
            required.push("iss");
        }
        v.set_required_spec_claims(&required);
        let claims = decode::<Value>(token, &key, &v).map_err(|e| format!("rejected: {e}"))?.claims;
        check_claims(&claims, now)?;
        Ok(claims)
    }
}

/// What a verified fire token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireClaims {
    /// The job the token is bound to, if it names one.
    job_id: Option<String>,
}

impl FireClaims {
    /// Whether the token may fire `job_id` (a token naming another job may not).
    pub fn allows(&self, job_id: &str) -> bool {
        self.job_id.as_deref().is_none_or(|j| j == job_id)
    }
}

/// Why a fire token was refused (logged, never shown to the caller).
#[derive(Debug, thiserror::Error)]
pub enum FireTokenError {
    /// No key source configured.
    #[error("no cron.chronos.jwks_url or public_key_pem configured")]
    NotConfigured,
    /// The key configuration is wrong.
    #[error("bad key configuration: {0}")]
    Misconfigured(String),
    /// The token failed a check.
    #[error("{0}")]
    Invalid(String),
}

/// The fire-token verifier as wired: ready, not configured, or misconfigured (every fire is
/// then refused, and the reason logged).
#[derive(Clone)]
pub enum FireAuth {
    /// Verifies tokens.
    Ready(Arc<FireVerifier>),
    /// No `cron.chronos.jwks_url` or `public_key_pem`.
    NotConfigured,
    /// The key configuration is wrong (the reason).
    Broken(String),
}

impl FireAuth {
    /// Built once at wiring time.
    pub fn from_config(cfg: &Loaded, fetcher: Arc<dyn JwksSource>) -> Self {
        match FireVerifier::from_config(cfg, fetcher) {
            Ok(Some(v)) => Self::Ready(Arc::new(v)),
            Ok(None) => Self::NotConfigured,
            Err(e) => Self::Broken(e),
        }
    }
}

fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a jsonwebtoken::jwk::Jwk> {
    match kid {
        Some(k) => set.find(k),
        None if set.keys.len() == 1 => set.keys.first(),
        None => None,
    }
}

/// Time, lifetime and purpose checks (the job binding is checked against the body later).
fn check_claims(c: &Value, now: DateTime<Utc>) -> Result<(), String> {
    let now = now.timestamp();
    let exp = c["exp"].as_i64().ok_or("exp missing")?;
    let iat = c["iat"].as_i64().ok_or("iat missing")?;
    if now > exp + LEEWAY_SECS {
        return Err("expired".into());
    }
    if let Some(nbf) = c.get("nbf").and_then(Value::as_i64)
        && nbf > now + LEEWAY_SECS
    {
        return Err("not yet valid".into());
    }
    if iat > now + LEEWAY_SECS {
        return Err("issued in the future".into());
    }
    if exp - iat > MAX_LIFETIME_SECS {
        return Err("lifetime over 600 s".into());
    }
    if c.get("purpose").and_then(Value::as_str) != Some("cron_fire") {
        return Err("purpose is not cron_fire".into());
    }
    Ok(())
}
