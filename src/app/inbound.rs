//! `handle_inbound`: one chat message from any platform, end to end — allow list, dedupe,
//! session entry, turn lease, transcript, agent turn, reply, release.

use crate::app::agent::{self, TurnSpec};
use crate::app::{App, AppError, tools};
use crate::core::ids::{Origin, SessionId, SessionKey};
use crate::core::session::{Lease, Message, Role, SessionEntry, SessionRecord};
use crate::ports::{Appended, InboundId, SessionChange, StoreError};
use chrono::Duration;
use serde::Serialize;

/// How long a turn may run before its lease counts as abandoned.
pub const TURN_BUDGET_SECS: i64 = 600;
/// Slack on top of the budget before another process may take the lease over.
pub const LEASE_MARGIN_SECS: i64 = 60;
/// Retries of a lost compare-and-set before giving up with `Contended`.
const CAS_RETRIES: usize = 64;

/// One inbound chat message, parsed at the edge.
#[derive(Debug, Clone)]
pub struct Inbound {
    /// Where it came from.
    pub origin: Origin,
    /// The text.
    pub text: String,
    /// Platform message id (dedupe of platform retries).
    pub message_id: Option<String>,
    /// Sender's display name.
    pub user_name: Option<String>,
}

/// What happened to an inbound message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// The conversation it went to.
    pub session_id: String,
    /// The conversation place.
    pub session_key: String,
    /// The answer, when a turn ran now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// Notices shown before the reply (reset notices and the like).
    pub notices: Vec<String>,
    /// Stored for a later turn.
    pub queued: bool,
    /// Position in the queue when queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// A platform retry of a message already handled.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    /// The sender is not on the allow list.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
    /// The session was busy (filled by the queue logic).
    #[serde(skip)]
    pub busy: bool,
}

/// The refusal sent to users who are not on the allow list.
pub const REFUSAL: &str = "⛔ Sorry, this agent is private and you are not on its allow list. Ask its owner to add your user id.";

impl App {
    /// Whether the sender may talk to the agent (SPEC §4: deny by default on chat platforms).
    pub fn is_allowed(&self, origin: &Origin) -> bool {
        let s = &self.cfg.settings;
        let list = match origin.platform.as_str() {
            "telegram" => &s.platforms.telegram.allowed_users,
            "discord" => &s.platforms.discord.allowed_users,
            // api (bearer key), local (the operator's terminal) and cron are authenticated already.
            _ => return true,
        };
        s.allow_all_users || origin.user_id.as_ref().is_some_and(|u| list.iter().any(|a| a == u))
    }

    /// Handles one inbound message.
    #[tracing::instrument(skip_all, fields(platform = %msg.origin.platform, session_key))]
    pub async fn handle_inbound(&self, msg: Inbound) -> Result<Outcome, AppError> {
        if msg.text.trim().is_empty() {
            return Err(AppError::BadRequest("`text` must not be empty".into()));
        }
        let key = SessionKey::derive(&msg.origin, self.key_rules());
        tracing::Span::current().record("session_key", key.as_str());
        let mut out = Outcome { session_key: key.to_string(), ..Outcome::default() };
        if !self.is_allowed(&msg.origin) {
            tracing::info!(user_id = ?msg.origin.user_id, "refused: not on the allow list");
            self.send_to_origin(&msg.origin, REFUSAL).await;
            out.refused = true;
            return Ok(out);
        }
        let dedupe = msg.message_id.as_ref().map(|m| InboundId {
            platform: msg.origin.platform.clone(),
            chat_id: msg.origin.chat_id.clone(),
            message_id: m.clone(),
        });
        if let Some(d) = &dedupe
            && self.store.seen_inbound(d).await?
        {
            out.duplicate = true;
            return Ok(out);
        }
        let entry = match self.acquire(&msg.origin, &key).await? {
            Ok(e) => e,
            Err(busy) => {
                out.session_id = busy.session_id.to_string();
                out.busy = true;
                return Ok(out);
            }
        };
        out.session_id = entry.session_id.to_string();
        let token = entry.lease.as_ref().map(|l| l.token.clone()).unwrap_or_default();
        let mut user = Message::text(Role::User, msg.text.clone(), self.clock.now());
        user.platform_message_id = msg.message_id.clone();
        if self.store.append_messages(&entry.session_id, &[user], dedupe.as_ref()).await? == Appended::Duplicate {
            self.release(&key, &token, |_| {}).await?;
            out.duplicate = true;
            return Ok(out);
        }
        let result = self.chat_turn(&entry, Vec::new()).await;
        let (tin, tout) = result.as_ref().map_or((0, 0), |o| (o.input_tokens, o.output_tokens));
        let now = self.clock.now();
        self.release(&key, &token, |e| {
            e.input_tokens += tin;
            e.output_tokens += tout;
            e.updated_at = now;
        })
        .await?;
        match result {
            Ok(o) => {
                self.send_to_origin(&msg.origin, &o.reply).await;
                out.reply = Some(o.reply);
                Ok(out)
            }
            Err(e) => {
                tracing::error!(error = %e, "turn failed; the message is kept in the transcript");
                self.send_to_origin(
                    &msg.origin,
                    "⚠️ Sorry, I couldn't reach the model just now. Your message is saved; please try again in a moment.",
                )
                .await;
                Err(e)
            }
        }
    }

