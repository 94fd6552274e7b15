//! Running turns under a lease: one turn with its notes and notices, then draining the
//! pending slot and the FIFO (slot first) until both are empty, then releasing — all with
//! compare-and-set writes guarded by the lease token.

use crate::app::cas::{again, retry_cas};
use crate::app::turn::agent;
use crate::app::turn::lease::{is_lost, lost, settle};
use crate::app::turn::types::{Leased, StreamPlan, TurnOutput, TurnSpec};
use crate::app::types::{DRAIN_BUDGET_SECS, TURN_BUDGET_SECS, TurnKind};
use crate::app::{App, AppError};
use crate::core::ids::SessionKey;
use crate::core::inbound::ReplyPath;
use crate::core::recovery::{self, RESUME_NOTE};
use crate::core::reset;
use crate::core::session::{Fence, Lease, Message, Role, SessionEntry};
use crate::ports::{SessionChange, StoreError, StreamTarget};
use std::sync::Arc;
use std::time::Duration as StdDuration;

/// The first turn's result, for callers that answer inline (the HTTP API).
#[derive(Debug, Default)]
pub struct TurnReport {
    /// The reply.
    pub reply: String,
    /// Notices shown before it (empty when they went to the caller's stream target).
    pub notices: Vec<String>,
    /// The entry as the turn's last write left it (still leased, or released by its settling
    /// write: no lease), so the next step needs no re-read; a stale copy only costs a
    /// compare-and-set retry.
    pub(in crate::app) held: Option<Box<SessionEntry>>,
    /// The reply already reached the caller's stream target (docs/design.md#streaming).
    pub streamed: bool,
    /// The turn's model tokens: input, output.
    pub usage: (u64, u64),
}

/// What a drain step found.
enum Next {
    /// Another turn to run (its input is already in the transcript).
    Turn(Box<SessionEntry>),
    /// Nothing left; the lease is released.
    Done,
    /// Released in a write conditioned on an empty FIFO: nothing can wait unseen, so no
    /// queue read follows (a later push sees the lease free and wakes the key).
    Released,
    /// The pending slot holds a burst still arriving: ask again after this long (the lease
    /// stays, so what arrives meanwhile joins the slot).
    Settling(StdDuration),
}

/// How long the drain waits, at most, for one burst to settle (tokio time, so a clock that
/// stands still cannot hold the drain).
const BURST_CAP: StdDuration = StdDuration::from_millis(crate::core::queue::BURST_CAP_MS as u64);

impl App {
    /// Runs one turn for a leased entry whose input is already in the transcript: notes and
    /// notices for resets and resumes, the agent loop within its budget, the success update,
    /// and delivery to the origin.
    pub(in crate::app) async fn one_turn(&self, entry: &SessionEntry) -> Result<TurnReport, AppError> {
        self.one_turn_replying(entry, ReplyPath::Origin, None, None).await
    }

    /// The system notes (reset, resume) of a turn, and the notices the user sees first.
    fn turn_notes(&self, entry: &SessionEntry) -> (Vec<String>, Vec<String>) {
        let mut notes = Vec::new();
        let mut notices = Vec::new();
        if entry.was_auto_reset {
            let detail = entry.reset_detail.clone().unwrap_or_default();
            notes.push(reset::system_note(&detail));
            let policy = self.inner.cfg.settings.reset_rules().policy_for(&entry.origin.platform, entry.origin.chat_type);
            let reason = entry.auto_reset_reason.unwrap_or(crate::core::session::ResetReason::Idle);
            if reset::should_notify(&policy, reason, entry.reset_had_activity, &entry.origin.platform) {
                notices.push(reset::notice(&detail));
            }
        }
        if entry.resume_pending {
            notes.push(RESUME_NOTE.to_string());
        }
        (notes, notices)
    }

