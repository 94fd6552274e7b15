//! `hermes-zero chronos-dev`: a local NAS emulator (docs/design.md#chronos) — the provision / cancel /
//! list timer API, `/.well-known/jwks.json`, a persistent Ed25519 signing key, and real
//! signed fire callbacks at each timer's `fire_at`, retried on non-2xx, optionally delivered
//! `--duplicates N` extra times (each with its own `jti`) to exercise at-most-once.

use crate::ports::Clock;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, SecondsFormat, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lifetime of fire tokens.
const TOKEN_TTL_SECS: i64 = 120;
/// Delivery attempts per fire.
const ATTEMPTS: u32 = 5;

#[derive(Debug, Clone)]
struct Timer {
    fire_at: DateTime<Utc>,
    callback: String,
    schedule_id: String,
}

/// The emulator's state.
pub struct ChronosDev {
    key_der: Vec<u8>,
    kid: String,
    public_x: String,
    issuer: String,
    audience: String,
    duplicates: u32,
    timers: Mutex<HashMap<String, Timer>>,
    clock: Arc<dyn Clock>,
    http: reqwest::Client,
    fire_early: std::sync::atomic::AtomicU32,
}

/// Loads the signing key from `<home>/chronos-dev/key.pem`, creating it on first start.
pub fn load_or_create_key(home: &Path) -> anyhow::Result<Vec<u8>> {
    let path = home.join("chronos-dev").join("key.pem");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let b64: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
        return Ok(STANDARD.decode(b64.trim())?);
    }
    let doc = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).map_err(|_| anyhow::anyhow!("cannot generate a key"))?;
    let der = doc.as_ref().to_vec();
    let b64 = STANDARD.encode(&der);
    let body: Vec<String> = b64.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    crate::runtime::private::write_private(
        &path,
        &format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", body.join("\n")),
    )?;
    Ok(der)
}

impl ChronosDev {
    /// Builds the emulator for a base URL (the token issuer).
    pub fn new(key_der: Vec<u8>, issuer: String, audience: String, duplicates: u32, clock: Arc<dyn Clock>) -> anyhow::Result<Arc<Self>> {
        let kp = Ed25519KeyPair::from_pkcs8(&key_der).map_err(|_| anyhow::anyhow!("chronos-dev key.pem is not an Ed25519 PKCS#8 key"))?;
        let public = kp.public_key().as_ref().to_vec();
        let kid = format!("dev-{}", public.iter().take(4).map(|b| format!("{b:02x}")).collect::<String>());
        Ok(Arc::new(Self {
            key_der,
            kid,
            public_x: URL_SAFE_NO_PAD.encode(public),
            issuer,
            audience,
            duplicates,
            timers: Mutex::new(HashMap::new()),
            clock,
            http: crate::clients::http_client(Duration::from_secs(130)),
            fire_early: std::sync::atomic::AtomicU32::new(0),
        }))
    }

    /// Testing aid: fire timers `secs` seconds before their time.
    pub fn set_fire_early(&self, secs: u32) {
        self.fire_early.store(secs, std::sync::atomic::Ordering::Relaxed);
    }

    fn timers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Timer>> {
        self.timers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A signed fire token for one delivery.
    pub fn token(&self, job_id: &str) -> anyhow::Result<String> {
        let now = self.clock.now().timestamp();
        let claims = json!({
            "iss": self.issuer, "aud": self.audience, "iat": now, "nbf": now, "exp": now + TOKEN_TTL_SECS,
            "jti": format!("{:032x}", rand::random::<u128>()), "purpose": "cron_fire", "job_id": job_id,
        });
        let mut h = Header::new(Algorithm::EdDSA);
        h.kid = Some(self.kid.clone());
        Ok(jsonwebtoken::encode(&h, &claims, &EncodingKey::from_ed_der(&self.key_der))?)
    }

    async fn deliver(self: Arc<Self>, job_id: String, t: Timer) {
        let at = t.fire_at.to_rfc3339_opts(SecondsFormat::Secs, true);
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1 << (attempt - 1))).await;
            }
            let Ok(token) = self.token(&job_id) else { return };
            let res = self.http.post(&t.callback).bearer_auth(token).json(&json!({"job_id": job_id, "fire_at": at})).send().await;
            match res {
                Ok(r) if r.status().is_success() => {
                    tracing::info!(%job_id, fire_at = %at, status = r.status().as_u16(), "fired");
                    return;
                }
                Ok(r) => tracing::warn!(%job_id, status = r.status().as_u16(), attempt = attempt + 1, "fire refused; retrying"),
                Err(e) => tracing::warn!(%job_id, error = %e.without_url(), attempt = attempt + 1, "fire failed; retrying"),
            }
        }
        tracing::error!(%job_id, fire_at = %at, "fire given up after {ATTEMPTS} attempts");
    }

    /// Fires every due timer (removing it first, unless it was re-provisioned meanwhile).
    pub fn fire_due(self: &Arc<Self>) {
        let now = self.clock.now() + chrono::Duration::seconds(i64::from(self.fire_early.load(std::sync::atomic::Ordering::Relaxed)));
        let due: Vec<(String, Timer)> = {
            let mut g = self.timers();
            let ids: Vec<String> = g.iter().filter(|(_, t)| t.fire_at <= now).map(|(k, _)| k.clone()).collect();
            ids.into_iter().filter_map(|k| g.remove(&k).map(|t| (k, t))).collect()
        };
        for (job_id, t) in due {
            for _ in 0..=self.duplicates {
                tokio::spawn(Arc::clone(self).deliver(job_id.clone(), t.clone()));
            }
        }
    }
}

