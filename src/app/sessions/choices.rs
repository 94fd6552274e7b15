//! The commands that change a setting of the chat or the agent, in Hermes' wording:
//! `/sethome` (this chat becomes the platform's home channel), `/model` (this session's
//! model, or the agent's default with `--global`) and `/title`. Who may: everyone allowed
//! to talk, except that `/sethome` and `/model --global` are the admins' when `admin_users`
//! is configured (docs/sessions.md#commands).

use crate::app::cas::retry_cas;
use crate::app::{App, AppError};
use crate::core::commands::{ModelArg, clean_title};
use crate::core::ids::{Origin, SessionKey};
use crate::core::session::ModelChoice;
use crate::ports::SessionChange;

impl App {
    /// Whether `origin` may change what every chat shares: anyone when no admin list is
    /// configured, else the admins.
    fn may_change_shared(&self, origin: &Origin) -> bool {
        self.access().admin_users.is_empty() || self.is_admin(Some(origin))
    }

    /// `/sethome`, as Hermes' `_handle_set_home_command`.
    pub(in crate::app) async fn cmd_sethome(&self, origin: &Origin) -> Result<String, AppError> {
        if !self.may_change_shared(origin) {
            return Ok("⛔ /sethome is limited to admins here (admin_users).".into());
        }
        self.set_home(origin).await?;
        let name = origin.chat_name.clone().unwrap_or_else(|| origin.chat_id.clone());
        Ok(format!(
            "✅ Home channel set to **{name}** (ID: {}).\nCron jobs and cross-platform messages will be delivered here.",
            origin.chat_id
        ))
    }

    /// `/model [provider:]model [--global]`; without a model, the current one and how to
    /// change it.
    pub(in crate::app) async fn cmd_model(&self, origin: &Origin, key: &SessionKey, raw: &str) -> Result<String, AppError> {
        let is_provider = |p: &str| crate::config::models::lookup(p).is_some();
        let arg = match ModelArg::parse(raw, is_provider) {
            Ok(a) => a,
            Err(e) if e.starts_with("Unknown provider") => {
                return Ok(format!("Error: {e} Known providers: {}", crate::config::models::known_names()));
            }
            Err(e) => return Ok(e),
        };
        if arg.model.is_empty() {
            return self.model_shown(key).await;
        }
        let cfg = &self.inner.cfg;
        let ep = match crate::config::models::resolve_choice(&cfg.model, &cfg.env, arg.provider.as_deref(), &arg.model) {
            Ok(ep) => ep,
            Err(e) => return Ok(format!("Error: {e}")),
        };
        let choice = ModelChoice { provider: Some(ep.provider.to_string()), model: ep.model.clone() };
        let mut lines = vec![format!("Model switched to `{}`", choice.model), format!("Provider: {}", ep.provider)];
        if arg.global {
            if !self.may_change_shared(origin) {
                return Ok("⛔ /model --global is limited to admins here (admin_users).".into());
            }
            self.set_default_model(Some(&choice)).await?;
            lines.push("Saved as the agent's default (`--global`)".into());
        } else {
            self.set_session_model(key, Some(choice)).await?;
            lines.push("_(session only — add `--global` to persist)_".into());
        }
        Ok(lines.join("\n"))
    }

    async fn model_shown(&self, key: &SessionKey) -> Result<String, AppError> {
        let entry = self.inner.store.get_entry(key).await?;
        let (cur, whence) = match entry.and_then(|e| e.model) {
            Some(c) => (c, "this session"),
            None => match self.default_model().await? {
                Some(c) => (c, "the agent's default"),
                None => (self.configured_model(), "config.yaml"),
            },
        };
        let provider = cur.provider.unwrap_or_else(|| self.inner.cfg.model.primary.provider.to_string());
        Ok(format!(
            "Current: `{}` on {provider} ({whence})\n`/model <name>` — switch model\n`/model <provider>:<name>` — switch provider\n`/model <name> --global` — persist",
            cur.model
        ))
    }

    /// Stores `choice` as the key's model (compare-and-set on its entry).
    async fn set_session_model(&self, key: &SessionKey, choice: Option<ModelChoice>) -> Result<(), AppError> {
        let choice = &choice;
        retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok(()) };
            e.model = choice.clone();
            self.inner.store.put_entry(&e, &[]).await?;
            Ok(())
        })
        .await
    }

    /// `/title [text]`, as Hermes' `_handle_title_command`.
    pub(in crate::app) async fn cmd_title(&self, key: &SessionKey, text: Option<String>) -> Result<String, AppError> {
        let Some(e) = self.inner.store.get_entry(key).await? else { return Ok("Session not found in database.".into()) };
        let Some(raw) = text else {
            let title = self.inner.store.get_session(&e.session_id).await?.and_then(|r| r.title);
            return Ok(match title {
                Some(t) => format!("📌 Session: `{}`\nTitle: **{t}**", e.session_id),
                None => format!("📌 Session: `{}`\nNo title set. Usage: `/title My Session Name`", e.session_id),
            });
        };
        let title = match clean_title(&raw) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok("⚠️ Title is empty after cleanup. Please use printable characters.".into()),
            Err(err) => return Ok(format!("⚠️ {err}")),
        };
        let (t, id) = (&title, &e.session_id);
        retry_cas(|| async move {
            let Some(cur) = self.inner.store.get_entry(key).await? else { return Ok(()) };
            let change = SessionChange::Title { session_id: id.clone(), title: Some(t.clone()) };
            self.inner.store.put_entry(&cur, &[change]).await?;
            Ok(())
        })
        .await?;
        Ok(format!("✏️ Session title set: **{title}**"))
    }
}
