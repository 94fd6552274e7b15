//! `hermes-zero cron …`: job management from the terminal, through the same use cases as the
//! API and the `cronjob` tool.

use super::{CronCmd, JobFlags};
use crate::app::{App, AppError, FireStatus};
use crate::core::job::Job;
use crate::runtime::ticker;
use serde_json::{Value, json};
use std::process::ExitCode;

/// `--retry`: `60,300` (or `[60, 300]`) → a list, `[]` or "" → none, `default` → null (the
/// configured delays). Anything else goes to the job's own check as text, which names it.
fn retry_json(r: &str) -> Value {
    let t = r.trim().trim_start_matches('[').trim_end_matches(']').trim();
    if r.trim() == "default" {
        return Value::Null;
    }
    if t.is_empty() {
        return json!([]);
    }
    json!(t.split(',').map(|d| d.trim().to_string()).collect::<Vec<_>>())
}

fn flags_json(v: &mut Value, f: &JobFlags) {
    if let Some(n) = &f.name {
        v["name"] = json!(n);
    }
    if let Some(d) = &f.deliver {
        v["deliver"] = json!(d);
    }
    if !f.skills.is_empty() {
        v["skills"] = json!(f.skills);
    }
    if let Some(r) = &f.repeat {
        v["repeat"] = json!(r);
    }
    if let Some(o) = &f.overlap {
        v["overlap"] = json!(o);
    }
    if let Some(s) = f.spread {
        v["spread"] = json!(s);
    }
    if let Some(r) = &f.retry {
        v["retry"] = retry_json(r);
    }
    if let Some(s) = &f.script {
        v["script"] = json!(s);
    }
    if f.no_agent {
        v["no_agent"] = json!(true);
    }
    if let Some(w) = &f.workdir {
        v["workdir"] = json!(w);
    }
    // An empty value clears the field (`--provider ""`).
    for (key, val) in [("model", &f.model), ("provider", &f.provider), ("base_url", &f.base_url)] {
        if let Some(x) = val {
            v[key] = json!(x);
        }
    }
    for (key, val) in [("context_from", &f.context_from), ("enabled_toolsets", &f.enabled_toolsets)] {
        if let Some(x) = val {
            v[key] = json!(x.split(',').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>());
        }
    }
    if let Some(d) = &f.failure_deliver {
        v["failure_deliver"] = json!(d);
    }
    if let Some(m) = &f.max_tokens {
        v["max_tokens"] = json!(m);
    }
    if let Some(b) = f.attach_to_session {
        v["attach_to_session"] = json!(b);
    }
}

fn fmt_time(app: &App, t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    // Seconds only when there are some (a spread offset), so the common case stays short.
    let fmt = |t: chrono::DateTime<chrono::Utc>| if t.timestamp() % 60 == 0 { "%Y-%m-%d %H:%M %Z" } else { "%Y-%m-%d %H:%M:%S %Z" };
    t.map_or_else(|| "-".into(), |t| t.with_timezone(&app.timezone()).format(fmt(t)).to_string())
}

fn print_jobs(app: &App, jobs: &[Job]) {
    if jobs.is_empty() {
        println!("no jobs (add one with: hermes-zero cron add \"every 1h\" \"check the news\")");
        return;
    }
    println!("{:<22} {:<22} {:<10} {:<22} {:<14}", "ID", "SCHEDULE", "STATE", "NEXT RUN", "LAST STATUS");
    for j in jobs {
        let last = j.last_status.map_or("-".to_string(), |s| format!("{s:?}").to_lowercase());
        println!(
            "{:<22} {:<22} {:<10} {:<22} {:<14}",
            j.id,
            j.schedule_text,
            format!("{:?}", j.state).to_lowercase(),
            fmt_time(app, j.next_run_at),
            last
        );
    }
}

/// Runs a `cron` sub-command.
pub async fn run(app: App, cmd: CronCmd) -> anyhow::Result<ExitCode> {
    match exec(&app, cmd).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(AppError::BadRequest(m) | AppError::NotFound(m)) => {
            eprintln!("hermes-zero: {m}");
            Ok(ExitCode::FAILURE)
        }
        // A target the delivery policy refuses is a usage error (docs/who-sees-what.md).
        Err(AppError::NotAllowed(m)) => {
            eprintln!("hermes-zero: {m}");
            Ok(ExitCode::from(2))
        }
        Err(e) => Err(e.into()),
    }
}

