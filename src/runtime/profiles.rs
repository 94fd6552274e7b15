//! Many profiles on one process (docs/design.md#profiles): the routes `/p/<profile>/…` in
//! front of every route of the router, and the bounded cache `profile → app` behind them.
//! A profile's app is built on the first request for it, from `<root>/profiles/<name>/`
//! (config, SOUL, skills, jobs, `.env` secrets) over the process's one store handle in the
//! profile's key space; concurrent first requests build it once, and beyond the bound the
//! least recently used is dropped (its running work finishes; the next request rebuilds it).
//! Routes without the prefix are the process's own profile's, unchanged. Every request under
//! the prefix passes the profile's gate (`profile_gate`) before anything of it is built.

use super::profile_gate::{Asked, Gate, Kind};
use super::{BaseStore, Wired};
use crate::app::App;
use crate::channels::Channels;
use crate::config::{Env, EventBridgeSettings};
use crate::core::profile::Profile;
use crate::http::error::ApiError;
use crate::http::{HttpState, router};
use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;
use tower::ServiceExt;

/// Apps kept at most (each holds its config, clients and channel registry).
pub const CAPACITY: usize = 256;

/// What every profile served by a process shares with the process's own profile.
#[derive(Clone)]
pub struct Shared {
    /// The one store handle, before a key space is applied.
    pub base: BaseStore,
    /// The root home (`<root>/profiles/<name>/` are the profiles).
    pub root: PathBuf,
    /// The process environment (a routed profile sees only its deployment-wide names).
    pub env: Env,
    /// The lease owner id of this process.
    pub owner: Option<String>,
    /// The deployment's EventBridge Scheduler group, target and role (the process's own
    /// profile's `cron.eventbridge`, environment included): every routed profile arms its
    /// schedules there, whatever its own `config.yaml` says (docs/design.md#profiles).
    pub eventbridge: EventBridgeSettings,
}

/// One served profile: its app and its router (the same routes as the process's own).
#[derive(Clone)]
pub struct Served {
    /// The use cases.
    pub app: App,
    /// Its channels.
    pub channels: Arc<Channels>,
    /// Its routes.
    pub router: Router,
}

/// The process's profiles: its own (the default) and the routed ones, cached.
pub struct Profiles {
    default_profile: Profile,
    default: Served,
    shared: Shared,
    /// `serve`: a profile without `API_SERVER_KEY` gets a random key in `<its home>/api_key`
    /// as the default does; Lambda: its API refuses everything.
    local_keys: bool,
    capacity: usize,
    cache: Mutex<Lru>,
    /// The routed profiles' gates (at most `capacity`; a full map starts over).
    gates: Mutex<HashMap<Profile, Arc<Gate>>>,
    /// Apps built so far (logged; tests check "once").
    builds: std::sync::atomic::AtomicUsize,
    /// What timers should call, once known (the Lambda function's ARN): told to every app.
    timer_target: std::sync::OnceLock<String>,
}

#[derive(Default)]
struct Lru {
    clock: u64,
    map: HashMap<Profile, (u64, Arc<OnceCell<Served>>)>,
}

impl Profiles {
    /// The profiles of a process whose own profile is `default_profile`, served by `default`.
    pub fn new(default_profile: Profile, default: Served, shared: Shared, local_keys: bool) -> Arc<Self> {
        Self::with_capacity(default_profile, default, shared, local_keys, CAPACITY)
    }

    /// [`Profiles::new`], keeping at most `capacity` (≥ 1) routed apps.
    pub fn with_capacity(default_profile: Profile, default: Served, shared: Shared, local_keys: bool, capacity: usize) -> Arc<Self> {
        let (cache, builds) = (Mutex::default(), Default::default());
        let timer_target = std::sync::OnceLock::new();
        let gates = Mutex::default();
        Arc::new(Self { default_profile, default, shared, local_keys, capacity: capacity.max(1), cache, gates, builds, timer_target })
    }

    /// Tells every app, the default, the cached ones and those built later, what its timers
    /// should call (the Lambda entry passes its ARN from each invocation context).
    pub fn learn_timer_target(&self, target: &str) {
        let _ = self.timer_target.set(target.to_string());
        self.default.app.learn_timer_target(target);
        for s in self.cached() {
            s.app.learn_timer_target(target);
        }
    }

    /// How many routed apps have been built (each first request, and again after eviction).
    pub fn builds(&self) -> usize {
        self.builds.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The served profile named `name`: 404 when the name is invalid or the profile has no
    /// directory, 500 when its configuration cannot be loaded (the reason is logged).
    pub async fn get(&self, name: &str) -> Result<Served, ApiError> {
        let unknown = || ApiError::new(StatusCode::NOT_FOUND, format!("unknown profile `{name}`"));
        let profile = Profile::parse(name).map_err(|_| unknown())?;
        if profile == self.default_profile {
            return Ok(self.default.clone());
        }
        if !profile.is_main() && !profile.home(&self.shared.root).is_dir() {
            return Err(unknown());
        }
        let cell = self.cell(&profile);
        let built = cell.get_or_try_init(|| self.build(&profile)).await;
        built.cloned().map_err(|e| {
            tracing::error!(%profile, error = %e, "profile cannot be served");
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("profile `{profile}` cannot be served: see the log"))
        })
    }

