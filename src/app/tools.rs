//! The chat agent's tools: their specs for the model and their execution. `cronjob` lets
//! users schedule jobs in plain language; it is not offered inside job runs.

use crate::app::{App, FireStatus};
use crate::core::ids::Origin;
use crate::core::job::{Job, JobOrigin};
use crate::core::jobfile;
use crate::core::session::ToolCall;
use crate::ports::ToolSpec;
use serde_json::{Value, json};

/// The tools offered to a chat turn.
pub fn chat_tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "current_time".into(),
            description: "Current date and time in the agent's configured timezone.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSpec {
            name: "cronjob".into(),
            description: "Manage scheduled jobs. Schedules: `every 30m`, `in 2h`, cron `0 8 * * *`, `every weekday at 9am`, ISO time. \
Results are delivered to this chat unless `deliver` says otherwise (local, origin, telegram, telegram:<chat_id>)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "list", "update", "pause", "resume", "remove", "run"]},
                    "job_id": {"type": "string", "description": "id or name of an existing job (update/pause/resume/remove/run)"},
                    "name": {"type": "string"},
                    "schedule": {"type": "string"},
                    "prompt": {"type": "string", "description": "what the agent should do at each run"},
                    "skills": {"type": "array", "items": {"type": "string"}},
                    "deliver": {"type": "string"},
                    "repeat": {"description": "forever (default), once, or a number of runs"}
                },
                "required": ["action"]
            }),
        },
    ]
}

/// The tools offered inside a job run (no `cronjob`: a job cannot schedule jobs).
pub fn job_tools() -> Vec<ToolSpec> {
    chat_tools().into_iter().filter(|t| t.name != "cronjob").collect()
}

/// Runs one tool call and returns the text the model sees. Unknown tools and bad arguments
/// become error text for the model, never a failure of the turn.
pub async fn execute(app: &App, call: &ToolCall, origin: Option<&Origin>) -> String {
    match call.name.as_str() {
        "current_time" => {
            let now = app.clock.now().with_timezone(&app.cfg.tz);
            json!({"now": now.to_rfc3339(), "timezone": app.cfg.settings.timezone}).to_string()
        }
        "cronjob" if origin.is_some() => {
            let args: Value = match serde_json::from_str(&call.arguments) {
                Ok(v @ Value::Object(_)) => v,
                _ => return json!({"error": "arguments must be a JSON object"}).to_string(),
            };
            match cronjob(app, args, origin).await {
                Ok(v) => v.to_string(),
                Err(e) => json!({"error": e}).to_string(),
            }
        }
        other => json!({"error": format!("unknown tool `{other}`")}).to_string(),
    }
}

/// A compact job view for the model and the API.
pub fn job_view(j: &Job) -> Value {
    json!({
        "id": j.id, "name": j.name, "schedule": j.schedule_text, "schedule_display": j.schedule.display(), "prompt": j.prompt,
        "skills": j.skills, "deliver": j.deliver, "state": j.state, "enabled": j.enabled, "next_run_at": j.next_run_at,
        "last_run_at": j.last_run_at, "last_status": j.last_status, "last_error": j.last_error, "repeat": j.repeat,
    })
}

async fn cronjob(app: &App, mut args: Value, origin: Option<&Origin>) -> Result<Value, String> {
    let action = args["action"].as_str().unwrap_or_default().to_string();
    let id = args["job_id"].as_str().map(str::to_string);
    let need_id = || id.clone().ok_or_else(|| format!("`job_id` is required for {action}"));
    let e = |e: crate::app::AppError| e.to_string();
    match action.as_str() {
        "create" => {
            if args.get("id").is_none() && args.get("name").is_none() {
                args["id"] = json!(crate::core::job::new_id());
            }
            if let Some(o) = origin {
                args["origin"] =
                    json!(JobOrigin { platform: o.platform.clone(), chat_id: o.chat_id.clone(), thread_id: o.thread_id.clone() });
            }
            let spec = jobfile::parse_job(&args, app.clock.now(), app.cfg.tz)?;
            let job = app.create_job(spec, false).await.map_err(e)?;
            Ok(json!({"created": job_view(&job)}))
        }
        "list" => Ok(json!({"jobs": app.store.list_jobs().await.map_err(|x| x.to_string())?.iter().map(job_view).collect::<Vec<_>>()})),
        "update" => {
            let mut patch = args.clone();
            if let Some(o) = patch.as_object_mut() {
                o.retain(|k, _| !matches!(k.as_str(), "action" | "job_id"));
            }
            Ok(json!({"updated": job_view(&app.update_job(&need_id()?, &patch).await.map_err(e)?)}))
        }
        "pause" => Ok(json!({"paused": job_view(&app.set_paused(&need_id()?, true).await.map_err(e)?)})),
        "resume" => Ok(json!({"resumed": job_view(&app.set_paused(&need_id()?, false).await.map_err(e)?)})),
        "remove" => Ok(json!({"removed": app.remove_job(&need_id()?).await.map_err(e)?.id})),
        "run" => {
            let job = app.find_job(&need_id()?).await.map_err(e)?;
            match Box::pin(app.run_now(&job.id)).await.map_err(e)? {
                FireStatus::Ran { run, .. } => Ok(json!({"ran": job.id, "status": run.status, "output": run.output})),
                other => Ok(json!({"status": format!("{other:?}")})),
            }
        }
        other => Err(format!("unknown action `{other}` (create, list, update, pause, resume, remove, run)")),
    }
}
