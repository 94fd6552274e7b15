//! Duplicate storm (issue #7): 500 concurrent valid fires of one occurrence, spread over four
//! `serve` processes on one SQLite file → exactly one run.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;

const OFFSET: i64 = 3660;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_identical_fires_across_four_processes_run_once() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("storm");
    home.write("config.yaml", &config(Some(&llm), None, &pinned_key_chronos("storm")));
    let o = cli(home.path(), &["cron", "add", "every 1h", "storm report", "--name", "storm", "--deliver", "local"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let jobs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "list", "--json"], &[]))).unwrap();
    let fire_at = jobs[0]["next_run_at"].as_str().unwrap().to_string();
    let off = OFFSET.to_string();
    let gws: Vec<Gateway> = (0..4).map(|_| Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", &off)])).collect();
    let (ok, dup) = fire_storm(&gws, "storm", &fire_at, "storm", OFFSET, 500, 500).await;
    assert_eq!((ok, dup), (1, 499));
    assert_eq!(llm.calls(), 1, "exactly one run");
    let (_, runs) = gws[0].get("/api/jobs/storm/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
}
