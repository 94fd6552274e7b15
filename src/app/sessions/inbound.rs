//! `handle_inbound`: one chat message from any platform — allow list, commands, dedupe,
//! the lazy reset check, the turn lease (or the two-level queue when busy), the turn, reply.

use crate::app::cas::{again, retry_cas};
use crate::app::{App, AppError};
use crate::core::commands;
use crate::core::ids::{Origin, SessionId, SessionKey};
pub use crate::core::inbound::{Inbound, ReplyPath};
use crate::core::queue::{self, Route};
use crate::core::reset;
use crate::core::session::{Message, PendingMessage, Role, SessionEntry, SessionRecord};
use crate::ports::{InboundId, QueuedItem, SessionChange, StoreError, StreamTarget};
use serde::Serialize;
use std::sync::Arc;

/// What happened to an inbound message.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// The conversation it went to.
    pub session_id: String,
    /// The conversation place.
    pub session_key: String,
    /// The answer (of the turn, or of a command).
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
    /// The queue is full; the message was not stored.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub queue_full: bool,
    /// The session was busy and the message was stored for a later turn.
    #[serde(skip)]
    pub busy: bool,
    /// The reply (and its notices) already reached the caller's stream target: the caller
    /// shows nothing more for it (docs/design.md#streaming).
    #[serde(skip)]
    pub streamed: bool,
    /// The turn's model tokens (input, output); zero when no turn ran.
    #[serde(skip)]
    pub usage: (u64, u64),
}

/// Told to senders while `serve` is shutting down (their message is stored).
pub const RESTARTING: &str = "⚠️ Gateway restarting — your message is saved and will be answered after the restart.";

/// One attempt at a key's turn lease.
enum Leasing {
    /// Leased: the entry as written, and the lease token.
    Leased(Box<SessionEntry>, String),
    /// A live turn holds it: store the message where the busy rule says.
    Busy(Box<SessionEntry>, Route),
    /// The platform message id was seen before: nothing was written.
    Duplicate,
    /// A reset is due and nothing was written: run the work before a reset (the memory
    /// flush) for this ending session first, then try again without asking.
    ResetDue(SessionId, Box<Origin>),
}

impl App {
    /// Whether the sender may talk to the agent (docs/design.md#safety: deny by default on chat platforms).
    pub(in crate::app) fn is_allowed(&self, origin: &Origin) -> bool {
        // api (bearer key), local (the operator's terminal) and cron are authenticated already;
        // every chat platform (a registered channel) denies by default, even one without settings.
        if !self.delivers_to(origin) {
            return true;
        }
        let list = self.inner.cfg.platform(&origin.platform).allowed_users;
        self.inner.cfg.settings.allow_all_users || origin.user_id.as_ref().is_some_and(|u| list.iter().any(|a| a == u))
    }

    fn inbound_id(msg: &Inbound) -> Option<InboundId> {
        msg.message_id.as_ref().map(|m| InboundId {
            platform: msg.origin.platform.clone(),
            chat_id: msg.origin.chat_id.clone(),
            message_id: m.clone(),
        })
    }

    /// Handles one inbound message.
    #[tracing::instrument(skip_all, fields(platform = %msg.origin.platform, session_key))]
    pub(in crate::app) async fn handle_inbound(&self, msg: Inbound) -> Result<Outcome, AppError> {
        self.handle_inbound_streaming(msg, None).await
    }

    /// [`App::handle_inbound`] for a caller that answers the message itself and hands a
    /// `sink` its turn's reply streams into (docs/design.md#streaming).
    pub(in crate::app) async fn handle_inbound_streaming(
        &self,
        msg: Inbound,
        sink: Option<Arc<dyn StreamTarget>>,
    ) -> Result<Outcome, AppError> {
        self.handle_inbound_with(msg, sink, None).await
    }

