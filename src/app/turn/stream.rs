//! Streaming replies (docs/design.md#streaming): while the model answers, its text deltas
//! are edited into one platform message — sent once `buffer_threshold` characters arrived
//! (with the `cursor` while it grows), edited at most every `edit_interval` (decided by the
//! Clock port), paused while the platform says it is rate-limited — and finalized with the
//! whole text. Text that outgrows the platform's limit is finalized at a split point and
//! continues in a new message. Every new message takes its reply-ledger record first and
//! only while the turn holds its lease; a failed edit stops editing and the remaining
//! answer goes out as one final message. Each model call of a turn is one segment (Hermes:
//! text before a tool call stays as its own message, the next text starts a new one).

use crate::app::App;
use crate::app::turn::lease::AbortOnDrop;
use crate::app::turn::stream_out::StreamOut;
use crate::app::turn::types::StreamPlan;
use crate::config::StreamTransport;
use crate::core::inbound::ReplyPath;
use crate::core::session::{Fence, SessionEntry};
use crate::ports::{DeliveryError, StreamTarget, Target};
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use std::time::Duration as StdDuration;
use tokio::sync::{mpsc, oneshot};

/// Tries of a final edit that is rate-limited or failed temporarily.
const FINAL_EDIT_ATTEMPTS: u32 = 3;
/// Longest platform wait honoured before a final edit is tried again.
const MAX_WAIT_SECS: u64 = 30;

impl App {
    /// The streaming plan of a turn whose replies go along `path`: only when `streaming` is
    /// enabled (transport not `off`) and either the caller that answers the message itself
    /// handed a `sink` for it (a Discord interaction), or the replies go to the origin's chat
    /// and its platform edits messages. Otherwise the reply is sent whole when the turn ends.
    pub(in crate::app) fn stream_plan(
        &self,
        entry: &SessionEntry,
        fence: &Fence,
        path: ReplyPath,
        sink: Option<Arc<dyn StreamTarget>>,
    ) -> Option<StreamPlan> {
        let s = &self.inner.cfg.settings.streaming;
        let o = &entry.origin;
        if let Some(sink) = sink.as_ref().filter(|k| k.live()) {
            let out = StreamOut::Caller(sink.clone());
            return Some(StreamPlan { out, fence: fence.clone(), interval: Duration::zero(), threshold: 1, cursor: String::new() });
        }
        if !s.enabled || s.transport == StreamTransport::Off {
            return None;
        }
        let out = match sink {
            Some(sink) => StreamOut::Caller(sink),
            None if path == ReplyPath::Origin && self.inner.delivery.edits(&o.platform) => {
                StreamOut::Origin(Target { platform: o.platform.clone(), chat_id: o.chat_id.clone(), thread_id: o.thread_id.clone() })
            }
            None => return None,
        };
        // The platform's rate limit is a floor under the configured interval.
        let floor = i64::try_from(out.min_edit_gap(self).as_millis()).unwrap_or(i64::MAX);
        Some(StreamPlan {
            out,
            fence: fence.clone(),
            interval: Duration::milliseconds(((s.edit_interval.max(0.0) * 1000.0) as i64).max(floor)),
            threshold: s.buffer_threshold,
            cursor: s.cursor.clone(),
        })
    }

    /// Sends a notice of the turn of `plan` to the caller's own target, ahead of its
    /// streamed reply (the caller then must not show it again): only while the turn holds its
    /// lease, once per `slot`.
    pub(in crate::app) async fn notice_to_caller(&self, plan: &StreamPlan, slot: &str, text: &str) {
        let fence = &plan.fence;
        let held = self.inner.store.get_entry(&fence.key).await.ok().flatten().is_some_and(|e| e.holds(fence));
        if held
            && matches!(self.take_reply_once(fence, slot).await, Ok(true))
            && let Err(e) = plan.out.send(self, text).await
        {
            tracing::warn!(error = %e, "notice to the caller failed");
        }
    }
}

impl StreamPlan {
    /// Whether the reply streams to the caller's own target rather than the origin's chat.
    pub(in crate::app) fn to_caller(&self) -> bool {
        matches!(self.out, StreamOut::Caller(_))
    }
}

enum Event {
    Text(String),
    /// The call ended: finalize with this whole text (`None`: the call failed; only tidy a
    /// message already shown, send nothing new).
    Finish(Option<String>, oneshot::Sender<()>),
}

/// One model call's text on the platform, edited by a background task. Dropping it stops
/// all editing at once (an interrupted or fenced turn).
pub(in crate::app) struct Segment {
    tx: mpsc::UnboundedSender<Event>,
    _task: AbortOnDrop,
}

