//! [`ApiServer`]: what the OpenAI-compatible routes (CONTRACT §15) do with the app.

use crate::app::api_server::{
    ApiSession, ApiTurn, ChatTarget, CreateSession, ForkSession, ListQuery, PatchSession, SessionsError, StoredResponse,
};
use crate::app::{App, AppError, Outcome};
use crate::core::api_sessions::SessionView;
use crate::core::session::Message;
use crate::ports::StreamTarget;
use std::sync::Arc;

/// The API server's use cases: chat turns by Hermes session id, the advertised model, and
/// the stored responses. Cheap to clone.
#[derive(Clone)]
pub struct ApiServer {
    app: App,
}

impl App {
    /// The OpenAI-compatible API server's use cases.
    pub fn api_server(&self) -> ApiServer {
        ApiServer { app: self.clone() }
    }
}

impl ApiServer {
    /// Runs one turn in the session of `turn.session_id` (its stored history is the
    /// context); its reply streams into `sink` when one is handed.
    pub async fn turn(&self, turn: ApiTurn, sink: Option<Arc<dyn StreamTarget>>) -> Result<Outcome, AppError> {
        self.app.api_turn(turn, sink).await
    }

    /// The session `/api/sessions/{id}` names: a conversation id of ours, else a Hermes
    /// session id of the API server; `None` when neither names one.
    pub async fn session(&self, id: &str) -> Result<Option<ApiSession>, AppError> {
        self.app.api_session(id).await
    }

    /// Where a session chat for `/api/sessions/{id}` goes (a turn's Hermes session id, or
    /// why none runs); `None` when no session has that id.
    pub async fn chat_target(&self, id: &str) -> Result<Option<ChatTarget>, AppError> {
        self.app.api_chat_target(id).await
    }

    /// The assistant and tool messages that answered user message `text` in conversation
    /// `session_id` (a session chat stream's `run.completed`).
    pub async fn turn_messages(&self, session_id: &str, text: &str) -> Result<Vec<Message>, AppError> {
        self.app.api_turn_messages(session_id, text).await
    }

    /// The model name `/v1/models` and `/v1/capabilities` advertise.
    pub fn model(&self) -> String {
        self.app.advertised_model()
    }

    /// A new response id.
    pub fn new_response_id(&self) -> String {
        self.app.new_response_id()
    }

    /// The stored response `id` (marked as used), if kept.
    pub async fn response(&self, id: &str) -> Result<Option<StoredResponse>, AppError> {
        self.app.response_get(id).await
    }

    /// Stores response `id` (the least recently used beyond the retention go).
    pub async fn store_response(&self, id: &str, rec: &StoredResponse) -> Result<(), AppError> {
        self.app.response_put(id, rec).await
    }

    /// Deletes response `id`; false when it was not stored.
    pub async fn delete_response(&self, id: &str) -> Result<bool, AppError> {
        self.app.response_delete(id).await
    }

    /// Asks the turn running in Hermes session `session_id` to stop (its SSE client went
    /// away); false when none runs.
    pub async fn interrupt(&self, session_id: &str) -> Result<bool, AppError> {
        self.app.api_interrupt(session_id).await
    }

    /// A page of every session, most recently active first (`GET /api/sessions`).
    pub async fn list_sessions(&self, q: &ListQuery) -> Result<Vec<SessionView>, SessionsError> {
        self.app.api_sessions_list(q).await
    }

    /// The session `id` names, as `/api/sessions/{id}` shows it.
    pub async fn session_view(&self, id: &str) -> Result<SessionView, SessionsError> {
        Ok(self.app.api_session_view(id).await?.1)
    }

    /// The transcript of the session `id` names, with the id it is shown by.
    pub async fn session_messages(&self, id: &str) -> Result<(String, Vec<Message>), SessionsError> {
        self.app.api_session_messages(id).await
    }

    /// Creates an API server session with an empty transcript.
    pub async fn create_session(&self, c: CreateSession) -> Result<SessionView, SessionsError> {
        self.app.api_session_create(c).await
    }

    /// Sets the title and/or ends the session `id` names.
    pub async fn patch_session(&self, id: &str, p: PatchSession) -> Result<SessionView, SessionsError> {
        self.app.api_session_patch(id, p).await
    }

    /// Deletes the session `id` names, whole.
    pub async fn delete_session(&self, id: &str) -> Result<(), SessionsError> {
        self.app.api_session_delete(id).await
    }

    /// Forks the session `id` names into a new API server session.
    pub async fn fork_session(&self, id: &str, f: ForkSession) -> Result<SessionView, SessionsError> {
        self.app.api_session_fork(id, f).await
    }
}
