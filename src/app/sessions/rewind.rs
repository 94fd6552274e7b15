//! The commands that rewrite the conversation, each under the key's turn lease so no turn
//! runs meanwhile (docs/sessions.md#commands): `/undo [N]` (the last N exchanges leave the
//! transcript), `/retry` (the last exchange's answer leaves it and the turn runs again on
//! the same message, as Hermes re-sends it) and `/compress` (the middle of the context is
//! summarized now). A running turn refuses them before they get here, in Hermes' words; one
//! that starts in between gets the same answer.

use crate::app::cas::{again, retry_cas};
use crate::app::sessions::inbound::{Inbound, Outcome};
use crate::app::turn::types::TurnSpec;
use crate::app::{App, AppError, TurnKind};
use crate::core::commands::{Cmd, busy_refusal};
use crate::core::compress::{CHARS_PER_TOKEN, SummaryIndex};
use crate::core::ids::SessionKey;
use crate::core::session::{Message, Role, SessionEntry};

/// Most transcript messages read to find the exchanges to remove.
const MAX_SCAN: usize = 2000;

/// What taking the lease for a command found.
enum Held {
    /// Taken: the entry as written, and the token.
    Leased(Box<SessionEntry>, String),
    /// A turn holds it.
    Busy,
}

impl App {
    /// Takes the key's turn lease for a command (its entry created if new).
    async fn command_lease(&self, msg: &Inbound, key: &SessionKey) -> Result<Held, AppError> {
        retry_cas(|| async move {
            let mut e = self.load_or_create(&msg.origin, key).await?;
            if let Some(l) = &e.lease {
                if self.lease_abandoned(l, false) {
                    self.mark_interrupted(key, l).await?;
                    return again();
                }
                return Ok(Held::Busy);
            }
            let lease = self.new_lease();
            let token = lease.token.clone();
            e.grant(lease);
            let e = self.inner.store.put_entry(&e, &[]).await?;
            Ok(Held::Leased(Box::new(e), token))
        })
        .await
    }

    /// `/undo`, `/retry` and `/compress`: the lease, the command, then the release (which runs
    /// anything that arrived meanwhile). `/retry` answers through its turn.
    pub(in crate::app) async fn rewrite_command(
        &self,
        cmd: &Cmd,
        msg: &Inbound,
        key: &SessionKey,
        mut out: Outcome,
    ) -> Result<Outcome, AppError> {
        let (entry, token) = match self.command_lease(msg, key).await? {
            Held::Leased(e, t) => (*e, t),
            Held::Busy => return Ok(self.command_reply(msg, out, busy_refusal(cmd)).await),
        };
        self.inner.live.register(key, &token, &entry.origin);
        let done = match cmd {
            Cmd::Retry => self.retry_last(&entry, msg, &token, &mut out).await,
            Cmd::Undo(n) => self.undo(&entry, n).await.map(Some),
            _ => self.compress(&entry).await.map(Some),
        };
        let text = match done {
            Ok(t) => t,
            Err(e) => {
                let _ = self.update_leased(key, &token, &[], |e| e.lease = None).await;
                self.inner.live.unregister(key, &token);
                return Err(e);
            }
        };
        let Some(text) = text else { return Ok(out) };
        self.continue_or_release(key.clone(), token, None).await?;
        Ok(self.command_reply(msg, out, text).await)
    }

    /// The transcript's newest messages with their positions, newest last.
    async fn positioned(&self, entry: &SessionEntry) -> Result<Vec<(u64, Message)>, AppError> {
        let window = self.inner.store.recent_messages(&entry.session_id, MAX_SCAN).await?;
        let count = self.inner.store.count_messages(&entry.session_id).await?.max(window.len() as u64);
        let first = count - window.len() as u64;
        Ok(window.into_iter().enumerate().map(|(i, m)| (first + i as u64, m)).collect())
    }

