//! Retry of a run that had no effect (issue #30 item 1, docs/jobs.md#retry-of-a-run-that-had-no-effect), black-box: two
//! `serve` processes on one SQLite file, a fake model answering 503 then 200, Chronos fire
//! tokens naming the occurrence and then the attempt.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

const OFFSET: i64 = 3660;
const INSTANCE: &str = "retry";

fn home_with(llm: &FakeLlm, tg: &FakeTelegram, tag: &str) -> TempHome {
    let home = TempHome::new(tag);
    // One model try per call (the client's own retries would hide the 503), no ticker pass
    // during the test (the fires are the test's).
    let extra = format!("{}  tick_interval_seconds: 3600\nagent:\n  api_max_retries: 1\n", pinned_key_chronos(INSTANCE));
    home.write("config.yaml", &config(Some(llm), Some(tg), &extra));
    home
}

/// Fires `job_id` (a job id or an attempt's key) on `gw` with a valid token; the answer.
async fn fire(gw: &Gateway, job_id: &str, fire_at: Option<&str>) -> Value {
    let body = match fire_at {
        Some(at) => json!({"job_id": job_id, "fire_at": at}),
        None => json!({"job_id": job_id}),
    };
    let r = gw
        .http
        .post(format!("{}/api/cron/fire", gw.base))
        .bearer_auth(rsa_fire_token(job_id, INSTANCE, OFFSET))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    r.json().await.unwrap()
}

/// The attempt key of attempt `n` of the occurrence `fire_at` (RFC 3339) of `job`.
fn key(job: &str, fire_at: &str, n: u32) -> String {
    let at = chrono::DateTime::parse_from_rfc3339(fire_at).unwrap().with_timezone(&chrono::Utc);
    format!("retry~{job}~{}~{n}", at.format("%Y%m%dT%H%M%SZ"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_then_200_is_delivered_once_across_two_processes_with_both_attempts_recorded() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = home_with(&llm, &tg, "retry-two");
    let o = cli(home.path(), &["cron", "add", "every 1h", "retry report", "--name", "rt", "--deliver", "telegram:42"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let jobs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "list", "--json"], &[]))).unwrap();
    let fire_at = jobs[0]["next_run_at"].as_str().unwrap().to_string();
    let off = OFFSET.to_string();
    let gws: Vec<Gateway> = (0..2).map(|_| Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", &off)])).collect();
    llm.push(Reply::Status(503));
    llm.push(Reply::Text("the report".into()));

    let first = fire(&gws[0], "rt", Some(&fire_at)).await;
    assert_eq!(
        (first["status"].as_str(), first["run_status"].as_str(), first["attempt"].as_u64()),
        (Some("ok"), Some("error"), Some(1)),
        "{first}"
    );
    assert!(tg.sent().is_empty(), "no failure summary before the last attempt");
    let (_, job) = gws[1].get("/api/jobs/rt").await;
    assert_eq!(job["job"]["retry_due"]["attempt"], 2, "{job}");

    // The attempt, fired twice on each process at once: one runs, three are duplicates.
    let k = key("rt", &fire_at, 2);
    let fires = [&gws[0], &gws[1], &gws[0], &gws[1]].map(|g| fire(g, &k, None));
    let answers = futures_util::future::join_all(fires).await;
    let ran: Vec<&Value> = answers.iter().filter(|a| a["status"] == "ok").collect();
    assert_eq!(ran.len(), 1, "{answers:?}");
    assert_eq!((ran[0]["run_status"].as_str(), ran[0]["attempt"].as_u64()), (Some("ok"), Some(2)), "{answers:?}");
    assert_eq!(answers.iter().filter(|a| a["status"] == "duplicate").count(), 3, "{answers:?}");
    assert_eq!(llm.calls(), 2, "one model call per attempt");
    let sent = tg.wait_for(1, 10).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0]["text"].as_str().unwrap().contains("the report"), "{sent:?}");
    // The occurrence and the attempt fired again are duplicates too.
    assert_eq!(fire(&gws[1], "rt", Some(&fire_at)).await["status"], "duplicate");
    assert_eq!(fire(&gws[0], &k, None).await["status"], "duplicate");

    // Every attempt is shown with its number: REST and `cron runs --json`.
    let (_, runs) = gws[0].get("/api/jobs/rt/runs").await;
    let mut attempts: Vec<(u64, String)> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["attempt"].as_u64().unwrap(), r["status"].as_str().unwrap().to_string()))
        .collect();
    attempts.sort();
    assert_eq!(attempts, [(1, "error".to_string()), (2, "ok".to_string())]);
    let o = cli(home.path(), &["cron", "runs", "rt", "--json"], &[]);
    let cli_runs: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(cli_runs.as_array().unwrap().len(), 2);
    assert!(cli_runs.as_array().unwrap().iter().any(|r| r["attempt"] == 2 && r["status"] == "ok"), "{cli_runs}");
    assert!(stdout(&cli(home.path(), &["cron", "runs", "rt"], &[])).contains("attempt 2"));
    assert_eq!(tg.sent().len(), 1, "still delivered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_off_delivers_the_summary_at_once_and_a_paused_jobs_attempt_runs_nothing() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = home_with(&llm, &tg, "retry-off");
    for (name, retry) in [("off", "[]"), ("paused", "[60]")] {
        let o = cli(home.path(), &["cron", "add", "every 1h", &format!("{name} report"), "--name", name, "--deliver", "telegram:42"], &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let o = cli(home.path(), &["cron", "edit", name, "--retry", retry], &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let jobs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "list", "--json"], &[]))).unwrap();
    let at = |name: &str| jobs.as_array().unwrap().iter().find(|j| j["id"] == name).unwrap()["next_run_at"].as_str().unwrap().to_string();
    let off = OFFSET.to_string();
    let gw = Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", &off)]);
    llm.push(Reply::Status(503));
    let r = fire(&gw, "off", Some(&at("off"))).await;
    assert_eq!(r["run_status"], "error", "{r}");
    // The summary, then the job's one failure alert (to its own target: no failure_deliver).
    let sent = tg.wait_for(2, 10).await;
    let text = |i: usize| sent[i]["text"].as_str().unwrap().to_string();
    assert!(sent.len() == 2 && text(0).contains("failed") && text(1).contains("is failing"), "`retry: []`: the summary at once: {sent:?}");
    let (_, job) = gw.get("/api/jobs/off").await;
    assert!(job["job"].is_object() && job["job"]["retry_due"].is_null(), "{job}");

    llm.push(Reply::Status(503));
    let paused_at = at("paused");
    assert_eq!(fire(&gw, "paused", Some(&paused_at)).await["run_status"], "error");
    let o = cli(home.path(), &["cron", "pause", "paused"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = fire(&gw, &key("paused", &paused_at, 2), None).await;
    assert_eq!(r["status"], "paused", "{r}");
    assert_eq!(llm.calls(), 2, "the paused job's attempt ran nothing");
    assert_eq!(tg.sent().len(), 2, "nothing more delivered");
}
