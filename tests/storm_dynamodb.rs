//! Duplicate storm against the DynamoDB adapter (issue #7): 500 concurrent identical fires
//! over four `serve` processes sharing one table on the local DynamoDB-API server → exactly
//! one run. Needs `HZ_MOTO_ENDPOINT` (scripts/test.sh starts moto); skipped without it.

#![cfg(feature = "aws")]
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use std::sync::Arc;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");
const OFFSET: i64 = 3660;

/// Forwards one request at a time to moto: moto's transactions are not atomic against
/// concurrent ones (DynamoDB's are), so it is made linearizable the way DynamoDB is.
async fn linearized(upstream: String) -> String {
    let gate = Arc::new(tokio::sync::Mutex::new(reqwest::Client::new()));
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (gate, upstream) = (gate.clone(), upstream.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
            let client = gate.lock().await;
            let mut r = client.request(parts.method, format!("{upstream}{path}")).body(body);
            for (k, v) in &parts.headers {
                if k != axum::http::header::HOST && k != axum::http::header::CONTENT_LENGTH {
                    r = r.header(k, v);
                }
            }
            let resp = r.send().await.unwrap();
            let mut out = axum::response::Response::builder().status(resp.status());
            for (k, v) in resp.headers() {
                if k != axum::http::header::CONTENT_LENGTH && k != axum::http::header::TRANSFER_ENCODING {
                    out = out.header(k, v);
                }
            }
            let bytes = resp.bytes().await.unwrap();
            drop(client);
            out.body(axum::body::Body::from(bytes)).unwrap()
        }
    });
    spawn_server(app).await
}

fn token(job: &str) -> String {
    let now = chrono::Utc::now().timestamp() + OFFSET;
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{FIX}rsa_private.pem")).unwrap()).unwrap();
    let c = json!({"iss": "https://nas.test", "aud": "agent:storm", "iat": now, "exp": now + 120, "purpose": "cron_fire", "job_id": job, "jti": format!("{:x}", rand::random::<u128>())});
    encode(&Header::new(Algorithm::RS256), &c, &key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_identical_fires_on_dynamodb_run_once() {
    let Ok(moto) = std::env::var("HZ_MOTO_ENDPOINT") else {
        println!("dynamodb storm skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
        return;
    };
    let endpoint = linearized(moto).await;
    let table = format!("hz-storm-{:08x}", rand::random::<u32>());
    let envs = [
        ("HERMES_STORE", "dynamodb"),
        ("HERMES_DYNAMODB_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("TELEGRAM_BOT_TOKEN", ""),
    ];
    let llm = FakeLlm::start().await;
    let home = TempHome::new("storm-ddb");
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
    let h = home.path().to_path_buf();
    let e = envs.map(|(k, v)| (k.to_string(), v.to_string()));
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
    let http = reqwest::Client::builder().pool_max_idle_per_host(64).timeout(std::time::Duration::from_secs(120)).build().unwrap();
    let mut tasks = Vec::new();
    for i in 0..500 {
        let url = format!("{}/api/cron/fire", gws[i % 4].base);
        let (http, fire_at, t) = (http.clone(), fire_at.clone(), token("storm"));
        tasks.push(tokio::spawn(async move {
            let r = http.post(url).bearer_auth(t).json(&json!({"job_id": "storm", "fire_at": fire_at})).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }));
    }
    let (mut ok, mut dup) = (0, 0);
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
}
