//! The OpenAI-compatible API server's use cases (CONTRACT §15, Hermes'
//! `gateway/platforms/api_server.py`): one chat turn for a Hermes session id — the same
//! inbound path every channel takes (lease, queue, interrupt, tools, streaming, fencing,
//! usage) on platform `api`, the session's stored history being the context — the stored
//! responses of `/v1/responses` (`responses.rs`), and the `/api/sessions` resource
//! (`sessions.rs` reads it, `session_edit.rs` changes it).

mod interrupt;
mod responses;
mod session_chat;
mod session_edit;
mod sessions;

pub use responses::StoredResponse;
pub use session_chat::ChatTarget;
pub use session_edit::{CreateSession, ForkSession, PatchSession};
pub use sessions::{LIST_CAP, ListQuery, SessionsError};

use crate::app::{App, AppError, Inbound, Outcome, ReplyPath};
use crate::core::api_server::chat_id_for;
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{SessionEntry, SessionRecord};
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
    /// Hermes' ephemeral system prompt: added to this turn's system prompt only, never stored.
    pub system: Option<String>,
}

/// A session named by `/api/sessions/{session_id}`: the conversation record, and the entry
/// of its place when the record is that place's current conversation.
#[derive(Debug, Clone)]
pub struct ApiSession {
    /// The conversation.
    pub record: SessionRecord,
    /// Its place's entry, when `record` is the place's current conversation (a turn can run
    /// in it); `None` for an ended or replaced one.
    pub current: Option<SessionEntry>,
}

/// The origin of the API server's conversation for Hermes session id `session_id`.
pub(in crate::app) fn api_origin(session_id: &str) -> Result<Origin, AppError> {
    Origin::new(PLATFORM, &chat_id_for(session_id), ChatType::Dm, Some(PLATFORM), None).map_err(|e| AppError::BadRequest(e.to_string()))
}

impl App {
    /// The session place of the API server's Hermes session id `session_id` (what
    /// `X-Hermes-Session-Id` and `/api/sessions/{id}` name).
    pub(in crate::app) fn api_session_key(&self, session_id: &str) -> Result<SessionKey, AppError> {
        Ok(SessionKey::derive_in(self.profile(), &api_origin(session_id)?, self.key_rules()))
    }

    /// Resolves the `{session_id}` of a session route: a conversation id of ours
    /// (`20261206_080000_ab12cd34`, any platform), else a Hermes session id of the API server
    /// (the current conversation of its place). `None` when neither names a session.
    pub(in crate::app) async fn api_session(&self, id: &str) -> Result<Option<ApiSession>, AppError> {
        let store = &self.inner.store;
        if let Ok(sid) = SessionId::parse(id)
            && let Some(record) = store.get_session(&sid).await?
        {
            let entry = store.get_entry(&record.session_key).await?;
            let current = entry.filter(|e| e.session_id == record.session_id);
            return Ok(Some(ApiSession { record, current }));
        }
        let Ok(key) = self.api_session_key(id) else { return Ok(None) };
        let Some(entry) = store.get_entry(&key).await? else { return Ok(None) };
        let Some(record) = store.get_session(&entry.session_id).await? else { return Ok(None) };
        Ok(Some(ApiSession { record, current: Some(entry) }))
    }

    /// Runs `turn` as an inbound message of chat `chat_id_for(session_id)` on platform `api`,
    /// answered to the caller (its reply streams into `sink` when one is handed).
    pub(in crate::app) async fn api_turn(&self, turn: ApiTurn, sink: Option<Arc<dyn StreamTarget>>) -> Result<Outcome, AppError> {
        let origin = api_origin(&turn.session_id)?;
        let msg = Inbound {
            origin,
            text: turn.text,
            message_id: None,
            user_name: turn.session_key,
            reply: ReplyPath::Caller,
            attachments: Vec::new(),
        };
        self.handle_inbound_with(msg, sink, turn.system).await
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
