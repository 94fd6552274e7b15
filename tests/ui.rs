//! The Schedule dashboard end to end, in Debian's headless Chromium driven over WebDriver
//! (`chromedriver`, fantoccini): sign in (wrong key, then right), create a job (invalid, then
//! valid schedule with its 3-run preview), run it against the fake model and read the output,
//! pause, resume, edit, delete; open and reset a session; edit memory and one user's own
//! profile; read the status page. Screenshots go to `target/ui-screenshot.png` (the Schedule
//! page, desktop), `target/ui-screenshot-375.png` (phone width), and `target/ui-create.png`,
//! `ui-sessions.png`, `ui-memory.png`, `ui-memory-user.png`, `ui-status.png`.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver`: `scripts/ui-deps.sh` installs them
//! (scripts/test.sh always runs it). Without them this test fails; it never passes silently.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use anyhow::{Context, Result, bail, ensure};
use common::*;
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Upper bound of every wait in this test.
const WAIT: Duration = Duration::from_secs(10);
const JOB: &str = "ui-test-job";

/// `chromedriver` on a free port; killed by pid on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let driver = Self { child, url };
        let http = hermes_zero::clients::client_builder().timeout(Duration::from_secs(2)).build().unwrap();
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = match http.get(format!("{}/status", driver.url)).send().await {
                Ok(r) => r.json::<Value>().await.is_ok_and(|v| v["value"]["ready"] == true),
                Err(_) => false,
            };
            if ready {
                return driver;
            }
            assert!(Instant::now() < deadline, "chromedriver did not become ready within {WAIT:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn require_browser() {
    for bin in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: run scripts/ui-deps.sh (it installs Debian's chromium and chromium-driver; scripts/test.sh always runs it)"
        );
    }
}

async fn browser(driver: &Driver, profile: &Path) -> Client {
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-quic",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ];
    let mut args: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.display()));
    let caps = json!({"browserName": "chrome", "goog:chromeOptions": {"binary": CHROMIUM, "args": args}});
    let caps = caps.as_object().unwrap().clone();
    // fantoccini's hyper-rustls brings aws-lc into test builds next to our ring: name one.
    hermes_zero::clients::install_crypto_provider();
    ClientBuilder::rustls().expect("TLS roots").capabilities(caps).connect(&driver.url).await.expect("open a Chromium session")
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target")
}

// ------------------------------------------------------------------ bounded waits

async fn find(c: &Client, css: &str) -> Result<Element> {
    c.wait().at_most(WAIT).every(Duration::from_millis(100)).for_element(Locator::Css(css)).await.with_context(|| format!("no `{css}`"))
}

