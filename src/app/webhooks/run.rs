//! The run of one accepted delivery (docs/api.md#webhook-routes): a fresh session under the key
//! `agent:<profile>:webhook:<route>:<delivery id>` (chat `webhook:<route>:<delivery id>`,
//! Hermes' session chat id) created with its prompt in one write, one agent turn over that
//! prompt, and one closing write that stores the answer and ends the session
//! (`webhook_complete`, as Hermes closes it); then the answer is delivered. Three store
//! requests for a turn without tools (four when the home channel is read), plus the
//! delivery id spent before the edge answered.

use crate::app::turn::agent;
use crate::app::turn::types::TurnSpec;
use crate::app::types::{TURN_BUDGET_SECS, TurnKind};
use crate::app::webhooks::types::Accepted;
use crate::app::{App, AppError};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{Message, Role, SessionEntry, SessionRecord};
use crate::core::webhook::{WebhookRoute, key_part, session_chat_id};
use crate::ports::{SessionChange, StoreError};

/// Why a webhook session ended (Hermes' reason).
const END_REASON: &str = "webhook_complete";

impl App {
    /// The prompt of a run: the route's first installed skill (Hermes loads the first one
    /// found), then the rendered template.
    fn webhook_prompt(&self, route: &WebhookRoute, rendered: &str) -> String {
        for s in &route.skills {
            let path = self.inner.home.join("skills").join(s).join("SKILL.md");
            match std::fs::read_to_string(&path) {
                Ok(text) => return format!("# Skill: {s}\n\n{}\n\n---\n\n{rendered}", text.trim()),
                Err(_) => tracing::warn!(route = %route.name, skill = %s, "webhook route skill not found"),
            }
        }
        rendered.to_string()
    }

    /// The entry of a delivery's session, written with its record and prompt in one write.
    /// A key used before (the same delivery id after its hour) gets a new session.
    async fn webhook_session(&self, d: &Accepted, prompt: &Message) -> Result<SessionEntry, AppError> {
        let now = self.inner.clock.now();
        let key = SessionKey::parse(&format!("agent:{}:webhook:{}:{}", self.profile(), d.route, key_part(&d.delivery_id)))
            .map_err(|e| AppError::BadRequest(e.to_string()))?;
        let origin = Origin {
            platform: "webhook".into(),
            chat_id: session_chat_id(&d.route, &d.delivery_id),
            chat_type: ChatType::Channel,
            user_id: None,
            thread_id: None,
            chat_name: Some(format!("webhook/{}", d.route)),
        };
        let id = SessionId::generate(now, &self.inner.cfg.tz);
        let rec = SessionRecord {
            session_id: id.clone(),
            session_key: key.clone(),
            platform: "webhook".into(),
            title: None,
            started_at: now,
            ended_at: None,
            end_reason: None,
        };
        let changes = [SessionChange::Start(rec), SessionChange::Append { session_id: id.clone(), messages: vec![prompt.clone()] }];
        let fresh = SessionEntry::new(key.clone(), id.clone(), origin, now);
        match self.inner.store.put_entry(&fresh, &changes).await {
            Err(StoreError::Conflict(_)) => {
                let Some(mut old) = self.inner.store.get_entry(&key).await? else { return Err(AppError::Contended) };
                old.session_id = id;
                old.updated_at = now;
                Ok(self.inner.store.put_entry(&old, &changes).await?)
            }
            other => Ok(other?),
        }
    }

    /// Runs one accepted delivery and delivers its answer (a failure is delivered as one
    /// line, as a job's is). Errors are logged here: the edge answered long ago.
    pub(in crate::app) async fn webhook_run(&self, route: &WebhookRoute, d: &Accepted) {
        let text = match self.webhook_answer(route, d).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::error!(route = %d.route, delivery_id = %d.delivery_id, error = %e, "webhook run failed");
                let line: String = e.to_string().lines().next().unwrap_or_default().chars().take(300).collect();
                format!("⚠️ Webhook route '{}' failed: {line}", d.route)
            }
        };
        match self.webhook_deliver(&route.deliver, &d.extra, &text).await {
            Ok(_) => tracing::info!(route = %d.route, delivery_id = %d.delivery_id, "webhook run delivered"),
            Err(e) => tracing::error!(route = %d.route, delivery_id = %d.delivery_id, error = %e, "webhook delivery failed"),
        }
    }

    /// The agent's answer to a delivery: the session, the turn, the closing write.
    async fn webhook_answer(&self, route: &WebhookRoute, d: &Accepted) -> Result<String, AppError> {
        let started = self.inner.clock.now();
        let prompt = Message::text(Role::User, self.webhook_prompt(route, &d.prompt), started);
        let mut entry = self.webhook_session(d, &prompt).await?;
        let budget = crate::app::budget::turn_budget(std::time::Duration::from_secs(TURN_BUDGET_SECS as u64));
        let spec = TurnSpec {
            session_id: &entry.session_id.clone(),
            notes: Vec::new(),
            kind: TurnKind::Job,
            deadline: Some(tokio::time::Instant::now() + budget),
            model: None,
            route: None,
            toolsets: Vec::new(),
            system: self.system_prompt(),
            origin: None,
            fence: None,
            stream: None,
            transcript: Some(vec![prompt]),
            prompt_unstored: false,
        };
        let out = match tokio::time::timeout(budget, agent::run(self, spec, || async { false })).await {
            Ok(out) => out?,
            Err(_) => return Err(AppError::BadRequest(format!("timed out after {} s", budget.as_secs()))),
        };
        let now = self.inner.clock.now();
        self.count_job_run(out.input_tokens, out.output_tokens, (now - started).num_milliseconds() as f64 / 1000.0);
        let mut changes: Vec<SessionChange> =
            out.held.map(|m| SessionChange::Append { session_id: entry.session_id.clone(), messages: vec![m] }).into_iter().collect();
        changes.push(SessionChange::End { session_id: entry.session_id.clone(), reason: END_REASON.into(), at: now });
        entry.input_tokens += out.input_tokens;
        entry.output_tokens += out.output_tokens;
        entry.updated_at = now;
        self.inner.store.put_entry(&entry, &changes).await?;
        if out.reply.trim().is_empty() {
            return Err(AppError::BadRequest("the model returned an empty answer".into()));
        }
        Ok(out.reply)
    }
}
