//! The transcript part of one turn's prompt (docs/design.md#compression): the protected head,
//! the latest summary and the recent tail, summarizing the middle once by the model when the
//! prompt would pass the threshold; with compression off, the newest messages (the trim is
//! shown by `/status`). Reads stay flat: one summary index record plus the tail.

use crate::app::turn::lease::append;
use crate::app::turn::types::TurnSpec;
use crate::app::{App, AppError};
use crate::core::compress::{self, SummaryIndex};
use crate::core::ids::SessionId;
use crate::core::prompt::trim_context;
use crate::core::session::{Message, Role};
use crate::ports::{ChatRequest, TurnRead};

/// Most transcript messages read for one prompt (a session with more and no summary yet is
/// summarized from its newest ones).
const MAX_READ: usize = 2000;

/// Messages a chat turn's folded read takes beyond `max_context_messages` (compression on).
/// Compression keeps the messages after the summary under `max_context_messages`, plus what
/// the last turn added; this covers a turn of about 30 tool calls. A longer tail (a long
/// imported session, a summarizer that failed) is read again, up to [`MAX_READ`], by
/// [`load`]: one more store request on that turn only (docs/design.md#compression).
const READ_SLACK: usize = 64;

/// What [`load`] produced: the transcript messages to send and the summarizer's usage.
#[derive(Debug, Default)]
pub(in crate::app) struct Context {
    /// Head + summary + tail (or the trimmed newest messages).
    pub messages: Vec<Message>,
    /// Prompt tokens the summarizer used.
    pub input_tokens: u64,
    /// Completion tokens the summarizer used.
    pub output_tokens: u64,
    /// When this load summarized: the messages and rough tokens the prompt carried before.
    pub summarized: Option<(usize, usize)>,
    /// A summary was due but the model gave none (the transcript was trimmed instead).
    pub summary_failed: bool,
}

/// Name of a session's summary index note (`TurnStore`; read with its transcript).
pub(in crate::app) const SUMMARY_NOTE: &str = "summary";

/// A chat turn's one read before the model (docs/design.md#store-cost): the newest messages
/// a prompt normally uses, the message count, the memory snapshot and the summary index.
/// The read is bounded by the context, not by the transcript: decoding every stored message
/// up to [`MAX_READ`] made a turn's cost grow with its session's length.
pub(in crate::app) async fn read(app: &App, session: &SessionId) -> Result<TurnRead, AppError> {
    let s = &app.inner.cfg.settings;
    let max_ctx = s.model.max_context_messages;
    let limit = if s.compression.enabled { (max_ctx + READ_SLACK).min(MAX_READ) } else { max_ctx };
    Ok(app
        .inner
        .store
        .turn_read(session, limit, &[crate::app::memory::SNAPSHOT_NOTE, SUMMARY_NOTE, crate::app::skills::SKILLS_NOTE])
        .await?)
}

/// The transcript messages of `spec`'s turn, summarizing the middle first when due. `pre` is
/// the turn's folded [`read`], if it made one (then nothing is read here).
pub(in crate::app) async fn load(app: &App, spec: &TurnSpec<'_>, pre: Option<&TurnRead>) -> Result<Context, AppError> {
    load_with(app, spec, pre, false).await
}

/// `/compress` (docs/sessions.md#commands): summarizes the middle of `spec`'s transcript
/// now, whatever its size and whether or not compression is on; the protected head and tail
/// stay as configured. The result's `summarized` is `None` when nothing was summarized.
pub(in crate::app) async fn compress_now(app: &App, spec: &TurnSpec<'_>) -> Result<Context, AppError> {
    load_with(app, spec, None, true).await
}

