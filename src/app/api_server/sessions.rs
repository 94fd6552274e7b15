//! Reading the session resource of Hermes' API server (`GET /api/sessions`, `/{id}`,
//! `/{id}/messages`, and `hermes-zero sessions list --json`): every conversation of the
//! profile as Hermes' `_session_response` shows it, ordered by last activity. The message
//! count, preview, last activity and model come from the transcript; what our records lack
//! (the model named at creation, a fork's parent) from the session's note.

use crate::app::api_server::ApiSession;
use crate::app::{App, AppError};
use crate::core::api_sessions::{self as rules, NOTE, SessionNote, SessionView};
use crate::core::ids::SessionId;
use crate::core::session::{Message, SessionEntry, SessionRecord};
use crate::ports::StoreError;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};

/// Most conversations a listing orders (the newest by start) and most entries it reads.
pub const LIST_CAP: usize = 1000;
/// Read "every message" of a transcript.
pub(crate) const ALL: usize = 1_000_000;

/// Why a session request was refused (each maps to one of Hermes' error codes).
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// No session by that id (`session_not_found`).
    #[error("Session not found: {0}")]
    NotFound(String),
    /// The id names a session already (`session_exists`).
    #[error("Session already exists: {0}")]
    Exists(String),
    /// A bad session id (`invalid_session_id`).
    #[error("{0}")]
    InvalidId(String),
    /// A bad or taken title (`invalid_title`).
    #[error("{0}")]
    InvalidTitle(String),
    /// A turn holds the session's lease (`session_busy`); nothing was changed.
    #[error("Session is busy with a running turn; nothing was deleted. Try again when it ends.")]
    Busy,
    /// Anything else.
    #[error(transparent)]
    App(#[from] AppError),
}

impl From<StoreError> for SessionsError {
    fn from(e: StoreError) -> Self {
        Self::App(AppError::Store(e))
    }
}

/// `GET /api/sessions`'s query (already bounded as Hermes bounds it).
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Page size.
    pub limit: usize,
    /// Sessions skipped.
    pub offset: usize,
    /// Only this `source`.
    pub source: Option<String>,
}

/// The id a client names `r` by: the Hermes session id of an API server place whose current
/// conversation it is (unless that text is another conversation's id: `taken`), else ours.
fn shown_id(r: &SessionRecord, e: Option<&SessionEntry>, taken: impl Fn(&str) -> bool) -> String {
    match (rules::hermes_id(&r.session_key), e) {
        (Some(h), Some(e)) if e.session_id == r.session_id && (h == r.session_id.as_str() || !taken(h)) => h.to_string(),
        _ => r.session_id.as_str().to_string(),
    }
}

/// The `source` of `r`.
fn source_of(r: &SessionRecord) -> &str {
    if rules::hermes_id(&r.session_key).is_some() { rules::API_SERVER_SOURCE } else { &r.platform }
}

/// When `r` was last active, for ordering: its place's last update while it is the current
/// conversation, else its end (its start if it never ended).
fn activity(r: &SessionRecord, e: Option<&SessionEntry>) -> DateTime<Utc> {
    match e {
        Some(e) if e.session_id == r.session_id => e.updated_at,
        _ => r.ended_at.unwrap_or(r.started_at),
    }
}

impl App {
    /// A page of every conversation of the profile, most recently active first.
    pub(in crate::app) async fn api_sessions_list(&self, q: &ListQuery) -> Result<Vec<SessionView>, SessionsError> {
        let store = &self.inner.store;
        let records = store.list_sessions(None, LIST_CAP).await?;
        let entries: HashMap<String, SessionEntry> =
            store.list_entries(LIST_CAP).await?.into_iter().map(|e| (e.session_key.as_str().to_string(), e)).collect();
        let ids: HashSet<&str> = records.iter().map(|r| r.session_id.as_str()).collect();
        let mut rows: Vec<(DateTime<Utc>, &SessionRecord, Option<&SessionEntry>)> = records
            .iter()
            .filter(|r| q.source.as_deref().is_none_or(|s| s == source_of(r)))
            .map(|r| {
                let e = entries.get(r.session_key.as_str());
                (activity(r, e), r, e)
            })
            .collect();
        rows.sort_by(|a, b| {
            b.0.cmp(&a.0).then(b.1.started_at.cmp(&a.1.started_at)).then(b.1.session_id.as_str().cmp(a.1.session_id.as_str()))
        });
        let mut out = Vec::new();
        for (_, r, e) in rows.into_iter().skip(q.offset).take(q.limit) {
            let id = shown_id(r, e, |h| ids.contains(h));
            out.push(self.session_view(r, e, id).await?);
        }
        Ok(out)
    }

