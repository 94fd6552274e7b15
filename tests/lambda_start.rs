//! Lazy start on Lambda (issue #33 item 4, docs/design.md#lazy-start), black-box: the
//! real binary under the fake Runtime API (tests/common/lambda.rs). Until it asks for its first
//! event the function makes no store request and creates no SQLite file; the first event
//! opens the store and sees the bundled `jobs.json` synced (a fire of a job the new
//! `jobs.json` changed runs the new job), and the recovery sweep runs after the first
//! response is posted. On DynamoDB (with `HZ_MOTO_ENDPOINT`) the AWS requests are counted
//! through a proxy in front of moto.

#![cfg(feature = "aws")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::lambda::{Function, function_url, start_rapid};
use common::{API_KEY, FakeLlm, TempHome, moto_endpoint, moto_store_env};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The JSON body of an HTTP-shaped Lambda response.
fn body_json(resp: &Value) -> Value {
    serde_json::from_str(resp["body"].as_str().unwrap_or("")).unwrap_or(Value::Null)
}

/// A bundled `jobs.json` with one hourly job `brief` whose prompt is `prompt`.
fn jobs_json(prompt: &str) -> String {
    json!({"jobs": [{"id": "brief", "schedule": "every 1h", "prompt": prompt, "deliver": "local"}]}).to_string()
}

/// Waits (≤ 20 s) until the function asks for its first event: its init is over.
async fn init_done(f: &Function) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.rapid.polls.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the function never asked for its first event");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Every file under `dir`, relative to it.
fn files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn auth() -> Value {
    json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")})
}

/// The jobs the API lists: (id, prompt, next_run_at).
async fn listed_jobs(f: &mut Function) -> Vec<(String, String, String)> {
    let (kind, resp) = f.invoke(function_url("GET", "/api/jobs", auth(), None, false)).await;
    assert_eq!((kind, resp["statusCode"].clone()), ("response", json!(200)), "{resp}");
    let jobs = body_json(&resp)["jobs"].as_array().cloned().unwrap_or_default();
    let text = |j: &Value, k: &str| j[k].as_str().unwrap_or("").to_string();
    jobs.iter().map(|j| (text(j, "id"), text(j, "prompt"), text(j, "next_run_at"))).collect()
}

/// SQLite in a fresh home: no file until the first event, which then finds the store open
/// and `jobs.json` synced. A second sandbox on the same home, after `jobs.json` changed,
/// fires the job as its first event: the fire runs the new prompt (synced before firing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_init_creates_no_store_and_the_first_event_sees_jobs_json() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-lazy");
    home.write("config.yaml", &common::config(Some(&llm), None, ""));
    home.write("cron/jobs.json", &jobs_json("the old brief"));
    let before = files(home.path());
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    init_done(&f).await;
    // Give a store open that would race the `next` request time to show.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(files(home.path()), before, "the init wrote nothing under HERMES_HOME (no SQLite file)");
    assert!(rapid.init_errors.lock().unwrap().is_empty());

    let jobs = listed_jobs(&mut f).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!((jobs[0].0.as_str(), jobs[0].1.as_str()), ("brief", "the old brief"));
    assert!(home.path().join("state.db").exists(), "the first event opened the store: {:?}", files(home.path()));
    let fire_at = jobs[0].2.clone();
    drop(f);

    // A new deployment changes the job; the new sandbox's first event fires it (an hour on).
    home.write("cron/jobs.json", &jobs_json("the new brief"));
    let (api, rapid) = start_rapid().await;
    let mut g = Function::start(&api, rapid.clone(), home.path(), &[("HERMES_CLOCK_OFFSET_SECS", "3700")]);
    let (kind, resp) = g.invoke(json!({"hermes_zero_fire": {"job_id": "brief", "fire_at": fire_at}})).await;
    assert_eq!((kind, resp["status"].clone()), ("response", json!("ok")), "{resp}");
    assert_eq!(llm.calls(), 1);
    let prompt = common::last_user(&llm.requests()[0]);
    assert!(prompt.contains("the new brief") && !prompt.contains("the old brief"), "the deployed job ran: {prompt}");
}

