//! The OpenAI-compatible API server's use cases (CONTRACT §15, Hermes'
//! `gateway/platforms/api_server.py`): one chat turn for a Hermes session id — the same
//! inbound path every channel takes (lease, queue, interrupt, tools, streaming, fencing,
//! usage) on platform `api`, the session's stored history being the context — and the stored
//! responses of `/v1/responses` (`responses.rs`).

mod responses;

pub use responses::StoredResponse;

use crate::app::{App, AppError, Inbound, Outcome, ReplyPath};
use crate::core::api_server::chat_id_for;
use crate::core::ids::{ChatType, Origin};
use crate::ports::StreamTarget;
use std::sync::Arc;

/// The platform name of the API server's conversations (the one `/api/messages` uses).
pub const PLATFORM: &str = "api";

/// One turn asked of the API server.
#[derive(Debug, Clone)]
pub struct ApiTurn {
    /// The Hermes session id (`X-Hermes-Session-Id`, derived, or a response chain's).
    pub session_id: String,
    /// `X-Hermes-Session-Key`, when sent (kept as the sender's name: a memory scope label).
    pub session_key: Option<String>,
    /// The turn's input.
    pub text: String,
}

impl App {
    /// Runs `turn` as an inbound message of chat `chat_id_for(session_id)` on platform `api`,
    /// answered to the caller (its reply streams into `sink` when one is handed).
    pub(in crate::app) async fn api_turn(&self, turn: ApiTurn, sink: Option<Arc<dyn StreamTarget>>) -> Result<Outcome, AppError> {
        let chat = chat_id_for(&turn.session_id);
        let origin = Origin::new(PLATFORM, &chat, ChatType::Dm, Some(PLATFORM), None).map_err(|e| AppError::BadRequest(e.to_string()))?;
        let msg = Inbound {
            origin,
            text: turn.text,
            message_id: None,
            user_name: turn.session_key,
            reply: ReplyPath::Caller,
            attachments: Vec::new(),
        };
        self.handle_inbound_streaming(msg, sink).await
    }

    /// The model name the API server advertises (Hermes: the profile's name, else
    /// `hermes-agent`).
    pub(in crate::app) fn advertised_model(&self) -> String {
        let p = self.profile();
        if p.is_main() { "hermes-agent".to_string() } else { p.as_str().to_string() }
    }
}

#[cfg(test)]
mod budget_tests;
