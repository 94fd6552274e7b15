//! `hermes-zero serve`: the HTTP router on a listener (and Telegram long polling when
//! configured), graceful stop on SIGTERM/SIGINT or after `--idle-exit SECS` idle.
//! Takes its resources (listener, app and channels, shutdown future) as arguments.

use crate::app::{App, Wake};
use crate::http::{HttpState, router};
use crate::runtime::Wired;
use crate::runtime::idle::Activity;
use crate::runtime::profiles::{Profiles, Served};
use rand::Rng;
use secrecy::SecretString;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Returns the API key: `API_SERVER_KEY` if set, else the one in `<home>/api_key`, created
/// (mode 0600) on first use. The key itself is never logged.
pub fn api_key(app: &App) -> std::io::Result<SecretString> {
    api_key_at(app.configured_api_key(), app.home())
}

/// [`api_key`] of the home `home` whose `API_SERVER_KEY` is `configured` (what a routed
/// profile's gate checks before the profile is built).
pub fn api_key_at(configured: Option<SecretString>, home: &std::path::Path) -> std::io::Result<SecretString> {
    if let Some(k) = configured {
        return Ok(k);
    }
    let path = home.join("api_key");
    if let Ok(k) = std::fs::read_to_string(&path)
        && !k.trim().is_empty()
    {
        return Ok(SecretString::from(k.trim().to_string()));
    }
    let key: String = rand::rng().sample_iter(rand::distr::Alphanumeric).take(40).map(char::from).collect();
    super::private::write_private(&path, &key)?;
    eprintln!("API_SERVER_KEY is not set: created a random API key in {} (mode 0600)", path.display());
    Ok(SecretString::from(key))
}

/// Resolves when SIGTERM or SIGINT arrives.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
}