/// A sandbox dies mid-turn on a SQLite home; a later sandbox (the lease expired) does not
/// sweep during its init (the turn is not resumed before it asks for an event), but right
/// after answering its first event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_sweeps_after_the_first_response_not_during_init() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-lazy-sweep");
    home.write("config.yaml", &common::config(Some(&llm), None, ""));
    llm.set_delay(30_000);
    let (api, rapid) = start_rapid().await;
    let mut a = Function::start(&api, rapid.clone(), home.path(), &[("AWS_LAMBDA_LOG_STREAM_NAME", "2026/12/01/[$LATEST]aaaa")]);
    let msg = json!({"chat_id": "c9", "user_id": "u1", "text": "remember the milk", "message_id": "m-9"}).to_string();
    a.queue(function_url("POST", "/api/messages", auth(), Some(msg), false));
    assert!(common::wait_until(20, || llm.calls() == 1).await, "sandbox A never reached the model");
    a.child.kill().ok();
    a.child.wait().ok();
    llm.set_delay(0);

    let (api, rapid) = start_rapid().await;
    let envs = [("AWS_LAMBDA_LOG_STREAM_NAME", "2026/12/01/[$LATEST]cccc"), ("HERMES_CLOCK_OFFSET_SECS", "3700")];
    let mut c = Function::start(&api, rapid.clone(), home.path(), &envs);
    init_done(&c).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(llm.calls(), 1, "no recovery during the init");
    let (_, resp) = c.invoke(function_url("GET", "/healthz", json!({}), None, false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    c.settled().await;
    assert_eq!(llm.calls(), 2, "the first invocation's settle phase resumed the interrupted turn");
    assert!(llm.requests()[1].to_string().contains("interrupted by a gateway restart"));
}

/// DynamoDB and EventBridge Scheduler on moto behind a counting proxy: no AWS request before
/// the first `next`; the first event then reads the table and sees `jobs.json` synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_init_on_dynamodb_makes_no_aws_request() {
    let Some(moto) = moto_endpoint("the lazy Lambda init on DynamoDB") else { return };
    let proxy = common::moto_proxy::linearized(moto).await;
    let table = format!("hz-lazy-{:08x}", rand::random::<u32>());
    let group = format!("hz-lazy-{:08x}", rand::random::<u32>());
    let mut envs: Vec<(&str, &str)> = moto_store_env(&proxy.url, &table).to_vec();
    envs.push(("AWS_ENDPOINT_URL_SCHEDULER", &proxy.url));
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-lazy-ddb");
    let extra = format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    home.write("cron/jobs.json", &jobs_json("the brief"));
    let out = tokio::task::block_in_place(|| common::cli(home.path(), &["doctor", "--create-table"], &envs));
    assert!(common::stdout(&out).contains("created DynamoDB table"), "{}", common::stderr(&out));
    let before = files(home.path());
    let created = proxy.requests();

    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &envs);
    init_done(&f).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(proxy.requests(), created, "no DynamoDB or Scheduler request during the init");
    assert_eq!(files(home.path()), before, "the init wrote nothing under HERMES_HOME");

    let jobs = listed_jobs(&mut f).await;
    assert_eq!(jobs.iter().map(|j| j.0.as_str()).collect::<Vec<_>>(), vec!["brief"], "jobs.json synced before the first event");
    assert!(proxy.requests() > created, "the first event used the table");
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

/// A store that cannot be opened (its directory is a file) does not stop the init: the first
/// event fails with the reason and the process stays up; once the path is usable, the next
/// event opens the store and is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_store_open_failure_fails_the_invocation_and_is_retried() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-lazy-bad");
    home.write("config.yaml", &common::config(Some(&llm), None, "store:\n  path: blocked/state.db\n"));
    home.write("blocked", "a file where the store's directory should be");
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    init_done(&f).await;
    assert!(rapid.init_errors.lock().unwrap().is_empty(), "the init does not open the store");

    let (kind, resp) = f.invoke(function_url("GET", "/api/jobs", auth(), None, false)).await;
    assert_eq!(kind, "error", "{resp}");
    let msg = resp["errorMessage"].as_str().unwrap_or("");
    assert!(msg.contains("cannot open") && msg.contains("blocked/state.db"), "{resp}");
    assert!(f.child.try_wait().unwrap().is_none(), "the process stays up");

    std::fs::remove_file(home.path().join("blocked")).unwrap();
    let (kind, resp) = f.invoke(function_url("GET", "/api/jobs", auth(), None, false)).await;
    assert_eq!((kind, resp["statusCode"].clone()), ("response", json!(200)), "{resp}");
    assert!(home.path().join("blocked/state.db").exists());
}