async fn load_with(app: &App, spec: &TurnSpec<'_>, pre: Option<&TurnRead>, force: bool) -> Result<Context, AppError> {
    let s = &app.inner.cfg.settings;
    let max_ctx = s.model.max_context_messages;
    if !s.compression.enabled && !force {
        let recent = match (&spec.transcript, pre) {
            (Some(known), _) => known.clone(),
            (None, Some(r)) => r.messages.clone(),
            (None, None) => app.inner.store.recent_messages(spec.session_id, max_ctx).await?,
        };
        let recent: Vec<Message> = recent.into_iter().filter(|m| m.summary_through.is_none()).collect();
        return Ok(Context { messages: trim_context(&recent, max_ctx).to_vec(), ..Context::default() });
    }
    let index = match (&spec.transcript, pre) {
        (Some(_), _) => None,
        (None, Some(r)) => pre_index(app, spec.session_id.as_str(), r).await?,
        (None, None) => {
            let r = app.inner.store.turn_read(spec.session_id, 0, &[SUMMARY_NOTE]).await?;
            pre_index(app, spec.session_id.as_str(), &r).await?
        }
    };
    let (count, window) = match pre.filter(|_| spec.transcript.is_none()) {
        Some(r) => match pre_window(r, index.as_ref()) {
            Window::Whole(count, window) => (count, window),
            // More messages after the summary than the folded read took: read them.
            Window::Short { count, after_summary } => {
                (count, app.inner.store.recent_messages(spec.session_id, after_summary.min(MAX_READ)).await?)
            }
        },
        None => read_window(app, spec, index.as_ref()).await?,
    };
    let first = count.saturating_sub(window.len());
    let mut items: Vec<(usize, Message)> =
        window.into_iter().enumerate().filter(|(_, m)| m.summary_through.is_none()).map(|(i, m)| (first + i, m)).collect();
    let head = match &index {
        Some(i) => i.head.clone(),
        None if first == 0 => {
            let mut k = s.compression.protect_first_n.min(items.len());
            while items.get(k).is_some_and(|(_, m)| m.role == Role::Tool) {
                k += 1;
            }
            items.drain(..k).map(|(_, m)| m).collect()
        }
        None => Vec::new(),
    };
    while items.first().is_some_and(|(_, m)| m.role == Role::Tool) {
        items.remove(0);
    }
    let previous = index.as_ref().map(|i| compress::summary_message(&i.text, i.through, app.inner.clock.now()));
    let budget = compress::context_budget(s.model.context_length) as f64;
    let fixed =
        spec.system.len() / compress::CHARS_PER_TOKEN + spec.notes.iter().map(|n| n.len() / compress::CHARS_PER_TOKEN).sum::<usize>();
    let rest: Vec<Message> = items.iter().map(|(_, m)| m.clone()).collect();
    let tokens = fixed
        + compress::estimate_prompt(&head)
        + previous.as_ref().map_or(0, compress::estimate_tokens)
        + compress::estimate_prompt(&rest);
    let over_tokens = tokens as f64 > s.compression.threshold * budget;
    let over_count = head.len() + rest.len() + usize::from(previous.is_some()) > max_ctx;
    let mut summary_failed = false;
    if force || over_tokens || over_count {
        let max_keep = (max_ctx / 2).max(1);
        // Forced (`/compress`): the tail is the protected messages only.
        let tail_tokens = if force { 0 } else { (s.compression.target_ratio * s.compression.threshold * budget) as usize };
        if let Some(cut) = compress::tail_cut(&rest, s.compression.protect_last_n.min(max_keep), tail_tokens, max_keep) {
            let through = items[cut].0 as u64;
            if let Some(out) = summarize(app, spec, head.clone(), index.as_ref().map(|i| i.text.as_str()), &rest[..cut], through).await? {
                let (summary, mut ctx) = out;
                ctx.summarized = Some((head.len() + usize::from(previous.is_some()) + rest.len(), tokens));
                ctx.messages = head;
                ctx.messages.push(summary);
                ctx.messages.extend_from_slice(&rest[cut..]);
                return Ok(ctx);
            }
            summary_failed = true;
        }
    }
    let mut messages = head;
    messages.extend(previous);
    let room = max_ctx.saturating_sub(messages.len()).max(1);
    messages.extend_from_slice(trim_context(&rest, room));
    Ok(Context { messages, summary_failed, ..Context::default() })
}

/// The message count and the newest messages after the summary (at most [`MAX_READ`]).
/// Without a summary every message is wanted, so one read of [`MAX_READ`] answers both when
/// it comes back short (docs/design.md#store-cost); the count is read only otherwise.
async fn read_window(app: &App, spec: &TurnSpec<'_>, index: Option<&SummaryIndex>) -> Result<(usize, Vec<Message>), AppError> {
    let store = &app.inner.store;
    if let Some(known) = &spec.transcript {
        return Ok((known.len(), known.clone()));
    }
    if index.is_none() {
        let window = store.recent_messages(spec.session_id, MAX_READ).await?;
        if window.len() < MAX_READ {
            return Ok((window.len(), window));
        }
    }
    let count = usize::try_from(store.count_messages(spec.session_id).await?).unwrap_or(usize::MAX);
    let start = index.map_or(0, |i| usize::try_from(i.through).unwrap_or(count).min(count));
    Ok((count, store.recent_messages(spec.session_id, (count - start).min(MAX_READ)).await?))
}

