//! The profile cache and the `/p/<profile>/` routes through the real router, over one
//! SQLite file: unknown names (answered as a wrong key is), the route table under the prefix, build-once and eviction.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::store::sqlite::SqliteStore;
use crate::test_support::TestApp;
use axum::body::{Body, to_bytes};
use serde_json::Value;

/// A root home with profiles `a`, `b`, `c` (API keys from their `.env`) and the default
/// (`main`, key `k-main`) served over the same store file.
fn setup(tag: &str, capacity: usize) -> (Arc<Profiles>, PathBuf) {
    let root = std::env::temp_dir().join(format!("hz-profiles-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for p in ["a", "b", "c"] {
        std::fs::create_dir_all(root.join("profiles").join(p)).unwrap();
        std::fs::write(root.join("profiles").join(p).join(".env"), format!("API_SERVER_KEY=k-{p}\n")).unwrap();
    }
    let base = BaseStore::Sqlite(SqliteStore::open(&root.join("state.db")).unwrap());
    let env = Env::from_pairs([("API_SERVER_KEY", "k-main")]);
    let app = TestApp::new(chrono::Utc::now()).home(root.clone()).env(env.clone()).build();
    let state = crate::test_support::http_state(app.clone(), Some("k-main"), "builtin");
    let default = Served { app, channels: state.channels.clone(), router: router(state) };
    let shared = Shared { base, root: root.clone(), env, owner: None, eventbridge: Default::default() };
    (Profiles::with_capacity(Profile::main(), default, shared, false, capacity), root)
}

async fn call(p: &Arc<Profiles>, method: &str, path: &str, key: &str) -> (u16, Value) {
    let req = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let resp = routes(p.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Every route answers under `/p/<profile>/` as it does without the prefix (with that
/// profile's key), and under an unknown or invalid profile as to a wrong key (a JSON 401).
#[tokio::test]
async fn every_route_is_served_under_the_prefix() {
    let (p, root) = setup("table", 8);
    let table = [
        ("GET", "/healthz"),
        ("POST", "/api/messages"),
        ("POST", "/api/cron/fire"),
        ("GET", "/api/jobs"),
        ("POST", "/api/jobs"),
        ("GET", "/api/jobs/none"),
        ("POST", "/api/jobs/none/run"),
        ("GET", "/api/jobs/none/runs"),
        ("GET", "/api/memory"),
        ("GET", "/api/sessions"),
        ("GET", "/api/sessions/20260101_000000_abcdef12"),
        ("POST", "/webhooks/telegram"),
        ("GET", "/api/nothing"),
        ("DELETE", "/api/sessions"),
    ];
    for (method, path) in table {
        let (plain, _) = call(&p, method, path, "k-main").await;
        for (prefix, key) in [("/p/a", "k-a"), ("/p/main", "k-main"), ("/p/default", "k-main")] {
            let (s, v) = call(&p, method, &format!("{prefix}{path}"), key).await;
            assert_eq!(s, plain, "{method} {prefix}{path}: {v}");
        }
        // An unknown or invalid profile admits no key: the answer of a known profile to a
        // wrong key, status and body (an unauthenticated caller cannot tell them apart).
        let refused = call(&p, method, &format!("/p/a{path}"), "k-wrong").await;
        assert_eq!((refused.0, refused.1["error"].is_string()), (401, true), "{method} /p/a{path}: {refused:?}");
        for ghost in ["/p/ghost", "/p/Ghost", "/p/a%2Fb", "/p/-x"] {
            let answer = call(&p, method, &format!("{ghost}{path}"), "k-a").await;
            assert_eq!(answer, refused, "{method} {ghost}{path}");
        }
    }
    // Keys are per profile: a's key opens a's API only.
    assert_eq!(call(&p, "GET", "/p/a/api/jobs", "k-a").await.0, 200);
    assert_eq!(call(&p, "GET", "/p/b/api/jobs", "k-a").await.0, 401);
    assert_eq!(call(&p, "GET", "/api/jobs", "k-a").await.0, 401);
    assert_eq!(call(&p, "GET", "/p/a/api/jobs", "k-main").await.0, 401);
    std::fs::remove_dir_all(root).unwrap();
}

/// Concurrent first requests build a profile once; beyond the bound the least recently
/// used is dropped and built again on its next request.
#[tokio::test]
async fn built_once_and_bounded() {
    let (p, root) = setup("lru", 2);
    let firsts: Vec<_> = (0..16).map(|_| call(&p, "GET", "/p/a/api/jobs", "k-a")).collect();
    for (s, v) in futures_util::future::join_all(firsts).await {
        assert_eq!(s, 200, "{v}");
    }
    assert_eq!(p.builds(), 1, "16 concurrent first requests, one build");
    call(&p, "GET", "/p/b/api/jobs", "k-b").await;
    call(&p, "GET", "/p/a/api/jobs", "k-a").await;
    call(&p, "GET", "/p/c/api/jobs", "k-c").await;
    assert_eq!((p.builds(), p.cached().len()), (3, 2), "b, the least recently used, was dropped");
    call(&p, "GET", "/p/a/api/jobs", "k-a").await;
    assert_eq!(p.builds(), 3, "a stayed");
    call(&p, "GET", "/p/b/api/jobs", "k-b").await;
    assert_eq!(p.builds(), 4, "b is built again");
    let mut names: Vec<String> = p.others_on_disk().iter().map(|p| p.to_string()).collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c"].map(String::from), "the default (main) is not among the others");
    std::fs::remove_dir_all(root).unwrap();
}

/// A routed profile's EventBridge group, target and role are the deployment's, whatever its
/// own `config.yaml` says (a different value there is named in a warning).
#[test]
fn a_routed_profile_uses_the_deployments_eventbridge_settings() {
    let deployment = crate::config::EventBridgeSettings {
        group: "hz-deploy".into(),
        target_arn: "arn:aws:lambda:us-east-1:123456789012:function:hz".into(),
        role_arn: "arn:aws:iam::123456789012:role/hz-scheduler".into(),
    };
    let mut cfg = crate::config::load_settings(std::path::Path::new("/nonexistent"), None, &Env::default()).unwrap();
    deployment_eventbridge(&mut cfg, &deployment);
    let eb = &cfg.settings.cron.eventbridge;
    assert_eq!(
        (eb.group.as_str(), eb.target_arn.as_str(), eb.role_arn.as_str()),
        (&*deployment.group, &*deployment.target_arn, &*deployment.role_arn)
    );
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);

    let mut cfg = crate::config::load_settings(std::path::Path::new("/nonexistent"), None, &Env::default()).unwrap();
    cfg.settings.cron.eventbridge.role_arn = "arn:aws:iam::999999999999:role/elsewhere".into();
    deployment_eventbridge(&mut cfg, &deployment);
    assert_eq!(cfg.settings.cron.eventbridge.role_arn, deployment.role_arn);
    assert_eq!(cfg.warnings.len(), 1, "{:?}", cfg.warnings);
    assert!(cfg.warnings[0].contains("cron.eventbridge.role_arn is ignored"), "{:?}", cfg.warnings);
}
