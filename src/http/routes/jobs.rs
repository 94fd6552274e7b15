//! `/api/jobs…`: job management over HTTP (API key), same use cases as the CLI and tool, with
//! Hermes 0.19.0's request and response bodies (`core::job_api`, docs/api.md#jobs): the job
//! object, `200 {"job"}`, `{"ok": true}`, Hermes' 400/404 texts. `/runs` is ours.

use crate::app::AppError;
use crate::core::job::Job;
use crate::core::job_api::{self, hermes_job};
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

type Res = Result<Json<Value>, ApiError>;

fn bad(m: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, m)
}

/// The job a path names (its id, else its exact name), with Hermes' 400 for an id outside the
/// id alphabet and its 404 for an unknown job.
async fn job_of(s: &HttpState, id: &str) -> Result<Job, ApiError> {
    if !job_api::valid_path_id(id) {
        return Err(bad(job_api::INVALID_ID));
    }
    s.app.jobs().find(id).await.map_err(not_found)
}

fn not_found(e: AppError) -> ApiError {
    match e {
        AppError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, job_api::NOT_FOUND),
        e => e.into(),
    }
}

fn answer(j: &Job) -> Res {
    Ok(Json(json!({"job": hermes_job(j)})))
}

/// The enabled jobs (every job with `?include_disabled=true`, as Hermes' `list_jobs`; paused
/// jobs are disabled there), and the jobs.json entries the last sync skipped (ours).
pub async fn list(_: ApiKey, State(s): State<Arc<HttpState>>, RawQuery(q): RawQuery) -> Res {
    let all = url::form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .any(|(k, v)| k == "include_disabled" && matches!(v.to_ascii_lowercase().as_str(), "true" | "1"));
    let jobs = s.app.jobs().list().await?;
    let jobs: Vec<Value> = jobs.iter().filter(|j| all || job_api::enabled(j)).map(hermes_job).collect();
    let skipped = s.app.jobs().skipped().await?;
    Ok(Json(json!({"jobs": jobs, "skipped": skipped})))
}

/// Creates a job from Hermes' body (`name`, `schedule` required); a new job gets Hermes' id
/// (12 hex digits) unless the body names our `id`. 200 `{"job"}`, as Hermes.
pub async fn create(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(body): JsonBody<Value>) -> Res {
    let mut spec = job_api::create_body(&body).map_err(bad)?;
    if spec.get("id").is_none_or(Value::is_null) {
        spec["id"] = json!(crate::core::job::new_id());
    }
    answer(&s.app.jobs().add(&spec).await?)
}

/// One job.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    answer(&job_of(&s, &id).await?)
}

/// Updates the fields Hermes' PATCH takes and our documented extensions; `enabled: true` on a
/// paused job resumes it (a paused job is disabled in Hermes' sense).
pub async fn update(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>, JsonBody(body): JsonBody<Value>) -> Res {
    if !job_api::valid_path_id(&id) {
        return Err(bad(job_api::INVALID_ID));
    }
    let patch = job_api::update_fields(&body).map_err(bad)?;
    let j = job_of(&s, &id).await?;
    let mut job = s.app.jobs().update(&j.id, &patch).await.map_err(not_found)?;
    if patch.get("enabled") == Some(&Value::Bool(true)) && !job_api::enabled(&job) {
        job = s.app.jobs().set_paused(&j.id, false).await.map_err(not_found)?;
    }
    answer(&job)
}

/// Deletes a job: `{"ok": true}` (and our `removed`, the id).
pub async fn remove(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = job_of(&s, &id).await?;
    let gone = s.app.jobs().remove(&j.id).await.map_err(not_found)?;
    Ok(Json(json!({"ok": true, "removed": gone.id})))
}

/// Pauses a job.
pub async fn pause(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = job_of(&s, &id).await?;
    answer(&s.app.jobs().set_paused(&j.id, true).await.map_err(not_found)?)
}

/// Resumes a job, enabled again as Hermes' `resume_job` leaves it.
pub async fn resume(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = job_of(&s, &id).await?;
    let mut job = s.app.jobs().set_paused(&j.id, false).await.map_err(not_found)?;
    if !job.enabled {
        job = s.app.jobs().update(&j.id, &json!({"enabled": true})).await.map_err(not_found)?;
    }
    answer(&job)
}

/// Runs a job now through the normal claim; an optional body `{"prompt": "…"}` is a one-time
/// text for this run only (`## Run Context`). Answers Hermes' `{"job"}` (the job after the
/// run) with our run result beside it (`status`, `run_status`, `run_id`, `error`, …).
pub async fn run(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>, body: axum::body::Bytes) -> Res {
    let j = job_of(&s, &id).await?;
    let prompt = run_prompt(&body)?;
    let mut out = s.app.jobs().run_with(&j.id, prompt.as_deref()).await?.to_json();
    // A one-shot that completed may be gone already; then the job as it was.
    let after = s.app.jobs().find(&j.id).await.unwrap_or(j);
    out["job"] = hermes_job(&after);
    Ok(Json(out))
}

/// The run's one-time prompt from its (optional) body; a wrong type is a 400 naming it.
fn run_prompt(body: &[u8]) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON body: {e}")))?;
    match v.as_object().map(|o| o.get("prompt")) {
        None => Err(bad("the body must be a JSON object")),
        Some(None | Some(Value::Null)) => Ok(None),
        Some(Some(Value::String(p))) => Ok(Some(p.clone())),
        Some(Some(_)) => Err(bad("`prompt` must be a string")),
    }
}

/// Recent runs, newest first (ours; Hermes has no such route).
pub async fn runs(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = job_of(&s, &id).await?;
    let runs = s.app.jobs().retained_runs(&j.id).await?;
    Ok(Json(json!({"job_id": j.id, "runs": runs})))
}