    /// [`App::one_turn`], with its notices and reply sent along `path` (the first turn of a
    /// message whose transport answers it itself sends nothing to the origin). Every write and
    /// send is fenced by the entry's lease epoch; a turn that lost it stops and sends nothing.
    /// A caller that answers the message itself may hand a `sink` its reply streams into;
    /// the notices then go there first and the report says the caller has nothing to show.
    /// An `ephemeral` system prompt is added to this turn's system prompt only.
    pub(in crate::app) async fn one_turn_replying(
        &self,
        entry: &SessionEntry,
        path: ReplyPath,
        sink: Option<Arc<dyn StreamTarget>>,
        ephemeral: Option<&str>,
    ) -> Result<TurnReport, AppError> {
        let key = &entry.session_key;
        let Some(fence) = entry.fence() else { return Err(lost(key)) };
        let token = entry.lease.as_ref().map(|l| l.token.clone()).unwrap_or_default();
        let (notes, mut notices) = self.turn_notes(entry);
        let plan = self.stream_plan(entry, &fence, path, sink);
        for (i, n) in notices.iter().enumerate() {
            match plan.as_ref().filter(|p| p.to_caller()) {
                Some(p) => self.notice_to_caller(p, &format!("notice{i}"), n).await,
                None => {
                    self.send_fenced(entry, &fence, path, &format!("notice{i}"), n).await?;
                }
            }
        }
        if plan.as_ref().is_some_and(StreamPlan::to_caller) {
            notices.clear();
        }
        let renewal = self.renew_in_background(&fence);
        let started = self.inner.clock.now();
        let result = self.run_agent(entry, &fence, path, notes, plan, ephemeral).await;
        drop(renewal);
        match result {
            Ok(mut out) => {
                let now = self.inner.clock.now();
                self.count_turn(out.input_tokens, out.output_tokens, (now - started).num_milliseconds() as f64 / 1000.0);
                // A final answer was settled with the token update and the reply's once key.
                let settled = out.settled.take();
                let updated = match &settled {
                    Some(s) => Some((*s.entry).clone()),
                    None => self.update_leased_from(entry, &token, |e| settle(e, (out.input_tokens, out.output_tokens), now)).await?,
                };
                let released = settled.as_ref().is_some_and(|s| s.released);
                let Some(updated) = updated.filter(|e| released || e.holds(&fence)) else { return Err(lost(key)) };
                if !out.interrupted && !out.streamed {
                    // That write just proved the lease: the send needs no second read.
                    match settled {
                        Some(s) if s.send => {
                            self.reply(&entry.origin, path, &out.reply).await;
                        }
                        Some(_) => {}
                        None => {
                            self.send_held(entry, &fence, path, "reply", &out.reply).await?;
                        }
                    }
                    crate::app::crash::crash_point("turn:reply_delivered");
                }
                let usage = (out.input_tokens, out.output_tokens);
                Ok(TurnReport { reply: out.reply, notices, held: Some(Box::new(updated)), streamed: out.streamed, usage })
            }
            Err(e) if is_lost(&e) => {
                tracing::warn!(session_key = %key, epoch = fence.epoch, "lease lost during the turn; it stops and sends nothing");
                Err(e)
            }
            Err(e) => {
                tracing::error!(session_key = %key, error = %e, "turn failed; its input stays in the transcript");
                let sorry = "⚠️ Sorry, I couldn't reach the model just now. Your message is saved; please try again in a moment.";
                let _ = self.send_fenced(entry, &fence, path, "error", sorry).await;
                Err(e)
            }
        }
    }

