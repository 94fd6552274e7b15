//! Rules of the two-level queue (docs/design.md#queue): where a message goes while a turn runs, the cap,
//! acknowledgement rate, and the user-facing wording. Storage is the store's job.

use crate::core::session::PendingMessage;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// Minimum gap between two busy acknowledgements of one session.
pub const ACK_INTERVAL_SECS: i64 = 30;
/// Ack in interrupt mode.
pub const ACK_INTERRUPT: &str = "⚡ Interrupting current task…";
/// Ack in queue mode.
pub const ACK_QUEUE: &str = "⏳ Queued for the next turn…";
/// Reply to `/queue` without a prompt.
pub const QUEUE_USAGE: &str = "Usage: /queue <prompt>";

/// Busy input modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BusyInputMode {
    /// Replace the pending slot and interrupt the running turn (Hermes' `steer` means this).
    #[serde(alias = "steer")]
    Interrupt,
    /// Append every message to the FIFO.
    Queue,
}

/// Where a message that arrives during a running turn is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The pending slot (interrupt mode, plain messages): the running turn is interrupted.
    Slot,
    /// The persisted FIFO: its own full turn later, in order.
    Fifo,
}

/// Routes a busy-time message: `/queue` items always go to the FIFO; plain messages follow
/// `busy_input_mode`.
pub fn route(mode: BusyInputMode, explicit_queue: bool) -> Route {
    if explicit_queue || mode == BusyInputMode::Queue { Route::Fifo } else { Route::Slot }
}

/// Whether an acknowledgement may be sent now (at most one per 30 s per session).
pub fn ack_due(last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    last.is_none_or(|l| now - l >= Duration::seconds(ACK_INTERVAL_SECS))
}

/// Whether one more item fits under `cap`, counting both levels.
pub fn has_room(cap: usize, slot_len: usize, fifo_len: usize) -> bool {
    slot_len + fifo_len < cap
}

/// Quiet time a burst of interrupt-mode messages leaves before the next turn starts, so a
/// superseded message never costs a model call: Hermes 0.19.0's busy-text debounce window
/// (`HERMES_GATEWAY_BUSY_TEXT_DEBOUNCE_SECONDS`, 0.35 s, `gateway/platforms/base.py`).
pub const BURST_QUIET_MS: i64 = 350;
/// The longest a burst holds that turn back, from its first message (Hermes' hard cap,
/// `HERMES_GATEWAY_BUSY_TEXT_HARD_CAP_SECONDS`, 1.0 s).
pub const BURST_CAP_MS: i64 = 1000;

/// When the pending slot's burst has settled: [`BURST_QUIET_MS`] after its newest message,
/// at most [`BURST_CAP_MS`] after its oldest. `None` for an empty slot.
pub fn burst_settles_at(slot: &[PendingMessage]) -> Option<DateTime<Utc>> {
    let first = slot.iter().map(|p| p.at).min()?;
    let last = slot.iter().map(|p| p.at).max()?;
    Some((last + Duration::milliseconds(BURST_QUIET_MS)).min(first + Duration::milliseconds(BURST_CAP_MS)))
}

/// Puts a message in the pending slot; earlier ones stay (superseded, still transcribed).
pub fn push_slot(slot: &mut Vec<PendingMessage>, msg: PendingMessage) {
    slot.push(msg);
}

/// `/queue` confirmation.
pub fn queued_reply(n: usize) -> String {
    format!("Queued for the next turn. ({n} queued)")
}

/// Refusal past the cap.
pub fn full_reply(cap: usize) -> String {
    format!("⛔ Queue full ({cap} items waiting). This message was not stored; please wait for the current work to finish.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_burst_settles_after_its_quiet_time_within_the_cap() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let at = |ms: i64| PendingMessage {
            text: String::new(),
            message_id: None,
            at: t0 + Duration::milliseconds(ms),
            attachments: Vec::new(),
        };
        assert_eq!(burst_settles_at(&[]), None);
        assert_eq!(burst_settles_at(&[at(0)]), Some(t0 + Duration::milliseconds(350)));
        assert_eq!(burst_settles_at(&[at(0), at(5)]), Some(t0 + Duration::milliseconds(355)));
        assert_eq!(burst_settles_at(&[at(0), at(300), at(900)]), Some(t0 + Duration::milliseconds(1000)), "capped");
    }

    #[test]
    fn routing() {
        assert_eq!(route(BusyInputMode::Interrupt, false), Route::Slot);
        assert_eq!(route(BusyInputMode::Interrupt, true), Route::Fifo);
        assert_eq!(route(BusyInputMode::Queue, false), Route::Fifo);
        assert_eq!(queued_reply(2), "Queued for the next turn. (2 queued)");
    }

    proptest! {
        /// Whatever the arrival times, acks are at least 30 s apart and the first one is sent.
        #[test]
        fn acks_are_rate_limited(mut gaps in proptest::collection::vec(0i64..90, 1..60)) {
            gaps[0] = 0;
            let mut now = DateTime::<Utc>::UNIX_EPOCH;
            let mut last = None;
            let mut sent = Vec::new();
            for g in gaps {
                now += Duration::seconds(g);
                if ack_due(last, now) { last = Some(now); sent.push(now); }
            }
            prop_assert!(!sent.is_empty());
            for w in sent.windows(2) { prop_assert!(w[1] - w[0] >= Duration::seconds(ACK_INTERVAL_SECS)); }
        }

        /// A model of the two levels: every accepted text is turned exactly once, FIFO items
        /// in order, slot texts in order before the slot's turn, and the cap is never passed.
        #[test]
        fn two_levels_lose_nothing(ops in proptest::collection::vec((0u8..3, any::<bool>()), 1..120), cap in 1usize..40) {
            let mut slot: Vec<PendingMessage> = Vec::new();
            let mut fifo: std::collections::VecDeque<String> = Default::default();
            let (mut accepted, mut transcript, mut refused) = (Vec::new(), Vec::new(), 0);
            for (i, (op, explicit)) in ops.into_iter().enumerate() {
                let text = format!("m{i}");
                if op < 2 {
                    if !has_room(cap, slot.len(), fifo.len()) { refused += 1; continue; }
                    accepted.push(text.clone());
                    match route(if op == 0 { BusyInputMode::Interrupt } else { BusyInputMode::Queue }, explicit) {
                        Route::Slot => push_slot(&mut slot, PendingMessage { text, message_id: None, at: DateTime::<Utc>::UNIX_EPOCH, attachments: Vec::new() }),
                        Route::Fifo => fifo.push_back(text),
                    }
                } else if !slot.is_empty() {
                    transcript.extend(slot.drain(..).map(|p| p.text));
                } else if let Some(t) = fifo.pop_front() {
                    transcript.push(t);
                }
                prop_assert!(slot.len() + fifo.len() <= cap);
            }
            transcript.extend(slot.drain(..).map(|p| p.text));
            transcript.extend(fifo.drain(..));
            let mut a = accepted.clone(); a.sort();
            let mut t = transcript.clone(); t.sort();
            prop_assert_eq!(a, t, "refused {}", refused);
        }
    }
}
