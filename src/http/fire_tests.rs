//! The fire-token attack table (docs/design.md#fire-token), in process through the router with a manual
//! clock: every forged or misused token gets 401 `invalid fire token`, no model call and
//! no claim; a valid token fires the occurrence exactly once.

use crate::app::App;
use crate::core::job::Occurrence;
use crate::http::router;
use crate::test_support::CountingLlm;
use axum::body::{Body, to_bytes};
use axum::http::Request;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tower::ServiceExt;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");
const AUD: &str = "agent:agent-1";
const ISS: &str = "https://nas.test";

struct Kit {
    app: App,
    /// Built once, as at wiring time: the verifier (and its JWKS cache) lives in it.
    state: Arc<crate::http::HttpState>,
    llm: Arc<CountingLlm>,
    now: DateTime<Utc>,
}

async fn kit(key_source: &str) -> Kit {
    let yaml = format!("cron:\n  chronos:\n    portal_url: {ISS}\n    instance_id: agent-1\n    {key_source}\n");
    let now: DateTime<Utc> = "2026-12-01T08:00:00Z".parse().unwrap();
    let llm = CountingLlm::new("report");
    let app = crate::test_support::TestApp::new(now).yaml(&yaml).llm(llm.clone()).build();
    // A job due exactly now.
    let mut j = crate::store::conformance::sample_job("j1", Some(now));
    j.deliver = vec!["local".into()];
    app.test_store().put_job(&j).await.unwrap();
    let state = crate::test_support::http_state(app.clone(), None, "chronos");
    Kit { app, state, llm, now }
}

fn claims(k: &Kit) -> Value {
    let t = k.now.timestamp();
    json!({"iss": ISS, "aud": AUD, "iat": t, "nbf": t, "exp": t + 120, "purpose": "cron_fire", "job_id": "j1", "jti": format!("{:x}", rand::random::<u64>())})
}

fn rsa_token(c: &Value) -> String {
    rsa_token_with("rsa_private.pem", c)
}

/// A well-formed RS256 token, signed by a second, real RSA key the verifier does not trust.
fn other_rsa_token(c: &Value) -> String {
    rsa_token_with("rsa_other_private.pem", c)
}

fn rsa_token_with(file: &str, c: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(&std::fs::read(format!("{FIX}{file}")).unwrap()).unwrap();
    encode(&Header::new(Algorithm::RS256), c, &key).unwrap()
}

