//! `cronjob`: lets users schedule and manage jobs in plain language from a chat. It is not
//! offered inside job runs (a job cannot schedule jobs). In a chat it lists and manages only
//! the jobs made from that chat (their origin), unless the sender is an admin (`admin_users`,
//! `cron.admin_users`); `deliver` targets are held to the delivery policy (docs/who-sees-what.md).

use super::{Tool, ToolCtx, ToolError, ToolOutput, TurnKind};
use crate::app::{App, FireStatus};
use crate::core::ids::Origin;
use crate::core::job::{Job, JobOrigin};
use crate::core::jobfile;
use async_trait::async_trait;
use serde_json::{Value, json};

/// The `cronjob` tool.
pub struct Cronjob;

#[async_trait]
impl Tool for Cronjob {
    fn name(&self) -> &str {
        "cronjob"
    }

    /// Only `list` reads; every other action writes a job (docs/design/jobs.md#retry).
    fn has_effect(&self, args: &serde_json::Value) -> bool {
        args["action"].as_str() != Some("list")
    }

    fn toolset(&self) -> &str {
        "cronjob"
    }

    fn description(&self) -> &str {
        "Manage scheduled jobs. Schedules: `every 30m`, `in 2h`, cron `0 8 * * *`, `every weekday at 9am`, ISO time. \
Results are delivered to this chat unless `deliver` says otherwise (local, origin, telegram, telegram:<chat_id>)."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["create", "list", "update", "pause", "resume", "remove", "run"]},
                "job_id": {"type": "string", "description": "id or name of an existing job (update/pause/resume/remove/run)"},
                "name": {"type": "string"},
                "schedule": {"type": "string"},
                "prompt": {"type": "string", "description": "what the agent should do at each run (create/update); with run: a one-time text for that run only"},
                "skills": {"type": "array", "items": {"type": "string"}},
                "deliver": {"type": "string"},
                "repeat": {"description": "forever (default), once, or a number of runs"},
                "script": {"type": "string", "description": "Optional path to a script that runs each tick, relative to $HERMES_HOME/scripts/ (.sh/.bash run with bash, anything else with Python). By default its stdout is put into the prompt as context; if its last line is {\"wakeAgent\": false} the run is skipped. With no_agent=true its stdout is delivered verbatim. On update, pass an empty string to clear."},
                "no_agent": {"type": "boolean", "description": "Skip the model entirely: run `script` on schedule and deliver its stdout verbatim; empty stdout delivers nothing. Requires `script`."},
                "workdir": {"type": "string", "description": "Optional absolute path the script runs in (default: the scripts folder). On update, pass an empty string to clear."},
                "model": {"type": "string", "description": "this job's model id (default: the configured model)"},
                "provider": {"type": "string", "description": "this job's model provider, by Hermes' names (custom for your own endpoint)"},
                "base_url": {"type": "string", "description": "this job's model base URL (needs provider)"},
                "context_from": {"description": "job id or list of job ids whose newest output goes into this job's prompt"},
                "enabled_toolsets": {"type": "array", "items": {"type": "string"}, "description": "only these toolsets' tools in this job's runs"},
                "attach_to_session": {"type": "boolean", "description": "also put the delivered text into this chat's conversation"}
            },
            "required": ["action"]
        })
    }

    /// Chat turns only: a job run has no chat to own the jobs it would make.
    fn offered(&self, ctx: &ToolCtx<'_>) -> bool {
        ctx.kind == TurnKind::Chat && ctx.origin.is_some()
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        cronjob(ctx.app, args, ctx.origin).await.map(ToolOutput::Json).map_err(ToolError::Failed)
    }
}