/// What the folded read holds of the messages a prompt may use.
#[derive(Debug, PartialEq)]
enum Window {
    /// The message count and every message after the summary (at most [`MAX_READ`]).
    Whole(usize, Vec<Message>),
    /// The read stopped short: `after_summary` messages follow the summary.
    Short { count: usize, after_summary: usize },
}

/// [`read_window`] from the folded read: the count and the messages after the summary, when
/// the read reached back that far (or took [`MAX_READ`], all a prompt ever reads).
fn pre_window(r: &TurnRead, index: Option<&SummaryIndex>) -> Window {
    let count = usize::try_from(r.count).unwrap_or(usize::MAX).max(r.messages.len());
    let start = index.map_or(0, |i| usize::try_from(i.through).unwrap_or(count).min(count));
    let after_summary = count - start;
    if after_summary > r.messages.len() && r.messages.len() < MAX_READ {
        return Window::Short { count, after_summary };
    }
    let take = after_summary.min(r.messages.len());
    Window::Whole(count, r.messages[r.messages.len() - take..].to_vec())
}

/// The summary index from the folded read. An index stored where it was kept before it
/// became a note (a DynamoDB meta record) is read there when the window holds a summary.
async fn pre_index(app: &App, session_id: &str, r: &TurnRead) -> Result<Option<SummaryIndex>, AppError> {
    match r.notes.get(SUMMARY_NOTE) {
        Some(raw) => Ok(parse_index(session_id, raw)),
        None if r.messages.iter().any(|m| m.summary_through.is_some()) => read_index(app, session_id).await,
        None => Ok(None),
    }
}

/// The summary index where it was kept before it became a note, if any (an unreadable one
/// is ignored with a warning: the next compression writes a fresh one).
async fn read_index(app: &App, session_id: &str) -> Result<Option<SummaryIndex>, AppError> {
    let Some(raw) = app.inner.store.get_meta(&compress::meta_key(session_id)).await? else { return Ok(None) };
    Ok(parse_index(session_id, &raw))
}

fn parse_index(session_id: &str, raw: &str) -> Option<SummaryIndex> {
    match serde_json::from_str(raw) {
        Ok(i) => Some(i),
        Err(e) => {
            tracing::warn!(session_id, error = %e, "unreadable summary index; ignoring it");
            None
        }
    }
}

/// Asks the model (no tools) for the summary of `turns`, stores it as a transcript message
/// (fenced by the turn's lease) and as the session's summary index. `None` when the model
/// failed or answered nothing: the turn goes on with the trimmed transcript.
async fn summarize(
    app: &App,
    spec: &TurnSpec<'_>,
    head: Vec<Message>,
    previous: Option<&str>,
    turns: &[Message],
    through: u64,
) -> Result<Option<(Message, Context)>, AppError> {
    let now = app.inner.clock.now();
    let req = ChatRequest {
        messages: vec![
            Message::text(Role::System, compress::SUMMARIZER_SYSTEM, now),
            Message::text(Role::User, compress::summary_request(previous, turns), now),
        ],
        tools: Vec::new(),
        model: spec.model.clone(),
        route: spec.route.clone(),
    };
    let resp = match app.inner.llm.complete(&req).await {
        Ok(r) if !r.content.trim().is_empty() => r,
        Ok(_) => {
            tracing::warn!(session_id = %spec.session_id, "the summarizer answered nothing; trimming instead");
            return Ok(None);
        }
        Err(e) => {
            tracing::warn!(session_id = %spec.session_id, error = %e, "summarizing failed; trimming instead");
            return Ok(None);
        }
    };
    let index = SummaryIndex::new(through, head, &resp.content);
    let summary = compress::summary_message(&index.text, through, app.inner.clock.now());
    let Ok(raw) = serde_json::to_string(&index) else { return Ok(None) };
    append(app, spec, std::slice::from_ref(&summary)).await?;
    app.inner.store.turn_put_note(spec.session_id, SUMMARY_NOTE, Some(&raw)).await?;
    tracing::info!(session_id = %spec.session_id, through, summarized = turns.len(), "context summarized");
    Ok(Some((
        summary,
        Context { messages: Vec::new(), input_tokens: resp.input_tokens, output_tokens: resp.output_tokens, ..Context::default() },
    )))
}