    /// The session `id` names (see [`App::api_session`]) and its view.
    pub(in crate::app) async fn api_session_view(&self, id: &str) -> Result<(ApiSession, SessionView), SessionsError> {
        let s = self.api_session(id).await?.ok_or_else(|| SessionsError::NotFound(id.to_string()))?;
        let entry = match &s.current {
            Some(e) => Some(e.clone()),
            None => self.inner.store.get_entry(&s.record.session_key).await?,
        };
        let shown = self.shown_id_of(&s.record, entry.as_ref()).await?;
        let view = self.session_view(&s.record, entry.as_ref(), shown).await?;
        Ok((s, view))
    }

    /// The transcript of the session `id` names, oldest first, with the id it is shown by.
    pub(in crate::app) async fn api_session_messages(&self, id: &str) -> Result<(String, Vec<Message>), SessionsError> {
        let s = self.api_session(id).await?.ok_or_else(|| SessionsError::NotFound(id.to_string()))?;
        let shown = self.shown_id_of(&s.record, s.current.as_ref()).await?;
        Ok((shown, self.inner.store.recent_messages(&s.record.session_id, ALL).await?))
    }

    /// [`shown_id`], looking up whether the Hermes id is another conversation's id.
    pub(in crate::app) async fn shown_id_of(&self, r: &SessionRecord, e: Option<&SessionEntry>) -> Result<String, SessionsError> {
        let Some(h) = rules::hermes_id(&r.session_key) else { return Ok(r.session_id.as_str().to_string()) };
        let taken = match SessionId::parse(h) {
            Ok(sid) if sid != r.session_id => self.inner.store.get_session(&sid).await?.is_some(),
            _ => false,
        };
        Ok(shown_id(r, e, |_| taken))
    }

    /// The view of conversation `r` (of the place whose entry is `e`), shown as `id`: one
    /// read of its transcript and note.
    pub(in crate::app) async fn session_view(
        &self,
        r: &SessionRecord,
        e: Option<&SessionEntry>,
        id: String,
    ) -> Result<SessionView, SessionsError> {
        let read = self.inner.store.turn_read(&r.session_id, ALL, &[NOTE]).await?;
        let note: SessionNote = read.notes.get(NOTE).and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default();
        let api = rules::hermes_id(&r.session_key).is_some();
        let current = e.filter(|e| e.session_id == r.session_id);
        let last = read.messages.last().map_or(r.started_at, |m| m.at);
        let model = note.model.or_else(|| read.messages.iter().rev().find_map(|m| m.model.clone()));
        Ok(SessionView {
            id,
            source: source_of(r).to_string(),
            user_id: if api { None } else { e.and_then(|e| e.origin.user_id.clone()) },
            model,
            title: r.title.clone(),
            started_at: rules::epoch(r.started_at),
            ended_at: r.ended_at.map(rules::epoch),
            end_reason: r.end_reason.clone(),
            message_count: read.messages.len() as u64,
            input_tokens: current.map(|e| e.input_tokens),
            output_tokens: current.map(|e| e.output_tokens),
            parent_session_id: note.parent_session_id,
            last_active: rules::epoch(last),
            preview: rules::preview(&read.messages),
            has_system_prompt: false,
            has_model_config: false,
        })
    }
}