    /// The cache slot of `profile` (marked used now), evicting the least recently used.
    fn cell(&self, profile: &Profile) -> Arc<OnceCell<Served>> {
        let mut lru = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lru.clock += 1;
        let now = lru.clock;
        if let Some((used, cell)) = lru.map.get_mut(profile) {
            *used = now;
            return cell.clone();
        }
        if lru.map.len() >= self.capacity
            && let Some(oldest) = lru.map.iter().min_by_key(|(_, (used, _))| *used).map(|(p, _)| p.clone())
        {
            lru.map.remove(&oldest);
            // Its gate goes too: the next build reads the profile's files again, and so does its gate.
            self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&oldest);
        }
        let cell = Arc::new(OnceCell::new());
        lru.map.insert(profile.clone(), (now, cell.clone()));
        cell
    }

    /// The gate of the routed profile named `name`; None when there is no such profile (an
    /// invalid name, no directory), it is the process's own, or its `.env` cannot be read
    /// (logged). Reads the profile's `.env` (and API key file) once; builds nothing.
    fn gate(&self, name: &str) -> Option<Arc<Gate>> {
        let profile = Profile::parse(name).ok().filter(|p| *p != self.default_profile)?;
        let home = profile.home(&self.shared.root);
        if !profile.is_main() && !home.is_dir() {
            return None;
        }
        let mut gates = self.gates.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(g) = gates.get(&profile) {
            return Some(g.clone());
        }
        let gate = match Gate::open(&profile, &home, &self.shared.env, self.local_keys) {
            Ok(g) => Arc::new(g),
            Err(e) => {
                tracing::error!(%profile, error = %e, "profile cannot be served");
                return None;
            }
        };
        if gates.len() >= self.capacity {
            gates.clear();
        }
        gates.insert(profile, gate.clone());
        Some(gate)
    }

    /// Builds the app of a routed profile from its home and syncs its `jobs.json`.
    async fn build(&self, profile: &Profile) -> Result<Served, String> {
        self.builds.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let home = profile.home(&self.shared.root);
        let env = crate::config::profile_env::routed_env(&self.shared.env, &home)?;
        let mut cfg = crate::config::load_settings(&home, None, &env).map_err(|e| format!("configuration error: {e}"))?;
        cfg.profile = profile.clone();
        cfg.store_home = Some(self.shared.root.clone());
        carry_profile_in_callback(&mut cfg);
        deployment_eventbridge(&mut cfg, &self.shared.eventbridge);
        for w in &cfg.warnings {
            tracing::warn!(%profile, "{w}");
        }
        let Wired { app, channels, .. } = super::wire_on(&home, cfg, self.shared.owner.clone(), self.shared.base.clone(), true);
        // Before the jobs file is synced: syncing arms timers, which need the target.
        if let Some(target) = self.timer_target.get() {
            app.learn_timer_target(target);
        }
        app.mcp_warm().await;
        if let Err(e) = app.jobs().sync_file().await {
            tracing::error!(%profile, error = %e, "jobs.json refused; the stored jobs are unchanged");
        }
        let api_key = if self.local_keys {
            Some(super::serve::api_key(&app).map_err(|e| format!("API key: {e}"))?)
        } else {
            app.configured_api_key()
        };
        let state = Arc::new(HttpState { app: app.clone(), channels: channels.clone(), api_key, provider: app.provider().as_str().into() });
        tracing::info!(%profile, model = app.model_name(), "profile loaded");
        Ok(Served { router: router(state), app, channels })
    }

    /// The process's own profile.
    pub fn default(&self) -> &Served {
        &self.default
    }

    /// The routed profiles built and still cached.
    pub fn cached(&self) -> Vec<Served> {
        let lru = self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lru.map.values().filter_map(|(_, c)| c.get().cloned()).collect()
    }

    /// Every profile of the root home other than the default: `main` and each directory
    /// under `<root>/profiles/` with a valid name.
    pub fn others_on_disk(&self) -> Vec<Profile> {
        let dirs = std::fs::read_dir(self.shared.root.join("profiles")).into_iter().flatten().flatten();
        let named = dirs.filter(|e| e.path().is_dir()).filter_map(|e| Profile::parse(&e.file_name().to_string_lossy()).ok());
        std::iter::once(Profile::main()).chain(named).filter(|p| *p != self.default_profile).collect()
    }

    /// One ticker pass (sweep, due jobs) for the default profile, then for every other
    /// profile on disk, built through the cache: a routed profile's jobs run even before a
    /// request for it arrives. `main` is ticked only when it has a `config.yaml`.
    pub async fn tick_all(&self, wait: bool) {
        super::ticker::tick(&self.default.app, wait).await;
        for p in self.others_on_disk() {
            if p.is_main() && !self.shared.root.join("config.yaml").is_file() {
                continue;
            }
            match self.get(p.as_str()).await {
                Ok(s) => super::ticker::tick(&s.app, wait).await,
                Err(_) => tracing::warn!(profile = %p, "tick skipped: the profile cannot be served"),
            }
        }
    }
}