/// A compact job view for the model and the API.
pub fn job_view(j: &Job) -> Value {
    json!({
        "id": j.id, "name": j.name, "schedule": j.schedule_text, "schedule_display": j.schedule.display(), "prompt": j.prompt,
        "skills": j.skills, "deliver": j.deliver, "state": j.state, "enabled": j.enabled, "next_run_at": j.next_run_at,
        "last_run_at": j.last_run_at, "last_status": j.last_status, "last_error": j.last_error, "repeat": j.repeat,
        "overlap": j.overlap, "spread": j.spread, "retry": j.retry, "retry_due": j.retry_due,
        "script": j.script, "no_agent": j.no_agent, "workdir": j.workdir,
        "model": j.model, "context_from": j.options.context_from, "enabled_toolsets": j.options.enabled_toolsets,
        "provider": j.options.provider, "base_url": j.options.base_url, "attach_to_session": j.options.attach_to_session,
        "failure_deliver": j.options.failure_deliver, "max_tokens": j.options.max_tokens,
    })
}

/// Which jobs a caller may see and manage: only those made from its chat, or all of them
/// for an admin.
struct Scope<'a> {
    /// The caller's chat (`None`: no chat, every job).
    origin: Option<&'a Origin>,
    /// The caller is a cron admin.
    admin: bool,
}

impl Scope<'_> {
    fn covers(&self, job: &Job) -> bool {
        match self.origin {
            None => true,
            Some(_) if self.admin => true,
            Some(o) => job.origin.as_ref().is_some_and(|j| j.platform == o.platform && j.chat_id == o.chat_id),
        }
    }
}

/// The one answer for a job the caller cannot reach, whether it exists elsewhere or not.
fn no_job(id: &str) -> String {
    format!("no job `{id}`")
}

/// Resolves `id` (an id, else an exact name) among the jobs the scope covers; anything outside
/// it is not looked at, so the answer for another chat's job is the answer for no job.
async fn scoped_job(app: &App, scope: &Scope<'_>, id: &str) -> Result<Job, String> {
    let store = &app.inner.store;
    if let Some(j) = store.get_job(id).await.map_err(|e| e.to_string())?.filter(|j| scope.covers(j)) {
        return Ok(j);
    }
    let all = store.list_jobs().await.map_err(|e| e.to_string())?;
    let mut hits = all.into_iter().filter(|j| j.name == id && scope.covers(j));
    match (hits.next(), hits.next()) {
        (Some(j), None) => Ok(j),
        (Some(_), Some(_)) => Err(format!("several jobs are named `{id}`; use the id")),
        _ => Err(no_job(id)),
    }
}

/// The shortest gap between runs this caller may schedule: 60 s in a chat, the configured
/// `cron.min_interval_seconds` for an admin.
fn min_gap(app: &App, scope: &Scope<'_>) -> i64 {
    let admin = i64::try_from(app.inner.cfg.settings.cron.min_interval_seconds).unwrap_or(i64::MAX);
    if scope.admin { admin.max(1) } else { CHAT_MIN_GAP_SECS }
}

/// A chat user's jobs run at most once a minute, in every schedule form.
const CHAT_MIN_GAP_SECS: i64 = 60;

/// Refuses a schedule whose runs would come closer than `min` seconds (any form: an
/// interval, a 5- or 6-field cron).
fn hold_to(schedule: &crate::core::schedule::Schedule, min: i64) -> Result<(), String> {
    match schedule.shortest_gap_secs() {
        Some(gap) if gap < min => {
            Err(format!("`{}` would run every {gap} s; jobs made in a chat run at most once every {min} s", schedule.to_text()))
        }
        _ => Ok(()),
    }
}

/// A chat may feed a job only the outputs of jobs it can see (`context_from`): another chat's
/// job gets the same "no job" as one that does not exist.
async fn hold_context(app: &App, scope: &Scope<'_>, args: &Value) -> Result<(), String> {
    if scope.origin.is_none() || scope.admin {
        return Ok(());
    }
    let opts = crate::core::job_options::JobOptions::parse(args)?;
    for id in &opts.context_from {
        match app.inner.store.get_job(id).await.map_err(|e| e.to_string())? {
            Some(j) if scope.covers(&j) => {}
            _ => return Err(format!("`context_from`: {}", no_job(id))),
        }
    }
    Ok(())
}