fn authorized(h: &HeaderMap) -> bool {
    h.get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.strip_prefix("Bearer ").is_some_and(|t| !t.trim().is_empty()))
}

type Reply = (StatusCode, Json<Value>);

fn unauthorized() -> Reply {
    (StatusCode::UNAUTHORIZED, Json(json!({"error": "missing bearer token"})))
}

async fn provision(State(s): State<Arc<ChronosDev>>, h: HeaderMap, Json(b): Json<Value>) -> Reply {
    if !authorized(&h) {
        return unauthorized();
    }
    let (Some(job_id), Some(at), Some(cb)) = (b["job_id"].as_str(), b["fire_at"].as_str(), b["agent_callback_url"].as_str()) else {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "job_id, fire_at and agent_callback_url are required"})));
    };
    let Ok(fire_at) = DateTime::parse_from_rfc3339(at) else {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "fire_at must be RFC 3339"})));
    };
    let schedule_id = format!("sch-{}", b["dedup_key"].as_str().unwrap_or(job_id));
    s.timers().insert(
        job_id.to_string(),
        Timer { fire_at: fire_at.with_timezone(&Utc), callback: cb.to_string(), schedule_id: schedule_id.clone() },
    );
    tracing::info!(%job_id, fire_at = %at, "provisioned");
    (StatusCode::OK, Json(json!({"ok": true, "schedule_id": schedule_id})))
}

async fn cancel(State(s): State<Arc<ChronosDev>>, h: HeaderMap, Json(b): Json<Value>) -> Reply {
    if !authorized(&h) {
        return unauthorized();
    }
    if let Some(id) = b["job_id"].as_str() {
        s.timers().remove(id);
    }
    (StatusCode::OK, Json(json!({"ok": true})))
}

async fn list(State(s): State<Arc<ChronosDev>>, h: HeaderMap) -> Reply {
    if !authorized(&h) {
        return unauthorized();
    }
    let mut armed: Vec<Value> = s
        .timers()
        .iter()
        .map(|(k, t)| json!({"job_id": k, "fire_at": t.fire_at.to_rfc3339_opts(SecondsFormat::Secs, true), "schedule_id": t.schedule_id}))
        .collect();
    armed.sort_by(|a, b| a["job_id"].as_str().cmp(&b["job_id"].as_str()));
    (StatusCode::OK, Json(json!({"armed": armed})))
}

async fn jwks(State(s): State<Arc<ChronosDev>>) -> Json<Value> {
    Json(json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": s.public_x, "kid": s.kid, "alg": "EdDSA", "use": "sig"}]}))
}

/// The emulator's router.
pub fn router(state: Arc<ChronosDev>) -> Router {
    Router::new()
        .route("/api/agent-cron/provision", post(provision))
        .route("/api/agent-cron/cancel", post(cancel))
        .route("/api/agent-cron/list", get(list))
        .route("/.well-known/jwks.json", get(jwks))
        .with_state(state)
}

/// Serves the emulator on `listener` until `shutdown`, firing due timers every 250 ms.
pub async fn run(
    listener: tokio::net::TcpListener,
    state: Arc<ChronosDev>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    println!(
        "chronos-dev listening on http://{addr} (JWKS: http://{addr}/.well-known/jwks.json, issuer {}, audience {})",
        state.issuer, state.audience
    );
    let ticker = {
        let s = state.clone();
        tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(250));
            loop {
                iv.tick().await;
                s.fire_due();
            }
        })
    };
    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown).await?;
    ticker.abort();
    Ok(())
}
