//! The session chat of the API server (`POST /api/sessions/{id}/chat` and `/chat/stream`,
//! Hermes' `_handle_session_chat`): which Hermes session id a turn for a resolved session
//! runs under, why a session cannot take one (it ended, or its place is another
//! platform's), and the messages a turn added (the stream's `run.completed`). The turn itself
//! is the API server's one turn path ([`App::api_turn`]).

use crate::app::api_server::ApiSession;
use crate::app::{App, AppError};
use crate::core::ids::SessionId;
use crate::core::session::{Message, Role};

/// How many of a conversation's latest messages are searched for a turn's own.
const TURN_TAIL: usize = 200;

/// Where a session chat for `/api/sessions/{id}` goes.
#[derive(Debug, Clone)]
pub enum ChatTarget {
    /// A turn can run in the session: an [`crate::app::api_server::ApiTurn`] with
    /// `session_id: hermes_id` lands in its place.
    Open {
        /// The Hermes session id of the session's place (the id asked for when it is one).
        hermes_id: String,
        /// The session.
        session: ApiSession,
    },
    /// The conversation ended, or a newer one replaced it in its place: it takes no turn.
    Ended(ApiSession),
    /// The conversation is another platform's (a Telegram chat, an `/api/messages` group…):
    /// the API server runs no turn in it, so that platform's place keeps its own lease,
    /// queue and replies.
    Elsewhere(ApiSession),
}

impl App {
    /// The target of a session chat for `id` (a conversation id of ours or a Hermes session
    /// id, as [`App::api_session`] resolves it); `None` when no session has that id.
    pub(in crate::app) async fn api_chat_target(&self, id: &str) -> Result<Option<ChatTarget>, AppError> {
        let Some(session) = self.api_session(id).await? else { return Ok(None) };
        let Some(entry) = session.current.as_ref().filter(|_| session.record.ended_at.is_none()) else {
            return Ok(Some(ChatTarget::Ended(session)));
        };
        // The id asked for, else the place's chat id: whichever names this very place as an
        // API server session (a DM of platform `api`).
        let key = &session.record.session_key;
        let hermes_id =
            [id, entry.origin.chat_id.as_str()].into_iter().find(|h| self.api_session_key(h).is_ok_and(|k| &k == key)).map(str::to_string);
        Ok(Some(match hermes_id {
            Some(hermes_id) => ChatTarget::Open { hermes_id, session },
            None => ChatTarget::Elsewhere(session),
        }))
    }

    /// The assistant and tool messages that answered user message `text` in conversation
    /// `session_id`: those after the latest user message with that text, up to the next user
    /// message. Empty when it is not found among the latest messages.
    pub(in crate::app) async fn api_turn_messages(&self, session_id: &str, text: &str) -> Result<Vec<Message>, AppError> {
        let Ok(sid) = SessionId::parse(session_id) else { return Ok(Vec::new()) };
        let msgs = self.inner.store.recent_messages(&sid, TURN_TAIL).await?;
        let Some(at) = msgs.iter().rposition(|m| m.role == Role::User && m.content == text) else { return Ok(Vec::new()) };
        Ok(msgs[at + 1..]
            .iter()
            .take_while(|m| m.role != Role::User)
            .filter(|m| matches!(m.role, Role::Assistant | Role::Tool) && m.summary_through.is_none())
            .cloned()
            .collect())
    }
}
