//! `GET /healthz`.

use crate::http::HttpState;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use std::sync::Arc;

/// Liveness plus what this instance runs on.
pub async fn healthz(State(s): State<Arc<HttpState>>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "store": s.app.store_kind(),
        "provider": s.provider,
    }))
}
