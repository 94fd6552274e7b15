//! No secret in any log line or HTTP answer (issue #17 item 8): the real binary runs with
//! every secret configured, `RUST_LOG=trace` and `-v`, and is driven through the paths where
//! a secret is near a log line — messages, webhooks with right and wrong secrets, a failing
//! model, deliveries (the Telegram token is in the URL, Discord's in a header), fire tokens
//! (a JWT is a bearer secret), `doctor`, config errors, `/api/status` and the dashboard.
//! Everything it wrote to stdout and stderr, and every HTTP answer, is then searched for each
//! secret's value.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const API: &str = "hz-api-SECRET-a1b2c3d4";
const SECRETS: &[(&str, &str)] = &[
    ("API_SERVER_KEY", API),
    ("TELEGRAM_BOT_TOKEN", "777000:SECRET-tg-bot-e5f6g7"),
    ("TELEGRAM_WEBHOOK_SECRET", "SECRET-tg-hook-h8i9j0"),
    ("DISCORD_BOT_TOKEN", "SECRET-dc-bot-k1l2m3"),
    ("NOUS_ACCESS_TOKEN", "SECRET-nous-n4o5p6"),
    ("OPENAI_API_KEY", "sk-SECRET-openai-q7r8s9"),
    ("OPENROUTER_API_KEY", "sk-or-SECRET-t0u1v2"),
    ("ANTHROPIC_API_KEY", "sk-ant-SECRET-w3x4y5"),
];
const INSTANCE: &str = "secrets-test";

