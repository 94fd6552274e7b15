//! Changing the session resource of Hermes' API server: create (an API server place with an
//! empty transcript, which `X-Hermes-Session-Id` and `/chat` then continue), patch (title,
//! end reason), delete (the conversation whole; refused while a turn runs in it) and fork
//! (a new API server session carrying the transcript, its source ended as `branched`).
//! Every input is checked before anything is written.

use crate::app::api_server::sessions::{ALL, LIST_CAP, SessionsError};
use crate::app::api_server::{PLATFORM, api_origin};
use crate::app::cas::retry_cas;
use crate::app::{App, AppError};
use crate::core::api_server::check_session_id;
use crate::core::api_sessions::{self as rules, NOTE, SessionNote, SessionView};
use crate::core::commands::clean_title;
use crate::core::ids::SessionId;
use crate::core::session::{Message, SessionEntry, SessionRecord};
use crate::ports::{Deleted, SessionChange, StoreError};

/// Messages copied into a fork per write (below DynamoDB's transaction size).
const COPY_BATCH: usize = 90;

/// `POST /api/sessions`'s body.
#[derive(Debug, Clone, Default)]
pub struct CreateSession {
    /// `id` (or `session_id`) as sent; `None` or empty: a fresh `api_<secs>_<hex>`.
    pub id: Option<String>,
    /// `model`; `None`: the advertised model.
    pub model: Option<String>,
    /// `title`.
    pub title: Option<String>,
}

/// `PATCH /api/sessions/{id}`'s body.
#[derive(Debug, Clone, Default)]
pub struct PatchSession {
    /// `title`: `Some(None)` clears it.
    pub title: Option<Option<String>>,
    /// `end_reason`: ends the session with it (an ended one keeps its first reason).
    pub end_reason: Option<String>,
}

/// `POST /api/sessions/{id}/fork`'s body.
#[derive(Debug, Clone, Default)]
pub struct ForkSession {
    /// `id` (or `session_id`); `None` or empty: a fresh one.
    pub id: Option<String>,
    /// `title`; `None`: the next title of the source's lineage.
    pub title: Option<String>,
}

impl App {
    /// Creates an API server session with an empty transcript.
    pub(in crate::app) async fn api_session_create(&self, c: CreateSession) -> Result<SessionView, SessionsError> {
        let id = self.new_id(c.id).await?;
        let title = self.checked_title(c.title.as_deref(), None).await?;
        let model = c.model.unwrap_or_else(|| self.advertised_model());
        let (rec, entry) = self.start_api_session(&id, title, SessionNote { model: Some(model), parent_session_id: None }).await?;
        self.session_view(&rec, Some(&entry), id).await
    }

    /// Sets the title and/or ends the session `id` names.
    pub(in crate::app) async fn api_session_patch(&self, id: &str, p: PatchSession) -> Result<SessionView, SessionsError> {
        let s = self.api_session(id).await?.ok_or_else(|| SessionsError::NotFound(id.to_string()))?;
        let sid = s.record.session_id.clone();
        let mut changes = Vec::new();
        if let Some(t) = &p.title {
            let title = self.checked_title(t.as_deref(), Some(&sid)).await?;
            changes.push(SessionChange::Title { session_id: sid.clone(), title });
        }
        if let Some(reason) = p.end_reason.filter(|r| !r.is_empty())
            && s.record.ended_at.is_none()
        {
            changes.push(SessionChange::End { session_id: sid.clone(), reason, at: self.inner.clock.now() });
        }
        if !changes.is_empty() {
            self.write_through_place(&s.record, &changes).await?;
        }
        Ok(self.api_session_view(id).await?.1)
    }

    /// Deletes the session `id` names, whole.
    pub(in crate::app) async fn api_session_delete(&self, id: &str) -> Result<(), SessionsError> {
        let s = self.api_session(id).await?.ok_or_else(|| SessionsError::NotFound(id.to_string()))?;
        match self.inner.store.delete_session(&s.record.session_id).await? {
            Deleted::Deleted => Ok(()),
            Deleted::NotFound => Err(SessionsError::NotFound(id.to_string())),
            Deleted::Busy => Err(SessionsError::Busy),
        }
    }

