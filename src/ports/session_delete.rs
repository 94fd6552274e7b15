//! [`SessionDeleteStore`]: deleting one conversation whole — its record, its transcript and
//! notes, and its place's entry (with the place's queue) when the entry points at it — in
//! one SQLite transaction or, on DynamoDB, one conditioned transaction then batched deletes
//! (`DELETE /api/sessions/{id}`, Hermes' `delete_session`). A conversation a turn is running
//! in is not deleted.

use crate::core::ids::SessionId;
use crate::ports::StoreError;
use async_trait::async_trait;

/// What [`SessionDeleteStore::delete_session`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// The conversation and everything of it are gone.
    Deleted,
    /// No such conversation (in this profile); nothing was written.
    NotFound,
    /// Its place's entry points at it and holds a turn lease: nothing was deleted.
    Busy,
}

/// Deletes conversations.
#[async_trait]
pub trait SessionDeleteStore: Send + Sync {
    /// Deletes conversation `id`: its record, messages (and their search index rows) and
    /// notes; when its place's entry points at it, that entry and the place's queue too,
    /// so the place's next message starts a fresh conversation. [`Deleted::Busy`] and
    /// nothing deleted while that entry holds a lease.
    async fn delete_session(&self, id: &SessionId) -> Result<Deleted, StoreError>;
}
