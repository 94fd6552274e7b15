//! Bad input through the real router (docs/design.md#safety, issue 7): arbitrary API bodies, Telegram
//! updates, validly signed Discord bodies, fire tokens, job objects and config documents.
//! Each case asserts: no panic, a documented status, a JSON `{"error": …}` body on errors,
//! and — for every refused request — an unchanged store (entries, sessions, transcripts,
//! queues, jobs, claims) and no model call.
//!
//! Every proptest builds a fresh in-memory store per case (background turns of an accepted
//! Discord interaction cannot leak into the next case) and persists no regression files.
//! Generators live in `strategies`; config documents are covered in `config`.

#![allow(clippy::unwrap_used)]

use crate::config::Env;
use crate::core::job::Occurrence;
use crate::http::{HttpState, router};
use crate::test_support::CountingLlm;
use axum::body::{Body, to_bytes};
use axum::http::{HeaderValue, Request};
use base64::Engine;
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signer, SigningKey};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");
const API_KEY: &str = "k1";
const TG_SECRET: &str = "s3cret";
const DISCORD_SEED: [u8; 32] = [11; 32];
/// docs/design.md#safety, #http-api, #fire-callback: every status the router may answer to a client (405 only for
/// a wrong method, also as a JSON error).
const DOCUMENTED: &[u16] = &[200, 201, 202, 400, 401, 404, 405, 413, 429];

