//! `/api/jobs…`: job management over HTTP (API key), same use cases as the CLI and tool.

use crate::app::job_view;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;

type Res = Result<Json<Value>, ApiError>;

/// All jobs, and the jobs.json entries the last sync skipped (with their reasons).
pub async fn list(_: ApiKey, State(s): State<Arc<HttpState>>) -> Res {
    let jobs = s.app.jobs().list().await?;
    let skipped = s.app.jobs().skipped().await?;
    Ok(Json(json!({"jobs": jobs.iter().map(job_view).collect::<Vec<_>>(), "skipped": skipped})))
}

/// Creates a job from a jobs.json-style object.
pub async fn create(
    _: ApiKey,
    State(s): State<Arc<HttpState>>,
    JsonBody(mut body): JsonBody<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.is_object() && body.get("id").is_none() && body.get("name").is_none() {
        body["id"] = json!(crate::core::job::new_id());
    }
    let job = s.app.jobs().add(&body).await?;
    Ok((StatusCode::CREATED, Json(json!({"job": job_view(&job)}))))
}

/// One job, with every stored field.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = s.app.jobs().find(&id).await?;
    let mut v = serde_json::to_value(&j).unwrap_or_default();
    v["schedule_display"] = json!(j.schedule.display());
    Ok(Json(json!({"job": v})))
}

/// Updates definition fields.
pub async fn update(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>, JsonBody(patch): JsonBody<Value>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.jobs().update(&id, &patch).await?)})))
}

/// Deletes a job.
pub async fn remove(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"removed": s.app.jobs().remove(&id).await?.id})))
}

/// Pauses a job.
pub async fn pause(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.jobs().set_paused(&id, true).await?)})))
}

/// Resumes a job.
pub async fn resume(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.jobs().set_paused(&id, false).await?)})))
}

/// Runs a job now through the normal claim; an optional body `{"prompt": "…"}` is a one-time
/// text for this run only (`## Run Context`).
pub async fn run(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>, body: axum::body::Bytes) -> Res {
    let prompt = run_prompt(&body)?;
    let j = s.app.jobs().find(&id).await?;
    Ok(Json(s.app.jobs().run_with(&j.id, prompt.as_deref()).await?.to_json()))
}

/// The run's one-time prompt from its (optional) body; a wrong type is a 400 naming it.
fn run_prompt(body: &[u8]) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, m);
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON body: {e}")))?;
    match v.as_object().map(|o| o.get("prompt")) {
        None => Err(bad("the body must be a JSON object".into())),
        Some(None | Some(Value::Null)) => Ok(None),
        Some(Some(Value::String(p))) => Ok(Some(p.clone())),
        Some(Some(_)) => Err(bad("`prompt` must be a string".into())),
    }
}

/// Recent runs, newest first.
pub async fn runs(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = s.app.jobs().find(&id).await?;
    let runs = s.app.jobs().retained_runs(&j.id).await?;
    Ok(Json(json!({"job_id": j.id, "runs": runs})))
}