    /// [`App::handle_inbound_streaming`] with an `ephemeral` system prompt (Hermes'
    /// `ephemeral_system_prompt` of the API server): added to this message's own turn only,
    /// never stored; a message that waits in the queue runs later without it.
    pub(in crate::app) async fn handle_inbound_with(
        &self,
        mut msg: Inbound,
        sink: Option<Arc<dyn StreamTarget>>,
        ephemeral: Option<String>,
    ) -> Result<Outcome, AppError> {
        if msg.text.trim().is_empty() && msg.attachments.is_empty() {
            return Err(AppError::BadRequest("`text` must not be empty".into()));
        }
        let key = SessionKey::derive_in(self.profile(), &msg.origin, self.key_rules());
        tracing::Span::current().record("session_key", key.as_str());
        let mut out = Outcome { session_key: key.to_string(), ..Outcome::default() };
        // Allow lists, then DM pairing; an unknown sender gets no turn (docs/pairing.md).
        if let crate::app::sessions::pairing::Admission::Denied(text) = self.admit(&msg).await? {
            out.refused = true;
            out.reply = text;
            return Ok(out);
        }
        let dedupe = Self::inbound_id(&msg);
        // `/<skill-name> [text]` becomes Hermes' skill invocation message, then a plain message.
        if let Some(text) = self.skill_message(&msg.text).await {
            msg.text = text;
        }
        if let Some(cmd) = commands::parse(&msg.text) {
            // A command may write nothing, so its retry is caught by a read. Every other
            // path records the id in its own write, which fails whole on a seen id
            // (docs/design.md#store-cost): no separate check.
            if let Some(d) = &dedupe
                && self.inner.store.seen_inbound(d).await?
            {
                out.duplicate = true;
                return Ok(out);
            }
            return self.handle_command(cmd, &msg, &key, dedupe, out).await;
        }
        // Files become text (or stay photo references) before anything is stored.
        for line in self.prepare_media(&mut msg).await {
            self.reply(&msg.origin, msg.reply, &line).await;
            out.notices.push(line);
        }
        if msg.text.trim().is_empty() && msg.attachments.is_empty() {
            out.reply = Some(std::mem::take(&mut out.notices).join("\n"));
            return Ok(out);
        }
        if !self.inner.live.accepting() {
            let cur = self.load_or_create(&msg.origin, &key).await?;
            return self.store_busy(cur, &msg, dedupe, Route::Fifo, out).await;
        }
        let mut leasing = retry_cas(|| self.try_lease(&msg, &key, dedupe.as_ref(), true)).await?;
        if let Leasing::ResetDue(ending, origin) = &leasing {
            self.before_reset(ending, origin).await;
            leasing = retry_cas(|| self.try_lease(&msg, &key, dedupe.as_ref(), false)).await?;
        }
        let (entry, token) = match leasing {
            Leasing::ResetDue(..) => return Err(AppError::Contended),
            Leasing::Busy(cur, route) => return self.store_busy(*cur, &msg, dedupe, route, out).await,
            Leasing::Duplicate => {
                out.duplicate = true;
                return Ok(out);
            }
            Leasing::Leased(entry, token) => (*entry, token),
        };
        out.session_id = entry.session_id.to_string();
        crate::app::crash::crash_point("turn:user_stored");
        self.inner.live.register(&key, &token, &entry.origin);
        // After the register, so a drain that starts now waits for this turn.
        crate::app::sessions::accept::accepted();
        let report = match self.one_turn_replying(&entry, msg.reply, sink, ephemeral.as_deref()).await {
            Ok(r) => r,
            Err(e) => {
                let _ = self.update_leased(&key, &token, &[], |e| e.lease = None).await;
                self.inner.live.unregister(&key, &token);
                return Err(e);
            }
        };
        // Release now when nothing else waits, so the reply leaves with the lease free;
        // otherwise keep draining in the background.
        self.continue_or_release(key, token, report.held).await?;
        crate::app::crash::crash_point("turn:released");
        out.reply = Some(report.reply);
        out.notices.extend(report.notices);
        out.streamed = report.streamed;
        out.usage = report.usage;
        Ok(out)
    }