/// Polls `check` every 100 ms until it returns `Some`, for at most [`WAIT`].
async fn poll<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("timed out after {WAIT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the visible text of `css` contains `needle`; returns the text.
async fn text_contains(c: &Client, css: &str, needle: &str) -> Result<String> {
    let last = std::cell::RefCell::new(String::new());
    let r = poll(&format!("`{css}` to contain {needle:?}"), || async {
        let text = c.find(Locator::Css(css)).await.ok()?.text().await.ok()?;
        *last.borrow_mut() = text.clone();
        text.contains(needle).then_some(text)
    })
    .await;
    r.with_context(|| format!("last text of `{css}`: {:?}", last.borrow()))
}

/// Waits until the form field `css` holds `want`.
async fn value_is(c: &Client, css: &str, want: &str) -> Result<()> {
    poll(&format!("`{css}` to hold {want:?}"), || async {
        (c.find(Locator::Css(css)).await.ok()?.prop("value").await.ok()?? == want).then_some(())
    })
    .await
}

async fn displayed(c: &Client, css: &str, want: bool) -> Result<()> {
    poll(&format!("`{css}` displayed = {want}"), || async {
        let shown = match c.find(Locator::Css(css)).await {
            Ok(e) => e.is_displayed().await.unwrap_or(false),
            Err(_) => false,
        };
        (shown == want).then_some(())
    })
    .await
}

async fn count(c: &Client, css: &str, n: usize) -> Result<()> {
    poll(&format!("{n} × `{css}`"), || async { (c.find_all(Locator::Css(css)).await.ok()?.len() == n).then_some(()) }).await
}

async fn click(c: &Client, css: &str) -> Result<()> {
    find(c, css).await?.click().await.with_context(|| format!("click `{css}`"))
}

async fn type_into(c: &Client, css: &str, text: &str) -> Result<()> {
    let e = find(c, css).await?;
    e.clear().await?;
    e.send_keys(text).await.with_context(|| format!("type into `{css}`"))
}

async fn api_jobs(gw: &Gateway) -> Vec<Value> {
    gw.get("/api/jobs").await.1["jobs"].as_array().cloned().unwrap_or_default()
}

fn row(sel: &str) -> String {
    format!("tr[data-job-name=\"{JOB}\"] {sel}")
}

// ------------------------------------------------------------------ the journey

async fn sign_in(c: &Client, base: &str) -> Result<()> {
    c.goto(&format!("{base}/")).await?;
    let lang: Value = c.execute("return document.documentElement.lang", vec![]).await?;
    ensure!(lang == "en", "html lang is {lang}");
    type_into(c, "#login-key", "not-the-key").await?;
    click(c, "#login-submit").await?;
    text_contains(c, "#login-key-error", "That API key was not accepted").await?;
    displayed(c, "#nav", false).await?;
    type_into(c, "#login-key", API_KEY).await?;
    click(c, "#login-submit").await?;
    displayed(c, "#panel-schedule", true).await?;
    displayed(c, "#jobs-empty", true).await?;
    displayed(c, "#login", false).await
}

async fn create_job(c: &Client, gw: &Gateway) -> Result<()> {
    click(c, "#new-job").await?;
    displayed(c, "#job-form", true).await?;
    type_into(c, "#f-name", JOB).await?;
    type_into(c, "#f-schedule", "every banana").await?;
    type_into(c, "#f-prompt", "Say hello to the dashboard").await?;
    // Live validation, then the same error on submit, next to the field; nothing is created.
    text_contains(c, "#f-schedule-error", "accepted forms").await?;
    click(c, "#f-submit").await?;
    text_contains(c, "#f-schedule-error", "unrecognised schedule `every banana`").await?;
    let invalid = find(c, "#f-schedule").await?.attr("aria-invalid").await?;
    ensure!(invalid.as_deref() == Some("true"), "aria-invalid = {invalid:?}");
    ensure!(api_jobs(gw).await.is_empty(), "an invalid job was created");

    type_into(c, "#f-schedule", "every 2h").await?;
    count(c, "[data-testid=preview-time]", 3).await?;
    text_contains(c, "#f-schedule-display", "Every 2 hours").await?;
    displayed(c, "#f-schedule-error", false).await?;
    text_contains(c, "#f-schedule-next li", "(in 2 h)").await?;
    click(c, "#skill-greeter").await?;
    shot(c, "ui-create.png").await?;
    click(c, "#f-submit").await?;

    // Back on the table, without a reload.
    displayed(c, "#panel-schedule", true).await?;
    text_contains(c, &row("[data-testid=job-schedule]"), "every 2h").await?;
    text_contains(c, &row("[data-testid=job-schedule-display]"), "every 2 hours").await?;
    text_contains(c, &row("[data-testid=job-state]"), "scheduled").await?;
    text_contains(c, &row("td[data-label='Next run']"), "in 2 h").await?;
    text_contains(c, "#notice", &format!("Created “{JOB}”")).await?;
    let jobs = api_jobs(gw).await;
    ensure!(jobs.len() == 1 && jobs[0]["skills"] == json!(["greeter"]) && jobs[0]["deliver"] == "local", "{jobs:?}");
    Ok(())
}

/// A second task: a taken name is reported next to the name field; platform delivery and a
/// repeat count reach the API; then it is deleted again.
async fn second_job(c: &Client, gw: &Gateway) -> Result<()> {
    click(c, "#new-job").await?;
    type_into(c, "#f-name", JOB).await?;
    type_into(c, "#f-schedule", "every 1h").await?;
    type_into(c, "#f-prompt", "Second").await?;
    find(c, "#f-deliver-kind").await?.select_by_value("platform").await?;
    displayed(c, "#f-chat", true).await?;
    find(c, "#f-platform").await?.select_by_value("telegram").await?;
    type_into(c, "#f-chat", "-100123").await?;
    find(c, "#f-repeat").await?.select_by_value("times").await?;
    type_into(c, "#f-repeat-times", "5").await?;
    // Overlap, spread, the failure target and the token limit (issue #30).
    find(c, "#f-overlap").await?.select_by_value("allow").await?;
    type_into(c, "#f-spread", "120").await?;
    type_into(c, "#f-max-tokens", "5000").await?;
    type_into(c, "#f-failure-deliver", "telegram:-100123").await?;
    count(c, "[data-testid=preview-time]", 3).await?;
    click(c, "#f-submit").await?;
    text_contains(c, "#f-name-error", "already exists").await?;
    type_into(c, "#f-name", "ui-second").await?;
    click(c, "#f-submit").await?;
    let second = "tr[data-job-name=\"ui-second\"]";
    text_contains(c, &format!("{second} [data-testid=job-schedule]"), "every 1h").await?;
    let jobs = api_jobs(gw).await;
    let j = jobs.iter().find(|j| j["name"] == "ui-second").context("ui-second not stored")?;
    ensure!(j["deliver"] == "telegram:-100123" && j["repeat"]["times"] == 5, "{j}");
    ensure!(j["overlap"] == "allow" && j["spread"] == 120 && j["max_tokens"] == 5000, "{j}");
    ensure!(j["failure_deliver"] == json!(["telegram:-100123"]), "{j}");
    // The edit form shows them back.
    click(c, &format!("{second} [data-testid=job-edit]")).await?;
    value_is(c, "#f-overlap", "allow").await?;
    value_is(c, "#f-spread", "120").await?;
    value_is(c, "#f-max-tokens", "5000").await?;
    value_is(c, "#f-failure-deliver", "telegram:-100123").await?;
    click(c, "#f-cancel").await?;
    displayed(c, "#panel-schedule", true).await?;
    // The table is drawn again as the form closes: retry a click that met the old row.
    let delete = format!("{second} [data-testid=job-delete]");
    poll("the delete button of ui-second", || async { c.find(Locator::Css(&delete)).await.ok()?.click().await.ok() }).await?;
    click(c, "#confirm-ok").await?;
    count(c, second, 0).await?;
    ensure!(api_jobs(gw).await.len() == 1, "ui-second was not deleted");
    Ok(())
}

/// A `no_agent` script job made with the script picker: stored with its script, and its run
/// shows the script's output without a model call; then deleted.
async fn script_job(c: &Client, gw: &Gateway, llm: &FakeLlm) -> Result<()> {
    click(c, "#new-job").await?;
    type_into(c, "#f-name", "ui-script").await?;
    type_into(c, "#f-schedule", "every 1h").await?;
    find(c, "#f-no-agent").await?.click().await?;
    click(c, "#f-submit").await?;
    text_contains(c, "#f-script-error", "Pick the script").await?;
    poll("the script picker lists watch.sh", || async { c.find(Locator::Css("#f-script option[value=\"watch.sh\"]")).await.ok() }).await?;
    find(c, "#f-script").await?.select_by_value("watch.sh").await?;
    click(c, "#f-submit").await?;
    let script = "tr[data-job-name=\"ui-script\"]";
    text_contains(c, &format!("{script} [data-testid=job-schedule]"), "every 1h").await?;
    let jobs = api_jobs(gw).await;
    let j = jobs.iter().find(|j| j["name"] == "ui-script").context("ui-script not stored")?;
    ensure!(j["script"] == "watch.sh" && j["no_agent"] == true, "{j}");
    let calls = llm.calls();
    click(c, &format!("{script} [data-testid=job-run]")).await?;
    let history = "tr[data-history-name=\"ui-script\"]";
    text_contains(c, &format!("{history} [data-testid=run-output]"), "disk ok 42").await?;
    ensure!(llm.calls() == calls, "a no_agent job called the model");
    click(c, &format!("{script} [data-testid=job-delete]")).await?;
    click(c, "#confirm-ok").await?;
    count(c, script, 0).await?;
    Ok(())
}

async fn run_pause_resume(c: &Client, llm: &FakeLlm) -> Result<()> {
    click(c, &row("[data-testid=job-run]")).await?;
    let history = format!("tr[data-history-name=\"{JOB}\"]");
    let out = text_contains(c, &format!("{history} [data-testid=run-output]"), "echo:").await?;
    ensure!(out.contains("Say hello to the dashboard"), "run output: {out}");
    text_contains(c, &format!("{history} [data-testid=run-status]"), "ok").await?;
    text_contains(c, &row("[data-testid=job-last-status]"), "ok").await?;
    ensure!(llm.calls() == 1, "model calls: {}", llm.calls());
    ensure!(llm.requests().iter().any(|r| last_user(r).contains("Greet warmly")), "the skill was not in the prompt");

    click(c, &row("[data-testid=job-pause]")).await?;
    text_contains(c, &row("[data-testid=job-state]"), "paused").await?;
    find(c, &row("[data-testid=job-resume]")).await?;
    click(c, &row("[data-testid=job-resume]")).await?;
    text_contains(c, &row("[data-testid=job-state]"), "scheduled").await?;
    find(c, &row("[data-testid=job-pause]")).await?;
    Ok(())
}

/// Saves a screenshot under `target/`.
async fn shot(c: &Client, name: &str) -> Result<()> {
    std::fs::create_dir_all(target_dir())?;
    std::fs::write(target_dir().join(name), c.screenshot().await?).with_context(|| format!("write target/{name}"))
}

async fn edit_job(c: &Client, gw: &Gateway) -> Result<()> {
    click(c, &row("[data-testid=job-edit]")).await?;
    text_contains(c, "#form-title", &format!("Edit “{JOB}”")).await?;
    let prefilled = find(c, "#f-schedule").await?.prop("value").await?;
    ensure!(prefilled.as_deref() == Some("every 2h"), "schedule field: {prefilled:?}");
    ensure!(find(c, "#skill-greeter").await?.is_selected().await?, "the bound skill is not ticked");
    type_into(c, "#f-prompt", "Say goodbye to the dashboard").await?;
    type_into(c, "#f-schedule", "daily at 14:00").await?;
    count(c, "[data-testid=preview-time]", 3).await?;
    click(c, "#f-submit").await?;
    text_contains(c, &row("[data-testid=job-schedule]"), "daily at 14:00").await?;
    text_contains(c, "#notice", &format!("Saved “{JOB}”")).await?;
    let jobs = api_jobs(gw).await;
    ensure!(jobs.len() == 1 && jobs[0]["prompt"] == "Say goodbye to the dashboard" && jobs[0]["skills"] == json!(["greeter"]), "{jobs:?}");
    Ok(())
}

async fn screenshots(c: &Client) -> Result<()> {
    shot(c, "ui-screenshot.png").await?;
    c.set_window_size(375, 812).await?;
    let fits = poll("the page to fit 375 px", || async {
        let v = c.execute("return [document.documentElement.scrollWidth, window.innerWidth]", vec![]).await.ok()?;
        let (sw, w) = (v[0].as_u64()?, v[1].as_u64()?);
        (w <= 400 && sw <= w).then_some((sw, w))
    })
    .await;
    shot(c, "ui-screenshot-375.png").await?;
    fits.context("horizontal overflow at phone width")?;
    c.set_window_size(1280, 900).await?;
    Ok(())
}

async fn delete_job(c: &Client, gw: &Gateway) -> Result<()> {
    click(c, &row("[data-testid=job-delete]")).await?;
    displayed(c, "#confirm", true).await?;
    click(c, "#confirm-cancel").await?;
    displayed(c, "#confirm", false).await?;
    ensure!(api_jobs(gw).await.len() == 1, "cancel deleted the job");
    click(c, &row("[data-testid=job-delete]")).await?;
    text_contains(c, "#confirm-text", JOB).await?;
    click(c, "#confirm-ok").await?;
    count(c, "tr[data-testid=job-row]", 0).await?;
    displayed(c, "#jobs-empty", true).await?;
    ensure!(api_jobs(gw).await.is_empty(), "the job is still stored");
    Ok(())
}

async fn sessions(c: &Client, gw: &Gateway, session_id: &str) -> Result<()> {
    click(c, "#tab-sessions").await?;
    let row = "tr[data-testid=session-row][data-session-key*=\"ui-chat\"]";
    text_contains(c, &format!("{row} [data-testid=session-chat]"), "ui-chat").await?;
    click(c, &format!("{row} [data-testid=session-open]")).await?;
    displayed(c, "#transcript", true).await?;
    text_contains(c, "#transcript-messages", "hello from the browser test").await?;
    text_contains(c, "#transcript-messages", "echo: hello from the browser test").await?;
    text_contains(c, "#transcript-meta", session_id).await?;
    shot(c, "ui-sessions.png").await?;

    click(c, &format!("{row} [data-testid=session-reset]")).await?;
    click(c, "#confirm-ok").await?;
    text_contains(c, "#notice", "New session").await?;
    let new_id = poll("a new session id in the row", || async {
        let id = c.find(Locator::Css(row)).await.ok()?.attr("data-session-id").await.ok()??;
        (id != session_id).then_some(id)
    })
    .await?;
    let (_, old) = gw.get(&format!("/api/sessions/{session_id}")).await;
    ensure!(old["session"]["end_reason"] == "session_reset", "{old}");
    let (_, list) = gw.get("/api/sessions").await;
    ensure!(list["sessions"].as_array().unwrap().iter().any(|s| s["session_id"] == new_id.as_str()), "{list}");
    Ok(())
}

async fn memory(c: &Client, gw: &Gateway) -> Result<()> {
    click(c, "#tab-memory").await?;
    text_contains(c, "[data-testid=m-memory-usage]", "0% — 0/2,200 chars").await?;
    type_into(c, "#m-memory", "prefers dark mode\n§\nworks in UTC").await?;
    type_into(c, "#m-user", "Ann").await?;
    click(c, "#memory-save").await?;
    text_contains(c, "#notice", "Memory saved").await?;
    text_contains(c, "[data-testid=m-memory-usage]", "1% — 32/2,200 chars").await?;
    let (_, v) = gw.get("/api/memory").await;
    ensure!(v["memory"]["entries"] == json!(["prefers dark mode", "works in UTC"]) && v["user"]["entries"] == json!(["Ann"]), "{v}");
    shot(c, "ui-memory.png").await?;
    Ok(())
}

/// Per-user profiles (docs/who-sees-what.md): the users with one are listed, each is shown
/// and saved on its own, and the shared profile stays as it was.
async fn user_profiles(c: &Client, gw: &Gateway) -> Result<()> {
    let r = gw.http.put(format!("{}/api/memory?user=telegram:111", gw.base)).bearer_auth(&gw.key).json(&json!({"user": ["likes tea"]}));
    ensure!(r.send().await?.status() == 200, "seeding telegram:111's profile");
    click(c, "#memory-refresh").await?;
    text_contains(c, "[data-testid=m-mode]", "per_user").await?;
    find(c, "#m-owner").await?.select_by_value("telegram:111").await?;
    text_contains(c, "[data-testid=m-user-title]", "User profile of telegram:111").await?;
    value_is(c, "#m-user", "likes tea").await?;
    type_into(c, "#m-user", "likes green tea").await?;
    click(c, "#memory-save").await?;
    text_contains(c, "#notice", "Memory saved").await?;
    shot(c, "ui-memory-user.png").await?;
    let (_, v) = gw.get("/api/memory?user=telegram:111").await;
    ensure!(v["user"]["entries"] == json!(["likes green tea"]) && v["owner"] == "telegram:111", "{v}");
    let (_, v) = gw.get("/api/memory").await;
    ensure!(v["user"]["entries"] == json!(["Ann"]), "the shared profile is untouched: {v}");
    find(c, "#m-owner").await?.select_by_value("").await?;
    text_contains(c, "[data-testid=m-user-title]", "User profile").await?;
    value_is(c, "#m-user", "Ann").await?;
    Ok(())
}

async fn status(c: &Client) -> Result<()> {
    click(c, "#tab-status").await?;
    text_contains(c, "[data-testid=status-version]", env!("CARGO_PKG_VERSION")).await?;
    text_contains(c, "[data-testid=status-store]", "sqlite").await?;
    text_contains(c, "[data-testid=status-provider]", "builtin").await?;
    text_contains(c, "[data-testid=status-why]", "cron.provider is builtin").await?;
    // The 14-day usage chart: one bar per day, today's counts from the journey so far.
    count(c, "[data-testid=usage-bar]", 14).await?;
    let totals = text_contains(c, "[data-testid=usage-totals]", "job run").await?;
    ensure!(
        !totals.starts_with("14 days: 0 turns") && !totals.contains(" 0 job runs") && !totals.contains(" 0 store requests"),
        "usage totals: {totals}"
    );
    text_contains(c, "[data-testid=usage-estimate]", "Estimated cost").await?;
    text_contains(c, "[data-testid=usage-budget]", "Jobs today").await?;
    shot(c, "ui-status.png").await?;
    Ok(())
}

/// Runs one step, printing how long it took (shown with `--nocapture`).
async fn step<F: std::future::Future<Output = Result<()>>>(name: &str, f: F) -> Result<()> {
    let t = Instant::now();
    let r = f.await.with_context(|| format!("step `{name}`"));
    eprintln!("ui step {name}: {:?}{}", t.elapsed(), if r.is_ok() { "" } else { " (failed)" });
    r
}

async fn journey(c: &Client, gw: &Gateway, llm: &FakeLlm, session_id: &str) -> Result<()> {
    step("sign in", sign_in(c, &gw.base)).await?;
    step("create a job", create_job(c, gw)).await?;
    step("a second job", second_job(c, gw)).await?;
    step("a script job", script_job(c, gw, llm)).await?;
    step("run, pause, resume", run_pause_resume(c, llm)).await?;
    step("edit", edit_job(c, gw)).await?;
    step("screenshots", screenshots(c)).await?;
    step("delete", delete_job(c, gw)).await?;
    step("sessions", sessions(c, gw, session_id)).await?;
    step("memory", memory(c, gw)).await?;
    step("user profiles", user_profiles(c, gw)).await?;
    step("status", status(c)).await?;
    // Signing out forgets the key; a reload shows the sign-in form again.
    step("sign out", async {
        click(c, "#logout").await?;
        c.refresh().await?;
        displayed(c, "#login", true).await
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_headless_chromium() {
    require_browser();
    let llm = FakeLlm::start().await;
    let home = TempHome::new("ui");
    // The second job delivers to a group the operator lists for the delivery policy; each
    // user has a memory profile of their own.
    let extra = "cron:\n  provider: builtin\ndelivery:\n  allow_targets: ['telegram:-100123']\nmemory:\n  user_profile: per_user\n";
    home.write("config.yaml", &config(Some(&llm), None, extra));
    home.write("skills/greeter/SKILL.md", "---\nname: greeter\ndescription: Greets people\n---\nGreet warmly.\n");
    home.write("scripts/watch.sh", "echo 'disk ok 42'\n");
    let gw = Gateway::start(home.path(), &[]);
    let (s, turn) = gw.post_message(json!({"chat_id": "ui-chat", "user_id": "u1", "text": "hello from the browser test"})).await;
    assert_eq!(s, 200, "{turn}");
    let session_id = turn["session_id"].as_str().unwrap().to_string();
    llm.inner.lock().unwrap().requests.clear();

    let driver = Driver::start().await;
    let profile = TempHome::new("chromium-profile");
    let c = browser(&driver, profile.path()).await;
    let outcome = journey(&c, &gw, &llm, &session_id).await;
    if outcome.is_err()
        && let Ok(png) = c.screenshot().await
    {
        std::fs::create_dir_all(target_dir()).ok();
        std::fs::write(target_dir().join("ui-failure.png"), png).ok();
    }
    c.close().await.ok();
    drop(driver);
    if let Err(e) = outcome {
        panic!("dashboard journey failed (screenshot: target/ui-failure.png): {e:#}");
    }
}
