//! The turn lease as a fence (docs/design.md#lease): granting leases, writes under the lease
//! (compare-and-set guarded by its token), renewal while a turn runs, and replies sent only
//! while the lease is held and at most once per turn (a reply ledger keyed by the epoch).

use crate::app::cas::retry_cas;
use crate::app::turn::types::{Leased, Settled, TurnSpec};
use crate::app::types::{LEASE_MARGIN_SECS, TURN_BUDGET_SECS};
use crate::app::{App, AppError};
use crate::core::ids::SessionKey;
use crate::core::inbound::ReplyPath;
use crate::core::session::{Fence, Lease, Message, SessionEntry};
use crate::ports::{SessionChange, StoreError};
use chrono::Duration;
use std::time::Duration as StdDuration;

/// How often a running turn looks at the clock to see whether its lease is due for renewal.
const RENEW_POLL: StdDuration = StdDuration::from_millis(200);
/// How long a reply-ledger record is kept (a retried turn cannot be older).
const REPLY_LEDGER_DAYS: i64 = 7;

/// The error of a holder that lost its lease: nothing more may be written or sent.
pub(in crate::app) fn lost(key: &SessionKey) -> AppError {
    AppError::Store(StoreError::Fenced(key.as_str().to_string()))
}

/// Whether `e` means the lease was lost.
pub(in crate::app) fn is_lost(e: &AppError) -> bool {
    matches!(e, AppError::Store(StoreError::Fenced(_)))
}