    /// One attempt to take the key's turn lease for `msg`: the message and the pending slot
    /// go into the transcript in the same write. A busy key answers where the message goes.
    /// With `ask_before_reset`, a due reset is answered [`Leasing::ResetDue`] before anything is written.
    async fn try_lease(
        &self,
        msg: &Inbound,
        key: &SessionKey,
        dedupe: Option<&InboundId>,
        ask_before_reset: bool,
    ) -> Result<Leasing, AppError> {
        let cur = self.load_or_create(&msg.origin, key).await?;
        if let Some(l) = &cur.lease {
            if self.lease_abandoned(l, false) {
                self.mark_interrupted(key, l).await?;
                return again();
            }
            return Ok(Leasing::Busy(Box::new(cur), queue::route(self.inner.cfg.settings.busy_input_mode, false)));
        }
        let (mut next, mut changes) = self.plan_reset(&cur).await?;
        if ask_before_reset && next.session_id != cur.session_id {
            return Ok(Leasing::ResetDue(cur.session_id, Box::new(cur.origin)));
        }
        let lease = self.new_lease();
        let token = lease.token.clone();
        next.grant(lease);
        next.origin = msg.origin.clone();
        let mut msgs = crate::app::turn::runner::pending_messages(&mut next);
        let mut user = Message::text(Role::User, msg.text.clone(), self.inner.clock.now());
        user.platform_message_id = msg.message_id.clone();
        user.attachments = msg.attachments.clone();
        msgs.push(user);
        if let Some(d) = dedupe {
            changes.push(SessionChange::Inbound(d.clone()));
        }
        changes.push(SessionChange::Append { session_id: next.session_id.clone(), messages: msgs });
        match self.inner.store.put_entry(&next, &changes).await {
            Ok(e) => Ok(Leasing::Leased(Box::new(e), token)),
            Err(StoreError::DuplicateInbound) => Ok(Leasing::Duplicate),
            Err(e) => Err(e.into()),
        }
    }

    /// The lazy reset check on a free entry: returns the entry to write (possibly a fresh
    /// session flagged `was_auto_reset`) and the record changes that go with it. Never resets
    /// while stored work waits.
    async fn plan_reset(&self, cur: &SessionEntry) -> Result<(SessionEntry, Vec<SessionChange>), AppError> {
        let now = self.inner.clock.now();
        let due = if cur.suspended {
            Some(reset::suspended())
        } else {
            let p = self.inner.cfg.settings.reset_rules().policy_for(&cur.origin.platform, cur.origin.chat_type);
            reset::check(&p, cur.updated_at, now, self.inner.cfg.tz)
        };
        let Some(due) = due else { return Ok((cur.clone(), Vec::new())) };
        if !cur.suspended && (!cur.pending.is_empty() || !self.inner.store.queue_list(&cur.session_key).await?.is_empty()) {
            return Ok((cur.clone(), Vec::new()));
        }
        let had_activity = self.inner.store.count_messages(&cur.session_id).await? > 0;
        let mut next = cur.clone();
        next.session_id = SessionId::generate(now, &self.inner.cfg.tz);
        next.updated_at = now;
        next.input_tokens = 0;
        next.output_tokens = 0;
        next.was_auto_reset = true;
        next.auto_reset_reason = Some(due.reason);
        next.reset_had_activity = had_activity;
        next.reset_detail = Some(due.detail.clone());
        next.suspended = false;
        next.interruptions = 0;
        next.resume_pending = false;
        next.resume_reason = None;
        tracing::info!(session_key = %cur.session_key, reason = %due.detail, "automatic session reset");
        let rec = SessionRecord {
            session_id: next.session_id.clone(),
            session_key: cur.session_key.clone(),
            platform: cur.origin.platform.clone(),
            title: None,
            started_at: now,
            ended_at: None,
            end_reason: None,
        };
        let changes = vec![
            SessionChange::End { session_id: cur.session_id.clone(), reason: "session_reset".into(), at: now },
            SessionChange::Start(rec),
        ];
        Ok((next, changes))
    }