async fn exec(app: &App, cmd: CronCmd) -> Result<(), AppError> {
    match cmd {
        CronCmd::List { all, json } => list(app, all, json).await?,
        CronCmd::Add { schedule, prompt, flags } => {
            let mut v = json!({"schedule": schedule, "prompt": prompt});
            flags_json(&mut v, &flags);
            if flags.name.is_none() {
                v["id"] = json!(crate::core::job::new_id());
            }
            let j = app.jobs().add(&v).await?;
            println!("{}", j.id);
            tracing::info!("created `{}` ({}), next run {}", j.name, j.schedule.display(), fmt_time(app, j.next_run_at));
        }
        CronCmd::Edit { id, schedule, prompt, flags } => {
            let mut v = json!({});
            if let Some(s) = schedule {
                v["schedule"] = json!(s);
            }
            if let Some(p) = prompt {
                v["prompt"] = json!(p);
            }
            flags_json(&mut v, &flags);
            let j = app.jobs().update(&id, &v).await?;
            println!("updated {}: {}, next run {}", j.id, j.schedule.display(), fmt_time(app, j.next_run_at));
        }
        CronCmd::Pause { id } => println!("paused {}", app.jobs().set_paused(&id, true).await?.id),
        CronCmd::Resume { id } => {
            let j = app.jobs().set_paused(&id, false).await?;
            println!("resumed {}, next run {}", j.id, fmt_time(app, j.next_run_at));
        }
        CronCmd::Remove { id } => println!("removed {}", app.jobs().remove(&id).await?.id),
        CronCmd::Run { id, prompt } => {
            run_now(app, &id, prompt.as_deref()).await?;
            app.flush_usage(true).await;
        }
        CronCmd::Runs { id, json } => runs(app, &id, json).await?,
        CronCmd::Sync => {
            let r = app.jobs().sync_file().await?;
            println!(
                "{}: {} created, {} updated, {} disabled, {} skipped",
                r.file,
                r.created.len(),
                r.updated.len(),
                r.disabled.len(),
                r.skipped.len()
            );
        }
        CronCmd::Tick => {
            ticker::tick(app, true).await;
            app.flush_usage(true).await;
            println!("tick done");
        }
        CronCmd::Status => {
            let s = app.jobs().status().await?;
            println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
        }
    }
    Ok(())
}

/// `cron list [--all] [--json]`: armed and paused jobs (with `--all`, every job and the
/// jobs.json entries that were skipped).
async fn list(app: &App, all: bool, json: bool) -> Result<(), AppError> {
    let jobs: Vec<Job> =
        app.jobs().list().await?.into_iter().filter(|j| all || j.armed() || j.state == crate::core::job::JobState::Paused).collect();
    let skipped = if all { app.jobs().skipped().await? } else { Vec::new() };
    if json {
        let mut out: Vec<Value> = jobs.iter().map(crate::app::job_view).collect();
        out.extend(
            skipped
                .iter()
                .map(|k| json!({"id": k.id, "state": "skipped", "skip_reason": k.reason, "source": "jobs.json", "index": k.index})),
        );
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_jobs(app, &jobs);
        if !skipped.is_empty() {
            println!("\nskipped from jobs.json (fix the file, then `hermes-zero cron sync`):");
            for k in &skipped {
                println!("  {k}");
            }
        }
    }
    Ok(())
}

/// `cron run <id> [--prompt TEXT]`: fires the job now through the normal claim (with a
/// one-time text for this run) and prints the run.
async fn run_now(app: &App, id: &str, prompt: Option<&str>) -> Result<(), AppError> {
    let j = app.jobs().find(id).await?;
    match app.jobs().run_with(&j.id, prompt).await? {
        FireStatus::Ran { run, .. } => {
            println!("run {}: {}", run.run_id, run.status);
            if !run.output.is_empty() {
                println!("{}", run.output);
            }
            if let Some(e) = run.error {
                eprintln!("error: {e}");
            }
        }
        other => println!("{other:?}"),
    }
    Ok(())
}

/// `cron runs <id> [--json]`: the job's recent runs and their outputs.
async fn runs(app: &App, id: &str, json: bool) -> Result<(), AppError> {
    let j = app.jobs().find(id).await?;
    let runs = app.jobs().runs(&j.id, 50).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&runs).unwrap_or_default());
    } else if runs.is_empty() {
        println!("no runs of {} yet", j.id);
    } else {
        for r in runs {
            println!("{} [{}] fire_at {} attempt {} via {}", r.run_id, r.status, r.fire_at.to_rfc3339(), r.attempt, r.trigger);
            for d in &r.deliveries {
                println!("  → {} {}{}", d.target, d.status, d.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default());
            }
            if let Some(e) = &r.error {
                println!("  error: {e}");
            }
            for line in r.output.lines() {
                println!("  | {line}");
            }
        }
    }
    Ok(())
}