/// The router of a process: the default profile's routes, and `/p/<profile>/…` for every
/// profile (the same routes, that profile's app and secrets). The prefix is served by the
/// fallback, not a route with parameters, so the profile's own handlers see only their
/// own path parameters.
pub fn routes(profiles: Arc<Profiles>) -> Router {
    profiles.default.router.clone().fallback(move |req: Request| dispatch(profiles.clone(), req))
}

/// Serves one `/p/<profile>/…` request with that profile's router, the prefix removed,
/// once the profile's gate admits it (a profile that does not exist admits nothing, so an
/// unauthenticated caller gets the same answer for both); any other unknown path is 404.
async fn dispatch(profiles: Arc<Profiles>, req: Request) -> Response {
    let Some((name, rest)) = split_prefix(req.uri()) else {
        return ApiError::new(StatusCode::NOT_FOUND, "not found").into_response();
    };
    let (mut parts, body) = req.into_parts();
    match rest.parse() {
        Ok(uri) => parts.uri = uri,
        Err(_) => return ApiError::new(StatusCode::NOT_FOUND, "not found").into_response(),
    }
    let kind = Kind::of(&parts.method, parts.uri.path());
    let own = Profile::parse(&name).is_ok_and(|p| p == profiles.default_profile);
    let router = if kind == Kind::Static || own {
        profiles.default.router.clone()
    } else {
        // A webhook's signature covers the body: read it (within the limit) before the check.
        let (bytes, body) = if kind == Kind::Webhook {
            match axum::body::to_bytes(body, crate::http::MAX_BODY).await {
                Ok(b) => (b.clone(), axum::body::Body::from(b)),
                Err(_) => return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "request body is larger than 1 MiB").into_response(),
            }
        } else {
            (axum::body::Bytes::new(), body)
        };
        let asked = Asked {
            method: &parts.method,
            path: parts.uri.path(),
            query: parts.uri.query(),
            headers: &parts.headers,
            body: &bytes,
            now: profiles.default.app.now(),
        };
        let admitted = match profiles.gate(&name) {
            Some(gate) => gate.admits(kind, &asked).await,
            None => false,
        };
        if !admitted {
            tracing::debug!(profile = %name, "routed request refused before the profile was built");
            return kind.refusal().into_response();
        }
        match profiles.get(&name).await {
            Ok(s) => return serve(s.router, Request::from_parts(parts, body)).await,
            Err(e) => return e.into_response(),
        }
    };
    serve(router, Request::from_parts(parts, body)).await
}

/// One request through `router`.
async fn serve(router: Router, req: Request) -> Response {
    match router.oneshot(req).await {
        Ok(r) => r,
        Err(e) => match e {},
    }
}

/// `/p/<name>/<rest>?<q>` → (`<name>`, `/<rest>?<q>`).
fn split_prefix(uri: &axum::http::Uri) -> Option<(String, String)> {
    let after = uri.path().strip_prefix("/p/")?;
    let (name, rest) = after.split_once('/').map_or((after, "/".to_string()), |(n, r)| (n, format!("/{r}")));
    let rest = match uri.query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest,
    };
    Some((name.to_string(), rest))
}

/// A routed profile's fire callback carries its prefix: a configured
/// `…/api/cron/fire` without `/p/<name>/` becomes `…/p/<name>/api/cron/fire`.
fn carry_profile_in_callback(cfg: &mut crate::config::Loaded) {
    let marker = format!("/p/{}/", cfg.profile);
    let url = &mut cfg.settings.cron.chronos.callback_url;
    if !url.contains(&marker)
        && let Some(base) = url.strip_suffix("/api/cron/fire")
    {
        *url = format!("{base}{marker}api/cron/fire");
    }
}

/// A routed profile's EventBridge group, target and role are the deployment's: the
/// schedules of every profile live in the one group the function's role may manage and
/// invoke the function itself, so an agent's own `config.yaml` cannot point them elsewhere
/// (a different value there is ignored, with a warning).
fn deployment_eventbridge(cfg: &mut crate::config::Loaded, deployment: &EventBridgeSettings) {
    let own = &cfg.settings.cron.eventbridge;
    let default = EventBridgeSettings::default();
    let set_apart = [
        ("group", &own.group, &deployment.group, &default.group),
        ("target_arn", &own.target_arn, &deployment.target_arn, &default.target_arn),
        ("role_arn", &own.role_arn, &deployment.role_arn, &default.role_arn),
    ];
    for (key, own, deployment, default) in set_apart {
        if own != deployment && own != default {
            cfg.warnings.push(format!("cron.eventbridge.{key} is ignored in a routed profile: the deployment's `{deployment}` applies"));
        }
    }
    cfg.settings.cron.eventbridge = deployment.clone();
}

#[cfg(test)]
#[path = "profiles_tests.rs"]
mod tests;
