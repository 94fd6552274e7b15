//! Who sees and reaches what, as the use cases ask it (docs/who-sees-what.md): the one
//! "is this sender an admin" check, the owner filter of a caller's `session_search`, the owner
//! of a memory user profile, and the delivery policy for `send_message` and job targets. The
//! rules themselves are `core::access`, fed by the settings.

use crate::app::{App, AppError};
use crate::core::access::{AccessRules, SearchOwners};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::{Job, JobOrigin};

/// Length of the `_YYYYmmdd_HHMMSS` stamp ending a job run's session id.
const RUN_STAMP: usize = 16;

impl App {
    /// The access rules of the settings.
    pub(crate) fn access(&self) -> AccessRules {
        self.inner.cfg.access_rules()
    }

    /// Whether `origin`'s sender is in `admin_users` or `cron.admin_users`. Every check that
    /// lets admins through uses this.
    pub(crate) fn is_admin(&self, origin: Option<&Origin>) -> bool {
        self.access().is_admin(origin)
    }

    /// The sessions `session_search` may read for a caller, `None` meaning all of them: an
    /// admin, the operator's own surfaces (the API server's key, the local terminal), and a
    /// job run of a job with no chat (jobs.json, CLI, REST). A chat user gets their own DMs
    /// and per-user group sessions (linked identities included) and their current chat; a
    /// job made in a chat searches as the user who made it (or, for a job made before users
    /// were recorded, as that chat).
    pub(crate) async fn search_owners(&self, session: &SessionId, origin: Option<&Origin>) -> Option<SearchOwners> {
        let rules = self.access();
        let origin = match origin {
            Some(o) => o.clone(),
            None => origin_of_job(&self.job_of_run(session).await?.origin?)?,
        };
        if rules.is_admin(Some(&origin)) || !self.delivers_to(&origin) {
            return None;
        }
        let key = SessionKey::derive_in(self.profile(), &origin, self.key_rules());
        Some(SearchOwners {
            profile: self.profile().as_str().to_string(),
            exact: vec![key.as_str().to_string()],
            users: rules.linked_users(&origin),
        })
    }

    /// The job a `cron_<job id>_<stamp>` run session belongs to, if it still exists.
    async fn job_of_run(&self, session: &SessionId) -> Option<Job> {
        let s = session.as_str().strip_prefix("cron_")?;
        let id = s.get(..s.len().checked_sub(RUN_STAMP)?)?;
        self.inner.store.get_job(id).await.ok().flatten()
    }

    /// The access rules a job's `deliver` targets are checked by: the configured ones, with
    /// the stored `/sethome` home channels (read only when a target names a chat, so a job
    /// without one costs no store read).
    pub(in crate::app) async fn delivery_rules(&self, deliver: &[String]) -> AccessRules {
        if deliver.iter().any(|t| t.contains(':')) { self.access_with(&self.homes().await) } else { self.access() }
    }

    /// Checks a job's `deliver` targets for a caller in chat `caller` (`None`: the operator's
    /// CLI, REST API or jobs.json) by `rules` ([`App::delivery_rules`]). `local`, `origin`
    /// (the chat the job was made in) and a bare platform (its home channel) always pass; a
    /// `platform:chat_id[:thread_id]` must pass the delivery policy ([`AppError::NotAllowed`]
    /// otherwise).
    pub(in crate::app) fn check_job_delivery(
        &self,
        rules: &AccessRules,
        deliver: &[String],
        caller: Option<&Origin>,
    ) -> Result<(), AppError> {
        let admin = rules.is_admin(caller);
        for label in deliver {
            let mut parts = label.trim().splitn(3, ':');
            let (platform, chat, thread) = (parts.next().unwrap_or_default(), parts.next(), parts.next());
            if let Some(chat) = chat {
                rules.check_delivery(admin, caller, platform, chat, thread).map_err(AppError::NotAllowed)?;
            }
        }
        Ok(())
    }
}

/// The chat a job was made in, as an origin (for scoping its runs' searches).
fn origin_of_job(o: &JobOrigin) -> Option<Origin> {
    let guess = if o.user_id.as_deref() == Some(o.chat_id.as_str()) { ChatType::Dm } else { ChatType::Group };
    let chat_type = o.chat_type.unwrap_or(guess);
    Origin::new(&o.platform, &o.chat_id, chat_type, o.user_id.as_deref(), o.thread_id.as_deref()).ok()
}
