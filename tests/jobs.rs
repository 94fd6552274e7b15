//! Black-box tests of scheduled jobs: jobs.json, the CLI, the ticker, at-most-once claims
//! across processes, skills, [SILENT], failures, delivery to fake Telegram and Discord, and
//! the `cronjob` tool.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

const SEED: &str = include_str!("fixtures/seed-jobs.json");

fn jobs_json(home: &TempHome) -> Vec<Value> {
    let o = cli(home.path(), &["cron", "list", "--all", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn the_seed_jobs_json_syncs_and_a_malformed_file_changes_nothing() {
    let home = TempHome::new("seed");
    home.write("cron/jobs.json", SEED);
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("3 created"), "{}", stdout(&o));
    let jobs = jobs_json(&home);
    let ids: Vec<&str> = jobs.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["daily-news-summary", "health-check", "weekly-code-review"]);
    let daily = &jobs[0];
    assert_eq!(daily["skills"], json!(["ai-news-summarizer"]));
    assert_eq!(daily["deliver"], json!(["telegram:-1001234567890"]));
    assert_eq!(jobs[2]["deliver"], json!(["discord:123456789"]));
    assert_eq!(daily["schedule"], "0 8 * * *");
    // Re-sync keeps state; removing a job from the file disables it.
    let v: Value = serde_json::from_str(SEED).unwrap();
    let two = json!({"jobs": v["jobs"].as_array().unwrap()[..2]});
    home.write("cron/jobs.json", &two.to_string());
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(stdout(&o).contains("2 updated, 1 disabled"), "{}", stdout(&o));
    // One bad job is skipped with its reason; every other job loads.
    home.write(
        "cron/jobs.json",
        r#"{"jobs":[{"id":"a","prompt":"p","schedule":"every 1h"},{"id":"b","prompt":"p","schedule":"sometimes"},{"id":"c","prompt":"p","schedule":"every 1h","skill":"s","skills":["s"]}]}"#,
    );
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 created") && stdout(&o).contains("1 skipped"), "{}", stdout(&o));
    assert!(stderr(&o).contains("job #1 (b)") && stderr(&o).contains("accepted forms"), "{}", stderr(&o));
    let all = jobs_json(&home);
    let skipped: Vec<&Value> = all.iter().filter(|j| j["state"] == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{all:?}");
    assert_eq!(skipped[0]["id"], "b");
    assert!(skipped[0]["skip_reason"].as_str().unwrap().contains("accepted forms"));
    assert_eq!(all.iter().find(|j| j["id"] == "c").unwrap()["skills"], json!(["s"]));
    let text = stdout(&cli(home.path(), &["cron", "list", "--all"], &[]));
    assert!(text.contains("skipped from jobs.json") && text.contains("job #1 (b)"), "{text}");
    let plain = stdout(&cli(home.path(), &["cron", "list"], &[]));
    assert!(!plain.contains("skipped"), "{plain}");
    // A file that is not a job list: refused with the file and the reason; nothing changes.
    home.write("cron/jobs.json", r#"{"jobs": {"id": "d"}}"#);
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("cron/jobs.json") && err.contains("expected {\"jobs\": [...]}"), "{err}");
    assert_eq!(jobs_json(&home).len(), 6);
    assert!(jobs_json(&home).iter().all(|j| j["id"] != "d"));
}

#[test]
fn cli_add_list_pause_resume_remove_and_bad_schedules() {
    let home = TempHome::new("cli");
    let o = cli(home.path(), &["cron", "add", "every 2h", "stretch", "--name", "stretch", "--deliver", "local"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "stretch");
    let o = cli(home.path(), &["cron", "add", "whenever you like", "x"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("accepted forms"), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "add", "2020-01-01T00:00:00Z", "x"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("past"), "{}", stderr(&o));
    assert!(cli(home.path(), &["cron", "pause", "stretch"], &[]).status.success());
    assert_eq!(jobs_json(&home)[0]["state"], "paused");
    assert!(cli(home.path(), &["cron", "resume", "stretch"], &[]).status.success());
    assert_eq!(jobs_json(&home)[0]["state"], "scheduled");
    let o = cli(home.path(), &["cron", "edit", "stretch", "--schedule", "0 9 * * MON-FRI"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(jobs_json(&home)[0]["schedule"], "0 9 * * MON-FRI");
    assert!(cli(home.path(), &["cron", "remove", "stretch"], &[]).status.success());
    assert!(jobs_json(&home).is_empty());
    let o = cli(home.path(), &["cron", "run", "nope"], &[]);
    assert_eq!(o.status.code(), Some(1));
    // The delivery policy (docs/who-sees-what.md): a chat nobody allowed is refused, nothing stored.
    let o = cli(home.path(), &["cron", "add", "every 2h", "x", "--deliver", "telegram:999"], &[]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    assert!(stderr(&o).contains("delivery to `telegram:999` is not allowed"), "{}", stderr(&o));
    assert!(jobs_json(&home).is_empty());
    // So is an edit moving a job there; the job keeps its target.
    assert!(cli(home.path(), &["cron", "add", "every 2h", "x", "--name", "kept", "--deliver", "local"], &[]).status.success());
    let o = cli(home.path(), &["cron", "edit", "kept", "--deliver", "telegram:998"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("delivery to `telegram:998` is not allowed"), "{}", stderr(&o));
    assert_eq!(jobs_json(&home)[0]["deliver"], json!(["local"]));
}

fn job_home(tag: &str, llm: &FakeLlm, tg: &FakeTelegram, extra: &str) -> TempHome {
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(llm), Some(tg), extra));
    home
}

#[cfg(feature = "testing")] // HERMES_CLOCK_OFFSET_SECS
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_ticks_run_a_due_occurrence_exactly_once() {
    let llm = FakeLlm::start().await;
    llm.set_delay(300);
    let tg = FakeTelegram::start().await;
    let home = job_home("ticks", &llm, &tg, "");
    let o = cli(home.path(), &["cron", "add", "every 1h", "report", "--name", "hourly", "--deliver", "telegram:42"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // One hour and a minute later (clock offset), eight tickers race for the occurrence.
    let path = home.path().to_path_buf();
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let p = path.clone();
            std::thread::spawn(move || cli(&p, &["cron", "tick"], &[("HERMES_CLOCK_OFFSET_SECS", "3660")]))
        })
        .collect();
    for h in handles {
        let o = h.join().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(llm.calls(), 1, "exactly one run");
    assert_eq!(tg.sent().len(), 1, "exactly one delivery");
    let runs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "runs", "hourly", "--json"], &[]))).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["trigger"], "ticker");
    // The next occurrence moved to the future: another tick at the same time runs nothing.
    cli(home.path(), &["cron", "tick"], &[("HERMES_CLOCK_OFFSET_SECS", "3660")]);
    assert_eq!(llm.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_job_sends_the_skill_to_the_model_and_the_answer_to_telegram() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::Text("Top AI news: all quiet.".into()));
    let tg = FakeTelegram::start().await;
    let home = job_home("skill", &llm, &tg, "");
    home.write("skills/ai-news-summarizer/SKILL.md", "---\nname: ai-news-summarizer\ndescription: Summarise AI news\noutput_format: bullets\n---\n# Format\nUse three bullets. MARKER-7731\n");
    home.write("cron/jobs.json", SEED);
    assert!(cli(home.path(), &["cron", "sync"], &[]).status.success());
    let o = cli(home.path(), &["cron", "run", "daily-news-summary"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(": ok"), "{}", stdout(&o));
    let req = &llm.requests()[0];
    let user = last_user(req);
    assert!(user.contains("MARKER-7731") && user.contains("每天早上 8 点抓取 AI 行业新闻并生成摘要"), "{user}");
    assert!(req["messages"][0]["content"].as_str().unwrap().contains("[SILENT]"), "preamble");
    assert!(!req["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "cronjob")), "no cronjob tool inside a job");
    let sent = tg.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["chat_id"], "-1001234567890");
    assert_eq!(
        sent[0]["text"],
        "Cronjob Response: daily-news-summary\n(job_id: daily-news-summary)\n-------------\n\nTop AI news: all quiet.\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder daily-news-summary\")."
    );
    // A missing skill is an error of that run, delivered as one line.
    let o = cli(home.path(), &["cron", "run", "weekly-code-review"], &[("DISCORD_BOT_TOKEN", "")]);
    assert!(stdout(&o).contains(": error"), "{}", stdout(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_answers_are_not_delivered_and_failures_always_are() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = job_home("silent", &llm, &tg, "cron:\n  wrap_response: false\n");
    assert!(cli(home.path(), &["cron", "add", "every 1h", "check", "--name", "chk", "--deliver", "telegram:42"], &[]).status.success());
    llm.push(Reply::Text("[SILENT]".into()));
    let o = cli(home.path(), &["cron", "run", "chk"], &[]);
    assert!(stdout(&o).contains(": ok"), "{}", stdout(&o));
    assert!(tg.sent().is_empty(), "silent");
    for _ in 0..3 {
        llm.push(Reply::Status(500));
    }
    let o = cli(home.path(), &["cron", "run", "chk"], &[]);
    assert!(stdout(&o).contains(": error"), "{}", stdout(&o));
    let sent = tg.sent();
    // The failure's own line, then the job's one failure alert (issue #30: with no
    // `failure_deliver` the alert goes to the job's own targets).
    assert_eq!(sent.len(), 2);
    let text = sent[0]["text"].as_str().unwrap();
    assert!(text.starts_with("⚠️ Scheduled job 'chk' failed:") && !text.contains('\n'), "{text}");
    assert!(sent[1]["text"].as_str().unwrap().starts_with("🚨 Scheduled job 'chk' is failing"), "{sent:?}");
    llm.push(Reply::Text("  ".into()));
    cli(home.path(), &["cron", "run", "chk"], &[]);
    assert!(tg.sent()[2]["text"].as_str().unwrap().contains("empty answer"));
    assert_eq!(tg.sent().len(), 3, "no second alert while the job keeps failing");
    let jobs = jobs_json(&home);
    assert_eq!(jobs[0]["last_status"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_delivery_splits_at_2000_and_uses_the_bot_token() {
    let llm = FakeLlm::start().await;
    let long = format!("{}\n{}", "d".repeat(1500), "e".repeat(1500));
    llm.push(Reply::Text(long));
    let tg = FakeTelegram::start().await;
    let dc = FakeDiscord::start().await;
    let home =
        job_home("discord", &llm, &tg, &format!("cron:\n  wrap_response: false\nplatforms:\n  discord:\n    api_base: {}\n", dc.url));
    // The telegram block in config() and this discord block are merged by YAML only if written once; write both here.
    // discord:555 is a channel the operator lists for the delivery policy (docs/who-sees-what.md).
    home.write("config.yaml", &format!("model:\n  provider: openai\n  base_url: {}\n  name: m\ncron:\n  wrap_response: false\ndelivery:\n  allow_targets: ['discord:555']\nplatforms:\n  discord:\n    api_base: {}\n", llm.url, dc.url));
    assert!(cli(home.path(), &["cron", "add", "every 1h", "review", "--name", "rev", "--deliver", "discord:555"], &[]).status.success());
    let o = cli(home.path(), &["cron", "run", "rev"], &[]);
    assert!(stdout(&o).contains(": ok"), "{} {}", stdout(&o), stderr(&o));
    let sent = dc.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["_channel"], "555");
    assert_eq!(sent[0]["_auth"], "Bot dbot");
    assert!(sent.iter().all(|m| m["content"].as_str().unwrap().chars().count() <= 2000));
}

#[cfg(feature = "testing")] // HERMES_CLOCK_OFFSET_SECS
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_one_shot_is_reported_not_run() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = job_home("missed", &llm, &tg, "");
    assert!(cli(home.path(), &["cron", "add", "in 10m", "once", "--name", "one", "--deliver", "telegram:42"], &[]).status.success());
    cli(home.path(), &["cron", "tick"], &[("HERMES_CLOCK_OFFSET_SECS", "1200")]);
    assert_eq!(llm.calls(), 0);
    let sent = tg.sent();
    // The missed line, then the job's one failure alert (issue #30).
    assert_eq!(sent.len(), 2);
    assert!(sent[0]["text"].as_str().unwrap().contains("was missed"));
    assert!(sent[1]["text"].as_str().unwrap().contains("'one' is failing: its last run ended missed"), "{sent:?}");
    let j = &jobs_json(&home)[0];
    assert_eq!((j["last_status"].as_str(), j["state"].as_str()), (Some("missed"), Some("completed")));
}

#[cfg(feature = "testing")] // HERMES_CLOCK_OFFSET_SECS
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_ticker_runs_due_jobs_and_the_cronjob_tool_creates_them() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = job_home("servejobs", &llm, &tg, "cron:\n  tick_interval_seconds: 1\n");
    let gw = Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", "0")]);
    // The model answers a chat message by scheduling a job with the tool.
    llm.push(Reply::Tool {
        name: "cronjob".into(),
        args: json!({"action": "create", "schedule": "every 2h", "prompt": "drink water", "name": "water"}),
    });
    llm.push(Reply::Text("Scheduled.".into()));
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "remind me to drink water every 2 hours")).await, 200);
    let (_, jobs) = gw.get("/api/jobs").await;
    let water = jobs["jobs"].as_array().unwrap().iter().find(|j| j["name"] == "water").cloned().unwrap();
    assert_eq!(water["schedule_text"], "every 2h");
    assert_eq!(water["schedule"], json!({"kind": "interval", "minutes": 120, "display": "every 120m"}), "Hermes' schedule object");
    let tool_result = llm.requests()[1]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(tool_result.contains("\"created\""), "{tool_result}");
    let (_, full) = gw.get("/api/jobs/water").await;
    // The chat and the user who made it (its runs search as them, docs/who-sees-what.md).
    assert_eq!(full["job"]["origin"], json!({"platform": "telegram", "chat_id": "42", "user_id": "42", "chat_type": "dm"}));
    drop(gw);
    // Two hours later the ticker of a running `serve` fires it to the origin chat.
    let _gw = Gateway::start(home.path(), &[("HERMES_CLOCK_OFFSET_SECS", "7300")]);
    let sent = tg.wait_for(2, 10).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1]["chat_id"], "42");
    assert!(sent[1]["text"].as_str().unwrap().contains("echo:"), "{sent:?}");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(tg.sent().len(), 2, "ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_manages_jobs() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = job_home("rest", &llm, &tg, "");
    home.write(
        "cron/jobs.json",
        r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"sh","prompt":"p","schedule":"every 1h","no_agent":true}]"#,
    );
    let gw = Gateway::start(home.path(), &[]);
    let c = &gw.http;
    let url = |p: &str| format!("{}{p}", gw.base);
    // The dashboard's job list carries the jobs.json entries the sync skipped.
    let (_, list) = gw.get("/api/jobs").await;
    assert!(list["jobs"].as_array().unwrap().iter().any(|j| j["id"] == "ok"), "{list}");
    assert_eq!(list["skipped"][0]["id"], "sh", "{list}");
    assert!(list["skipped"][0]["reason"].as_str().unwrap().contains("no_agent=True requires a script"), "{list}");
    let r = c
        .post(url("/api/jobs"))
        .bearer_auth(&gw.key)
        .json(&json!({"schedule": "every weekday at 9am", "prompt": "standup", "name": "standup"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r =
        c.post(url("/api/jobs")).bearer_auth(&gw.key).json(&json!({"name": "n", "schedule": "nope", "prompt": "x"})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("accepted forms"));
    // The delivery policy: a chat nobody allowed is a 400, and no job is made.
    let body = json!({"id": "leak", "schedule": "every 1h", "prompt": "x", "deliver": "telegram:999"});
    let r = c.post(url("/api/jobs")).bearer_auth(&gw.key).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].as_str().unwrap().contains("not allowed"));
    assert_eq!(c.get(url("/api/jobs/leak")).bearer_auth(&gw.key).send().await.unwrap().status(), 404);
    let r = c.patch(url("/api/jobs/standup")).bearer_auth(&gw.key).json(&json!({"prompt": "daily standup"})).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["job"]["prompt"], "daily standup");
    let r = c.post(url("/api/jobs/standup/pause")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["job"]["state"], "paused");
    // A paused job runs on no trigger, a manual run included (issue #30 item 6); resumed, it runs.
    let r = c.post(url("/api/jobs/standup/run")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "paused");
    assert_eq!(llm.calls(), 0);
    let r = c.post(url("/api/jobs/standup/resume")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["job"]["state"], "scheduled");
    let r = c.post(url("/api/jobs/standup/run")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ok");
    let (_, runs) = gw.get("/api/jobs/standup/runs").await;
    assert_eq!(runs["runs"][0]["output"], "echo: daily standup");
    let r = c.delete(url("/api/jobs/standup")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(gw.get("/api/jobs/standup").await.0, 404);
    assert_eq!(c.get(url("/api/jobs")).send().await.unwrap().status(), 401);
}

#[test]
fn doctor_reports_missing_skills_and_bad_jobs_files() {
    let home = TempHome::new("doctor");
    home.write("cron/jobs.json", SEED);
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("binds skill `ai-news-summarizer`") && out.contains("SKILL.md does not exist"), "{out}");
    for s in ["ai-news-summarizer", "code-review-assistant", "server-health-checker"] {
        home.write(&format!("skills/{s}/SKILL.md"), "---\nname: x\n---\nbody\n");
    }
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("3 declared"));
    // A job that cannot be loaded is a warning, not a failure.
    home.write("cron/jobs.json", r#"{"jobs": [{}, {"id":"s","prompt":"p","schedule":"every 1h","no_agent":true}]}"#);
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert!(o.status.success(), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("warning:") && out.contains("skipped job #0") && out.contains("job #1 (s)") && out.contains("requires a script"),
        "{out}"
    );
    // A script job whose script is missing fails doctor, naming the file; present, it passes.
    home.write("cron/jobs.json", r#"[{"id":"w","schedule":"every 5m","script":"disk.sh","no_agent":true}]"#);
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("runs script `disk.sh`") && stdout(&o).contains("does not exist"), "{}", stdout(&o));
    home.write("scripts/disk.sh", "echo ok\n");
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert!(o.status.success(), "{}", stdout(&o));
    // Not a job list at all: a failure naming the file.
    home.write("cron/jobs.json", "not json");
    let o = cli(home.path(), &["doctor"], &[("TELEGRAM_BOT_TOKEN", "")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("jobs.json") && stdout(&o).contains("not valid JSON"), "{}", stdout(&o));
}
