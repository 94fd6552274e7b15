//! Interrupting the running turn of an API server session when the client of its SSE
//! stream goes away (Hermes: `agent.interrupt("SSE client disconnected")` in
//! `_write_sse_chat_completion` and `_write_sse_responses`): the same stored flag and
//! in-process signal `/stop` uses, so the turn stops at its next check and releases its lease.

use crate::app::cas::retry_cas;
use crate::app::{App, AppError};

impl App {
    /// Asks the turn running under the lease of Hermes session `session_id` to stop; false
    /// when no turn runs there (nothing is written then).
    pub(in crate::app) async fn api_interrupt(&self, session_id: &str) -> Result<bool, AppError> {
        let key = self.api_session_key(session_id)?;
        let key = &key;
        let asked = retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok(false) };
            if !e.lease_live(self.inner.clock.now()) || e.interrupt_requested {
                return Ok(false);
            }
            e.interrupt_requested = true;
            self.inner.store.put_entry(&e, &[]).await?;
            Ok(true)
        })
        .await?;
        if asked {
            self.inner.live.signal_stop(key);
            tracing::info!(session_key = %key, "SSE client disconnected; the turn is interrupted");
        }
        Ok(asked)
    }
}
