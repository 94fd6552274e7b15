//! Black-box tests of failure alerts and budgets (docs/jobs.md#failure-alerts, #budgets): two
//! `serve` processes on one home (one SQLite file) share a job's failing streak, so three
//! failed runs then a success give one alert and one "recovered" line at the failure target;
//! a job's `max_tokens` stops its run before the model call that would pass it.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

async fn run(gw: &Gateway, id: &str) -> Value {
    let r = gw.http.post(format!("{}/api/jobs/{id}/run", gw.base)).bearer_auth(API_KEY).send().await.unwrap();
    r.json().await.unwrap()
}

fn texts_to(tg: &FakeTelegram, chat: &str) -> Vec<String> {
    tg.sent()
        .into_iter()
        .filter(|m| m["chat_id"].to_string().trim_matches('"') == chat)
        .map(|m| m["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A home whose jobs deliver to chat 111 and whose failure alerts go to chat 999, so a run's
/// own line is alone at 111.
fn budget_home(home: &TempHome, llm: &FakeLlm, tg: &FakeTelegram) {
    let extra = "cron:\n  failure_deliver: [telegram:999]\ndelivery:\n  allow_targets: ['telegram:111', 'telegram:999']\n";
    home.write("config.yaml", &config(Some(llm), Some(tg), extra));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_failures_then_a_success_across_two_serve_processes_alert_once_and_recover_once() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("alerts-two");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "delivery:\n  allow_targets: ['telegram:111', 'telegram:999']\n"));
    let o = cli(
        home.path(),
        &["cron", "add", "every 1h", "report", "--name", "rep", "--deliver", "telegram:111", "--failure-deliver", "telegram:999"],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let a = Gateway::start(home.path(), &[]);
    let b = Gateway::start(home.path(), &[]);
    for _ in 0..3 {
        llm.push(Reply::Status(401));
    }
    let mut statuses = Vec::new();
    for gw in [&a, &b, &a, &b] {
        statuses.push(run(gw, "rep").await["run_status"].clone());
    }
    assert_eq!(statuses, [json!("error"), json!("error"), json!("error"), json!("ok")]);
    let alerts = texts_to(&tg, "999");
    assert_eq!(alerts.len(), 2, "one alert and one recovery line: {alerts:?}");
    assert!(alerts[0].contains("'rep' is failing"), "{alerts:?}");
    assert!(alerts[1].contains("'rep' recovered") && alerts[1].contains("after 3 failing runs"), "{alerts:?}");
    assert_eq!(texts_to(&tg, "111").len(), 4, "each run's own line at the job's target");
    let o = cli(home.path(), &["cron", "list", "--all", "--json"], &[]);
    let jobs: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(jobs[0]["failure_deliver"], json!(["telegram:999"]), "{jobs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_max_tokens_stops_before_the_next_model_call_and_says_so_once() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("alerts-budget");
    budget_home(&home, &llm, &tg);
    // Each fake answer reports 10 prompt + 5 completion tokens: after the first call (15), a
    // second (at least 10 more) would pass 20.
    let o =
        cli(home.path(), &["cron", "add", "every 1h", "loop", "--name", "loop", "--deliver", "telegram:111", "--max-tokens", "20"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    for _ in 0..5 {
        llm.push(Reply::Tool { name: "current_time".into(), args: json!({}) });
    }
    let gw = Gateway::start(home.path(), &[]);
    let v = run(&gw, "loop").await;
    assert_eq!(v["run_status"], "over_budget", "{v}");
    assert_eq!(llm.calls(), 1, "no model call past the limit");
    let lines = texts_to(&tg, "111");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("'loop' stopped: over budget") && lines[0].contains("max_tokens 20"), "{lines:?}");
    let (_, runs) = gw.get("/api/jobs/loop/runs").await;
    assert_eq!(runs["runs"][0]["status"], "over_budget", "{runs}");
    // Bad values are refused and change nothing.
    let o = cli(home.path(), &["cron", "edit", "loop", "--max-tokens", "0"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("`max_tokens`"), "{}", stderr(&o));
    // A chat is not limited: the usage view shows the day's spend.
    let (_, usage) = gw.get("/api/usage").await;
    assert!(usage["budget"]["daily_budget_usd"].is_null(), "{usage}");
    assert_eq!(usage["budget"]["max_tokens"][0]["max_tokens"], 20, "{usage}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegated_childrens_model_calls_count_toward_the_jobs_max_tokens() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("alerts-children");
    budget_home(&home, &llm, &tg);
    // Each fake answer reports 10 prompt + 5 completion tokens. The parent's first call (15)
    // delegates two tasks; the children's two calls bring the run to 45, so the parent's next
    // call (at least 10 more) would pass 40. Uncounted children would leave the run at 15.
    let o =
        cli(home.path(), &["cron", "add", "every 1h", "fan out", "--name", "fan", "--deliver", "telegram:111", "--max-tokens", "40"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    llm.push(Reply::Tool { name: "delegate_task".into(), args: json!({"tasks": [{"goal": "part A"}, {"goal": "part B"}]}) });
    llm.push(Reply::Text("child answer".into()));
    llm.push(Reply::Text("child answer".into()));
    llm.push(Reply::Text("the parent's summary".into()));
    let gw = Gateway::start(home.path(), &[]);
    let v = run(&gw, "fan").await;
    assert_eq!(v["run_status"], "over_budget", "{v}");
    let reqs = llm.requests();
    assert!(reqs.len() <= 3, "the parent's first call and at most the two children's: {}", reqs.len());
    let parent_again = reqs.iter().any(|r| r["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["role"] == "tool")));
    assert!(!parent_again, "no parent call after the children used the budget");
    let lines = texts_to(&tg, "111");
    assert!(lines.len() == 1 && lines[0].contains("'fan' stopped: over budget"), "{lines:?}");
}
