//! Duplicate storm against the DynamoDB adapter (issue #7): 500 identical fires (48 at a
//! time) over four `serve` processes sharing one table on the local DynamoDB-API server → exactly
//! one run. Needs `HZ_MOTO_ENDPOINT` (scripts/test.sh starts moto); skipped without it.

#![cfg(feature = "aws")]
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;

const OFFSET: i64 = 3660;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_identical_fires_on_dynamodb_run_once() {
    let Some(moto) = moto_endpoint("dynamodb storm") else { return };
    let endpoint = common::moto_proxy::linearized(moto).await.url;
    let table = format!("hz-storm-{:08x}", rand::random::<u32>());
    let envs = [&moto_store_env(&endpoint, &table)[..], &[("TELEGRAM_BOT_TOKEN", "")]].concat();
    let llm = FakeLlm::start().await;
    let home = TempHome::new("storm-ddb");
    home.write("config.yaml", &config(Some(&llm), None, &pinned_key_chronos("storm")));
    let h = home.path().to_path_buf();
    let e: Vec<(String, String)> = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let out = tokio::task::spawn_blocking(move || {
        let envs: Vec<(&str, &str)> = e.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let created = cli(&h, &["doctor", "--create-table"], &envs);
        let added = cli(&h, &["cron", "add", "every 1h", "storm report", "--name", "storm", "--deliver", "local"], &envs);
        let list = cli(&h, &["cron", "list", "--json"], &envs);
        (created, added, list)
    })
    .await
    .unwrap();
    assert!(out.1.status.success(), "doctor: {} / add: {}", stdout(&out.0), stderr(&out.1));
    let jobs: Value = serde_json::from_str(&stdout(&out.2)).unwrap();
    let fire_at = jobs[0]["next_run_at"].as_str().unwrap().to_string();
    let off = OFFSET.to_string();
    let mut genv: Vec<(&str, &str)> = envs.to_vec();
    genv.push(("HERMES_CLOCK_OFFSET_SECS", &off));
    let gws: Vec<Gateway> = (0..4).map(|_| Gateway::start(home.path(), &genv)).collect();
    // 500 fires, 48 in flight: moto behind the one-at-a-time proxy is slow, and a queue long
    // enough to hit the SDK's attempt timeout makes the SDK retry a transaction with its
    // idempotency token, which DynamoDB honours and moto does not (it would answer
    // "already exists" to our own first write).
    let (ok, dup) = fire_storm(&gws, "storm", &fire_at, "storm", OFFSET, 500, 48).await;
    assert_eq!((ok, dup), (1, 499));
    assert_eq!(llm.calls(), 1, "exactly one run");
}