async fn fire(k: &Kit, token: Option<&str>, job: &str) -> (u16, Value) {
    let mut rq = Request::post("/api/cron/fire").header("content-type", "application/json");
    if let Some(t) = token {
        rq = rq.header("authorization", format!("Bearer {t}"));
    }
    let body = json!({"job_id": job, "fire_at": "2026-12-01T08:00:00Z"}).to_string();
    let resp = router(k.state.clone()).oneshot(rq.body(Body::from(body)).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    (status, serde_json::from_slice(&to_bytes(resp.into_body(), usize::MAX).await.unwrap()).unwrap_or(Value::Null))
}

fn with(k: &Kit, f: impl Fn(&mut Value)) -> Value {
    let mut c = claims(k);
    f(&mut c);
    c
}

#[tokio::test]
async fn forged_and_misused_tokens_are_refused_without_detail() {
    let k = kit(&format!("public_key_pem: {FIX}rsa_public.pem")).await;
    let rsa_pub = std::fs::read(format!("{FIX}rsa_public.pem")).unwrap();
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let valid = rsa_token(&claims(&k));
    let mut tampered: Vec<String> = valid.split('.').map(str::to_string).collect();
    tampered[1] = b64(&with(&k, |c| c["job_id"] = json!("j1-other")));
    let t = k.now.timestamp();
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing token", None),
        ("garbage", Some("not.a.jwt".into())),
        ("alg none", Some(format!("{}.{}.", b64(&json!({"alg": "none", "typ": "JWT"})), b64(&claims(&k))))),
        (
            "HS256 with the RSA public key as secret",
            Some(encode(&Header::new(Algorithm::HS256), &claims(&k), &EncodingKey::from_secret(&rsa_pub)).unwrap()),
        ),
        ("wrong aud", Some(rsa_token(&with(&k, |c| c["aud"] = json!("agent:someone-else"))))),
        ("missing aud", Some(rsa_token(&with(&k, |c| drop(c.as_object_mut().unwrap().remove("aud")))))),
        ("wrong iss", Some(rsa_token(&with(&k, |c| c["iss"] = json!("https://evil.test"))))),
        (
            "expired past leeway",
            Some(rsa_token(&with(&k, |c| {
                c["iat"] = json!(t - 200);
                c["exp"] = json!(t - 31);
            }))),
        ),
        ("nbf in the future past leeway", Some(rsa_token(&with(&k, |c| c["nbf"] = json!(t + 31))))),
        ("missing purpose", Some(rsa_token(&with(&k, |c| drop(c.as_object_mut().unwrap().remove("purpose")))))),
        ("wrong purpose", Some(rsa_token(&with(&k, |c| c["purpose"] = json!("login"))))),
        ("lifetime over 600 s", Some(rsa_token(&with(&k, |c| c["exp"] = json!(t + 601))))),
        ("missing exp", Some(rsa_token(&with(&k, |c| drop(c.as_object_mut().unwrap().remove("exp")))))),
        ("tampered payload", Some(tampered.join("."))),
        ("job_id mismatch", Some(rsa_token(&with(&k, |c| c["job_id"] = json!("another-job"))))),
        ("signed by another RSA key", Some(other_rsa_token(&claims(&k)))),
    ];
    assert!(cases.len() >= 15);
    for (name, token) in &cases {
        let (s, body) = fire(&k, token.as_deref(), "j1").await;
        assert_eq!((s, body.clone()), (401, json!({"error": "invalid fire token"})), "case: {name}");
    }
    assert_eq!(k.llm.calls(), 0, "no model call");
    assert!(k.app.test_store().claim_status(&Occurrence::new("j1", k.now)).await.unwrap().is_none(), "nothing claimed");
    // Replay: the same jti twice (first for a job that is gone, so nothing runs and no claim
    // could stop the second). Only the jti store refuses it, judged by the app's clock.
    let once = rsa_token(&with(&k, |c| c["job_id"] = json!("missing-job")));
    assert_eq!(fire(&k, Some(&once), "missing-job").await, (200, json!({"status": "gone"})));
    assert_eq!(fire(&k, Some(&once), "missing-job").await, (401, json!({"error": "invalid fire token"})), "replayed jti");
    // A fresh jti with the same claims is not a replay: the refusal above was the jti's.
    assert_eq!(fire(&k, Some(&rsa_token(&with(&k, |c| c["job_id"] = json!("missing-job")))), "missing-job").await.0, 200);
    // Leeway: exp 29 s ago is still accepted, and the valid token fires exactly once.
    let ok = rsa_token(&with(&k, |c| {
        c["iat"] = json!(t - 100);
        c["exp"] = json!(t - 29);
    }));
    let (s, body) = fire(&k, Some(&ok), "j1").await;
    assert_eq!((s, body["status"].as_str()), (200, Some("ok")), "{body}");
    assert_eq!(k.llm.calls(), 1);
    assert_eq!(fire(&k, Some(&valid), "j1").await.1["status"], "duplicate");
    assert_eq!(k.llm.calls(), 1);
}

#[tokio::test]
async fn an_rs256_token_is_not_verified_against_an_ec_key() {
    let k = kit(&format!("public_key_pem: {FIX}ec_public.pem")).await;
    assert_eq!(fire(&k, Some(&rsa_token(&claims(&k))), "j1").await.0, 401);
    let ec = EncodingKey::from_ec_pem(&std::fs::read(format!("{FIX}ec_private.pem")).unwrap()).unwrap();
    let good = encode(&Header::new(Algorithm::ES256), &claims(&k), &ec).unwrap();
    assert_eq!(fire(&k, Some(&good), "j1").await.1["status"], "ok");
    assert_eq!(k.llm.calls(), 1);
}

