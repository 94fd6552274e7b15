//! The HTTP API as a channel (platform `api`): the body of `POST /api/messages` normalized
//! into an inbound message, and the outcome as the HTTP answer (200 with the outcome, 202
//! while the session is busy, 429 when its queue is full). Authentication is the bearer key
//! every `/api/*` route shares (`http::extract::ApiKey`), so this channel names no webhook
//! route, and the API has no outbound side: the answer is the response body.

use crate::app::Outcome;
use crate::channels::{ChannelError, WebReply};
use crate::core::ids::{ChatType, Origin};
use crate::core::inbound::{Inbound, ReplyPath};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;

/// The request body of `POST /api/messages`.
#[derive(Debug, Deserialize)]
pub struct MessageRequest {
    chat_id: String,
    user_id: String,
    text: String,
    #[serde(default)]
    chat_type: Option<String>,
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    message_id: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
}

impl MessageRequest {
    /// The inbound message (answered in the response body: [`ReplyPath::Caller`]).
    pub fn into_inbound(self) -> Result<Inbound, ChannelError> {
        let bad = |m: String| ChannelError::BadRequest(m);
        let chat_type = ChatType::parse(self.chat_type.as_deref().unwrap_or("dm")).map_err(|e| bad(e.to_string()))?;
        let origin =
            Origin::new("api", &self.chat_id, chat_type, Some(&self.user_id), self.thread_id.as_deref()).map_err(|e| bad(e.to_string()))?;
        Ok(Inbound {
            origin,
            text: self.text,
            message_id: self.message_id.filter(|m| !m.is_empty()),
            user_name: self.user_name,
            reply: ReplyPath::Caller,
            attachments: Vec::new(),
        })
    }
}

/// The HTTP answer for an outcome.
pub fn answer(out: Outcome) -> WebReply {
    if out.queue_full {
        let error = out.reply.unwrap_or_else(|| "queue full".into());
        return WebReply::json_status(StatusCode::TOO_MANY_REQUESTS, json!({"error": error, "queued": false}));
    }
    if out.busy {
        return WebReply::json_status(
            StatusCode::ACCEPTED,
            json!({"queued": true, "position": out.position, "session_id": out.session_id}),
        );
    }
    WebReply::json(serde_json::to_value(&out).unwrap_or_default())
}
