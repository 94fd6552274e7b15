//! The delivery mirror (docs/jobs.md#mirroring-the-delivery-into-the-chat), as Hermes 0.19.0's scheduler does
//! it (`_cron_mirror_delivery_enabled`, `_maybe_mirror_cron_delivery`): when a job's
//! `attach_to_session` (else `cron.mirror_delivery`) is on, its output delivered to the chat
//! it was made in is also appended to that chat's session, as a user-role message
//! `[Cron delivery: <name>]` + the unwrapped output, so a reply to the brief has it in
//! context. Only the job's own chat (its origin) is mirrored, and only into a session that
//! already exists; a failure is logged, never a failed delivery.

use crate::app::App;
use crate::core::ids::{ChatType, Origin, SessionKey};
use crate::core::job::Job;
use crate::core::session::{Message, Role};
use crate::ports::Target;

/// Whether `job`'s deliveries are mirrored: its own `attach_to_session`, else the default.
pub(in crate::app) fn mirror_enabled(job: &Job, default: bool) -> bool {
    job.options.attach_to_session.unwrap_or(default)
}

/// The mirrored message's text, in Hermes' wording.
pub(in crate::app) fn mirror_text(job: &Job, output: &str) -> String {
    let name = if job.name.is_empty() { &job.id } else { &job.name };
    format!("[Cron delivery: {name}]\n{}", output.trim())
}

/// The job's origin chat when `target` is that chat (Hermes' `_target_matches_origin`: a
/// thread the origin pins must match too).
fn origin_target(job: &Job, target: &Target) -> Option<Origin> {
    let o = job.origin.as_ref()?;
    let same = o.platform.eq_ignore_ascii_case(&target.platform)
        && o.chat_id == target.chat_id
        && o.thread_id.as_ref().is_none_or(|t| Some(t) == target.thread_id.as_ref());
    if !same {
        return None;
    }
    Origin::new(&o.platform, &o.chat_id, o.chat_type.unwrap_or(ChatType::Dm), o.user_id.as_deref(), o.thread_id.as_deref()).ok()
}

impl App {
    /// Appends the delivered `output` to the session of `target` when it is the job's own
    /// chat and that session exists (two store requests: the entry, the append).
    pub(in crate::app) async fn mirror_delivery(&self, job: &Job, target: &Target, output: &str) {
        if output.trim().is_empty() {
            return;
        }
        let Some(origin) = origin_target(job, target) else { return };
        let key = SessionKey::derive_in(self.profile(), &origin, self.key_rules());
        let entry = match self.inner.store.get_entry(&key).await {
            Ok(Some(e)) => e,
            Ok(None) => {
                tracing::debug!(job_id = %job.id, session_key = %key, "delivery mirror skipped: no session for that chat yet");
                return;
            }
            Err(e) => {
                tracing::warn!(job_id = %job.id, error = %e, "delivery mirror failed");
                return;
            }
        };
        let msg = Message::text(Role::User, mirror_text(job, output), self.inner.clock.now());
        match self.inner.store.append_messages(&entry.session_id, &[msg], None).await {
            Ok(_) => tracing::info!(job_id = %job.id, session_key = %key, "mirrored the delivery into the chat's session"),
            Err(e) => tracing::warn!(job_id = %job.id, error = %e, "delivery mirror failed"),
        }
    }
}