#[tokio::test]
async fn jwks_keys_are_selected_by_kid_and_unknown_kids_refused() {
    // Serve a JWKS with the EC key (x, y from the uncompressed point at the end of the SPKI DER).
    let pem = std::fs::read_to_string(format!("{FIX}ec_public.pem")).unwrap();
    let der =
        base64::engine::general_purpose::STANDARD.decode(pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()).unwrap();
    let point = &der[der.len() - 64..];
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": URL_SAFE_NO_PAD.encode(&point[..32]), "y": URL_SAFE_NO_PAD.encode(&point[32..])}]});
    let fetches = Arc::new(AtomicUsize::new(0));
    let f2 = fetches.clone();
    let r = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            f2.fetch_add(1, Ordering::SeqCst);
            let j = jwks.clone();
            async move { axum::Json(j) }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, r).await });
    let k = kit(&format!("jwks_url: {url}")).await;
    let ec = EncodingKey::from_ec_pem(&std::fs::read(format!("{FIX}ec_private.pem")).unwrap()).unwrap();
    let mut h = Header::new(Algorithm::ES256);
    h.kid = Some("nope".into());
    assert_eq!(fire(&k, Some(&encode(&h, &claims(&k), &ec).unwrap()), "j1").await.0, 401, "unknown kid");
    h.kid = Some("nope-again".into());
    assert_eq!(fire(&k, Some(&encode(&h, &claims(&k), &ec).unwrap()), "j1").await.0, 401);
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "unknown kids refresh the JWKS at most once per 30 s");
    h.kid = Some("k1".into());
    assert_eq!(fire(&k, Some(&encode(&h, &claims(&k), &ec).unwrap()), "j1").await.1["status"], "ok");
}

#[tokio::test]
async fn bad_bodies_are_400_with_a_valid_token_and_401_without() {
    let k = kit(&format!("public_key_pem: {FIX}rsa_public.pem")).await;
    for body in ["{", "{}", r#"{"job_id":""}"#, r#"{"job_id":"j1","fire_at":"yesterday"}"#] {
        let post = || Request::post("/api/cron/fire").header("content-type", "application/json");
        // The token is checked before the body is read: without one, 401 whatever the body.
        let resp = router(k.state.clone()).oneshot(post().body(Body::from(body)).unwrap()).await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "no token: {body}");
        let rq = post().header("authorization", format!("Bearer {}", rsa_token(&claims(&k)))).body(Body::from(body)).unwrap();
        let resp = router(k.state.clone()).oneshot(rq).await.unwrap();
        assert_eq!(resp.status().as_u16(), 400, "valid token: {body}");
    }
    assert_eq!(k.llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_valid_fires_run_the_occurrence_once() {
    let k = Arc::new(kit(&format!("public_key_pem: {FIX}rsa_public.pem")).await);
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            let token = rsa_token(&claims(&k));
            fire(&k, Some(&token), "j1").await
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        let (s, b) = t.await.unwrap();
        assert_eq!(s, 200, "{b}");
        statuses.push(b["status"].as_str().unwrap().to_string());
    }
    assert_eq!(statuses.iter().filter(|s| *s == "ok").count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| *s == "duplicate").count(), 49, "{statuses:?}");
    assert_eq!(k.llm.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_fire_mode_answers_202_and_runs_in_the_background() {
    let k = kit(&format!("public_key_pem: {FIX}rsa_public.pem\n    fire_mode: async")).await;
    let (s, b) = fire(&k, Some(&rsa_token(&claims(&k))), "j1").await;
    assert_eq!((s, b), (202, json!({"status": "accepted"})));
    for _ in 0..100 {
        if k.llm.calls() == 1 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the accepted fire never ran");
}
