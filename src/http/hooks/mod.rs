//! `POST /webhooks/{route}` (and under `/p/<profile>/`): Hermes' generic webhook routes
//! (CONTRACT §16, `gateway/platforms/webhook.py`), in Hermes' order — the route (404, or
//! 403 when disabled), the body cap (413, checked on the declared length before reading),
//! the signature ([`signature`], 401, before anything parses the body), the route's rate
//! window (429), the payload (JSON, else a form; 400), the `events` filter (200
//! `ignored`), the template, the delivery id spent once in the store (200 `duplicate`),
//! then `deliver_only`'s send (200 `delivered`, 502) or `202 accepted` with the run going
//! on after the answer (counted as deferred work, so the Lambda settle phase waits for it).
//! The channels' own webhooks (`/webhooks/telegram`…) are other routes.

pub mod signature;

use crate::app::WebhookDelivery;
use crate::core::webhook::{event_type, render, render_extra};
use crate::http::HttpState;
use crate::http::error::ApiError;
use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

/// The delivery id, as Hermes picks it (`X-GitHub-Delivery`, `svix-id`, then Standard
/// Webhooks' `webhook-id` and `X-Request-ID`), else a millisecond stamp (never a duplicate).
fn delivery_id(h: &HeaderMap, now_ms: i64) -> String {
    ["x-github-delivery", "svix-id", "webhook-id", "x-request-id"]
        .iter()
        .find_map(|n| header(h, n))
        .map_or_else(|| now_ms.to_string(), str::to_string)
}

/// The payload: JSON, else a URL-encoded form as an object of strings (Hermes' fallback).
fn payload(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body).map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "Cannot parse body"))?;
    let form: serde_json::Map<String, Value> =
        url::form_urlencoded::parse(text.as_bytes()).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
    Ok(Value::Object(form))
}

/// One delivery to a webhook route.
pub async fn receive(State(s): State<Arc<HttpState>>, Path(name): Path<String>, req: Request) -> Result<Response, ApiError> {
    let hooks = s.app.webhooks();
    let Some(route) = hooks.route(&name).cloned() else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, format!("Unknown route: {name}")));
    };
    if !route.enabled {
        return Err(ApiError::new(StatusCode::FORBIDDEN, format!("Route disabled: {name}")));
    }
    let max = hooks.routes().max_body_bytes;
    let too_large = || ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Payload too large");
    let declared = header(req.headers(), "content-length").and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let headers = req.headers().clone();
    let body = axum::body::to_bytes(req.into_body(), max).await.map_err(|_| too_large())?;
    let now = s.app.now();
    use secrecy::ExposeSecret;
    match signature::verify(&headers, &body, route.secret.expose_secret(), now.timestamp()) {
        Ok(signature::Scheme::GenericV1) => {
            tracing::warn!(route = %name, "legacy body-only X-Webhook-Signature (no replay protection); use X-Webhook-Signature-V2")
        }
        Ok(_) => {}
        Err(why) => {
            tracing::warn!(route = %name, reason = ?why, "webhook signature refused");
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, "Invalid signature"));
        }
    }
    if !hooks.admit(&route) {
        return Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "Rate limit exceeded"));
    }
    let payload = payload(&body)?;
    let event = event_type(header(&headers, "x-github-event"), header(&headers, "x-gitlab-event"), &payload);
    if !route.events.is_empty() && !route.events.contains(&event) {
        return Ok(Json(json!({"status": "ignored", "event": event})).into_response());
    }
    let delivery = WebhookDelivery {
        route: name.clone(),
        delivery_id: delivery_id(&headers, now.timestamp_millis()),
        prompt: render(&route.prompt, &payload, &event, &name),
        extra: render_extra(&route.deliver_extra, &payload),
        event,
    };
    if !hooks.claim(&name, &delivery.delivery_id).await? {
        tracing::info!(route = %name, delivery_id = %delivery.delivery_id, "duplicate webhook delivery skipped");
        return Ok(Json(json!({"status": "duplicate", "delivery_id": delivery.delivery_id})).into_response());
    }
    if route.deliver_only {
        let failed =
            || (StatusCode::BAD_GATEWAY, Json(json!({"status": "error", "error": "Delivery failed", "delivery_id": delivery.delivery_id})));
        return Ok(match hooks.deliver_only(&route, &delivery).await {
            Ok(_) => Json(json!({"status": "delivered", "route": name, "target": route.deliver, "delivery_id": delivery.delivery_id}))
                .into_response(),
            Err(e) => {
                tracing::warn!(route = %name, error = %e, "webhook direct delivery failed");
                failed().into_response()
            }
        });
    }
    let body = json!({"status": "accepted", "route": name, "event": delivery.event, "delivery_id": delivery.delivery_id});
    // Counted until the run is done: the Lambda settle phase waits for it.
    let running = s.channels.deferred_guard();
    tokio::spawn(async move {
        hooks.run(&route, &delivery).await;
        drop(running);
    });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

#[cfg(test)]
mod tests;