impl Segment {
    /// Starts the editor of segment `n` (the model call's number within the turn).
    pub(in crate::app) fn start(app: &App, plan: &StreamPlan, n: u32) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let run = Run {
            app: app.clone(),
            plan: plan.clone(),
            seg: n,
            text: String::new(),
            base: 0,
            part: 0,
            msg: None,
            shown: String::new(),
            last_edit: None,
            blocked_until: None,
            failed: false,
            lost: false,
        };
        Self { tx, _task: AbortOnDrop(tokio::spawn(run.run(rx))) }
    }

    /// The sink the model call hands its deltas to.
    pub(in crate::app) fn sink(&self) -> impl FnMut(&str) + Send + use<> {
        let tx = self.tx.clone();
        move |t: &str| {
            let _ = tx.send(Event::Text(t.to_string()));
        }
    }

    /// Finalizes the segment with the call's whole text (`None` after a failed call) and
    /// waits until the platform has it.
    pub(in crate::app) async fn finish(self, text: Option<&str>) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Event::Finish(text.map(str::to_string), done)).is_ok() {
            let _ = wait.await;
        }
    }
}

/// The editor's state: `text[..base]` is in finalized messages, `msg` shows `shown`.
struct Run {
    app: App,
    plan: StreamPlan,
    seg: u32,
    text: String,
    base: usize,
    part: usize,
    msg: Option<String>,
    shown: String,
    last_edit: Option<DateTime<Utc>>,
    blocked_until: Option<DateTime<Utc>>,
    /// An edit failed for good: no more edits; the rest goes out as one final message.
    failed: bool,
    /// The lease is gone: nothing more is sent or edited.
    lost: bool,
}

