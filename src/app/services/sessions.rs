//! [`Sessions`]: everything the edges do with conversations.

use crate::app::sessions::import::SessionImport;
use crate::app::{App, AppError, Inbound, Outcome};
use crate::core::ids::{Origin, SessionId, SessionKey};
use crate::core::session::{ImportedSession, Message, SessionEntry, SessionRecord};
use crate::ports::StreamTarget;
use std::sync::Arc;

/// Conversations: inbound messages (commands, turns, the queue), listing, showing,
/// resetting and importing. Cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    pub(super) app: App,
}

/// What a reset did: the new session, and how many queued items were dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reset {
    /// The session the key now points at.
    pub session_id: SessionId,
    /// Queued messages dropped with the old session.
    pub dropped: usize,
}

impl Sessions {
    /// Handles one inbound message: a command, a turn, or a queued/refused message.
    pub async fn handle_inbound(&self, msg: Inbound) -> Result<Outcome, AppError> {
        self.app.handle_inbound(msg).await
    }

    /// [`Sessions::handle_inbound`] for a transport that answers the message itself and hands
    /// a `sink` the turn's reply streams into while streaming is enabled (a Discord
    /// interaction's follow-ups); the outcome says `streamed` when the reply went there.
    pub async fn handle_inbound_streaming(&self, msg: Inbound, sink: Option<Arc<dyn StreamTarget>>) -> Result<Outcome, AppError> {
        self.app.handle_inbound_streaming(msg, sink).await
    }

    /// [`Sessions::handle_inbound`], returning as soon as the message is stored (its turn
    /// then goes on in a task of its own) or handled: see [`crate::app::sessions::accept`].
    pub async fn handle_inbound_detached(&self, msg: Inbound) -> Result<crate::app::sessions::accept::Accepted, AppError> {
        let app = self.app.clone();
        crate::app::sessions::accept::detach(async move { app.handle_inbound(msg).await }).await
    }

    /// A channel's stored intake position (e.g. the Telegram `getUpdates` offset), by key.
    pub async fn cursor(&self, key: &str) -> Result<Option<String>, AppError> {
        Ok(self.app.inner.store.get_meta(&format!("cursor:{key}")).await?)
    }

    /// Stores a channel's intake position (see [`Sessions::cursor`]).
    pub async fn set_cursor(&self, key: &str, value: &str) -> Result<(), AppError> {
        Ok(self.app.inner.store.put_meta(&format!("cursor:{key}"), value).await?)
    }

    /// Whether this origin may talk to the agent (allow lists).
    pub fn is_allowed(&self, origin: &Origin) -> bool {
        self.app.is_allowed(origin)
    }

    /// Starts a new session for `key` and drops its queue (the same effect as `/new`).
    /// `None` when the key has no session.
    pub async fn reset(&self, key: &SessionKey) -> Result<Option<Reset>, AppError> {
        let Some(session_id) = self.app.reset_session(key, "session_reset", None).await? else { return Ok(None) };
        let dropped = self.app.inner.store.queue_clear(key).await?;
        Ok(Some(Reset { session_id, dropped }))
    }

    /// The current session of every key, most recent first, at most `limit`.
    pub async fn list(&self, limit: usize) -> Result<Vec<SessionEntry>, AppError> {
        Ok(self.app.inner.store.list_entries(limit).await?)
    }

    /// One session's record (title, start, end reason), if it exists.
    pub async fn record(&self, id: &SessionId) -> Result<Option<SessionRecord>, AppError> {
        Ok(self.app.inner.store.get_session(id).await?)
    }

    /// How many messages a session holds.
    pub async fn message_count(&self, id: &SessionId) -> Result<u64, AppError> {
        Ok(self.app.inner.store.count_messages(id).await?)
    }

    /// One session with its latest `limit` messages, oldest first; `None` if it does not exist.
    pub async fn show(&self, id: &SessionId, limit: usize) -> Result<Option<(SessionRecord, Vec<Message>)>, AppError> {
        let Some(rec) = self.record(id).await? else { return Ok(None) };
        let messages = self.app.inner.store.recent_messages(id, limit).await?;
        Ok(Some((rec, messages)))
    }

    /// Imports one Hermes session with its messages (idempotent; resumes a partial import).
    pub async fn import(&self, s: &ImportedSession, messages: &[Message]) -> Result<SessionImport, AppError> {
        self.app.import_session(s, messages).await
    }
}
