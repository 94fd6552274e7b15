//! `/api/jobs…`: job management over HTTP (API key), same use cases as the CLI and tool.

use crate::app::{AppError, FireStatus, job_view};
use crate::core::jobfile;
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
    let jobs = s.app.store.list_jobs().await.map_err(AppError::from)?;
    let skipped = s.app.skipped_jobs().await?;
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
    let spec = jobfile::parse_job(&body, s.app.clock.now(), s.app.cfg.tz).map_err(AppError::BadRequest)?;
    let job = s.app.create_job(spec, false).await?;
    Ok((StatusCode::CREATED, Json(json!({"job": job_view(&job)}))))
}

/// One job, with every stored field.
pub async fn show(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = s.app.find_job(&id).await?;
    let mut v = serde_json::to_value(&j).unwrap_or_default();
    v["schedule_display"] = json!(j.schedule.display());
    Ok(Json(json!({"job": v})))
}

/// Updates definition fields.
pub async fn update(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>, JsonBody(patch): JsonBody<Value>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.update_job(&id, &patch).await?)})))
}

/// Deletes a job.
pub async fn remove(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"removed": s.app.remove_job(&id).await?.id})))
}

/// Pauses a job.
pub async fn pause(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.set_paused(&id, true).await?)})))
}

/// Resumes a job.
pub async fn resume(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    Ok(Json(json!({"job": job_view(&s.app.set_paused(&id, false).await?)})))
}

/// Runs a job now through the normal claim.
pub async fn run(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = s.app.find_job(&id).await?;
    Ok(Json(match s.app.run_now(&j.id).await? {
        FireStatus::Ran { run, next } => json!({"status": run.status, "run": run, "next_run_at": next}),
        FireStatus::Duplicate => json!({"status": "duplicate"}),
        FireStatus::Gone => json!({"status": "gone"}),
        FireStatus::Stale { next } => json!({"status": "stale", "next_run_at": next}),
    }))
}

/// Recent runs, newest first.
pub async fn runs(_: ApiKey, State(s): State<Arc<HttpState>>, Path(id): Path<String>) -> Res {
    let j = s.app.find_job(&id).await?;
    let runs = s.app.store.list_runs(&j.id, s.app.cfg.settings.cron.output_retention).await.map_err(AppError::from)?;
    Ok(Json(json!({"job_id": j.id, "runs": runs})))
}
