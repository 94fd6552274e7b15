//! `/api/jobs` with Hermes 0.19.0's bodies (issue #32 item 4, docs/api.md#jobs), against the
//! real binary: the request sequence of Hermes' own API-server job tests
//! (`tests/gateway/test_api_server_jobs.py`: the same paths, bodies and expectations) replayed
//! end to end, every refusal changing nothing, and our jobs.json ids and extensions beside it.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

struct Api<'a>(&'a Gateway);

impl Api<'_> {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self.0.http.request(method, format!("{}{path}", self.0.base)).bearer_auth(&self.0.key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().await.unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, path, Some(body)).await
    }

    /// Every stored job, disabled ones included.
    async fn all(&self) -> Vec<Value> {
        self.call(Method::GET, "/api/jobs?include_disabled=true", None).await.1["jobs"].as_array().cloned().unwrap()
    }
}

const HERMES_KEYS: [&str; 28] = hermes_zero::core::job_api::HERMES_JOB_KEYS;

fn is_hermes_id(id: &str) -> bool {
    id.len() == 12 && id.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_own_job_api_test_sequence_passes_against_the_binary() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("jobs-api-hermes");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    let api = Api(&gw);

    // Create: Hermes' body answers 200 {"job"} with Hermes' job dict and a 12-hex id.
    let (s, v) = api.post("/api/jobs", json!({"name": "test-job", "schedule": "*/5 * * * *", "prompt": "do something"})).await;
    assert_eq!(s, 200, "{v}");
    let job = &v["job"];
    for k in HERMES_KEYS {
        assert!(job.get(k).is_some(), "no `{k}` in {job}");
    }
    let id = job["id"].as_str().unwrap().to_string();
    assert!(is_hermes_id(&id), "{id}");
    assert_eq!(
        (job["name"].as_str(), job["prompt"].as_str(), job["deliver"].as_str()),
        (Some("test-job"), Some("do something"), Some("local"))
    );
    assert_eq!(job["schedule"], json!({"kind": "cron", "expr": "*/5 * * * *", "display": "*/5 * * * *"}));
    assert_eq!(job["repeat"], json!({"times": null, "completed": 0}));
    assert_eq!((job["enabled"].as_bool(), job["state"].as_str(), job["skill"].clone()), (Some(true), Some("scheduled"), Value::Null));
    assert!(job["next_run_at"].is_string() && job["created_at"].is_string(), "{job}");

    // List and get.
    let (s, v) = api.call(Method::GET, "/api/jobs", None).await;
    assert_eq!((s, v["jobs"].as_array().unwrap().len(), v["jobs"][0]["id"].as_str()), (200, 1, Some(id.as_str())), "{v}");
    let (s, v) = api.call(Method::GET, &format!("/api/jobs/{id}"), None).await;
    assert_eq!((s, v["job"]["id"].as_str()), (200, Some(id.as_str())), "{v}");

    // Update: whitelisted fields change; unknown ones are dropped; none at all is a 400.
    let (s, v) = api.call(Method::PATCH, &format!("/api/jobs/{id}"), Some(json!({"name": "updated-name", "schedule": "0 * * * *"}))).await;
    assert_eq!(
        (s, v["job"]["name"].as_str(), v["job"]["schedule"]["expr"].as_str()),
        (200, Some("updated-name"), Some("0 * * * *")),
        "{v}"
    );
    let body = json!({"name": "new-name", "evil_field": "malicious", "__proto__": "hack"});
    let (s, v) = api.call(Method::PATCH, &format!("/api/jobs/{id}"), Some(body)).await;
    assert_eq!((s, v["job"]["name"].as_str()), (200, Some("new-name")), "{v}");
    assert!(!v.to_string().contains("malicious") && !v.to_string().contains("hack"), "dropped, not stored: {v}");
    let before = api.all().await;
    let (s, v) = api.call(Method::PATCH, &format!("/api/jobs/{id}"), Some(json!({"evil_field": "malicious"}))).await;
    assert_eq!((s, v), (400, json!({"error": "No valid fields to update"})));
    assert_eq!(api.all().await, before, "a refused update changes nothing");

    // Pause: disabled in Hermes' sense, so the default list hides it.
    let (s, v) = api.post(&format!("/api/jobs/{id}/pause"), json!({})).await;
    assert_eq!((s, v["job"]["enabled"].as_bool(), v["job"]["state"].as_str()), (200, Some(false), Some("paused")), "{v}");
    assert!(v["job"]["paused_at"].is_string(), "{v}");
    assert_eq!(api.call(Method::GET, "/api/jobs", None).await.1["jobs"], json!([]));
    assert_eq!(api.all().await.len(), 1);
    let (s, v) = api.post(&format!("/api/jobs/{id}/resume"), json!({})).await;
    assert_eq!((s, v["job"]["enabled"].as_bool(), v["job"]["state"].as_str()), (200, Some(true), Some("scheduled")), "{v}");

    // Run: the job (Hermes) and our run result beside it.
    let (s, v) = api.post(&format!("/api/jobs/{id}/run"), json!({})).await;
    assert_eq!(
        (s, v["job"]["id"].as_str(), v["status"].as_str(), v["run_status"].as_str()),
        (200, Some(id.as_str()), Some("ok"), Some("ok")),
        "{v}"
    );
    assert_eq!((llm.calls(), v["job"]["last_status"].as_str()), (1, Some("ok")), "{v}");

    // Delete, then the job is gone everywhere.
    let (s, v) = api.call(Method::DELETE, &format!("/api/jobs/{id}"), None).await;
    assert_eq!((s, v["ok"].as_bool()), (200, Some(true)), "{v}");
    for (m, p) in [(Method::GET, ""), (Method::DELETE, ""), (Method::POST, "/pause"), (Method::POST, "/resume"), (Method::POST, "/run")] {
        let (s, v) = api.call(m.clone(), &format!("/api/jobs/{id}{p}"), None).await;
        assert_eq!((s, v), (404, json!({"error": "Job not found"})), "{m} {p}");
    }
    assert_eq!(llm.calls(), 1, "nothing ran for an unknown job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_hermes_errors_and_change_nothing() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("jobs-api-bad");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    let api = Api(&gw);
    let (s, v) = api.post("/api/jobs", json!({"name": "keep", "schedule": "every 1h", "prompt": "p"})).await;
    assert_eq!(s, 200, "{v}");
    let id = v["job"]["id"].as_str().unwrap().to_string();
    let before = api.all().await;
    let long_name = "x".repeat(201);
    let long_prompt = "x".repeat(5001);
    for (body, want) in [
        (json!({"schedule": "*/5 * * * *", "prompt": "do something"}), "Name is required"),
        (json!({"name": long_name, "schedule": "*/5 * * * *"}), "Name must be ≤ 200 characters"),
        (json!({"name": "test-job", "schedule": "*/5 * * * *", "prompt": long_prompt}), "Prompt must be ≤ 5000 characters"),
        (json!({"name": "test-job", "schedule": "*/5 * * * *", "repeat": 0}), "Repeat must be a positive integer"),
        (json!({"name": "test-job", "schedule": "*/5 * * * *", "repeat": "twice"}), "Repeat must be a positive integer"),
        (json!({"name": "test-job"}), "Schedule is required"),
    ] {
        let (s, v) = api.post("/api/jobs", body.clone()).await;
        assert_eq!((s, v), (400, json!({"error": want})), "{body}");
    }
    // Our own checks still speak after Hermes' (a schedule that does not parse).
    let (s, v) = api.post("/api/jobs", json!({"name": "n", "schedule": "sometimes", "prompt": "p"})).await;
    assert!(s == 400 && v["error"].as_str().unwrap().contains("accepted forms"), "{s} {v}");
    // A path id outside the id alphabet is Hermes' 400 on every route, before anything else.
    for (m, p) in [
        (Method::GET, ""),
        (Method::PATCH, ""),
        (Method::DELETE, ""),
        (Method::POST, "/pause"),
        (Method::POST, "/resume"),
        (Method::POST, "/run"),
        (Method::GET, "/runs"),
    ] {
        let (s, v) = api.call(m.clone(), &format!("/api/jobs/not-a-valid-hex!{p}"), Some(json!({"name": "x"}))).await;
        assert_eq!((s, v), (400, json!({"error": "Invalid job ID format"})), "{m} {p}");
        let (s, v) = api.call(m.clone(), &format!("/api/jobs/aabbccddeeff{p}"), Some(json!({"name": "x"}))).await;
        assert_eq!((s, v), (404, json!({"error": "Job not found"})), "{m} {p}");
    }
    // Over-long fields on PATCH too.
    let (s, v) = api.call(Method::PATCH, &format!("/api/jobs/{id}"), Some(json!({"prompt": "x".repeat(5001)}))).await;
    assert_eq!((s, v), (400, json!({"error": "Prompt must be ≤ 5000 characters"})));
    assert_eq!(api.all().await, before, "no refusal changed anything");
    assert_eq!(llm.calls(), 0);
    // No key: 401 before any of it.
    let r = gw.http.get(format!("{}/api/jobs/not-a-valid-hex!", gw.base)).send().await.unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_json_ids_and_our_extensions_work_beside_hermes_shapes() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("jobs-api-ours");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    home.write(
        "cron/jobs.json",
        r#"{"jobs":[{"id":"daily-news-summary","schedule":{"kind":"cron","expr":"0 8 * * *"},"prompt":"news"},
            {"id":"off","schedule":"every 1h","prompt":"p","enabled":false}]}"#,
    );
    let gw = Gateway::start(home.path(), &[]);
    let api = Api(&gw);
    // A jobs.json id (not 12-hex) is reachable; a disabled job is listed only when asked.
    let (s, v) = api.call(Method::GET, "/api/jobs/daily-news-summary", None).await;
    assert_eq!((s, v["job"]["schedule"]["expr"].as_str()), (200, Some("0 8 * * *")), "{v}");
    let (_, v) = api.call(Method::GET, "/api/jobs", None).await;
    let ids: Vec<&str> = v["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["daily-news-summary"], "{v}");
    for q in ["true", "1", "TRUE"] {
        let (_, v) = api.call(Method::GET, &format!("/api/jobs?include_disabled={q}"), None).await;
        assert_eq!(v["jobs"].as_array().unwrap().len(), 2, "{q}: {v}");
    }
    // Our extensions: an `id` of our own, jobs.json fields, Hermes' parsed schedule object.
    let body = json!({"id": "mine", "schedule": {"kind": "interval", "minutes": 90}, "prompt": "p", "overlap": "allow",
        "retry": [60], "deliver": "local", "repeat": 2});
    let (s, v) = api.post("/api/jobs", body).await;
    assert_eq!(s, 200, "{v}");
    let j = &v["job"];
    assert_eq!((j["id"].as_str(), j["name"].as_str(), j["overlap"].as_str()), (Some("mine"), Some("mine"), Some("allow")), "{j}");
    assert_eq!((j["retry"].clone(), j["repeat"]["times"].as_u64(), j["schedule"]["minutes"].as_u64()), (json!([60]), Some(2), Some(90)));
    // A job is also found by its exact name; PATCH takes our extensions.
    let (s, v) = api.post("/api/jobs", json!({"name": "morning", "schedule": "0 7 * * *", "prompt": "p"})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = api.call(Method::PATCH, "/api/jobs/morning", Some(json!({"spread": 120, "timezone": "Europe/Berlin"}))).await;
    assert_eq!((s, v["job"]["spread"].as_u64(), v["job"]["timezone"].as_str()), (200, Some(120), Some("Europe/Berlin")), "{v}");
    // `enabled: true` on a paused job resumes it; `enabled: false` disables it.
    api.post("/api/jobs/morning/pause", json!({})).await;
    let (_, v) = api.call(Method::PATCH, "/api/jobs/morning", Some(json!({"enabled": true}))).await;
    assert_eq!((v["job"]["enabled"].as_bool(), v["job"]["state"].as_str()), (Some(true), Some("scheduled")), "{v}");
    let (_, v) = api.call(Method::PATCH, "/api/jobs/morning", Some(json!({"enabled": false}))).await;
    assert_eq!(v["job"]["enabled"].as_bool(), Some(false), "{v}");
    let (_, v) = api.post("/api/jobs/morning/resume", json!({})).await;
    assert_eq!(v["job"]["enabled"].as_bool(), Some(true), "resume enables it again, as Hermes: {v}");
    // Two jobs may share a name, as in Hermes; the name then stops addressing either.
    let (s, _) = api.post("/api/jobs", json!({"name": "morning", "schedule": "0 9 * * *", "prompt": "p"})).await;
    assert_eq!(s, 200);
    let (s, v) = api.call(Method::GET, "/api/jobs/morning", None).await;
    assert!(s == 400 && v["error"].as_str().unwrap().contains("several jobs"), "{s} {v}");
}