    /// Removes the transcript after `keep`, and a summary that covered any of it.
    async fn truncate(&self, entry: &SessionEntry, keep: u64) -> Result<u64, AppError> {
        let Some(fence) = entry.fence() else { return Err(crate::app::turn::lease::lost(&entry.session_key)) };
        let removed = self.inner.store.truncate_messages(&entry.session_id, keep, &fence).await?;
        let note = crate::app::turn::context::SUMMARY_NOTE;
        let read = self.inner.store.turn_read(&entry.session_id, 0, &[note]).await?;
        let stale = read.notes.get(note).and_then(|raw| serde_json::from_str::<SummaryIndex>(raw).ok()).is_some_and(|i| i.through > keep);
        if stale {
            self.inner.store.turn_put_note(&entry.session_id, note, None).await?;
        }
        Ok(removed)
    }

    /// `/undo [N]`, in Hermes' words (`gateway.undo.*`).
    async fn undo(&self, entry: &SessionEntry, raw: &str) -> Result<String, AppError> {
        let n = match crate::core::commands::undo_count(raw) {
            Ok(n) => n,
            Err(e) => return Ok(e),
        };
        let msgs = self.positioned(entry).await?;
        let users: Vec<&(u64, Message)> = msgs.iter().filter(|(_, m)| m.role == Role::User).collect();
        let Some((at, target)) = users.len().checked_sub(n.min(users.len())).and_then(|i| users.get(i)).copied() else {
            return Ok("Nothing to undo.".into());
        };
        let turns = n.min(users.len());
        let removed = self.truncate(entry, *at).await?;
        let preview: String = target.content.chars().take(200).collect();
        let preview = if target.content.chars().count() > 200 { format!("{preview}...") } else { preview };
        Ok(format!(
            "↩️ Undid {turns} turn(s) ({removed} message(s)).\nBacked up to: \"{preview}\"\nCopy/edit the text above and send it to re-prompt from here."
        ))
    }

    /// `/retry`: the last user message stays, what followed it goes, and a turn answers it
    /// again (its reply is the command's answer). `None` when the turn ran (it released or
    /// handed on the lease itself).
    async fn retry_last(&self, entry: &SessionEntry, msg: &Inbound, token: &str, out: &mut Outcome) -> Result<Option<String>, AppError> {
        let msgs = self.positioned(entry).await?;
        let Some((at, _)) = msgs.iter().rev().find(|(_, m)| m.role == Role::User) else {
            return Ok(Some("No previous message to retry.".into()));
        };
        self.truncate(entry, at + 1).await?;
        // A transport that must not wait for a whole turn may answer now (as for a message).
        crate::app::sessions::accept::accepted();
        let report = self.one_turn_replying(entry, msg.reply, None, None).await?;
        self.continue_or_release(entry.session_key.clone(), token.to_string(), report.held).await?;
        out.reply = Some(report.reply);
        out.notices.extend(report.notices);
        out.streamed = report.streamed;
        Ok(None)
    }

    /// `/compress`, in Hermes' words (`gateway.compress.*`).
    async fn compress(&self, entry: &SessionEntry) -> Result<String, AppError> {
        if self.inner.store.count_messages(&entry.session_id).await? < 4 {
            return Ok("Not enough conversation to compress (need at least 4 messages).".into());
        }
        let choice = self.turn_model(entry).await;
        let spec = TurnSpec {
            session_id: &entry.session_id,
            notes: Vec::new(),
            kind: TurnKind::Chat,
            deadline: None,
            model: choice.as_ref().map(|c| c.model.clone()),
            route: crate::app::model_choice::route_of(choice),
            toolsets: Vec::new(),
            system: String::new(),
            origin: Some(entry.origin.clone()),
            fence: entry.fence(),
            stream: None,
            transcript: None,
            prompt_unstored: false,
        };
        let ctx = crate::app::turn::context::compress_now(self, &spec).await?;
        let Some((before, before_tokens)) = ctx.summarized else {
            return Ok(if ctx.summary_failed {
                "⚠️ Compression aborted (the summary could not be made). No messages were dropped — conversation is unchanged. Run /compress to retry, /reset for a clean session, or check your model configuration.".into()
            } else {
                "Nothing to compress yet (the transcript is still all protected context).".into()
            });
        };
        let after_tokens: usize = ctx.messages.iter().map(|m| m.content.len() / CHARS_PER_TOKEN).sum();
        Ok(format!(
            "🗜️ Compressed: {before} → {} messages\nApprox request size: ~{before_tokens} → ~{after_tokens} tokens",
            ctx.messages.len()
        ))
    }
}