    /// One write of a busy message: appended to the FIFO (under the cap left by the pending
    /// slot) or put in the pending slot with an interrupt request. Returns its position.
    async fn write_busy(
        &self,
        cur: &SessionEntry,
        msg: &Inbound,
        dedupe: Option<&InboundId>,
        route: Route,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<usize, StoreError> {
        let cap = self.inner.cfg.settings.max_queued;
        match route {
            Route::Fifo => {
                let item = QueuedItem {
                    text: msg.text.clone(),
                    message_id: msg.message_id.clone(),
                    at: now,
                    attachments: msg.attachments.clone(),
                };
                self.inner.store.queue_push(&cur.session_key, &item, cap - cur.pending.len(), dedupe).await
            }
            Route::Slot => {
                let mut next = cur.clone();
                queue::push_slot(
                    &mut next.pending,
                    PendingMessage {
                        text: msg.text.clone(),
                        message_id: msg.message_id.clone(),
                        at: now,
                        attachments: msg.attachments.clone(),
                    },
                );
                next.interrupt_requested = next.lease.is_some();
                let changes: Vec<SessionChange> = dedupe.iter().map(|d| SessionChange::Inbound((*d).clone())).collect();
                let stored = self.inner.store.put_entry(&next, &changes).await.map(|e| e.pending.len());
                if stored.is_ok() {
                    self.inner.live.signal_stop(&next.session_key);
                }
                stored
            }
        }
    }

    /// Stores a message that arrived while a turn runs: pending slot or FIFO, cap checked,
    /// dedupe recorded in the same write, then (at most once per 30 s) an acknowledgement.
    pub(in crate::app) async fn store_busy(
        &self,
        mut cur: SessionEntry,
        msg: &Inbound,
        dedupe: Option<InboundId>,
        route: Route,
        mut out: Outcome,
    ) -> Result<Outcome, AppError> {
        let key = cur.session_key.clone();
        let cap = self.inner.cfg.settings.max_queued;
        out.session_id = cur.session_id.to_string();
        let now = self.inner.clock.now();
        let position = loop {
            let fifo_len = self.inner.store.queue_list(&key).await?.len();
            if !queue::has_room(cap, cur.pending.len(), fifo_len) {
                return Ok(self.refuse_full(msg, out).await);
            }
            match self.write_busy(&cur, msg, dedupe.as_ref(), route, now).await {
                Ok(n) => break n,
                Err(StoreError::Conflict(_)) => {
                    cur = self.load_or_create(&msg.origin, &key).await?;
                }
                Err(StoreError::QueueFull(_)) => return Ok(self.refuse_full(msg, out).await),
                Err(StoreError::DuplicateInbound) => {
                    out.duplicate = true;
                    return Ok(out);
                }
                Err(e) => return Err(e.into()),
            }
        };
        crate::app::crash::crash_point("queue:stored");
        crate::app::sessions::accept::accepted();
        out.queued = true;
        out.busy = true;
        out.position = Some(position);
        if !self.inner.live.accepting() {
            self.reply(&msg.origin, msg.reply, RESTARTING).await;
        } else {
            let ack = if route == Route::Slot { queue::ACK_INTERRUPT } else { queue::ACK_QUEUE };
            self.maybe_ack(&key, &msg.origin, msg.reply, ack).await?;
            // The holder may have released between our read and our write: make sure a turn runs.
            if self.inner.store.get_entry(&key).await?.is_some_and(|e| e.lease.is_none()) {
                self.kick(&key);
            }
        }
        Ok(out)
    }

    async fn refuse_full(&self, msg: &Inbound, mut out: Outcome) -> Outcome {
        let text = queue::full_reply(self.inner.cfg.settings.max_queued);
        self.reply(&msg.origin, msg.reply, &text).await;
        out.queue_full = true;
        out.reply = Some(text);
        out
    }

    /// Sends `text` if no acknowledgement went to this session in the last 30 s, recording it.
    pub(in crate::app) async fn maybe_ack(&self, key: &SessionKey, origin: &Origin, path: ReplyPath, text: &str) -> Result<(), AppError> {
        let acked = retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok(()) };
            let now = self.inner.clock.now();
            if !queue::ack_due(e.last_ack_at, now) {
                return Ok(());
            }
            e.last_ack_at = Some(now);
            self.inner.store.put_entry(&e, &[]).await?;
            self.reply(origin, path, text).await;
            Ok(())
        })
        .await;
        // An acknowledgement is a courtesy: losing the race to record one only skips it.
        match acked {
            Err(AppError::Contended) => Ok(()),
            other => other,
        }
    }

    /// Loads the key's entry, creating it (with a fresh session) on first contact.
    pub(in crate::app) async fn load_or_create(&self, origin: &Origin, key: &SessionKey) -> Result<SessionEntry, AppError> {
        retry_cas(|| async move {
            if let Some(e) = self.inner.store.get_entry(key).await? {
                return Ok(e);
            }
            let now = self.inner.clock.now();
            let fresh = SessionEntry::new(key.clone(), SessionId::generate(now, &self.inner.cfg.tz), origin.clone(), now);
            let rec = SessionRecord {
                session_id: fresh.session_id.clone(),
                session_key: key.clone(),
                platform: origin.platform.clone(),
                title: None,
                started_at: now,
                ended_at: None,
                end_reason: None,
            };
            Ok(self.inner.store.put_entry(&fresh, &[SessionChange::Start(rec)]).await?)
        })
        .await
    }
}
