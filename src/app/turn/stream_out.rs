//! Where a streamed reply goes (docs/design.md#streaming): the origin's chat through the
//! Delivery port, or the stream target of the transport that answers the message itself (a
//! Discord interaction's follow-ups). One set of moves for the editor in `app/turn/stream.rs`.

use crate::app::App;
use crate::ports::{DeliveryError, StreamTarget, Target};
use std::sync::Arc;
use std::time::Duration;

/// The destination of one turn's streamed reply.
#[derive(Clone)]
pub(in crate::app) enum StreamOut {
    /// The origin's chat, through the Delivery port.
    Origin(Target),
    /// The caller's own target, bound to its message.
    Caller(Arc<dyn StreamTarget>),
}

impl StreamOut {
    /// The platform's shortest gap between two edits.
    pub(in crate::app) fn min_edit_gap(&self, app: &App) -> Duration {
        match self {
            Self::Origin(t) => app.inner.delivery.min_edit_gap(t),
            Self::Caller(s) => s.min_edit_gap(),
        }
    }

    /// `text` split into messages within the platform's limit.
    pub(in crate::app) fn parts(&self, app: &App, text: &str) -> Result<Vec<String>, DeliveryError> {
        match self {
            Self::Origin(t) => app.inner.delivery.parts(t, text),
            Self::Caller(s) => Ok(s.parts(text)),
        }
    }

    /// Sends one part, returning its message id when the platform named one.
    pub(in crate::app) async fn send_one(&self, app: &App, part: &str) -> Result<Option<String>, DeliveryError> {
        match self {
            Self::Origin(t) => app.inner.delivery.send_one(t, part).await,
            Self::Caller(s) => s.send_one(part).await,
        }
    }

    /// Replaces the text of sent message `id` (one attempt).
    pub(in crate::app) async fn edit(&self, app: &App, id: &str, text: &str) -> Result<(), DeliveryError> {
        match self {
            Self::Origin(t) => app.inner.delivery.edit(t, id, text).await,
            Self::Caller(s) => s.edit(id, text).await,
        }
    }

    /// Sends `text` whole, split when long.
    pub(in crate::app) async fn send(&self, app: &App, text: &str) -> Result<(), DeliveryError> {
        match self {
            Self::Origin(t) => app.inner.delivery.send(t, text).await,
            Self::Caller(s) => s.send(text).await,
        }
    }

    /// Tells the caller's own target that a tool call started or finished (the origin's
    /// chat is not told).
    pub(in crate::app) fn tool_progress(&self, call_id: &str, tool: &str, args: &str, done: bool) {
        if let Self::Caller(s) = self {
            s.tool_progress(call_id, tool, args, done);
        }
    }

    /// The platform, for the logs.
    pub(in crate::app) fn platform(&self) -> &str {
        match self {
            Self::Origin(t) => &t.platform,
            Self::Caller(_) => "caller",
        }
    }
}