/// A background task that is cancelled when this guard is dropped.
pub(in crate::app) struct AbortOnDrop(pub(in crate::app) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The reply-ledger record of message `slot` of the turn of `fence`.
fn reply_ledger_key(fence: &Fence, slot: &str) -> String {
    format!("reply:{}:{}:{slot}", fence.key, fence.epoch)
}

/// A successful turn's entry update: its tokens added, its reset / resume / interrupt marks
/// cleared.
pub(in crate::app) fn settle(e: &mut SessionEntry, (input, output): (u64, u64), now: chrono::DateTime<chrono::Utc>) {
    e.input_tokens += input;
    e.output_tokens += output;
    e.updated_at = now;
    e.was_auto_reset = false;
    e.resume_pending = false;
    e.resume_reason = None;
    e.interruptions = 0;
    e.interrupt_requested = false;
}

impl App {
    /// How long a lease lasts from its grant or last renewal: the turn budget plus a margin.
    pub(in crate::app) fn lease_len(&self) -> Duration {
        Duration::from_std(crate::app::budget::turn_budget(StdDuration::from_secs(TURN_BUDGET_SECS as u64)))
            .unwrap_or(Duration::seconds(TURN_BUDGET_SECS))
            + Duration::seconds(LEASE_MARGIN_SECS)
    }

    /// A fresh lease owned by this process (its epoch is set by [`SessionEntry::grant`]).
    pub(in crate::app) fn new_lease(&self) -> Lease {
        let now = self.inner.clock.now();
        Lease {
            token: format!("{:016x}", rand::random::<u64>()),
            epoch: 0,
            owner: self.inner.live.owner.clone(),
            started_at: now,
            expires_at: now + self.lease_len(),
        }
    }

    /// Applies `f` to the entry if `token` still holds its lease (compare-and-set, retried).
    /// Returns None when the lease was lost.
    pub(in crate::app) async fn update_leased<F>(
        &self,
        key: &SessionKey,
        token: &str,
        changes: &[SessionChange],
        f: F,
    ) -> Result<Option<SessionEntry>, AppError>
    where
        F: Fn(&mut SessionEntry),
    {
        let f = &f;
        retry_cas(|| async move {
            let Some(mut e) = self.inner.store.get_entry(key).await? else { return Ok(None) };
            if e.lease.as_ref().is_none_or(|l| l.token != token) {
                tracing::warn!(session_key = %key, "lease lost (taken over or cleared)");
                return Ok(None);
            }
            f(&mut e);
            Ok(Some(self.inner.store.put_entry(&e, changes).await?))
        })
        .await
    }

    /// [`App::update_leased`] starting from `entry` as the caller last wrote it: one write
    /// when nobody wrote the entry since, else the re-reading retry loop.
    pub(in crate::app) async fn update_leased_from<F>(
        &self,
        entry: &SessionEntry,
        token: &str,
        f: F,
    ) -> Result<Option<SessionEntry>, AppError>
    where
        F: Fn(&mut SessionEntry),
    {
        if entry.lease.as_ref().is_some_and(|l| l.token == token) {
            let mut e = entry.clone();
            f(&mut e);
            match self.inner.store.put_entry(&e, &[]).await {
                Ok(written) => return Ok(Some(written)),
                Err(StoreError::Conflict(_)) => {}
                Err(err) => return Err(err.into()),
            }
        }
        self.update_leased(&entry.session_key, token, &[], f).await
    }

    /// Extends the lease of `fence` by a full lease time from now, if the entry still holds
    /// it and it has not expired (an expired lease may already be judged abandoned, so it is
    /// never revived). Returns whether it was renewed.
    pub(in crate::app) async fn renew_lease(&self, fence: &Fence) -> Result<bool, AppError> {
        retry_cas(|| async move {
            let now = self.inner.clock.now();
            let Some(mut e) = self.inner.store.get_entry(&fence.key).await? else { return Ok(false) };
            let Some(l) = e.lease.as_mut().filter(|l| l.epoch == fence.epoch && l.expires_at > now) else { return Ok(false) };
            l.expires_at = now + self.lease_len();
            self.inner.store.put_entry(&e, &[]).await?;
            Ok(true)
        })
        .await
    }

    /// Renews the lease of `fence` every third of the lease time (by the clock port) until
    /// the guard is dropped or the lease is lost, so a long model call keeps its lease.
    pub(in crate::app) fn renew_in_background(&self, fence: &Fence) -> AbortOnDrop {
        let app = self.clone();
        let fence = fence.clone();
        AbortOnDrop(tokio::spawn(async move {
            let third = app.lease_len() / 3;
            let mut due = app.inner.clock.now() + third;
            loop {
                tokio::time::sleep(RENEW_POLL).await;
                let now = app.inner.clock.now();
                if now < due {
                    continue;
                }
                match app.renew_lease(&fence).await {
                    Ok(true) => due = now + third,
                    Ok(false) => break,
                    Err(e) => tracing::warn!(session_key = %fence.key, error = %e, "lease renewal failed; retrying"),
                }
            }
        }))
    }

    /// Sends `text` along `path` for the turn of `fence`, only if the entry still holds the
    /// lease right now, and at most once per `(key, epoch, slot)`: a reply-ledger record is
    /// written before a message that leaves the process. [`lost`] when the lease is gone.
    pub(in crate::app) async fn send_fenced(
        &self,
        entry: &SessionEntry,
        fence: &Fence,
        path: ReplyPath,
        slot: &str,
        text: &str,
    ) -> Result<bool, AppError> {
        if !self.inner.store.get_entry(&fence.key).await?.is_some_and(|e| e.holds(fence)) {
            tracing::warn!(session_key = %fence.key, epoch = fence.epoch, "lease lost before sending; this turn sends nothing");
            return Err(lost(&fence.key));
        }
        self.send_held(entry, fence, path, slot, text).await
    }

    /// [`App::send_fenced`] for a caller whose own compare-and-set write just proved that the
    /// entry holds `fence` (a write under the lease is as strong a check as a read).
    pub(in crate::app) async fn send_held(
        &self,
        entry: &SessionEntry,
        fence: &Fence,
        path: ReplyPath,
        slot: &str,
        text: &str,
    ) -> Result<bool, AppError> {
        if path == ReplyPath::Origin && self.delivers_to(&entry.origin) && !text.is_empty() && !self.take_reply_once(fence, slot).await? {
            return Ok(false);
        }
        Ok(self.reply(&entry.origin, path, text).await)
    }

    /// The settling write of a leased chat turn (docs/design.md#store-cost): the final
    /// `answer`, the token update (`tokens`: input, output) and, when the reply will be sent
    /// to the origin (`whole`: not streamed), its reply-ledger record, in one write
    /// conditioned on the entry's version. A whole reply to the caller also releases the
    /// lease in it when nothing waits ([`Settled::released`]). Any write to the entry since (a stop request, a
    /// renewal, a stored message) fails it; the entry is then read again to find out why: a
    /// stop request drops the answer (`None`), a lost lease is [`lost`], anything else is
    /// written again on the new version.
    pub(in crate::app) async fn settle_turn(
        &self,
        turn: &Leased<'_>,
        answer: &Message,
        tokens: (u64, u64),
        whole: bool,
    ) -> Result<Option<Settled>, AppError> {
        let entry = turn.entry;
        let Some(fence) = entry.fence() else { return Err(lost(&entry.session_key)) };
        let now = self.inner.clock.now();
        let mut once = (whole && turn.path == ReplyPath::Origin && self.delivers_to(&entry.origin) && !answer.content.is_empty())
            .then(|| reply_ledger_key(&fence, "reply"));
        let mut send = true;
        // A whole reply that the caller's transport returns itself (`ReplyPath::Caller`: the
        // body of `/api/messages`, a Discord interaction's follow-up) leaves once `handle`
        // returns, after the release anyway, and nothing is sent after this write: when nothing
        // waits (empty pending slot and FIFO), the release rides on it (two commits a turn,
        // docs/design/scale.md#store-cost). A streamed reply still sends after it: not folded.
        let mut release = whole && turn.path == ReplyPath::Caller && self.inner.live.accepting();
        let mut cur = entry.clone();
        for _ in 0..crate::app::cas::CAS_RETRIES {
            if !cur.holds(&fence) {
                tracing::warn!(session_key = %fence.key, epoch = fence.epoch, "lease lost as the model answered; this turn sends nothing");
                return Err(lost(&fence.key));
            }
            if cur.interrupt_requested {
                return Ok(None);
            }
            let mut next = cur.clone();
            settle(&mut next, tokens, now);
            let mut changes = vec![SessionChange::Append { session_id: cur.session_id.clone(), messages: vec![answer.clone()] }];
            if let Some(key) = &once {
                changes.push(SessionChange::Once { key: key.clone(), expires_at: now + Duration::days(REPLY_LEDGER_DAYS), now });
            }
            let released = release && cur.pending.is_empty();
            if released {
                next.lease = None;
                changes.push(SessionChange::QueueEmpty(fence.key.clone()));
            }
            match self.inner.store.put_entry(&next, &changes).await {
                Ok(written) => return Ok(Some(Settled { entry: Box::new(written), send, released })),
                // Queued work waits: keep the lease for the drain (written again without it).
                Err(StoreError::QueueNotEmpty(_)) => release = false,
                Err(StoreError::Conflict(_)) => match self.inner.store.get_entry(&fence.key).await? {
                    Some(e) => cur = e,
                    None => return Err(lost(&fence.key)),
                },
                Err(StoreError::OnceUsed(_)) => {
                    tracing::warn!(session_key = %fence.key, epoch = fence.epoch, "reply of this turn was sent before; not sending again");
                    (once, send) = (None, false);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Contended)
    }

    /// Takes the reply-ledger record `reply:<key>:<epoch>:<slot>` before a message of the
    /// turn of `fence` leaves the process; false (logged) when it was taken before, i.e. that
    /// message may already have been sent.
    pub(in crate::app) async fn take_reply_once(&self, fence: &Fence, slot: &str) -> Result<bool, AppError> {
        let now = self.inner.clock.now();
        let ledger = reply_ledger_key(fence, slot);
        let fresh = self.inner.store.use_once(&ledger, now + Duration::days(REPLY_LEDGER_DAYS), now).await?;
        if !fresh {
            tracing::warn!(session_key = %fence.key, epoch = fence.epoch, slot, "reply of this turn was sent before; not sending again");
        }
        Ok(fresh)
    }
}

/// Appends `msgs` to the turn's transcript, fenced by its lease when it has one.
pub(in crate::app) async fn append(app: &App, spec: &TurnSpec<'_>, msgs: &[Message]) -> Result<(), AppError> {
    match &spec.fence {
        Some(f) => app.inner.store.append_fenced(spec.session_id, msgs, f).await.inspect_err(|e| {
            if matches!(e, crate::ports::StoreError::Fenced(_)) {
                tracing::warn!(session_key = %f.key, epoch = f.epoch, "lease lost; the turn stops without writing");
            }
        })?,
        None => {
            app.inner.store.append_messages(spec.session_id, msgs, None).await?;
        }
    }
    Ok(())
}