    /// Runs one chat turn over the stored transcript.
    pub(crate) async fn chat_turn(&self, entry: &SessionEntry, notes: Vec<String>) -> Result<agent::TurnOutput, AppError> {
        let spec = TurnSpec { session_id: &entry.session_id, notes, tools: tools::chat_tools(), model: None, system: self.system_prompt() };
        agent::run(self, spec, || async { false }).await
    }

    /// Loads the key's entry, creating it (with a fresh session) on first contact.
    pub(crate) async fn load_or_create(&self, origin: &Origin, key: &SessionKey) -> Result<SessionEntry, AppError> {
        for _ in 0..CAS_RETRIES {
            if let Some(e) = self.store.get_entry(key).await? {
                return Ok(e);
            }
            let now = self.clock.now();
            let fresh = SessionEntry::new(key.clone(), SessionId::generate(now, &self.cfg.tz), origin.clone(), now);
            let rec = SessionRecord {
                session_id: fresh.session_id.clone(),
                session_key: key.clone(),
                platform: origin.platform.clone(),
                title: None,
                started_at: now,
                ended_at: None,
                end_reason: None,
            };
            match self.store.put_entry(&fresh, &[SessionChange::Start(rec)]).await {
                Ok(e) => return Ok(e),
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Contended)
    }

    /// Takes the key's turn lease. `Ok(Err(entry))` means another turn holds it.
    pub(crate) async fn acquire(&self, origin: &Origin, key: &SessionKey) -> Result<Result<SessionEntry, SessionEntry>, AppError> {
        for _ in 0..CAS_RETRIES {
            let cur = self.load_or_create(origin, key).await?;
            let now = self.clock.now();
            if cur.lease_live(now) {
                return Ok(Err(cur));
            }
            let mut next = cur.clone();
            next.origin = origin.clone();
            next.lease = Some(Lease {
                token: format!("{:016x}", rand::random::<u64>()),
                started_at: now,
                expires_at: now + Duration::seconds(TURN_BUDGET_SECS + LEASE_MARGIN_SECS),
            });
            match self.store.put_entry(&next, &[]).await {
                Ok(e) => return Ok(Ok(e)),
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Contended)
    }

    /// Clears the lease if `token` still holds it, applying `update` in the same write.
    pub(crate) async fn release<F: Fn(&mut SessionEntry)>(&self, key: &SessionKey, token: &str, update: F) -> Result<(), AppError> {
        for _ in 0..CAS_RETRIES {
            let Some(mut e) = self.store.get_entry(key).await? else { return Ok(()) };
            if e.lease.as_ref().is_none_or(|l| l.token != token) {
                tracing::warn!(session_key = %key, "lease was taken over before release; not clearing it");
                return Ok(());
            }
            update(&mut e);
            e.lease = None;
            match self.store.put_entry(&e, &[]).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict(_)) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(AppError::Contended)
    }
}