/// Serves the router on `listener` (at once `/healthz` only; every route once start-up
/// recovery has run, see [`super::ready`]) until `shutdown` resolves (or, with `idle_exit`, until the
/// process has been idle that long: see [`super::idle`]), with the built-in ticker. On
/// stopping: stop taking turns, notify and mark running sessions, drain for up to
/// `restart_drain_timeout`, write the clean-shutdown marker only if the drain finished, and
/// arm a wake for stored chat work that is left (docs/design.md#wakes).
pub async fn run(
    listener: TcpListener,
    wired: Wired,
    shutdown: impl Future<Output = ()> + Send + 'static,
    idle_exit: Option<Duration>,
    polling: Option<super::telegram_poll::Polling>,
) -> anyhow::Result<()> {
    let Wired { app, channels, shared } = wired;
    let key = api_key(&app)?;
    let addr = listener.local_addr()?;
    let state =
        Arc::new(HttpState { app: app.clone(), channels: channels.clone(), api_key: Some(key), provider: app.provider().as_str().into() });
    let default = Served { app: app.clone(), channels: channels.clone(), router: router(state) };
    let profiles = Profiles::new(app.profile().clone(), default, shared, true);
    // The router answers `/healthz` from here on; every other route waits behind the gate
    // until start-up recovery has run (docs/design.md#recovery).
    let (opener, gate) = super::ready::gate();
    let activity = Arc::new(Activity::default());
    let routes = super::profiles::routes(profiles.clone())
        .layer(axum::middleware::from_fn_with_state(gate, super::ready::hold))
        .layer(axum::middleware::from_fn_with_state(activity.clone(), super::idle::track));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // `into_make_service`: each connection gets a clone of the router (a reference count);
    // serving the `Router` itself rebuilt its route table per connection (≈ 14 KiB each,
    // 8.8 MiB with 500 connections open: BENCHMARKS §9).
    // No Nagle delay: an SSE answer is many small writes, and each waited for the client's
    // delayed ACK of the one before (≈ 40 ms per stream: BENCHMARKS §9).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY not set");
        }
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, routes.into_make_service())
            .with_graceful_shutdown(async move {
                let _ = stop_rx.await;
            })
            .await
    });
    if let Err(e) = recover(&app).await {
        // The waiting requests get 503 (the opener is dropped), and the process exits.
        drop(opener);
        server.abort();
        return Err(e);
    }
    opener.open();
    let ticker = tokio::spawn(super::ticker::run(profiles.clone()));
    let usage = tokio::spawn(flush_usage_every_minute(app.clone()));
    let (poll_stop, poll_rx) = tokio::sync::watch::channel(false);
    let polls = polling.is_some();
    let poller = polling.map(|p| tokio::spawn(super::telegram_poll::run(p, app.clone(), channels.clone(), poll_rx)));
    tracing::info!(%addr, store = app.store_kind(), model = app.model_name(), idle_exit_secs = idle_exit.map(|d| d.as_secs()), "hermes-zero listening");
    // Printed once every route is served (after start-up recovery): what scripts and tests wait for.
    println!("hermes-zero listening on http://{addr}");
    let idle = async {
        match idle_exit {
            Some(_) if polls => {
                tracing::info!("not exiting when idle: Telegram long polling runs in this process and nobody could wake it");
                std::future::pending().await
            }
            Some(d) => super::idle::wait(&app, &activity, d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = shutdown => tracing::info!("shutdown requested: draining running turns"),
        () = idle => tracing::info!(idle_secs = idle_exit.map(|d| d.as_secs()), "idle: stopping"),
    }
    ticker.abort();
    usage.abort();
    // Stop polling first: what Telegram still holds waits there for the next start.
    let _ = poll_stop.send(true);
    if let Some(p) = poller {
        let _ = tokio::time::timeout(Duration::from_secs(5), p).await;
    }
    let routed: Vec<App> = profiles.cached().into_iter().map(|s| s.app).collect();
    for a in std::iter::once(&app).chain(&routed) {
        a.recovery().begin_shutdown().await;
    }
    let _ = stop_tx.send(());
    let drained = app.recovery().finish_shutdown().await;
    for a in &routed {
        a.recovery().finish_shutdown().await;
        arm_leftover_wake(a).await;
        a.flush_usage(true).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), server).await;
    arm_leftover_wake(&app).await;
    app.flush_usage(true).await;
    tracing::info!(clean = drained, "hermes-zero stopped");
    Ok(())
}

/// Start-up recovery, before any route but `/healthz` is served: the jobs.json sync, the
/// timer reconcile, then the startup sweep (which marks the interrupted turns and wakes
/// stored work). Its error stops `serve`.
async fn recover(app: &App) -> anyhow::Result<()> {
    // After `listen` (lazy start): the MCP servers' cached tools, offered before any turn.
    super::offer_tools_and_sync_jobs(app).await;
    let choice = app.provider_choice(false);
    tracing::info!(provider = %choice.provider, why = %choice.why, "timer provider");
    app.recovery().reconcile_if_managed().await;
    app.recovery().startup_sweep().await?;
    Ok(())
}

/// Writes the usage counted in memory once a minute (docs/design.md#usage).
async fn flush_usage_every_minute(app: App) {
    let mut every = tokio::time::interval(Duration::from_secs(60));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        every.tick().await;
        app.flush_usage(false).await;
    }
}

/// After the drain: arms a wake for the stored chat work that is left (turns the drain cut,
/// queued messages), this process's leases counting as abandoned now.
async fn arm_leftover_wake(app: &App) {
    match app.recovery().arm_wake(true).await {
        Ok(Wake::NotNeeded | Wake::Armed(_)) => {}
        Ok(Wake::Unarmed(at)) => tracing::warn!(
            wake_at = %at,
            "stored chat work waits and the built-in ticker stops with this process: it runs at the next start (configure Chronos to be woken)"
        ),
        // Logged by the arm.
        Ok(Wake::Failed(..)) => {}
        Err(e) => tracing::error!(error = %e, "could not look for stored chat work before stopping"),
    }
}
