//! `/api/jobs` as Hermes 0.19.0's API server answers it (`gateway/platforms/api_server.py`,
//! `cron/jobs.py`; docs/api.md#jobs), pure: the job id check of a path, the create body's
//! checks in Hermes' order and wording, the PATCH field whitelist, and the job object Hermes
//! answers with, filled from a stored [`Job`]. Our own fields stay as added keys.

use crate::core::job::{Job, JobState, RunStatus, valid_id};
use serde_json::{Map, Value, json};

/// Longest job name (Hermes' `_MAX_NAME_LENGTH`), in characters.
pub const MAX_NAME_LENGTH: usize = 200;
/// Longest prompt (Hermes' `_MAX_PROMPT_LENGTH`), in characters.
pub const MAX_PROMPT_LENGTH: usize = 5000;
/// The 400 for a path id outside the id alphabet.
pub const INVALID_ID: &str = "Invalid job ID format";
/// The 404 for an unknown job.
pub const NOT_FOUND: &str = "Job not found";
/// The 400 of a PATCH that names no field it may change.
pub const NO_VALID_FIELDS: &str = "No valid fields to update";

/// The fields Hermes' PATCH takes (`_UPDATE_ALLOWED_FIELDS`).
pub const HERMES_UPDATE_FIELDS: &[&str] = &["name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled"];
/// Our extensions PATCH takes too, under their jobs.json names (docs/jobs.md).
pub const EXTENSION_UPDATE_FIELDS: &[&str] = &[
    "description",
    "timezone",
    "model",
    "provider",
    "base_url",
    "context_from",
    "enabled_toolsets",
    "attach_to_session",
    "script",
    "no_agent",
    "workdir",
    "overlap",
    "spread",
    "retry",
    "failure_deliver",
    "max_tokens",
];

/// Whether a path segment may name a job. Hermes takes only its own ids (12 lowercase hex
/// digits); ours are wider (jobs.json ids such as `daily-news-summary`, and a job is also
/// found by its exact name), so every id of our alphabet passes (Hermes' ids are a subset of
/// it) and anything else is Hermes' 400 `Invalid job ID format`.
pub fn valid_path_id(id: &str) -> bool {
    valid_id(id)
}

fn chars(v: Option<&Value>) -> usize {
    v.and_then(Value::as_str).map_or(0, |s| s.chars().count())
}

/// Checks a `POST /api/jobs` body as Hermes does, in its order and with its messages, and
/// returns the jobs.json-style object to create: `name` and `schedule` trimmed, `deliver`
/// `local` when not given. Beyond Hermes: a body with our `id` may leave out `name` (it is
/// the id then, as in jobs.json), `schedule` may be Hermes' parsed object, and every other
/// jobs.json field (`script`, `no_agent`, `retry`, …) is passed on as it is.
pub fn create_body(body: &Value) -> Result<Value, String> {
    let obj = body.as_object().ok_or("the body must be a JSON object")?;
    let mut out: Map<String, Value> = obj.clone();
    let name = match obj.get("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(_) => return Err("Name must be a string".into()),
    };
    let has_id = obj.get("id").and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());
    if name.is_empty() && !has_id {
        return Err("Name is required".into());
    }
    if name.chars().count() > MAX_NAME_LENGTH {
        return Err(format!("Name must be ≤ {MAX_NAME_LENGTH} characters"));
    }
    match obj.get("schedule") {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            out.insert("schedule".into(), json!(s.trim()));
        }
        Some(Value::Object(o)) if !o.is_empty() => {}
        _ => return Err("Schedule is required".into()),
    }
    if chars(obj.get("prompt")) > MAX_PROMPT_LENGTH {
        return Err(format!("Prompt must be ≤ {MAX_PROMPT_LENGTH} characters"));
    }
    match obj.get("repeat") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => {}
        Some(_) => return Err("Repeat must be a positive integer".into()),
    }
    if name.is_empty() {
        out.remove("name");
    } else {
        out.insert("name".into(), json!(name));
    }
    if obj.get("deliver").is_none_or(Value::is_null) {
        out.insert("deliver".into(), json!("local"));
    }
    Ok(Value::Object(out))
}

