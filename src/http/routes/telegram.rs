//! `POST /webhooks/telegram`: secret-token check, `Update` → inbound message, 200 after
//! handling (the reply goes out through `sendMessage`).

use crate::app::{AppError, Inbound};
use crate::clients::telegram::Update;
use crate::core::ids::{ChatType, Origin};
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{RawBody, ct_eq};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use std::sync::Arc;

/// Header Telegram sends with the webhook secret.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

fn authorized(s: &HttpState, headers: &HeaderMap) -> bool {
    let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes());
    match (&s.app.cfg.secrets.telegram_webhook_secret, given) {
        (Some(secret), Some(g)) => ct_eq(g, secret.expose_secret().as_bytes()),
        _ => false,
    }
}

/// Handles one webhook call.
pub async fn webhook(State(s): State<Arc<HttpState>>, headers: HeaderMap, RawBody(body): RawBody) -> Result<Json<Value>, ApiError> {
    // Authenticate before looking at the body: a caller without the secret learns nothing.
    if !authorized(&s, &headers) {
        return Err(ApiError::unauthorized());
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))?;
    let update: Update =
        serde_json::from_value(v).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("not a Telegram Update: {e}")))?;
    let Some(m) = update.message else { return Ok(Json(json!({"ok": true, "ignored": "no message"}))) };
    let Some(text) = m.text.or(m.caption).filter(|t| !t.trim().is_empty()) else {
        return Ok(Json(json!({"ok": true, "ignored": "no text"})));
    };
    if m.from.as_ref().is_some_and(|f| f.is_bot) {
        return Ok(Json(json!({"ok": true, "ignored": "from a bot"})));
    }
    let chat_type = ChatType::parse(&m.chat.kind).unwrap_or(ChatType::Group);
    let user = m.from.as_ref().map(|f| f.id.to_string());
    let thread = m.message_thread_id.map(|t| t.to_string());
    let mut origin = Origin::new("telegram", &m.chat.id.to_string(), chat_type, user.as_deref(), thread.as_deref())
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
    origin.chat_name = m.chat.title.clone().or_else(|| m.from.as_ref().and_then(|f| f.username.clone().or(f.first_name.clone())));
    let user_name = m.from.as_ref().and_then(|f| f.first_name.clone());
    let msg = Inbound { origin, text, message_id: Some(m.message_id.to_string()), user_name };
    match s.app.handle_inbound(msg).await {
        Ok(out) => {
            Ok(Json(json!({"ok": true, "session_id": out.session_id, "duplicate": out.duplicate, "queued": out.queued || out.busy})))
        }
        // The user got an apology and the message is in the transcript: a Telegram retry would not help.
        Err(AppError::Model(e)) => Ok(Json(json!({"ok": false, "error": format!("the model failed: {e}")}))),
        Err(e) => Err(e.into()),
    }
}
