//! Hot-path benchmarks, in process with the real embedded store (a file, WAL) and an
//! instant model: message turns, fires (JWT verify + claim + advance + run + record), store
//! calls per operation, and growth with transcript length and job count.
//!
//! Run: `cargo bench --bench paths` (results go to BENCHMARKS.md by hand, with the machine);
//! `cargo bench --bench paths -- transcript` runs one group (`message`, `transcript`, `fire`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use axum::body::Body;
use axum::http::Request;
use chrono::{DateTime, Utc};
use hermes_zero::app::App;
use hermes_zero::config::{Env, load_settings, parse_yaml};
use hermes_zero::core::ids::SessionId;
use hermes_zero::core::job::Occurrence;
use hermes_zero::core::session::{Message, Role};
use hermes_zero::http::{HttpState, router};
use hermes_zero::ports::{JobStore, SessionStore};
use hermes_zero::store::counting::{CountingStore, breakdown};
use hermes_zero::store::sqlite::SqliteStore;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{job, msg, pct};
use tower::ServiceExt;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");

fn app(dir: &std::path::Path) -> (App, Arc<CountingStore>) {
    let yaml =
        format!("cron:\n  chronos:\n    portal_url: https://nas.test\n    instance_id: bench\n    public_key_pem: {FIX}rsa_public.pem\n");
    let (settings, _) = parse_yaml(&yaml, "bench").unwrap();
    let mut cfg = load_settings(dir, None, &Env::default()).unwrap();
    cfg.settings = settings;
    let store = Arc::new(CountingStore::new(Arc::new(SqliteStore::open(&dir.join("state.db")).unwrap())));
    let app = support::app(dir, cfg, store.clone());
    (app, store)
}

fn report(name: &str, mut lat: Vec<Duration>, wall: Duration) {
    let n = lat.len();
    let max = lat.iter().max().copied().unwrap_or_default().as_secs_f64() * 1000.0;
    println!(
        "| {name} | {n} | {:.3} | {:.3} | {:.3} | {:.0} |",
        pct(&mut lat, 0.5),
        pct(&mut lat, 0.99),
        max,
        n as f64 / wall.as_secs_f64()
    );
}

async fn message_path(dir: &std::path::Path) {
    let (app, store) = app(dir);
    app.sessions().handle_inbound(msg("warm", "hi")).await.unwrap();
    store.take();
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for i in 0..1000 {
        let t = Instant::now();
        app.sessions().handle_inbound(msg("one", &format!("m{i}"))).await.unwrap();
        lat.push(t.elapsed());
    }
    let counts = store.take();
    let calls = counts.values().sum::<u64>() as f64 / 1000.0;
    report("message turn, one chat (sequential)", lat, t0.elapsed());
    let mut tasks = Vec::new();
    let t0 = Instant::now();
    for c in 0..100 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let mut l = Vec::new();
            for i in 0..10 {
                let t = Instant::now();
                app.sessions().handle_inbound(msg(&format!("c{c}"), &format!("m{i}"))).await.unwrap();
                l.push(t.elapsed());
            }
            l
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    report("message turn, 100 chats concurrently", lat, t0.elapsed());
    println!("\nstore port calls per message turn: {calls:.1} (1000 turns: {})", breakdown(&counts));
}

async fn transcript_growth(dir: &std::path::Path) {
    let (app, store) = app(dir);
    for n in [10usize, 1000, 10_000] {
        let chat = format!("grow{n}");
        let out = app.sessions().handle_inbound(msg(&chat, "seed")).await.unwrap();
        let id = SessionId::parse(&out.session_id).unwrap();
        // `n` stored messages in batches of at most 500 (the seed turn's 2 come first).
        let old: Vec<Message> = (0..n).map(|i| Message::text(Role::User, format!("old {i}"), Utc::now())).collect();
        for batch in old.chunks(500) {
            store.append_messages(&id, batch, None).await.unwrap();
        }
        let mut lat = Vec::new();
        let t0 = Instant::now();
        for i in 0..100 {
            let t = Instant::now();
            app.sessions().handle_inbound(msg(&chat, &format!("q{i}"))).await.unwrap();
            lat.push(t.elapsed());
        }
        report(&format!("message turn, transcript of {n} messages"), lat, t0.elapsed());
    }
}

fn token(job: &str) -> String {
    let now = Utc::now().timestamp();
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{FIX}rsa_private.pem")).unwrap()).unwrap();
    let c = json!({"iss": "https://nas.test", "aud": "agent:bench", "iat": now, "exp": now + 120, "purpose": "cron_fire", "job_id": job, "jti": format!("{:x}", rand::random::<u64>())});
    encode(&Header::new(Algorithm::RS256), &c, &key).unwrap()
}

async fn fire_path(dir: &std::path::Path, jobs: usize, concurrency: usize, label: &str) {
    let (app, store) = app(dir);
    let at = DateTime::from_timestamp(Utc::now().timestamp() - 5, 0).unwrap();
    for i in 0..jobs {
        store.put_job(&job(&format!("j{i}"), at)).await.unwrap();
    }
    let fires = jobs.min(1000);
    let tokens: Vec<(String, String)> = (0..fires).map(|i| (format!("j{i}"), token(&format!("j{i}")))).collect();
    let state = Arc::new(HttpState { app: app.clone(), channels: Arc::default(), api_key: None, provider: "chronos".into() });
    store.take();
    let sem = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (id, tok) in tokens {
        let (state, sem) = (state.clone(), sem.clone());
        tasks.push(tokio::spawn(async move {
            let _p = sem.acquire().await.unwrap();
            let body = json!({"job_id": id, "fire_at": at.to_rfc3339()}).to_string();
            let rq = Request::post("/api/cron/fire")
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {tok}"))
                .body(Body::from(body))
                .unwrap();
            let t = Instant::now();
            let r = router(state).oneshot(rq).await.unwrap();
            assert_eq!(r.status(), 200);
            t.elapsed()
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.push(t.await.unwrap());
    }
    let counts = store.take();
    let calls = counts.values().sum::<u64>() as f64 / fires as f64;
    report(label, lat, t0.elapsed());
    println!("\nstore port calls per fire ({label}): {calls:.1} ({fires} fires: {})", breakdown(&counts));
}

fn main() {
    // Test runners list targets with `--list`: this binary has no tests to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let base = std::env::temp_dir().join(format!("hz-bench-{}", std::process::id()));
    let sub = |n: &str| {
        let d = base.join(n);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    // `cargo bench --bench paths -- message transcript fire`: only the named groups (all by
    // default), e.g. to profile one of them.
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let run = |group: &str| only.is_empty() || only.iter().any(|o| o == group);
    println!("| path | n | p50 ms | p99 ms | max ms | per s |\n|---|---|---|---|---|---|");
    rt.block_on(async {
        if run("message") {
            message_path(&sub("msg")).await;
        }
        if run("transcript") {
            transcript_growth(&sub("grow")).await;
        }
        if run("fire") {
            fire_path(&sub("fire1"), 1000, 1, "fire, 1000 distinct jobs, sequential").await;
            fire_path(&sub("fire8"), 1000, 8, "fire, 1000 distinct jobs due at once, 8 in flight").await;
            fire_path(&sub("fire10"), 10, 1, "fire, 10 jobs in store").await;
            fire_path(&sub("fire10k"), 10_000, 1, "fire, 10,000 jobs in store (1,000 fired)").await;
        }
    });
    std::fs::remove_dir_all(base).ok();
    let _ = Occurrence::new("x", Utc::now());
}
