//! Duplicate storm (issue #7): 500 concurrent valid fires of one occurrence, spread over four
//! `serve` processes on one SQLite file → exactly one run.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");
const OFFSET: i64 = 3660;

fn token(job: &str) -> String {
    let now = chrono::Utc::now().timestamp() + OFFSET;
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{FIX}rsa_private.pem")).unwrap()).unwrap();
    let c = json!({"iss": "https://nas.test", "aud": "agent:storm", "iat": now, "exp": now + 120, "purpose": "cron_fire", "job_id": job, "jti": format!("{:x}", rand::random::<u128>())});
    encode(&Header::new(Algorithm::RS256), &c, &key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_identical_fires_across_four_processes_run_once() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("storm");
    home.write(
        "config.yaml",
        &config(
            Some(&llm),
            None,
            &format!(
                "cron:\n  chronos:\n    portal_url: https://nas.test\n    instance_id: storm\n    public_key_pem: {FIX}rsa_public.pem\n"
            ),
        ),
    );
    let o = cli(home.path(), &["cron", "add", "every 1h", "storm report", "--name", "storm", "--deliver", "local"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let jobs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "list", "--json"], &[]))).unwrap();
    let fire_at = jobs[0]["next_run_at"].as_str().unwrap().to_string();
    let off = OFFSET.to_string();
    let gws: Vec<Gateway> = (0..4).map(|_| Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", &off)])).collect();
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    let tokens: Vec<String> = (0..500).map(|_| token("storm")).collect();
    let mut tasks = Vec::new();
    for (i, t) in tokens.into_iter().enumerate() {
        let url = format!("{}/api/cron/fire", gws[i % 4].base);
        let http = http.clone();
        let fire_at = fire_at.clone();
        tasks.push(tokio::spawn(async move {
            let r = http.post(url).bearer_auth(t).json(&json!({"job_id": "storm", "fire_at": fire_at})).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }));
    }
    let mut ok = 0;
    let mut dup = 0;
    for t in tasks {
        let (s, b) = t.await.unwrap();
        assert_eq!(s, 200, "{b}");
        match b["status"].as_str() {
            Some("ok") => ok += 1,
            Some("duplicate") => dup += 1,
            other => panic!("unexpected {other:?}: {b}"),
        }
    }
    assert_eq!((ok, dup), (1, 499));
    assert_eq!(llm.calls(), 1, "exactly one run");
    let (_, runs) = gws[0].get("/api/jobs/storm/runs").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
}