async fn cronjob(app: &App, mut args: Value, origin: Option<&Origin>) -> Result<Value, String> {
    let action = args["action"].as_str().unwrap_or_default().to_string();
    let id = args["job_id"].as_str().map(str::to_string);
    let scope = Scope { origin, admin: app.is_admin(origin) };
    let need_id = async || {
        let id = id.clone().ok_or_else(|| format!("`job_id` is required for {action}"))?;
        scoped_job(app, &scope, &id).await.map(|j| j.id)
    };
    let e = |e: crate::app::AppError| e.to_string();
    match action.as_str() {
        "create" => {
            if scope.origin.is_some() && !scope.admin {
                // A fresh id, never one derived from the name: an id taken in another chat
                // would otherwise be refused, which tells that the job exists.
                args["id"] = json!(crate::core::job::new_id());
                if let Some(name) = args["name"].as_str()
                    && scoped_job(app, &scope, name).await.is_ok()
                {
                    return Err(format!("a job named `{name}` already exists in this chat"));
                }
            } else if args.get("id").is_none() && args.get("name").is_none() {
                args["id"] = json!(crate::core::job::new_id());
            }
            if let Some(o) = origin {
                args["origin"] = json!(JobOrigin {
                    platform: o.platform.clone(),
                    chat_id: o.chat_id.clone(),
                    thread_id: o.thread_id.clone(),
                    user_id: o.user_id.clone(),
                    chat_type: Some(o.chat_type),
                });
            }
            let spec = jobfile::parse_job(&args, app.inner.clock.now(), app.inner.cfg.tz)?;
            hold_to(&spec.schedule, min_gap(app, &scope))?;
            hold_context(app, &scope, &args).await?;
            let job = app.create_job(spec, false, origin).await.map_err(e)?;
            Ok(json!({"created": job_view(&job)}))
        }
        "list" => {
            let jobs = app.inner.store.list_jobs().await.map_err(|x| x.to_string())?;
            Ok(json!({"jobs": jobs.iter().filter(|j| scope.covers(j)).map(job_view).collect::<Vec<_>>()}))
        }
        "update" => {
            let mut patch = args.clone();
            if let Some(o) = patch.as_object_mut() {
                // A job's chat is where it was made: a chat cannot move one in or out.
                o.retain(|k, _| !matches!(k.as_str(), "action" | "job_id" | "origin"));
            }
            hold_context(app, &scope, &patch).await?;
            if let Some(s) = patch.get("schedule") {
                let parsed = crate::core::schedule::parse_value(s, app.inner.clock.now(), app.inner.cfg.tz).map_err(|e| e.to_string())?;
                hold_to(&parsed, min_gap(app, &scope))?;
            }
            Ok(json!({"updated": job_view(&app.update_job(&need_id().await?, &patch, origin).await.map_err(e)?)}))
        }
        "pause" => Ok(json!({"paused": job_view(&app.set_paused(&need_id().await?, true).await.map_err(e)?)})),
        "resume" => Ok(json!({"resumed": job_view(&app.set_paused(&need_id().await?, false).await.map_err(e)?)})),
        "remove" => Ok(json!({"removed": app.remove_job(&need_id().await?).await.map_err(e)?.id})),
        "run" => {
            let job = app.find_job(&need_id().await?).await.map_err(e)?;
            let once = match args.get("prompt") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) => Some(p.clone()),
                Some(_) => return Err("`prompt` must be a string".into()),
            };
            match Box::pin(app.run_now(&job.id, once.as_deref())).await.map_err(e)? {
                // The model gets the run's output too: it asked for the run.
                FireStatus::Ran { run, .. } => Ok(json!({"ran": job.id, "status": run.status, "output": run.output})),
                // The fire's one JSON shape (`paused`, `duplicate`, `gone`, `stale`), as every transport answers.
                other => Ok(other.to_json()),
            }
        }
        other => Err(format!("unknown action `{other}` (create, list, update, pause, resume, remove, run)")),
    }
}