fn cases(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

struct Kit {
    state: Arc<HttpState>,
    llm: Arc<CountingLlm>,
    now: DateTime<Utc>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh app: everyone allowed (so accepted updates reach the model), Discord follow-ups
/// to a closed local port, Chronos tokens checked against the fixture RSA key (or `jwks_url`),
/// and one job `j1` due now.
async fn kit(jwks_url: Option<&str>) -> Kit {
    let key_source = jwks_url.map_or_else(|| format!("public_key_pem: {FIX}rsa_public.pem"), |u| format!("jwks_url: {u}"));
    let yaml = format!(
        "allow_all_users: true\nplatforms:\n  discord:\n    api_base: http://127.0.0.1:9\ncron:\n  chronos:\n    portal_url: https://nas.test\n    instance_id: agent-1\n    {key_source}\n"
    );
    let public = hex(&SigningKey::from_bytes(&DISCORD_SEED).verifying_key().to_bytes());
    let env = Env::from_pairs([("TELEGRAM_WEBHOOK_SECRET", TG_SECRET), ("DISCORD_PUBLIC_KEY", public.as_str())]);
    let now: DateTime<Utc> = "2026-12-01T08:00:00Z".parse().unwrap();
    let llm = CountingLlm::new("fine");
    let app = crate::test_support::TestApp::new(now).yaml(&yaml).env(env).llm(llm.clone()).build();
    let mut j = crate::store::conformance::sample_job("j1", Some(now));
    j.deliver = vec!["local".into()];
    app.test_store().put_job(&j).await.unwrap();
    let state = crate::test_support::http_state(app, Some(API_KEY), "builtin");
    Kit { state, llm, now }
}

/// Everything a request could write, plus the model call count.
async fn snapshot(k: &Kit) -> Value {
    let s = k.state.app.test_store();
    let entries = s.list_entries(10_000).await.unwrap();
    let sessions = s.list_sessions(None, 10_000).await.unwrap();
    let mut transcripts = Vec::new();
    for r in &sessions {
        transcripts.push(s.recent_messages(&r.session_id, 10_000).await.unwrap());
    }
    let mut queues = Vec::new();
    for e in &entries {
        queues.push(s.queue_list(&e.session_key).await.unwrap());
    }
    let jobs = s.list_jobs().await.unwrap();
    let runs = s.list_runs("j1", 100).await.unwrap();
    let claim = s.claim_status(&Occurrence::new("j1", k.now)).await.unwrap();
    let calls = k.llm.calls();
    json!({"entries": entries, "sessions": sessions, "transcripts": transcripts, "queues": queues, "jobs": jobs, "runs": runs, "claim": claim, "model_calls": calls})
}

/// Sends `req`; asserts a documented status and a JSON error body on errors; asserts the
/// store is unchanged when the request was refused. Returns the status and parsed body.
async fn send(k: &Kit, req: Request<Body>) -> (u16, Value) {
    let before = snapshot(k).await;
    // Hermes' API server routes (CONTRACT §15: `/v1/…`, `/api/sessions…`) answer in OpenAI's
    // error shape; every other route in `{"error": "…"}`.
    let openai = {
        let p = req.uri().path();
        p.starts_with("/v1/") || p.starts_with("/api/sessions")
    };
    let resp = router(k.state.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    assert!(DOCUMENTED.contains(&status), "undocumented status {status}: {}", String::from_utf8_lossy(&bytes));
    if status >= 400 {
        // (Their unmatched methods and the dashboard's `/api/sessions/reset` keep the plain one.)
        let e = &body["error"];
        let openai_shaped = e["message"].is_string() && e["type"].is_string() && e.as_object().is_some_and(|o| o.contains_key("code"));
        let shaped = e.is_string() || (openai && openai_shaped);
        assert!(shaped && body.as_object().is_some_and(|o| o.len() == 1), "{status}: not a JSON error body: {body}");
        assert_eq!(snapshot(k).await, before, "a refused request ({status} {body}) changed the store");
    }
    (status, body)
}

fn post(path: &str, headers: &[(&str, HeaderValue)], body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post(path).header("content-type", "application/json");
    for (n, v) in headers {
        b = b.header(*n, v.clone());
    }
    b.body(body.into()).unwrap()
}

fn bearer() -> (&'static str, HeaderValue) {
    ("authorization", HeaderValue::from_static("Bearer k1"))
}

mod config;
mod strategies;

use strategies::*;

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn api_messages_never_panic_and_refusals_write_nothing(body in body_of(message_body())) {
        rt().block_on(async {
            let k = kit(None).await;
            let (status, reply) = send(&k, post("/api/messages", &[bearer()], body)).await;
            prop_assert!([200, 202, 400, 429].contains(&status), "{status} {reply}");
            Ok(())
        })?;
    }

    #[test]
    fn telegram_updates_never_panic_and_ignored_ones_write_nothing(body in body_of(tg_update())) {
        rt().block_on(async {
            let k = kit(None).await;
            let before = snapshot(&k).await;
            let secret = HeaderValue::from_static(TG_SECRET);
            let (status, reply) = send(&k, post("/webhooks/telegram", &[("x-telegram-bot-api-secret-token", secret)], body)).await;
            prop_assert!([200, 400].contains(&status), "{status} {reply}");
            if reply["ignored"].is_string() {
                prop_assert_eq!(snapshot(&k).await, before, "an ignored update changed the store");
            }
            Ok(())
        })?;
    }

    #[test]
    fn signed_discord_bodies_never_panic(body in body_of(interaction())) {
        rt().block_on(async {
            let k = kit(None).await;
            let ts = k.now.timestamp().to_string();
            let sig = SigningKey::from_bytes(&DISCORD_SEED).sign(&[ts.as_bytes(), body.as_slice()].concat());
            let headers = [
                ("x-signature-ed25519", HeaderValue::from_str(&hex(&sig.to_bytes())).unwrap()),
                ("x-signature-timestamp", HeaderValue::from_str(&ts).unwrap()),
            ];
            let is_json = serde_json::from_slice::<Value>(&body).is_ok();
            let (status, reply) = send(&k, post("/webhooks/discord", &headers, body)).await;
            prop_assert!([200, 400].contains(&status), "{status} {reply}");
            prop_assert!(is_json || status == 400, "bad JSON must be 400, got {status}");
            Ok(())
        })?;
    }

    #[test]
    fn jobs_are_created_or_refused_whole(jobs in proptest::collection::vec(job_object(), 1..4)) {
        rt().block_on(async {
            let k = kit(None).await;
            for job in jobs {
                let before = k.state.app.test_store().list_jobs().await.unwrap().len();
                let (status, reply) = send(&k, post("/api/jobs", &[bearer()], render(&job))).await;
                prop_assert!([200, 400].contains(&status), "{status} {reply} for {job}");
                let after = k.state.app.test_store().list_jobs().await.unwrap();
                if status == 200 {
                    prop_assert_eq!(after.len(), before + 1);
                    prop_assert!(after.iter().any(|j| reply["job"]["id"] == j.id.as_str()), "{reply}");
                }
            }
            prop_assert_eq!(k.llm.calls(), 0);
            Ok(())
        })?;
    }
}

#[test]
fn every_method_on_every_route_answers_documented_json() {
    let rt = rt();
    proptest!(cases(96), |((method, path) in method_and_path(), body in body_of(arb_json()))| {
        rt.block_on(async {
            let k = kit(None).await;
            let req = Request::builder().method(method).uri(&path).header("content-type", "application/json").header("authorization", "Bearer k1");
            let (status, reply) = send(&k, req.body(Body::from(body)).unwrap()).await;
            let own_auth = path.starts_with("/webhooks/") || path == "/api/cron/fire";
            prop_assert!(status != 401 || own_auth, "{method} {path}: the key was given: {reply}");
            Ok(())
        })?;
    });
}

#[test]
fn oversized_bodies_are_413_json_on_every_post_route() {
    rt().block_on(async {
        let k = kit(None).await;
        let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(crate::http::MAX_BODY));
        let length = ("content-length", HeaderValue::from(big.len()));
        let readers = ["/api/messages", "/api/cron/fire", "/api/jobs", "/webhooks/telegram", "/webhooks/discord"];
        for path in readers.iter().chain(&["/api/jobs/j1/run", "/api/jobs/j1/pause", "/nope"]) {
            let (status, reply) = send(&k, post(path, &[bearer(), length.clone()], big.clone())).await;
            assert_eq!(status, 413, "{path} with Content-Length: {reply}");
        }
        for path in readers {
            let (status, reply) = send(&k, post(path, &[bearer()], big.clone())).await;
            // The fire callback checks its token before it reads a body (docs/design.md#fire-callback): this
            // bearer is no fire token, so 401 comes first; every other route reads, then 413.
            let want = if path == "/api/cron/fire" { 401 } else { 413 };
            assert_eq!(status, want, "{path} streamed: {reply}");
        }
    });
}

/// A JWKS with the fixture EC key as `k1`, served on the current runtime.
async fn jwks_server() -> String {
    let pem = std::fs::read_to_string(format!("{FIX}ec_public.pem")).unwrap();
    let der =
        base64::engine::general_purpose::STANDARD.decode(pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()).unwrap();
    let point = &der[der.len() - 64..];
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(&point[..32]), "y": b64(&point[32..])}]});
    let r = axum::Router::new().route("/jwks.json", axum::routing::get(move || std::future::ready(axum::Json(jwks.clone()))));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, r).await });
    url
}