    /// The agent loop of a chat turn within its budget, its appends fenced by `fence`; it
    /// stops early when asked to or when the lease is lost. Its reply streams into the chat
    /// as it grows along `plan` (docs/design.md#streaming).
    async fn run_agent(
        &self,
        entry: &SessionEntry,
        fence: &Fence,
        path: ReplyPath,
        notes: Vec<String>,
        plan: Option<StreamPlan>,
        ephemeral: Option<&str>,
    ) -> Result<TurnOutput, AppError> {
        let budget = crate::app::budget::turn_budget(StdDuration::from_secs(TURN_BUDGET_SECS as u64));
        // One read for the whole context: transcript tail, memory snapshot, summary index.
        let read = crate::app::turn::context::read(self, &entry.session_id).await?;
        let snapshot = read.notes.get(crate::app::memory::SNAPSHOT_NOTE).map(String::as_str);
        let skills = read.notes.get(crate::app::skills::SKILLS_NOTE).map(String::as_str);
        let mut system = self.chat_system_prompt_from(&entry.session_id, Some(snapshot), Some(skills), Some(&entry.origin)).await;
        // Hermes layers the ephemeral prompt on top of the core one at call time, unstored.
        if let Some(e) = ephemeral.filter(|e| !e.trim().is_empty()) {
            system = format!("{system}\n\n{e}").trim().to_string();
        }
        let choice = self.turn_model(entry).await;
        let spec = TurnSpec {
            session_id: &entry.session_id,
            notes,
            kind: TurnKind::Chat,
            deadline: Some(tokio::time::Instant::now() + budget),
            model: choice.as_ref().map(|c| c.model.clone()),
            route: crate::app::model_choice::route_of(choice),
            toolsets: Vec::new(),
            system,
            origin: Some(entry.origin.clone()),
            fence: Some(fence.clone()),
            stream: plan,
            transcript: None,
            prompt_unstored: false,
        };
        let key = &entry.session_key;
        let stop =
            || async { self.inner.store.get_entry(key).await.ok().flatten().is_some_and(|e| e.interrupt_requested || !e.holds(fence)) };
        let leased = Leased { entry, path, read, signal: self.inner.live.stop_signal(key) };
        match tokio::time::timeout(budget, agent::run_leased(self, spec, Some(leased), stop)).await {
            Ok(r) => r,
            Err(_) => {
                Ok(TurnOutput { reply: "⏱ That took too long; I stopped. Please try a smaller request.".into(), ..TurnOutput::default() })
            }
        }
    }

    /// Takes the next work under the lease (slot first, then FIFO head), or releases it. Each
    /// next turn gets a new lease grant (a new epoch) with the same token. With `settle`, a
    /// slot whose burst is still arriving (`core::queue::burst_settles_at`) is left for later:
    /// its superseded messages then never start a model call.
    async fn take_next(&self, key: &SessionKey, token: &str, held: Option<Box<SessionEntry>>, settle: bool) -> Result<Next, AppError> {
        let held = std::sync::Mutex::new(held);
        let held = &held;
        retry_cas(|| async move {
            // The first attempt uses the entry in hand; a retry (it was stale) re-reads.
            let known = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            let e = match known {
                Some(e) => *e,
                None => match self.inner.store.get_entry(key).await? {
                    Some(e) => e,
                    None => return Ok(Next::Done),
                },
            };
            let Some(fence) = e.fence().filter(|_| e.lease.as_ref().is_some_and(|l| l.token == token)) else { return Ok(Next::Done) };
            let mut next = e.clone();
            next.interrupt_requested = false;
            if self.inner.live.accepting() && !e.pending.is_empty() {
                let now = self.inner.clock.now();
                if let Some(at) = crate::core::queue::burst_settles_at(&e.pending).filter(|at| settle && *at > now) {
                    return Ok(Next::Settling((at - now).to_std().unwrap_or_default().min(BURST_CAP)));
                }
                next.grant(Lease { token: token.to_string(), ..self.new_lease() });
                let msgs = pending_messages(&mut next);
                let change = SessionChange::Append { session_id: e.session_id.clone(), messages: msgs };
                let n = self.inner.store.put_entry(&next, &[change]).await?;
                crate::app::crash::crash_point("slot:moved");
                return Ok(Next::Turn(Box::new(n)));
            }
            if self.inner.live.accepting() {
                let mut free = next.clone();
                free.lease = None;
                match self.inner.store.put_entry(&free, &[SessionChange::QueueEmpty(key.clone())]).await {
                    Ok(_) => return Ok(Next::Released),
                    Err(StoreError::QueueNotEmpty(_)) => {}
                    Err(err) => return Err(err.into()),
                }
                match self.inner.store.queue_pop_into(key, &e.session_id, Some(&fence)).await {
                    Ok(Some(_)) => {
                        crate::app::crash::crash_point("queue:popped");
                        return self.lease_next_turn(key, token).await;
                    }
                    Ok(None) => {}
                    Err(StoreError::Fenced(_)) => return Ok(Next::Done),
                    Err(err) => return Err(err.into()),
                }
            }
            next.lease = None;
            self.inner.store.put_entry(&next, &[]).await?;
            Ok(Next::Done)
        })
        .await
    }