impl Run {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Event>) {
        loop {
            let ev = match self.next_edit_in() {
                Some(d) => match tokio::time::timeout(d, rx.recv()).await {
                    Ok(ev) => ev,
                    Err(_) => {
                        self.tick().await;
                        continue;
                    }
                },
                None => rx.recv().await,
            };
            match ev {
                Some(Event::Text(t)) => {
                    self.text.push_str(&t);
                    self.tick().await;
                }
                Some(Event::Finish(text, done)) => {
                    self.finish(text).await;
                    let _ = done.send(());
                    return;
                }
                None => return,
            }
        }
    }

    fn now(&self) -> DateTime<Utc> {
        self.app.inner.clock.now()
    }

    /// When the next progress edit may go out, if one is waiting (text not yet shown).
    fn next_edit_in(&self) -> Option<StdDuration> {
        let id_and_pending = self.msg.is_some() && !self.failed && !self.lost && self.display() != self.shown;
        if !id_and_pending {
            return None;
        }
        let due = self.last_edit.map_or(self.now(), |t| t + self.plan.interval).max(self.blocked_until.unwrap_or(self.now()));
        Some((due - self.now()).to_std().unwrap_or(StdDuration::ZERO).max(StdDuration::from_millis(10)))
    }

    /// The current message's text with the cursor, unless the cursor would push it over the
    /// platform's limit.
    fn display(&self) -> String {
        let cur = &self.text[self.base..];
        let with = format!("{cur}{}", self.plan.cursor);
        match self.plan.out.parts(&self.app, &with) {
            Ok(p) if p.len() <= 1 => with,
            _ => cur.to_string(),
        }
    }

    /// A progress step: split off full messages, send the first message once the threshold
    /// is reached, else edit when the interval has passed and no rate limit holds.
    async fn tick(&mut self) {
        if self.lost || self.failed {
            return;
        }
        self.split_overflow().await;
        if self.lost || self.failed {
            return;
        }
        let display = self.display();
        let Some(id) = self.msg.clone() else {
            if self.text[self.base..].chars().count() >= self.plan.threshold.max(1) {
                self.first_send(&display).await;
            }
            return;
        };
        let now = self.now();
        if display == self.shown
            || self.last_edit.is_some_and(|t| now < t + self.plan.interval)
            || self.blocked_until.is_some_and(|b| now < b)
        {
            return;
        }
        match self.plan.out.edit(&self.app, &id, &display).await {
            Ok(()) => self.shown = display,
            Err(DeliveryError::RateLimited(s)) => self.blocked_until = Some(now + Duration::seconds(s.min(MAX_WAIT_SECS) as i64)),
            // A lost or failed progress edit is harmless: the next one replaces it.
            Err(DeliveryError::Retryable(_) | DeliveryError::Unknown(_)) => {}
            Err(e) => {
                tracing::warn!(error = %e, "streaming edit failed; the answer will follow in one message");
                self.failed = true;
            }
        }
        self.last_edit = Some(self.now());
    }

    /// Finalizes full messages while the current text is over the platform's limit.
    async fn split_overflow(&mut self) {
        loop {
            let Ok(parts) = self.plan.out.parts(&self.app, &self.text[self.base..]) else { return };
            if parts.len() <= 1 || self.failed || self.lost {
                return;
            }
            let head = parts[0].clone();
            self.finalize(&head, false).await;
            if self.failed {
                return;
            }
            self.base += head.len();
            self.part += 1;
            self.msg = None;
            self.shown.clear();
            self.last_edit = None;
        }
    }

    /// Whether a new message of this turn may be sent now: the turn still holds its lease
    /// and the slot's reply-ledger record was free (taken here).
    async fn claim(&mut self, slot: &str) -> bool {
        let fence = &self.plan.fence;
        let held = self.app.inner.store.get_entry(&fence.key).await.ok().flatten().is_some_and(|e| e.holds(fence));
        let fresh = held && matches!(self.app.take_reply_once(fence, slot).await, Ok(true));
        if !fresh {
            tracing::warn!(session_key = %fence.key, epoch = fence.epoch, slot, "streamed reply stops: lease lost or message already sent");
            self.lost = true;
        }
        fresh
    }

    async fn first_send(&mut self, display: &str) {
        if !self.claim(&format!("stream{}.{}", self.seg, self.part)).await {
            return;
        }
        match self.plan.out.send_one(&self.app, display).await {
            Ok(Some(id)) => {
                self.msg = Some(id);
                self.shown = display.to_string();
                self.last_edit = Some(self.now());
            }
            // Sent but not editable, or maybe sent: never edited nor sent again as progress.
            Ok(None) | Err(DeliveryError::Unknown(_)) => self.failed = true,
            Err(e) => {
                tracing::warn!(error = %e, "streaming send failed; the answer will follow in one message");
                self.failed = true;
            }
        }
    }

    /// Puts `text` in the current message for good: a final edit (retried while rate-limited
    /// or temporarily failing), else — no message yet, or editing failed — one new message.
    /// A failed edit before the end (`at_end` false) only stops editing: the end sends the
    /// whole remaining answer once.
    async fn finalize(&mut self, text: &str, at_end: bool) {
        if self.lost || text.is_empty() {
            return;
        }
        if let (Some(id), false) = (self.msg.clone(), self.failed) {
            if self.shown == text || self.final_edit(&id, text).await {
                self.shown = text.to_string();
                return;
            }
            self.failed = true;
        }
        if self.failed && !at_end {
            return;
        }
        let slot = if self.failed { "f" } else { "" };
        if !self.claim(&format!("stream{}.{}{slot}", self.seg, self.part)).await {
            return;
        }
        // A fallback is the whole remaining answer, split by the port when it is long.
        let whole = if self.failed { self.text[self.base..].to_string() } else { text.to_string() };
        if let Err(e) = self.plan.out.send(&self.app, &whole).await {
            tracing::error!(platform = %self.plan.out.platform(), error = %e, "streamed reply: final message failed");
        }
    }

    /// The final edit of message `id`; true when it landed or its outcome is unknown (it may
    /// have: sending the text again could show it twice).
    async fn final_edit(&mut self, id: &str, text: &str) -> bool {
        for attempt in 1..=FINAL_EDIT_ATTEMPTS {
            if let Some(b) = self.blocked_until.take() {
                let wait = (b - self.now()).to_std().unwrap_or(StdDuration::ZERO);
                tokio::time::sleep(wait.min(StdDuration::from_secs(MAX_WAIT_SECS))).await;
            }
            match self.plan.out.edit(&self.app, id, text).await {
                Ok(()) | Err(DeliveryError::Unknown(_)) => return true,
                Err(DeliveryError::RateLimited(s)) if attempt < FINAL_EDIT_ATTEMPTS => {
                    self.blocked_until = Some(self.now() + Duration::seconds(s.min(MAX_WAIT_SECS) as i64));
                }
                Err(DeliveryError::Retryable(_)) if attempt < FINAL_EDIT_ATTEMPTS => {
                    tokio::time::sleep(StdDuration::from_millis(500 * u64::from(attempt))).await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "final streaming edit failed; the answer follows in one message");
                    return false;
                }
            }
        }
        false
    }

    /// The call ended: the whole text replaces what the deltas built (they should agree),
    /// full messages are split off and the rest finalized. After a failed call only a
    /// message already shown is tidied (its cursor removed).
    async fn finish(&mut self, text: Option<String>) {
        match text {
            Some(t) => {
                if t.len() >= self.base && t.is_char_boundary(self.base) && t.starts_with(&self.text[..self.base]) {
                    self.text = t;
                }
                if !self.failed {
                    self.split_overflow().await;
                }
                let rest = self.text[self.base..].to_string();
                self.finalize(&rest, true).await;
            }
            None if self.msg.is_some() && !self.failed => {
                let rest = self.text[self.base..].to_string();
                self.finalize(&rest, false).await;
            }
            None => {}
        }
    }
}