#[test]
fn forged_fire_tokens_are_401_or_400_without_claim_or_model_call() {
    let rt = rt();
    let jwks = rt.block_on(jwks_server());
    proptest!(cases(96), |(auth in authorization(), body in fire_body(), use_jwks in any::<bool>())| {
        rt.block_on(async {
            let k = kit(use_jwks.then_some(jwks.as_str())).await;
            let headers: Vec<(&str, HeaderValue)> = auth.into_iter().map(|v| ("authorization", v)).collect();
            let (status, reply) = send(&k, post("/api/cron/fire", &headers, body)).await;
            prop_assert!([400, 401].contains(&status), "{status} {reply}");
            if status == 401 {
                prop_assert_eq!(reply, json!({"error": "invalid fire token"}));
            }
            prop_assert_eq!(k.llm.calls(), 0);
            prop_assert!(k.state.app.test_store().claim_status(&Occurrence::new("j1", k.now)).await.unwrap().is_none());
            Ok(())
        })?;
    });
}

/// Wrong or missing credentials for each authenticated route, with an arbitrary body.
fn unauthenticated() -> BoxedStrategy<(&'static str, Vec<(&'static str, HeaderValue)>)> {
    let garbage = "[ -~]{0,40}".prop_filter_map("header text", |v: String| HeaderValue::from_str(&v).ok());
    prop_oneof![
        Just(("/api/messages", vec![])),
        garbage.clone().prop_map(|v| ("/api/jobs", vec![("authorization", v)])),
        Just(("/webhooks/telegram", vec![])),
        garbage.clone().prop_map(|v| ("/webhooks/telegram", vec![("x-telegram-bot-api-secret-token", v)])),
        garbage.prop_map(|v| (
            "/webhooks/discord",
            vec![("x-signature-ed25519", v), ("x-signature-timestamp", HeaderValue::from_static("1"))]
        )),
    ]
    .boxed()
}

/// docs/design.md#safety: every inbound request is authenticated before anything else is looked at, so a
/// caller without credentials learns nothing from the body (not even that it is malformed).
#[test]
fn unauthenticated_requests_are_401_whatever_the_body() {
    let rt = rt();
    proptest!(cases(64), |((path, headers) in unauthenticated(), body in body_of(tg_update()))| {
        rt.block_on(async {
            let k = kit(None).await;
            let (status, reply) = send(&k, post(path, &headers, body)).await;
            prop_assert_eq!(status, 401, "{} {}", path, reply);
            Ok(())
        })?;
    });
}

#[test]
fn deeply_nested_json_is_400_not_a_stack_overflow() {
    rt().block_on(async {
        let k = kit(None).await;
        for depth in [200, 100_000] {
            let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let (status, _) = send(&k, post("/api/messages", &[bearer()], body.clone())).await;
            assert_eq!(status, 400);
            let secret = HeaderValue::from_static(TG_SECRET);
            assert_eq!(send(&k, post("/webhooks/telegram", &[("x-telegram-bot-api-secret-token", secret)], body.clone())).await.0, 400);
            assert_eq!(send(&k, post("/api/jobs", &[bearer()], body)).await.0, 400);
        }
    });
}