    /// After a fenced pop moved a FIFO item into the transcript: grants the next turn's lease
    /// if `token` still holds the key (else the new holder's turn answers the item).
    async fn lease_next_turn(&self, key: &SessionKey, token: &str) -> Result<Next, AppError> {
        retry_cas(|| async move {
            let Some(e) = self.inner.store.get_entry(key).await? else { return Ok(Next::Done) };
            if e.lease.as_ref().is_none_or(|l| l.token != token) {
                return Ok(Next::Done);
            }
            let mut next = e;
            next.interrupt_requested = false;
            next.grant(Lease { token: token.to_string(), ..self.new_lease() });
            Ok(Next::Turn(Box::new(self.inner.store.put_entry(&next, &[]).await?)))
        })
        .await
    }

    /// After a turn answered inline: releases the lease if nothing waits, else runs the next
    /// turn and the rest of the drain in the background.
    pub(in crate::app) async fn continue_or_release(
        &self,
        key: SessionKey,
        token: String,
        held: Option<Box<SessionEntry>>,
    ) -> Result<(), AppError> {
        // The turn's settling write released the lease already (nothing waited then; a later
        // push saw the lease free and woke the key itself).
        if held.as_ref().is_some_and(|e| e.lease.is_none()) {
            self.inner.live.unregister(&key, &token);
            return Ok(());
        }
        match self.take_next(&key, &token, held, true).await {
            Ok(Next::Released) => {
                self.inner.live.unregister(&key, &token);
                Ok(())
            }
            Ok(Next::Done) => {
                self.inner.live.unregister(&key, &token);
                if self.inner.live.accepting() && !self.inner.store.queue_list(&key).await?.is_empty() {
                    self.kick(&key);
                }
                Ok(())
            }
            // The burst settles in the background: this message's caller has its answer now.
            Ok(Next::Settling(_)) => {
                let app = self.clone();
                tokio::spawn(async move { app.drain(key, token).await });
                Ok(())
            }
            Ok(Next::Turn(e)) => {
                let app = self.clone();
                tokio::spawn(async move {
                    if app.one_turn(&e).await.is_err() {
                        let _ = app.update_leased(&key, &token, &[], |e| e.lease = None).await;
                        app.inner.live.unregister(&key, &token);
                    } else {
                        app.drain(key, token).await;
                    }
                });
                Ok(())
            }
            Err(e) => {
                self.inner.live.unregister(&key, &token);
                Err(e)
            }
        }
    }

