//! Session lifecycle use cases: starting a fresh conversation for a key.

use crate::app::{App, AppError};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::session::SessionRecord;
use crate::ports::{SessionChange, StoreError};

impl App {
    /// Ends the key's current session with `reason` and starts a new one (optionally titled),
    /// emptying the pending slot; the memory flush runs first (docs/design.md#memory). A running turn is asked to stop. Returns the new id, or
    /// None if the key is unknown. (Callers that also drop the FIFO call `queue_clear`.)
    pub(in crate::app) async fn reset_session(
        &self,
        key: &SessionKey,
        reason: &str,
        title: Option<String>,
    ) -> Result<Option<SessionId>, AppError> {
        if let Some(cur) = self.inner.store.get_entry(key).await? {
            self.before_reset(&cur.session_id, &cur.origin).await;
        }
        for _ in 0..64 {
            let Some(cur) = self.inner.store.get_entry(key).await? else { return Ok(None) };
            let now = self.inner.clock.now();
            let mut next = cur.clone();
            next.session_id = SessionId::generate(now, &self.inner.cfg.tz);
            next.updated_at = now;
            next.input_tokens = 0;
            next.output_tokens = 0;
            next.was_auto_reset = false;
            next.auto_reset_reason = None;
            next.pending.clear();
            next.was_auto_reset = false;
            next.resume_pending = false;
            next.suspended = false;
            next.interruptions = 0;
            next.interrupt_requested = cur.lease.is_some();
            // A `/model` choice is the session's: a fresh one starts on the default (as Hermes).
            next.model = None;
            let rec = SessionRecord {
                session_id: next.session_id.clone(),
                session_key: key.clone(),
                platform: cur.origin.platform.clone(),
                title: title.clone(),
                started_at: now,
                ended_at: None,
                end_reason: None,
            };
            let changes =
                [SessionChange::End { session_id: cur.session_id.clone(), reason: reason.to_string(), at: now }, SessionChange::Start(rec)];
            match self.inner.store.put_entry(&next, &changes).await {
                Ok(e) => {
                    self.inner.live.signal_stop(key);
                    return Ok(Some(e.session_id));
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Contended)
    }
}
