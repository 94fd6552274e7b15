//! The cost of `synchronous=FULL` (docs/design.md#guarantees): message turns and claim
//! writes against the real embedded store on a file (WAL), at the `synchronous` level named by
//! `HZ_BENCH_SQLITE_SYNC` (`FULL`, the shipped level, or `NORMAL`). The variable is read only
//! in builds with the `testing` feature.
//!
//! Run: `scripts/bench/sync.sh` (both levels, results go to BENCHMARKS.md by hand).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use chrono::{DateTime, Utc};
use hermes_zero::app::App;
use hermes_zero::config::{Env, load_settings};
use hermes_zero::core::job::Occurrence;
use hermes_zero::ports::*;
use hermes_zero::store::sqlite::SqliteStore;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{job, msg, pct};

fn app(dir: &std::path::Path, store: Arc<dyn Store>) -> App {
    support::app(dir, load_settings(dir, None, &Env::default()).unwrap(), store)
}

fn report(level: &str, name: &str, mut lat: Vec<Duration>, wall: Duration) {
    let n = lat.len();
    let max = lat.iter().max().copied().unwrap_or_default().as_secs_f64() * 1000.0;
    let (p50, p99) = (pct(&mut lat, 0.5), pct(&mut lat, 0.99));
    println!("| {level} | {name} | {n} | {p50:.3} | {p99:.3} | {max:.3} | {:.0} |", n as f64 / wall.as_secs_f64());
}

async fn turns(level: &str, dir: &std::path::Path, n: usize) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.join("state.db")).unwrap());
    let app = app(dir, store);
    app.sessions().handle_inbound(msg("warm", "hi")).await.unwrap();
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        app.sessions().handle_inbound(msg("one", &format!("m{i}"))).await.unwrap();
        lat.push(t.elapsed());
    }
    report(level, "message turn, one chat (sequential)", lat, t0.elapsed());
}

async fn claims(level: &str, dir: &std::path::Path, n: usize) {
    let store = SqliteStore::open(&dir.join("state.db")).unwrap();
    let at = DateTime::from_timestamp(Utc::now().timestamp(), 0).unwrap();
    let mut jobs = Vec::new();
    for i in 0..n {
        jobs.push(store.put_job(&job(&format!("j{i}"), at)).await.unwrap());
    }
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for j in &jobs {
        let mut next = j.clone();
        next.next_run_at = Some(at + chrono::Duration::hours(1));
        let t = Instant::now();
        let c = store.claim_occurrence(&Occurrence::new(&j.id, at), &next, at).await.unwrap();
        lat.push(t.elapsed());
        assert!(matches!(c, Claim::Claimed(_)));
    }
    report(level, "claim (insert claim + advance job, one transaction)", lat, t0.elapsed());
    let mut lat = Vec::new();
    let t0 = Instant::now();
    for j in &jobs {
        let t = Instant::now();
        assert!(store.ledger_begin(&Occurrence::new(&j.id, at), "telegram:1:", at).await.unwrap());
        lat.push(t.elapsed());
    }
    report(level, "delivery ledger begin", lat, t0.elapsed());
}

fn main() {
    // Test runners list targets with `--list`: this binary has no tests to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let level = std::env::var("HZ_BENCH_SQLITE_SYNC").unwrap_or_else(|_| "FULL".into());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let base = std::env::temp_dir().join(format!("hz-bench-sync-{}", std::process::id()));
    let sub = |n: &str| {
        let d = base.join(n);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    rt.block_on(async {
        turns(&level, &sub("turns"), 500).await;
        claims(&level, &sub("claims"), 1000).await;
    });
    std::fs::remove_dir_all(base).ok();
}