    /// Drains the key's stored work under the lease, then releases it. If items arrived in
    /// the FIFO just after the release, wakes the key again so nothing waits for a sweep.
    pub(in crate::app) async fn drain(&self, key: SessionKey, token: String) {
        let started = tokio::time::Instant::now();
        let mut held = None;
        let mut seen_empty = false;
        let mut settling: Option<tokio::time::Instant> = None;
        loop {
            if started.elapsed() > StdDuration::from_secs(DRAIN_BUDGET_SECS) {
                // Leave the rest for the next sweep; the lease is released so it can run.
                let _ = self.update_leased(&key, &token, &[], |e| e.lease = None).await;
                break;
            }
            let settle = settling.is_none_or(|t| t.elapsed() < BURST_CAP);
            match self.take_next(&key, &token, held.take(), settle).await {
                Ok(Next::Settling(wait)) => {
                    settling.get_or_insert_with(tokio::time::Instant::now);
                    tokio::time::sleep(wait).await;
                }
                Ok(Next::Turn(e)) => match self.one_turn(&e).await {
                    Ok(r) => {
                        settling = None;
                        held = r.held;
                    }
                    Err(_) => {
                        let _ = self.update_leased(&key, &token, &[], |e| e.lease = None).await;
                        break;
                    }
                },
                Ok(Next::Done) => break,
                Ok(Next::Released) => {
                    seen_empty = true;
                    break;
                }
                Err(e) => {
                    tracing::error!(session_key = %key, error = %e, "drain failed; the lease will expire and a sweep will resume");
                    break;
                }
            }
        }
        self.inner.live.unregister(&key, &token);
        if !seen_empty && self.inner.live.accepting() && self.inner.store.queue_list(&key).await.is_ok_and(|q| !q.is_empty()) {
            self.kick(&key);
        }
    }

    /// Wakes a key in the background (see [`App::wake_key`]).
    pub(in crate::app) fn kick(&self, key: &SessionKey) {
        let app = self.clone();
        let key = key.clone();
        tokio::spawn(async move {
            if let Err(e) = app.wake_key(&key).await {
                tracing::error!(session_key = %key, error = %e, "wake failed");
            }
        });
    }

    /// Runs stored work of a key that has no running turn: a due resume turn, pending slot
    /// messages, queued items. No-op when a live turn holds the lease.
    pub(in crate::app) async fn wake_key(&self, key: &SessionKey) -> Result<(), AppError> {
        if !self.inner.live.accepting() {
            return Ok(());
        }
        retry_cas(|| async move {
            let Some(cur) = self.inner.store.get_entry(key).await? else { return Ok(()) };
            let now = self.inner.clock.now();
            if let Some(l) = &cur.lease {
                if self.lease_abandoned(l, false) {
                    self.mark_interrupted(key, l).await?;
                    return again();
                }
                return Ok(());
            }
            let mut next = cur.clone();
            if recovery::resume_expired(&cur, now) {
                tracing::warn!(session_key = %key, "resume mark is older than an hour; not resuming");
                next.resume_pending = false;
                next.resume_reason = None;
                self.inner.store.put_entry(&next, &[]).await?;
                return again();
            }
            let resume = recovery::resume_due(&cur, now);
            let queued = !self.inner.store.queue_list(key).await?.is_empty();
            if !resume && cur.pending.is_empty() && !queued {
                return Ok(());
            }
            let lease = self.new_lease();
            let token = lease.token.clone();
            next.grant(lease);
            let msgs = pending_messages(&mut next);
            let first_turn = resume || !msgs.is_empty();
            let changes =
                if msgs.is_empty() { vec![] } else { vec![SessionChange::Append { session_id: cur.session_id.clone(), messages: msgs }] };
            let entry = self.inner.store.put_entry(&next, &changes).await?;
            crate::app::crash::crash_point("wake:leased");
            self.inner.live.register(key, &token, &entry.origin);
            if first_turn && self.one_turn(&entry).await.is_err() {
                let _ = self.update_leased(key, &token, &[], |e| e.lease = None).await;
                self.inner.live.unregister(key, &token);
                return Ok(());
            }
            self.drain(key.clone(), token).await;
            Ok(())
        })
        .await
    }
}

/// Moves the pending slot into user messages (oldest first) and empties it.
pub(crate) fn pending_messages(e: &mut SessionEntry) -> Vec<Message> {
    e.pending
        .drain(..)
        .map(|p| {
            let mut m = Message::text(Role::User, p.text, p.at);
            m.platform_message_id = p.message_id;
            m.attachments = p.attachments;
            m
        })
        .collect()
}
