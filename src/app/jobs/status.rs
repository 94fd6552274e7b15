//! `cron status` and `/status` schedule lines: provider in use and why, armed timers, last
//! tick, last timer error, next jobs for a chat.

use crate::app::{App, AppError};
use crate::core::session::SessionEntry;
use serde_json::{Value, json};

/// Store record holding the time of the last ticker pass.
pub const LAST_TICK_KEY: &str = "last_tick";

impl App {
    /// The scheduler's status as JSON.
    pub(in crate::app) async fn cron_status(&self) -> Result<Value, AppError> {
        let choice = crate::config::provider::choose(&self.inner.cfg, false);
        let jobs = self.inner.store.list_jobs().await?;
        let armed: Vec<Value> = jobs.iter().filter(|j| j.armed()).map(|j| json!({"job_id": j.id, "fire_at": j.next_run_at})).collect();
        Ok(json!({
            "provider": self.inner.timers.provider().as_str(),
            "configured_choice": choice.provider,
            "why": choice.why,
            "missing": choice.missing,
            "jobs": jobs.len(),
            "armed": armed,
            "last_tick": self.inner.store.get_meta(LAST_TICK_KEY).await?,
            "last_timer_error": self.inner.store.get_meta("timers_last_error").await?,
            "store": self.inner.store.kind(),
        }))
    }

    /// `/status` lines about the model: the configured one (and its fallbacks) and the one
    /// that wrote the last answer of this session.
    pub(in crate::app) async fn status_model(&self, e: &SessionEntry) -> Vec<String> {
        let m = &self.inner.cfg.model;
        let mut line = format!("Model: {} ({})", m.primary.model, m.primary.provider);
        if !m.fallbacks.is_empty() {
            let f: Vec<String> = m.fallbacks.iter().map(|f| format!("{} ({})", f.model, f.provider)).collect();
            line.push_str(&format!(", fallbacks: {}", f.join(", ")));
        }
        let mut out = vec![line];
        if let Some(c) = self.turn_model(e).await {
            let whence = if e.model.is_some() { "this session" } else { "the agent's default" };
            out.push(format!("Model in use: {} ({}; /model, {whence})", c.model, c.provider.as_deref().unwrap_or(m.primary.provider)));
        }
        let recent = self.inner.store.recent_messages(&e.session_id, 50).await.unwrap_or_default();
        if let Some(last) = recent.iter().rev().find_map(|msg| msg.model.as_deref()) {
            out.push(format!("Last answer by: {last}"));
        }
        out
    }

    /// The `/status` line about what the model is sent of this session: with compression,
    /// how much the summary stands for; without it, how many of the oldest were trimmed.
    pub(in crate::app) async fn status_context(&self, e: &SessionEntry) -> Result<String, AppError> {
        use crate::core::compress::{SummaryIndex, meta_key};
        let store = &self.inner.store;
        let count = store.count_messages(&e.session_id).await?;
        let settings = &self.inner.cfg.settings;
        if settings.compression.enabled {
            let index = store.get_meta(&meta_key(e.session_id.as_str())).await?.and_then(|r| serde_json::from_str::<SummaryIndex>(&r).ok());
            return Ok(match index {
                Some(i) => format!(
                    "Context: first {} messages + a summary of {} + the {} since (compression on)",
                    i.head.len(),
                    i.through.saturating_sub(i.head.len() as u64),
                    count.saturating_sub(i.through + 1)
                ),
                None => format!("Context: all {count} messages sent (compression on, nothing summarized yet)"),
            });
        }
        let max = settings.model.max_context_messages;
        let recent = store.recent_messages(&e.session_id, max).await?;
        let recent: Vec<_> = recent.into_iter().filter(|m| m.summary_through.is_none()).collect();
        let sent = crate::core::prompt::trim_context(&recent, max).len() as u64;
        Ok(format!("Context: {sent} of {count} messages sent ({} trimmed, compression off)", count.saturating_sub(sent)))
    }

    /// `/status` lines about the next scheduled jobs of this chat.
    pub(in crate::app) async fn status_jobs(&self, e: &SessionEntry) -> Vec<String> {
        let Ok(jobs) = self.inner.store.list_jobs().await else { return vec![] };
        let mut mine: Vec<_> = jobs
            .into_iter()
            .filter(|j| j.armed() && j.origin.as_ref().is_some_and(|o| o.platform == e.origin.platform && o.chat_id == e.origin.chat_id))
            .collect();
        mine.sort_by_key(|j| j.next_run_at);
        if mine.is_empty() {
            return vec!["Scheduled jobs: none for this chat".into()];
        }
        let mut out = vec!["Next scheduled jobs:".to_string()];
        for j in mine.iter().take(5) {
            let at = j.next_run_at.map(|t| t.with_timezone(&self.inner.cfg.tz).format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default();
            out.push(format!("• {} — {} ({})", j.name, at, j.schedule.display()));
        }
        out
    }
}
