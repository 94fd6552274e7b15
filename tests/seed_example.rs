//! `examples/seed-jobs/` (issue #29's worked example) run as a user would run it: the home is
//! the example folder as shipped, its three `.txt` settings pointed at a local feed and HTTP
//! server and a local git repository; the news job's script fetches the feed and the fake
//! model summarizes it for Telegram, the code review job's script prints `git log`/`git diff
//! --stat` for the model to review on Discord, and the no_agent health check delivers only
//! failures, and nothing when all is well.

#![allow(clippy::unwrap_used)]

mod common;

use axum::http::StatusCode;
use axum::routing::get;
use common::*;
use std::path::Path;
use std::process::Command;

const FEED: &str = r#"<?xml version="1.0"?><rss version="2.0"><channel><title>AI</title>
<item><title>Model X ships tool use</title><link>https://news.test/x</link></item>
<item><title>Open weights for Y</title><link>https://news.test/y</link></item>
</channel></rss>"#;

/// Copies the example folder into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn git(repo: &Path, args: &[&str]) {
    let o = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Dev")
        .env("GIT_AUTHOR_EMAIL", "dev@test")
        .env("GIT_COMMITTER_NAME", "Dev")
        .env("GIT_COMMITTER_EMAIL", "dev@test")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_example_runs_its_three_jobs_end_to_end() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let dc = FakeDiscord::start().await;
    let web = spawn_server(
        axum::Router::new()
            .route("/feed.xml", get(|| async { FEED }))
            .route("/ok", get(|| async { "fine" }))
            .route("/down", get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "no") })),
    )
    .await;
    let home = TempHome::new("seed-example");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/seed-jobs"), home.path());
    home.write(
        "config.yaml",
        &format!(
            "model:\n  provider: openai\n  base_url: {}\n  name: m\nplatforms:\n  telegram:\n    api_base: {}\n  discord:\n    api_base: {}\n",
            llm.url, tg.url, dc.url
        ),
    );
    let repo = TempHome::new("seed-repo");
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join("lib.rs"), "fn main() {}\n").unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-qm", "Add the parser entry point"]);
    std::fs::write(repo.path().join("lib.rs"), "fn main() { run() }\nfn run() {}\n").unwrap();
    git(repo.path(), &["commit", "-qam", "Split run out of main"]);
    home.write("scripts/news-feeds.txt", &format!("{web}/feed.xml\n"));
    home.write("scripts/review-repo.txt", &format!("{}\n", repo.path().display()));
    home.write("scripts/health-urls.txt", &format!("{web}/ok\n{web}/down\n"));
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(stdout(&o).contains("3 created, 0 updated, 0 disabled, 0 skipped"), "{}{}", stdout(&o), stderr(&o));

    llm.push(Reply::Text("Brief: Model X ships tool use.".into()));
    let o = cli(home.path(), &["cron", "run", "daily-news-summary"], &[]);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let news = last_user(&llm.requests()[0]);
    assert!(news.contains("# Skill: ai-news-summarizer") && news.contains("## Script Output"), "{news}");
    assert!(news.contains("- Model X ships tool use (https://news.test/x)") && news.contains("- Open weights for Y"), "{news}");
    let sent = tg.wait_for(1, 10).await;
    assert_eq!(sent[0]["chat_id"], "-1001234567890");
    assert!(sent[0]["text"].as_str().unwrap().contains("Brief: Model X ships tool use."), "{sent:?}");

    llm.push(Reply::Text("Review: run() split out; add a test.".into()));
    let o = cli(home.path(), &["cron", "run", "weekly-code-review"], &[]);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let review = last_user(&llm.requests()[1]);
    assert!(review.contains("Dev: Split run out of main") && review.contains("Dev: Add the parser entry point"), "{review}");
    assert!(review.contains("## git diff --stat") && review.contains("lib.rs"), "{review}");
    let posted = dc.sent();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(posted[0]["_channel"], "123456789");
    assert!(posted[0]["content"].as_str().unwrap().contains("Review: run() split out"), "{posted:?}");

    let o = cli(home.path(), &["cron", "run", "health-check"], &[]);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let sent = tg.wait_for(2, 10).await;
    assert_eq!(sent[1]["chat_id"], "123456789");
    let text = sent[1]["text"].as_str().unwrap();
    assert!(text.contains(&format!("FAIL {web}/down (HTTP 503)")) && !text.contains("/ok"), "only the failure: {text}");
    // All well: nothing is delivered, and no model was asked.
    home.write("scripts/health-urls.txt", &format!("{web}/ok\n"));
    let o = cli(home.path(), &["cron", "run", "health-check"], &[]);
    assert!(stdout(&o).contains(": silent"), "{}{}", stdout(&o), stderr(&o));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(tg.sent().len(), 2, "{:?}", tg.sent());
    assert_eq!(llm.calls(), 2, "the health check never calls the model");
}