/// `serve` with every secret set, stdout and stderr to files in the home.
struct Logged {
    child: Child,
    base: String,
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn command(home: &Path, args: &[&str], log: &str) -> Command {
    let mut c = Command::new(bin());
    c.args(["--home", home.to_str().unwrap(), "-v"]).args(args).env_remove("HERMES_HOME").env("RUST_LOG", "trace");
    c.envs(SECRETS.iter().copied());
    c.stdout(std::fs::File::create(home.join(format!("{log}.out"))).unwrap());
    c.stderr(std::fs::File::create(home.join(format!("{log}.err"))).unwrap());
    c
}

fn serve(home: &Path) -> Logged {
    let child = command(home, &["serve", "--listen", "127.0.0.1:0"], "serve").stdin(Stdio::null()).spawn().unwrap();
    let mut gw = Logged { child, base: String::new() };
    let deadline = Instant::now() + Duration::from_secs(20);
    while gw.base.is_empty() {
        let out = std::fs::read_to_string(home.join("serve.out")).unwrap_or_default();
        match out.split("listening on ").nth(1).and_then(|r| r.split_whitespace().next()) {
            Some(addr) => gw.base = addr.to_string(),
            None => {
                assert!(Instant::now() < deadline, "no listening line:\n{out}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    gw
}

/// Runs a CLI command to completion (bounded by the command itself), logging to files.
fn run(home: &Path, args: &[&str], log: &str) {
    let status = command(home, args, log).stdin(Stdio::null()).status().unwrap();
    let _ = status; // config errors fail on purpose; only their output matters here
}

/// Every HTTP answer's status line and body, for the final search.
#[derive(Default)]
struct Answers(Vec<String>);

impl Answers {
    async fn keep(&mut self, r: reqwest::Response) -> u16 {
        let s = r.status().as_u16();
        let headers = format!("{:?}", r.headers());
        self.0.push(format!("{s} {headers} {}", r.text().await.unwrap_or_default()));
        s
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_log_line_or_an_http_answer() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let dc = FakeDiscord::start().await;
    let home = TempHome::new("secrets");
    let h = home.path();
    let yaml = format!(
        "model:\n  provider: openai\n  base_url: {}\n  name: fake-model\n  timeout_seconds: 10\n\
delivery:\n  allow_targets: ['discord:555']\n\
platforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n  discord:\n    api_base: {}\n{}",
        llm.url,
        tg.url,
        dc.url,
        pinned_key_chronos(INSTANCE)
    );
    home.write("config.yaml", &yaml);
    run(h, &["cron", "add", "every 1h", "report", "--name", "both", "--deliver", "telegram:42,discord:555"], "add");

    let gw = serve(h);
    let http = hermes_zero::clients::client_builder().timeout(Duration::from_secs(30)).build().unwrap();
    let url = |p: &str| format!("{}{p}", gw.base);
    let mut a = Answers::default();
    let msg = json!({"chat_id": "c1", "user_id": "u1", "text": "hello"});
    // Messages: right key, wrong key, no key, a failing model.
    assert_eq!(a.keep(http.post(url("/api/messages")).bearer_auth(API).json(&msg).send().await.unwrap()).await, 200);
    assert_eq!(a.keep(http.post(url("/api/messages")).bearer_auth("wrong").json(&msg).send().await.unwrap()).await, 401);
    a.keep(http.post(url("/api/messages")).json(&msg).send().await.unwrap()).await;
    llm.push(Reply::Status(401));
    a.keep(http.post(url("/api/messages")).bearer_auth(API).json(&msg).send().await.unwrap()).await;
    llm.push(Reply::Status(500));
    a.keep(http.post(url("/api/messages")).bearer_auth(API).json(&msg).send().await.unwrap()).await;
    // Telegram webhook: right secret (the reply goes out with the token in the URL), wrong one.
    let upd = tg_update(1, 1, 42, 42, "hi from telegram");
    let hook = |secret: &str| http.post(url("/webhooks/telegram")).header("x-telegram-bot-api-secret-token", secret).json(&upd);
    assert_eq!(a.keep(hook(SECRETS[2].1).send().await.unwrap()).await, 200);
    assert_eq!(a.keep(hook("wrong").send().await.unwrap()).await, 401);
    assert!(!tg.wait_for(1, 10).await.is_empty(), "the Telegram reply was sent");
    // A job run delivering to Telegram and Discord (bot token in a header).
    a.keep(http.post(url("/api/jobs/both/run")).bearer_auth(API).send().await.unwrap()).await;
    assert!(wait_until(10, || !dc.sent().is_empty()).await, "the Discord delivery was sent");
    // Fire tokens: a valid one and one that fails verification (both are bearer secrets).
    let good = rsa_fire_token("both", INSTANCE, 0);
    let bad = rsa_fire_token("both", "someone-else", 0);
    for t in [&good, &bad] {
        let body = json!({"job_id": "both"});
        a.keep(http.post(url("/api/cron/fire")).bearer_auth(t).json(&body).send().await.unwrap()).await;
    }
    // Read-only pages.
    for p in ["/api/status", "/api/jobs", "/api/sessions", "/api/jobs/both/runs", "/healthz"] {
        a.keep(http.get(url(p)).bearer_auth(API).send().await.unwrap()).await;
    }
    for p in ["/", "/ui", "/ui/app.js"] {
        a.keep(http.get(url(p)).send().await.unwrap()).await;
    }
    drop(gw);

    // CLI: doctor, cron list, and config errors (one with an inline key next to a bad value).
    run(h, &["doctor"], "doctor");
    run(h, &["cron", "list", "--all"], "list");
    home.write("config.yaml", "model:\n  provider: openai\n  api_key: sk-SECRET-inline-z6z7z8\n  timeout_seconds: soon\n");
    run(h, &["doctor"], "badcfg");
    run(h, &["serve", "--listen", "127.0.0.1:0"], "badserve");

    let mut logs = String::new();
    for e in std::fs::read_dir(h).unwrap().map(|e| e.unwrap().path()) {
        if e.extension().is_some_and(|x| x == "out" || x == "err") {
            logs.push_str(&std::fs::read_to_string(&e).unwrap_or_default());
        }
    }
    // The logs really are at trace level and cover the paths driven.
    for seen in ["TRACE", "webhook call refused", "model call failed", "fire token", "store:    sqlite ok", "timeout_seconds"] {
        assert!(logs.contains(seen), "no `{seen}` in the logs:\n{logs}");
    }
    let answers = a.0.join("\n");
    let mut all: Vec<(&str, &str)> = SECRETS.to_vec();
    all.extend([("fire token", good.as_str()), ("bad fire token", bad.as_str()), ("inline api_key", "sk-SECRET-inline-z6z7z8")]);
    for (name, value) in all {
        // The JWT's signature part is the secret-bearing piece a log could print alone.
        let needle = value.rsplit('.').next().unwrap();
        let leaked = logs.lines().find(|l| l.contains(needle));
        assert!(leaked.is_none(), "{name} appears in a log line: {}", leaked.unwrap_or_default());
        assert!(!answers.contains(needle), "{name} appears in an HTTP answer:\n{answers}");
    }
}
