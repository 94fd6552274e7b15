//! Session commands (docs/design.md#commands): handled even while a turn runs, never sent to the model.

use crate::app::cas::retry_cas;
use crate::app::sessions::inbound::{Inbound, Outcome};
use crate::app::{App, AppError};
use crate::core::commands::{Cmd, HELP, busy_refusal};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::queue::{self, Route};
use crate::core::reset;
use crate::ports::{InboundId, SessionChange};

impl App {
    /// Runs a command and replies to the origin (and in the outcome).
    pub(in crate::app) async fn handle_command(
        &self,
        cmd: Cmd,
        msg: &Inbound,
        key: &SessionKey,
        dedupe: Option<InboundId>,
        mut out: Outcome,
    ) -> Result<Outcome, AppError> {
        let entry = self.load_or_create(&msg.origin, key).await?;
        out.session_id = entry.session_id.to_string();
        if let Cmd::Queue(prompt) = &cmd {
            if prompt.trim().is_empty() {
                return Ok(self.command_reply(msg, out, queue::QUEUE_USAGE.into()).await);
            }
            let queued = Inbound { text: prompt.clone(), ..msg.clone() };
            let res = self.store_busy(entry, &queued, dedupe, Route::Fifo, out).await?;
            if res.duplicate || res.queue_full {
                return Ok(res);
            }
            let text = queue::queued_reply(res.position.unwrap_or(1));
            // A command answered with its own reply, not a busy-time 202.
            let res = Outcome { busy: false, ..res };
            return Ok(self.command_reply(msg, res, text).await);
        }
        // Record the platform id so a retried command is not applied twice.
        if let Some(d) = &dedupe
            && self.inner.store.append_messages(&entry.session_id, &[], Some(d)).await? == crate::ports::Appended::Duplicate
        {
            out.duplicate = true;
            return Ok(out);
        }
        // Hermes refuses these while a turn runs (`gateway/run.py`'s running-agent guard).
        if cmd.needs_idle() && entry.lease_live(self.inner.clock.now()) {
            return Ok(self.command_reply(msg, out, busy_refusal(&cmd)).await);
        }
        let text = match cmd {
            Cmd::Retry | Cmd::Undo(_) | Cmd::Compress => return self.rewrite_command(&cmd, msg, key, out).await,
            Cmd::SetHome => self.cmd_sethome(&msg.origin).await?,
            Cmd::Model(raw) => self.cmd_model(&msg.origin, key, &raw).await?,
            Cmd::Title(text) => self.cmd_title(key, text).await?,
            Cmd::New(title) => self.cmd_new(key, title).await?,
            Cmd::Reset => self.cmd_new(key, None).await?,
            Cmd::Stop => self.cmd_stop(key).await?,
            Cmd::Status => self.cmd_status(key).await?,
            Cmd::Resume(id) => self.cmd_resume(key, id).await?,
            Cmd::Help => HELP.to_string(),
            Cmd::Sessions => self.cmd_resume(key, None).await?,
            Cmd::Usage => self.cmd_usage(key).await?,
            Cmd::Whoami => self.cmd_whoami(&msg.origin),
            Cmd::Queue(_) => String::new(),
        };
        if let Some(e) = self.inner.store.get_entry(key).await? {
            out.session_id = e.session_id.to_string();
        }
        Ok(self.command_reply(msg, out, text).await)
    }

    pub(in crate::app) async fn command_reply(&self, msg: &Inbound, mut out: Outcome, text: String) -> Outcome {
        self.reply(&msg.origin, msg.reply, &text).await;
        out.reply = Some(text);
        out
    }

    async fn cmd_new(&self, key: &SessionKey, title: Option<String>) -> Result<String, AppError> {
        let id = self.reset_session(key, "session_reset", title.clone()).await?;
        let cleared = self.inner.store.queue_clear(key).await?;
        let mut text = match (&id, &title) {
            (Some(_), Some(t)) => format!("✨ New session started: {t}"),
            _ => "✨ New session started. Conversation history cleared.".to_string(),
        };
        if cleared > 0 {
            text.push_str(&format!(" ({cleared} queued item(s) dropped)"));
        }
        Ok(text)
    }