    /// Forks the session `source_id` names into a new API server session.
    pub(in crate::app) async fn api_session_fork(&self, source_id: &str, f: ForkSession) -> Result<SessionView, SessionsError> {
        let (src, src_view) = self.api_session_view(source_id).await?;
        let id = self.new_id(f.id).await?;
        let title = match f.title {
            Some(t) => t,
            None => {
                let records = self.inner.store.list_sessions(None, LIST_CAP).await?;
                rules::next_lineage_title(src.record.title.as_deref().unwrap_or("fork"), records.iter().filter_map(|r| r.title.as_deref()))
            }
        };
        let title = self.checked_title(Some(&title), None).await?;
        let messages: Vec<Message> = self.inner.store.recent_messages(&src.record.session_id, ALL).await?;
        let note = SessionNote { model: src_view.model.clone(), parent_session_id: Some(src_view.id.clone()) };
        let (rec, _) = self.start_api_session(&id, title, note).await?;
        for batch in messages.chunks(COPY_BATCH) {
            self.inner.store.append_messages(&rec.session_id, batch, None).await?;
        }
        if src.record.ended_at.is_none() {
            let end =
                SessionChange::End { session_id: src.record.session_id.clone(), reason: "branched".into(), at: self.inner.clock.now() };
            self.write_through_place(&src.record, &[end]).await?;
        }
        Ok(self.api_session_view(&id).await?.1)
    }

    /// The id asked for (trimmed and checked as Hermes checks it, and not in use), or a
    /// fresh one.
    async fn new_id(&self, asked: Option<String>) -> Result<String, SessionsError> {
        let id = match asked.filter(|a| !a.is_empty()) {
            Some(a) => a.trim().to_string(),
            None => rules::new_session_id(self.inner.clock.now(), rand::random()),
        };
        if id.is_empty() {
            return Err(SessionsError::InvalidId("Invalid session ID".into()));
        }
        check_session_id(&id).map_err(|e| SessionsError::InvalidId(e.message))?;
        if self.api_session(&id).await?.is_some() {
            return Err(SessionsError::Exists(id));
        }
        Ok(id)
    }

    /// `raw` cleaned as Hermes cleans titles, and not used by another session than `own`.
    async fn checked_title(&self, raw: Option<&str>, own: Option<&SessionId>) -> Result<Option<String>, SessionsError> {
        let Some(title) = clean_title(raw.unwrap_or("")).map_err(SessionsError::InvalidTitle)? else { return Ok(None) };
        let records = self.inner.store.list_sessions(None, LIST_CAP).await?;
        if let Some(r) = records.iter().find(|r| r.title.as_deref() == Some(title.as_str()) && Some(&r.session_id) != own) {
            return Err(SessionsError::InvalidTitle(format!("Title '{title}' is already in use by session {}", r.session_id)));
        }
        Ok(Some(title))
    }

    /// A new API server place for Hermes session id `id` with a fresh, empty conversation
    /// titled `title`, and its note.
    async fn start_api_session(
        &self,
        id: &str,
        title: Option<String>,
        note: SessionNote,
    ) -> Result<(SessionRecord, SessionEntry), SessionsError> {
        let now = self.inner.clock.now();
        let key = self.api_session_key(id)?;
        let fresh = SessionEntry::new(key.clone(), SessionId::generate(now, &self.inner.cfg.tz), api_origin(id)?, now);
        let rec = SessionRecord {
            session_id: fresh.session_id.clone(),
            session_key: key,
            platform: PLATFORM.to_string(),
            title,
            started_at: now,
            ended_at: None,
            end_reason: None,
        };
        let entry = match self.inner.store.put_entry(&fresh, &[SessionChange::Start(rec.clone())]).await {
            Err(StoreError::Conflict(_)) => return Err(SessionsError::Exists(id.to_string())),
            other => other?,
        };
        let text = serde_json::to_string(&note).map_err(|e| AppError::BadRequest(e.to_string()))?;
        self.inner.store.turn_put_note(&rec.session_id, NOTE, Some(&text)).await?;
        Ok((rec, entry))
    }

    /// Writes `changes` to `r` with an entry write of its place (records change only there).
    async fn write_through_place(&self, r: &SessionRecord, changes: &[SessionChange]) -> Result<(), SessionsError> {
        let store = &self.inner.store;
        retry_cas(|| async move {
            let Some(e) = store.get_entry(&r.session_key).await? else {
                return Err(AppError::BadRequest(format!("session {} has no place to write through; it cannot be changed", r.session_id)));
            };
            store.put_entry(&e, changes).await?;
            Ok(())
        })
        .await?;
        Ok(())
    }
}
