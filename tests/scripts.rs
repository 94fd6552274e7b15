//! Black-box tests of script jobs (CONTRACT §13, docs/jobs.md#script-jobs) on the real binary
//! with real bash and python3 children: stdout into the prompt in Hermes' words, the
//! `{"wakeAgent": false}` gate and empty output (silent: no model call, nothing delivered),
//! `no_agent` delivering stdout verbatim, timeouts and failing scripts as errors with stderr's
//! tail, refused paths (traversal, absolute, symlink escape, missing), the child's environment
//! without the gateway's secrets, and the round trip of the fields through jobs.json, the CLI
//! and the REST API.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn home_with(tag: &str, llm: &FakeLlm, tg: &FakeTelegram, extra: &str) -> TempHome {
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(llm), Some(tg), extra));
    std::fs::create_dir_all(home.path().join("scripts")).unwrap();
    home
}

fn add(home: &TempHome, args: &[&str]) -> String {
    let mut all = vec!["cron", "add"];
    all.extend_from_slice(args);
    let o = cli(home.path(), &all, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn runs(home: &TempHome, id: &str) -> Vec<Value> {
    let o = cli(home.path(), &["cron", "runs", id, "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn job(home: &TempHome, id: &str) -> Value {
    let o = cli(home.path(), &["cron", "list", "--all", "--json"], &[]);
    let all: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    all.into_iter().find(|j| j["id"] == id).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_and_python_stdout_reach_the_model_in_hermes_words_and_the_answer_telegram() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("feed", &llm, &tg, "");
    home.write("scripts/feed.sh", "echo \"headline: bash-7731 from $(basename \"$PWD\")\"\n");
    home.write("scripts/feed.py", "import os\nprint('headline: python-8842')\nprint('cwd', os.path.basename(os.getcwd()))\n");
    let work = TempHome::new("workdir");
    for (script, workdir) in [("feed.sh", None), ("feed.py", Some(work.path().to_str().unwrap()))] {
        llm.push(Reply::Text(format!("summary of {script}")));
        let mut args = vec!["every 1h", "Summarize the headlines.", "--script", script, "--deliver", "telegram:42"];
        if let Some(w) = workdir {
            args.extend(["--workdir", w]);
        }
        let id = add(&home, &args);
        let o = cli(home.path(), &["cron", "run", &id], &[]);
        assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    }
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    let bash = last_user(&reqs[0]);
    assert_eq!(
        bash,
        "## Script Output\nThe following data was collected by a pre-run script. Use it as context for your analysis.\n\n```\nheadline: bash-7731 from scripts\n```\n\nSummarize the headlines.",
        "stdout in Hermes' words, the script ran in the scripts folder"
    );
    let py = last_user(&reqs[1]);
    let dir = work.path().file_name().unwrap().to_str().unwrap();
    assert!(py.contains("headline: python-8842") && py.contains(&format!("cwd {dir}")), "python3, in its workdir: {py}");
    let sent = tg.wait_for(2, 10).await;
    assert!(sent[0]["text"].as_str().unwrap().contains("summary of feed.sh"), "{sent:?}");
    assert!(sent[1]["text"].as_str().unwrap().contains("summary of feed.py"), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_agent_false_and_empty_output_are_silent_runs_without_a_model_call() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("gate", &llm, &tg, "");
    home.write("scripts/gate.py", "print('nothing changed')\nprint('{\"wakeAgent\": false}')\nprint()\n");
    home.write("scripts/quiet.sh", "true\n");
    home.write("scripts/watch.sh", "exit 0\n");
    let gate = add(&home, &["every 1h", "Report changes.", "--script", "gate.py", "--deliver", "telegram:42"]);
    let quiet = add(&home, &["every 1h", "Report.", "--script", "quiet.sh", "--deliver", "telegram:42"]);
    let watch = add(&home, &["every 1h", "--script", "watch.sh", "--no-agent", "--deliver", "telegram:42"]);
    for id in [&gate, &quiet, &watch] {
        let o = cli(home.path(), &["cron", "run", id], &[]);
        assert!(o.status.success() && stdout(&o).contains(": silent"), "{}{}", stdout(&o), stderr(&o));
        let r = runs(&home, id);
        assert_eq!(r[0]["status"], "silent", "{r:?}");
        assert_eq!(r[0]["deliveries"], json!([]), "{r:?}");
        let j = job(&home, id);
        assert_eq!((j["last_status"].as_str(), j["state"].as_str()), (Some("silent"), Some("scheduled")), "{j}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(llm.calls(), 0, "no model call");
    assert!(tg.sent().is_empty(), "nothing delivered: {:?}", tg.sent());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_delivers_stdout_verbatim_and_wrapped_as_hermes_wraps_it() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("noagent", &llm, &tg, "");
    home.write("scripts/disk.sh", "echo\necho 'disk /var at 97%'\necho '  load 4.2  '\necho\n");
    let id = add(&home, &["every 5m", "--script", "disk.sh", "--no-agent", "--deliver", "telegram:42", "--name", "disk-watch"]);
    let o = cli(home.path(), &["cron", "run", &id], &[]);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let sent = tg.wait_for(1, 10).await;
    assert_eq!(
        sent[0]["text"],
        "Cronjob Response: disk-watch\n(job_id: disk-watch)\n-------------\n\ndisk /var at 97%\n  load 4.2\n\nTo stop or manage this job, send me a new message (e.g. \"stop reminder disk-watch\")."
    );
    assert_eq!(runs(&home, &id)[0]["output"], "disk /var at 97%\n  load 4.2");
    // Without the wrapper, the text is stdout as it is (trimmed, as Hermes trims it).
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "cron:\n  wrap_response: false\n"));
    cli(home.path(), &["cron", "run", &id], &[]);
    let sent = tg.wait_for(2, 10).await;
    assert_eq!(sent[1]["text"], "disk /var at 97%\n  load 4.2");
    assert_eq!(llm.calls(), 0, "no model call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_and_a_failing_script_are_errors_with_stderr_and_the_job_stays_scheduled() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("fail", &llm, &tg, "cron:\n  script_timeout_seconds: 1\n  wrap_response: false\n");
    home.write("scripts/slow.sh", "echo started >&2\nsleep 30\n");
    home.write("scripts/bad.py", "import sys\nprint('partial')\nsys.stderr.write('Traceback: feed unreachable\\n')\nsys.exit(3)\n");
    let slow = add(&home, &["every 1h", "Report.", "--script", "slow.sh", "--deliver", "telegram:42"]);
    let bad = add(&home, &["every 1h", "Report.", "--script", "bad.py", "--deliver", "telegram:42", "--name", "bad"]);
    let t = Instant::now();
    let o = cli(home.path(), &["cron", "run", &slow], &[]);
    assert!(stdout(&o).contains(": error") && t.elapsed() < Duration::from_secs(15), "{:?} {}", t.elapsed(), stdout(&o));
    assert!(runs(&home, &slow)[0]["error"].as_str().unwrap().contains("script `slow.sh` timed out after 1 s"), "{:?}", runs(&home, &slow));
    // The environment's limit wins over config.yaml (Hermes' order).
    let t = Instant::now();
    cli(home.path(), &["cron", "run", &slow], &[("HERMES_CRON_SCRIPT_TIMEOUT", "2")]);
    assert!(t.elapsed() >= Duration::from_secs(2) && t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert!(runs(&home, &slow)[0]["error"].as_str().unwrap().contains("timed out after 2 s"));
    let o = cli(home.path(), &["cron", "run", &bad], &[]);
    assert!(stdout(&o).contains(": error"), "{}", stdout(&o));
    let text = stdout(&cli(home.path(), &["cron", "runs", &bad], &[]));
    assert!(text.contains("[error]"), "{text}");
    let err = runs(&home, &bad)[0]["error"].as_str().unwrap().to_string();
    assert_eq!(err, "script `bad.py` exited with code 3\nstderr:\nTraceback: feed unreachable");
    for id in [&slow, &bad] {
        let j = job(&home, id);
        assert_eq!((j["state"].as_str(), j["last_status"].as_str()), (Some("scheduled"), Some("error")), "{j}");
    }
    assert_eq!(llm.calls(), 0, "a failed script is not handed to the model");
    let sent = tg.wait_for(5, 10).await;
    // Besides the failure lines, each job's one failure alert (issue #30: with no
    // `failure_deliver` it goes to the job's own targets).
    let lines: Vec<&str> = sent.iter().filter_map(|m| m["text"].as_str()).filter(|t| !t.starts_with("🚨")).collect();
    assert_eq!(lines.len(), 3, "one failure line per failed run: {sent:?}");
    assert_eq!(lines[2], "⚠️ Scheduled job 'bad' failed: script `bad.py` exited with code 3");
    assert_eq!(sent.len(), 5, "one alert per failing job: {sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_outside_the_scripts_folder_or_missing_are_clear_run_errors() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("paths", &llm, &tg, "");
    home.write("outside.sh", "echo leaked\n");
    std::os::unix::fs::symlink(home.path().join("outside.sh"), home.path().join("scripts/link.sh")).unwrap();
    let abs = home.path().join("outside.sh");
    let jobs = json!([
        {"id": "up", "prompt": "p", "schedule": "every 1h", "script": "../outside.sh"},
        {"id": "abs", "prompt": "p", "schedule": "every 1h", "script": abs.to_str().unwrap()},
        {"id": "link", "prompt": "p", "schedule": "every 1h", "script": "link.sh"},
        {"id": "gone", "prompt": "p", "schedule": "every 1h", "script": "gone.sh", "no_agent": true},
    ]);
    home.write("cron/jobs.json", &jobs.to_string());
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(stdout(&o).contains("4 created"), "{}{}", stdout(&o), stderr(&o));
    for (id, needle) in [("up", "Blocked"), ("abs", "Blocked"), ("link", "Blocked"), ("gone", "Script not found")] {
        let o = cli(home.path(), &["cron", "run", id], &[]);
        assert!(stdout(&o).contains(": error"), "{id}: {}", stdout(&o));
        let err = runs(&home, id)[0]["error"].as_str().unwrap().to_string();
        assert!(err.contains(needle), "{id}: {err}");
        assert!(!runs(&home, id)[0]["output"].as_str().unwrap().contains("leaked"));
        assert_eq!(job(&home, id)["state"], "scheduled", "{id}");
    }
    assert_eq!(llm.calls(), 0);
    // The CLI refuses such paths up front, and a no_agent job without a script, with Hermes' words.
    let o = cli(home.path(), &["cron", "add", "every 1h", "p", "--script", "../outside.sh"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("traversal"), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "add", "every 1h", "p", "--script", "/etc/passwd"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("must be relative"), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "add", "every 1h", "--no-agent"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("no_agent=True requires a script"), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "add", "every 1h", "p", "--script", "a.sh", "--workdir", "/no/such/dir"], &[]);
    assert!(!o.status.success() && stderr(&o).contains("workdir"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_sees_a_minimal_environment_without_the_gateways_secrets() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("env", &llm, &tg, "cron:\n  wrap_response: false\n");
    home.write("scripts/env.sh", "env | sort\n");
    let id = add(&home, &["every 1h", "--script", "env.sh", "--no-agent", "--deliver", "telegram:42"]);
    let secrets = [
        ("TELEGRAM_BOT_TOKEN", "123:abc"),
        ("API_SERVER_KEY", "api-key-5150"),
        ("OPENAI_API_KEY", "sk-secret-2718"),
        ("SLACK_SIGNING_SECRET", "slack-3141"),
        ("AWS_SECRET_ACCESS_KEY", "aws-1618"),
    ];
    let o = cli(home.path(), &["cron", "run", &id], &secrets);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let sent = tg.wait_for(1, 10).await;
    let env = sent[0]["text"].as_str().unwrap().to_string();
    assert!(env.contains("PATH=") && env.contains(&format!("HERMES_HOME={}", home.path().display())), "{env}");
    for (name, value) in secrets {
        assert!(!env.contains(name) && !env.contains(value), "{name} reached the script: {env}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fields_round_trip_through_jobs_json_the_cli_and_the_rest_api() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = home_with("roundtrip", &llm, &tg, "");
    home.write("scripts/a.sh", "echo a\n");
    home.write("scripts/sub/b.py", "print('b')\n");
    // Hermes' own jobs.json entry loads unchanged; a wrong type is refused for that job only.
    let hermes = json!({"jobs": [
        {"id": "5f0c1d2e3a4b", "name": "watchdog", "prompt": "", "schedule": {"kind": "interval", "minutes": 5, "display": "every 5m"},
         "script": "a.sh", "no_agent": true, "workdir": null, "deliver": "local", "enabled": true},
        {"id": "typed", "prompt": "p", "schedule": "every 1h", "script": ["a.sh"]},
    ]});
    home.write("cron/jobs.json", &hermes.to_string());
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(stdout(&o).contains("1 created") && stdout(&o).contains("1 skipped"), "{}", stdout(&o));
    assert!(stderr(&o).contains("job #1 (typed)") && stderr(&o).contains("`script` must be a string"), "{}", stderr(&o));
    let w = job(&home, "5f0c1d2e3a4b");
    assert_eq!((w["script"].as_str(), w["no_agent"].as_bool()), (Some("a.sh"), Some(true)), "{w}");
    // The CLI's edit changes them.
    let wd = TempHome::new("rt-wd");
    let o = cli(home.path(), &["cron", "edit", "watchdog", "--script", "sub/b.py", "--workdir", wd.path().to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = job(&home, "5f0c1d2e3a4b");
    assert_eq!((w["script"].as_str(), w["workdir"].as_str()), (Some("sub/b.py"), wd.path().to_str()), "{w}");
    // The REST API: create, patch, and the refusals as 400s naming the field.
    let gw = Gateway::start(home.path(), &[]);
    let c = &gw.http;
    let url = |p: &str| format!("{}{p}", gw.base);
    let body = json!({"name": "api-watch", "schedule": "every 1h", "script": "a.sh", "no_agent": true, "deliver": "local"});
    let r = c.post(url("/api/jobs")).bearer_auth(&gw.key).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let j = r.json::<Value>().await.unwrap()["job"].clone();
    assert_eq!((j["script"].as_str(), j["no_agent"].as_bool()), (Some("a.sh"), Some(true)), "{j}");
    let r = c
        .patch(url("/api/jobs/api-watch"))
        .bearer_auth(&gw.key)
        .json(&json!({"no_agent": false, "prompt": "Read it."}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["job"]["no_agent"], false);
    for (body, needle) in [
        (json!({"name": "bad", "schedule": "every 1h", "no_agent": true}), "no_agent=True requires a script"),
        (json!({"name": "bad", "schedule": "every 1h", "prompt": "p", "script": "../../etc/passwd"}), "traversal"),
        (
            json!({"name": "bad", "schedule": "every 1h", "prompt": "p", "script": "a.sh", "no_agent": "yes"}),
            "`no_agent` must be true or false",
        ),
        (
            json!({"name": "bad", "schedule": "every 1h", "prompt": "p", "script": "a.sh", "workdir": "relative"}),
            "`workdir` must be an absolute path",
        ),
    ] {
        let r = c.post(url("/api/jobs")).bearer_auth(&gw.key).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let e = r.json::<Value>().await.unwrap()["error"].as_str().unwrap().to_string();
        assert!(e.contains(needle), "{body}: {e}");
    }
    let r = c.patch(url("/api/jobs/api-watch")).bearer_auth(&gw.key).json(&json!({"script": "", "no_agent": true})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let r = c.post(url("/api/jobs/api-watch/run")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ok");
    assert!(last_user(&llm.requests()[0]).contains("```\na\n```\n\nRead it."), "{:?}", llm.requests());
}