/// The fields of a `PATCH /api/jobs/{id}` body it may change (Hermes' whitelist and our
/// documented extensions; anything else is dropped, as Hermes drops it), with Hermes' length
/// checks. A body that names none of them is Hermes' 400 `No valid fields to update`.
pub fn update_fields(body: &Value) -> Result<Value, String> {
    let obj = body.as_object().ok_or("the body must be a JSON object")?;
    let kept: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| HERMES_UPDATE_FIELDS.contains(&k.as_str()) || EXTENSION_UPDATE_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if kept.is_empty() {
        return Err(NO_VALID_FIELDS.into());
    }
    if chars(kept.get("name")) > MAX_NAME_LENGTH {
        return Err(format!("Name must be ≤ {MAX_NAME_LENGTH} characters"));
    }
    if chars(kept.get("prompt")) > MAX_PROMPT_LENGTH {
        return Err(format!("Prompt must be ≤ {MAX_PROMPT_LENGTH} characters"));
    }
    Ok(Value::Object(kept))
}

/// Whether the job counts as enabled in Hermes' sense: a paused job is disabled there
/// (`pause_job` sets `enabled: false`), and so is a declared job that left jobs.json.
pub fn enabled(j: &Job) -> bool {
    j.enabled && j.state != JobState::Paused
}

/// The job as Hermes' `cron/jobs.py` writes it (`create_job`'s dict), filled from our job,
/// over every stored field of ours (kept as added keys: `schedule_text`, `timezone`,
/// `overlap`, `spread`, `retry`, `retry_due`, `failure_deliver`, `max_tokens`, …).
/// `schedule_display` is our human text of the schedule; `schedule.display` is Hermes' own.
pub fn hermes_job(j: &Job) -> Value {
    let mut v = serde_json::to_value(j).unwrap_or_else(|_| json!({}));
    let none_if_empty = |l: &[String]| if l.is_empty() { Value::Null } else { json!(l) };
    let deliver = if j.deliver.is_empty() {
        if j.origin.is_some() { "origin".to_string() } else { "local".to_string() }
    } else {
        j.deliver.join(",")
    };
    let fields = json!({
        "id": j.id,
        "name": j.name,
        "prompt": j.prompt,
        "skills": j.skills,
        "skill": j.skills.first(),
        "model": j.model,
        "provider": j.options.provider,
        "base_url": j.options.base_url,
        "script": j.script,
        "no_agent": j.no_agent,
        "context_from": none_if_empty(&j.options.context_from),
        "schedule": j.schedule.to_hermes(),
        "schedule_display": j.schedule.display(),
        "schedule_text": j.schedule_text,
        "repeat": {"times": j.repeat.times, "completed": j.repeat.completed},
        "enabled": enabled(j),
        "state": j.state,
        "paused_at": j.paused_at,
        "paused_reason": Value::Null,
        "created_at": j.created_at,
        "next_run_at": j.next_run_at,
        "last_run_at": j.last_run_at,
        "last_status": j.last_status,
        "last_error": j.last_error,
        "last_delivery_error": if j.last_status == Some(RunStatus::DeliveryFailed) { json!(j.last_error) } else { Value::Null },
        "deliver": deliver,
        "origin": j.origin,
        "enabled_toolsets": none_if_empty(&j.options.enabled_toolsets),
        "workdir": j.workdir,
        "attach_to_session": j.options.attach_to_session,
        "failure_deliver": j.options.failure_deliver,
        "max_tokens": j.options.max_tokens,
        "overlap": j.overlap,
        "spread": j.spread,
        "retry": j.retry,
    });
    if let (Some(out), Value::Object(f)) = (v.as_object_mut(), fields) {
        out.extend(f);
    }
    v
}

/// The keys of Hermes 0.19.0's job object (`cron/jobs.py` `create_job`), which every job this
/// API answers with carries.
pub const HERMES_JOB_KEYS: [&str; 28] = [
    "id",
    "name",
    "prompt",
    "skills",
    "skill",
    "model",
    "provider",
    "base_url",
    "script",
    "no_agent",
    "context_from",
    "schedule",
    "schedule_display",
    "repeat",
    "enabled",
    "state",
    "paused_at",
    "paused_reason",
    "created_at",
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "deliver",
    "origin",
    "enabled_toolsets",
    "workdir",
];

#[cfg(test)]
#[path = "job_api_tests.rs"]
mod tests;
