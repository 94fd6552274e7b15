//! Black-box tests of the scheduler rules beyond Hermes (docs/design.md#overlap, #spread,
//! #fire-path): a paused job fired with a valid Chronos token runs nothing, the spread offset
//! is stable across restarts of `serve` and across homes, and `overlap` / `spread` round-trip
//! through the CLI, the REST API and jobs.json.

#![allow(clippy::unwrap_used)]

mod common;

use chrono::{DateTime, Timelike, Utc};
use common::*;
use serde_json::{Value, json};

fn jobs_json(home: &TempHome) -> Vec<Value> {
    let o = cli(home.path(), &["cron", "list", "--all", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn next_of(job: &Value) -> DateTime<Utc> {
    job["next_run_at"].as_str().unwrap().parse().unwrap()
}

/// The shifted time's offset from the 08:00 (or `hour`) UTC it belongs to.
fn offset_from(t: DateTime<Utc>, hour: u32) -> i64 {
    let base = t.with_hour(hour).unwrap().with_minute(0).unwrap().with_second(0).unwrap();
    (t - base).num_seconds()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_job_fired_with_a_valid_chronos_token_runs_nothing() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("paused-fire");
    home.write("config.yaml", &config(Some(&llm), None, &pinned_key_chronos("pausy")));
    let o = cli(home.path(), &["cron", "add", "every 1h", "report", "--name", "hourly", "--deliver", "local"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let gw = Gateway::start(home.path(), &[]);
    let http = hermes_zero::clients::client_builder().build().unwrap();
    let fire = |token: String, body: Value| {
        let http = http.clone();
        let url = format!("{}/api/cron/fire", gw.base);
        async move {
            let r = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let r = http.post(format!("{}/api/jobs/hourly/pause", gw.base)).bearer_auth(API_KEY).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (s, v) = fire(rsa_fire_token("hourly", "pausy", 0), json!({"job_id": "hourly"})).await;
    assert_eq!((s, v), (200, json!({"status": "paused"})));
    let next = next_of(&jobs_json(&home)[0]).to_rfc3339();
    let (s, v) = fire(rsa_fire_token("hourly", "pausy", 0), json!({"job_id": "hourly", "fire_at": next})).await;
    assert_eq!((s, v), (200, json!({"status": "paused"})));
    // A manual run of a paused job runs nothing either.
    let r = http.post(format!("{}/api/jobs/hourly/run", gw.base)).bearer_auth(API_KEY).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "paused");
    assert_eq!(llm.calls(), 0, "nothing ran");
    let (_, runs) = gw.get("/api/jobs/hourly/runs").await;
    assert_eq!(runs["runs"].as_array().map(Vec::len).unwrap_or_default(), 0, "{runs}");
    // An invalid token still gets 401 before anything else.
    let (s, _) = fire(rsa_fire_token("hourly", "someone-else", 0), json!({"job_id": "hourly"})).await;
    assert_eq!(s, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spread_offset_is_stable_across_restarts_and_homes_and_cron_list_shows_it() {
    let extra = "cron:\n  spread_seconds: 600\n";
    let first = TempHome::new("spread-a");
    first.write("config.yaml", &config(None, None, extra));
    let gw = Gateway::start(first.path(), &[]);
    let http = hermes_zero::clients::client_builder().build().unwrap();
    let body = json!({"id": "agent-0042", "schedule": "0 8 * * *", "prompt": "morning brief", "deliver": "local"});
    let r = http.post(format!("{}/api/jobs", gw.base)).bearer_auth(API_KEY).json(&body).send().await.unwrap();
    assert!(r.status().is_success());
    let created: Value = r.json().await.unwrap();
    let job = created.get("job").unwrap_or(&created);
    let next = next_of(job);
    let off = offset_from(next, 8);
    assert!((0..600).contains(&off), "offset {off} of {next}");
    let (_, listed) = gw.get("/api/jobs/agent-0042").await;
    assert_eq!(next_of(listed.get("job").unwrap_or(&listed)), next, "the REST API shows the shifted time");
    drop(gw);
    // `cron list` shows the shifted time, as the configured zone (UTC) writes it.
    let fmt = if next.second() == 0 { "%Y-%m-%d %H:%M UTC" } else { "%Y-%m-%d %H:%M:%S UTC" };
    let o = cli(first.path(), &["cron", "list"], &[]);
    assert!(stdout(&o).contains(&next.format(fmt).to_string()), "{}", stdout(&o));
    // After a restart the offset derived again (a new schedule) is the same.
    let gw = Gateway::start(first.path(), &[]);
    let (_, listed) = gw.get("/api/jobs/agent-0042").await;
    assert_eq!(next_of(listed.get("job").unwrap_or(&listed)), next, "stored across the restart");
    let r = http
        .patch(format!("{}/api/jobs/agent-0042", gw.base))
        .bearer_auth(API_KEY)
        .json(&json!({"schedule": "0 9 * * *"}))
        .send()
        .await
        .unwrap();
    let edited: Value = r.json().await.unwrap();
    assert_eq!(offset_from(next_of(&edited["job"]), 9), off, "{edited}");
    drop(gw);
    // Another home (another host) with the same job id gets the same offset.
    let second = TempHome::new("spread-b");
    second.write("config.yaml", &config(None, None, extra));
    let o = cli(second.path(), &["cron", "add", "0 8 * * *", "morning brief", "--name", "agent-0042"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(offset_from(next_of(&jobs_json(&second)[0]), 8), off);
    // Spread 0 on the job: back on the hour.
    let o = cli(second.path(), &["cron", "edit", "agent-0042", "--spread", "0"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let unshifted = next_of(&jobs_json(&second)[0]);
    assert_eq!((offset_from(unshifted, 8), (next - unshifted).num_seconds()), (0, off), "the same occurrence, unshifted");
}

#[test]
fn overlap_and_spread_round_trip_through_the_cli_and_jobs_json() {
    let home = TempHome::new("overlap-fields");
    let o = cli(home.path(), &["cron", "add", "every 1h", "p", "--name", "ov", "--overlap", "allow", "--spread", "120"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = &jobs_json(&home)[0];
    assert_eq!((j["overlap"].clone(), j["spread"].clone()), (json!("allow"), json!(120)));
    let o = cli(home.path(), &["cron", "edit", "ov", "--overlap", "skip"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!((jobs_json(&home)[0]["overlap"].clone(), jobs_json(&home)[0]["spread"].clone()), (json!("skip"), json!(120)));
    // Bad values are refused with a clear error, and change nothing.
    let o = cli(home.path(), &["cron", "edit", "ov", "--overlap", "sometimes"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("`overlap` must be `skip` or `allow`"), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "edit", "ov", "--spread", "90000"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("`spread` must be between 0 and 86400"), "{}", stderr(&o));
    assert_eq!(jobs_json(&home)[0]["spread"], json!(120));
    // jobs.json.
    home.write("cron/jobs.json", r#"{"jobs":[{"id":"declared","schedule":"0 8 * * *","prompt":"p","overlap":"allow","spread":300}]}"#);
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = jobs_json(&home).into_iter().find(|j| j["id"] == "declared").unwrap();
    assert_eq!((d["overlap"].clone(), d["spread"].clone()), (json!("allow"), json!(300)));
    assert!((0..300).contains(&offset_from(next_of(&d), 8)));
    // A bad config value is refused at load.
    home.write("config.yaml", "cron:\n  spread_seconds: 100000\n");
    let o = cli(home.path(), &["cron", "list"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("cron.spread_seconds"), "{}", stderr(&o));
}