    async fn cmd_stop(&self, key: &SessionKey) -> Result<String, AppError> {
        retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok("Nothing is running.".into()) };
            let running = e.lease_live(self.inner.clock.now());
            if !running && e.pending.is_empty() {
                return Ok("Nothing is running.".into());
            }
            e.pending.clear();
            e.interrupt_requested = running;
            self.inner.store.put_entry(&e, &[]).await?;
            self.inner.live.signal_stop(key);
            Ok(if running { "⏹ Stopping the current task…".into() } else { "Cleared the pending message.".into() })
        })
        .await
    }

    async fn cmd_status(&self, key: &SessionKey) -> Result<String, AppError> {
        let Some(e) = self.inner.store.get_entry(key).await? else { return Ok("No session yet.".into()) };
        let now = self.inner.clock.now();
        let msgs = self.inner.store.count_messages(&e.session_id).await?;
        let queued = self.inner.store.queue_list(key).await?.len();
        let started = self.inner.store.get_session(&e.session_id).await?.map_or(e.created_at, |r| r.started_at);
        let p = self.inner.cfg.settings.reset_rules().policy_for(&e.origin.platform, e.origin.chat_type);
        let policy = match p.mode {
            crate::config::ResetMode::None => "never (manual /new only)".to_string(),
            crate::config::ResetMode::Idle => format!("after {} min idle", p.idle_minutes),
            crate::config::ResetMode::Daily => format!("daily at {}:00", p.at_hour),
            crate::config::ResetMode::Both => format!("after {} min idle or daily at {}:00", p.idle_minutes, p.at_hour),
        };
        let mut s = format!(
            "Session {}\nAge: {}\nMessages: {msgs}\nQueued: {queued} (+{} pending)\nRunning: {}\nReset policy: {policy}\nTokens: {} in / {} out",
            e.session_id,
            reset::format_idle(now - started),
            e.pending.len(),
            if e.lease_live(now) { "yes" } else { "no" },
            e.input_tokens,
            e.output_tokens
        );
        for line in self.status_extra(&e).await {
            s.push('\n');
            s.push_str(&line);
        }
        Ok(s)
    }

    async fn cmd_resume(&self, key: &SessionKey, id: Option<String>) -> Result<String, AppError> {
        let Some(id) = id else {
            let recs = self.inner.store.list_sessions(Some(key), 10).await?;
            let cur = self.inner.store.get_entry(key).await?.map(|e| e.session_id);
            let mut s = String::from("Recent sessions:");
            for r in recs {
                let n = self.inner.store.count_messages(&r.session_id).await?;
                let mark = if Some(&r.session_id) == cur.as_ref() { " (current)" } else { "" };
                let title = r.title.map(|t| format!(" — {t}")).unwrap_or_default();
                s.push_str(&format!("\n{}{mark}: {n} messages{title}", r.session_id));
            }
            s.push_str("\nUse /resume <session_id> to switch.");
            return Ok(s);
        };
        let Ok(target) = SessionId::parse(&id) else { return Ok(format!("`{id}` is not a session id.")) };
        match self.inner.store.get_session(&target).await? {
            Some(r) if &r.session_key == key => {}
            _ => return Ok(format!("No session {id} in this chat. Use /resume to list them.")),
        }
        let (id, target) = (&id, &target);
        retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok("No session yet.".into()) };
            if e.session_id == *target {
                return Ok(format!("Already in session {id}."));
            }
            let now = self.inner.clock.now();
            let changes = [
                SessionChange::End { session_id: e.session_id.clone(), reason: "session_switch".into(), at: now },
                SessionChange::Reopen(target.clone()),
            ];
            e.session_id = target.clone();
            e.updated_at = now;
            e.interrupt_requested = e.lease.is_some();
            self.inner.store.put_entry(&e, &changes).await?;
            self.inner.live.signal_stop(&e.session_key);
            let n = self.inner.store.count_messages(target).await?;
            Ok(format!("↩ Resumed session {id} ({n} messages)."))
        })
        .await
    }

    /// `/usage`, in Hermes' wording (`gateway.usage.*`).
    async fn cmd_usage(&self, key: &SessionKey) -> Result<String, AppError> {
        let Some(e) = self.inner.store.get_entry(key).await? else { return Ok("No session yet.".into()) };
        Ok(format!(
            "📊 **Session Token Usage**\nModel: `{}`\nInput tokens: {}\nOutput tokens: {}\nTotal: {}",
            self.model_name(),
            e.input_tokens,
            e.output_tokens,
            e.input_tokens.saturating_add(e.output_tokens)
        ))
    }

    /// `/whoami`, as Hermes' `_handle_whoami_command`: the tier is `admin` for a user in
    /// `admin_users` or `cron.admin_users`, `unrestricted` when both are empty, else `user`. Every command
    /// is open to every allowed user here.
    fn cmd_whoami(&self, origin: &crate::core::ids::Origin) -> String {
        let scope = if origin.chat_type == crate::core::ids::ChatType::Dm { "DM" } else { "group/channel" };
        let user = origin.user_id.as_deref().unwrap_or("?");
        let tier = if self.access().admin_users.is_empty() {
            "unrestricted (no admin list configured for this scope)"
        } else if self.is_admin(Some(origin)) {
            "**admin**"
        } else {
            "user"
        };
        format!("**You** — {} ({scope})\nUser ID: `{user}`\nTier: {tier}\nSlash commands: all available", origin.platform)
    }

    /// Extra `/status` lines from other capabilities (scheduled jobs for this chat).
    async fn status_extra(&self, e: &crate::core::session::SessionEntry) -> Vec<String> {
        let mut lines = self.status_model(e).await;
        match self.status_context(e).await {
            Ok(line) => lines.push(line),
            Err(err) => tracing::warn!(error = %err, "status: context line unavailable"),
        }
        lines.extend(self.status_jobs(e).await);
        lines.push(self.status_tools(e));
        lines
    }
}
