//! The agent loop of one turn: prompt → model → tools → … → final answer, every message
//! appended to the transcript as it happens (so a crash keeps what was done); a job run's
//! final answer is handed back for the fire to store with its next write.

use crate::app::tools::ToolCtx;
use crate::app::turn::children::Hooks;
use crate::app::turn::lease::append;
use crate::app::turn::stream::Segment;
use crate::app::turn::types::{Leased, STOP_POLL, TurnOutput, TurnSpec};
use crate::app::types::TurnKind;
use crate::app::{App, AppError};
use crate::core::prompt::assemble;
use crate::core::session::{Message, Role};
use crate::ports::ChatRequest;

/// Runs the model loop over the stored transcript of `spec.session_id` (its context built
/// by [`crate::app::turn::context::load`]). `stop` is asked at each step boundary, and every
/// [`STOP_POLL`] while the model is answering, whether the turn should end early; a turn
/// stopped mid-call drops that answer unstored and unsent (docs/design.md#turn).
pub async fn run<F, Fut>(app: &App, spec: TurnSpec<'_>, stop: F) -> Result<TurnOutput, AppError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    run_leased(app, spec, None, stop).await
}

/// [`run`] for a chat turn under a lease ([`Leased`]); `None` runs it as [`run`] does.
pub(in crate::app) async fn run_leased<F, Fut>(
    app: &App,
    spec: TurnSpec<'_>,
    leased: Option<Leased<'_>>,
    mut stop: F,
) -> Result<TurnOutput, AppError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let max_iter = app.inner.cfg.settings.model.max_iterations;
    let context = crate::app::turn::context::load(app, &spec, leased.as_ref().map(|l| &l.read)).await?;
    let signal = leased.as_ref().map(|l| l.signal.clone());
    let mut prompt = assemble(&spec.system, &spec.notes, &context.messages, usize::MAX, app.inner.clock.now());
    if let Some(origin) = &spec.origin {
        app.load_images(&origin.platform, &mut prompt).await;
    }
    let ctx = ToolCtx {
        app,
        session_id: spec.session_id,
        origin: spec.origin.as_ref(),
        kind: spec.kind,
        deadline: spec.deadline,
        call_id: None,
        turn: None,
    };
    let platform = (spec.kind == TurnKind::Chat).then(|| spec.origin.as_ref().map(|o| o.platform.as_str())).flatten();
    let have = app.inner.tools.toolsets();
    let toolset =
        crate::app::tools::toolsets::narrow(app.inner.tools.toolset(&ctx), &app.inner.cfg.settings, platform, &spec.toolsets, &have);
    // What `clarify` and `delegate_task` ask of this turn (ending it, running children).
    let hooks = Hooks::new(&ctx, &toolset, spec.model.clone(), spec.route.clone());
    let ctx = ToolCtx { turn: Some(&hooks), ..ctx };
    let tools = toolset.specs();
    let mut out = TurnOutput { input_tokens: context.input_tokens, output_tokens: context.output_tokens, ..TurnOutput::default() };
    let mut repeats = crate::app::turn::tool_guard::RepeatGuard::default();
    // A prompt not stored yet goes in front of the first append (or back with a held answer).
    let mut unstored: Vec<Message> = match (&spec.transcript, spec.prompt_unstored) {
        (Some(t), true) => t.first().cloned().into_iter().collect(),
        _ => Vec::new(),
    };
    for n in 0..max_iter {
        // A job run stops before the model call that would pass its budget (`app::budget`).
        crate::app::budget::before_call().map_err(AppError::NotAllowed)?;
        let req = ChatRequest { messages: prompt.clone(), tools: tools.clone(), model: spec.model.clone(), route: spec.route.clone() };
        // Each model call streams into its own segment; dropping it stops the editing.
        let seg = spec.stream.as_ref().map(|p| Segment::start(app, p, n));
        let call = async {
            match &seg {
                Some(s) => app.inner.llm.complete_streamed(&req, &mut s.sink()).await,
                None => app.inner.llm.complete(&req).await,
            }
        };
        let Some(resp) = interruptible(call, &mut stop, signal.as_deref()).await else {
            tracing::info!(session_id = %spec.session_id, "turn interrupted while the model was answering; its answer is dropped");
            out.interrupted = true;
            return Ok(out);
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                if let Some(s) = seg {
                    s.finish(None).await;
                }
                return Err(e.into());
            }
        };
        crate::app::crash::crash_point("turn:model_answered");
        out.input_tokens += resp.input_tokens;
        out.output_tokens += resp.output_tokens;
        app.charge_call(&resp.model, spec.model.as_deref(), resp.input_tokens, resp.output_tokens);
        let now = app.inner.clock.now();
        let mut msg = Message::text(Role::Assistant, resp.content.clone(), now);
        msg.model = (!resp.model.is_empty()).then(|| resp.model.clone());
        if resp.tool_calls.is_empty() {
            finish(app, &spec, leased.as_ref(), &mut out, &mut unstored, msg, seg, &mut stop).await?;
            return Ok(out);
        }
        // Text before a tool call stays as its own message (Hermes); the next call's text
        // starts a new one.
        if let Some(s) = seg {
            s.finish(Some(&resp.content)).await;
        }
        msg.tool_calls = resp.tool_calls.clone();
        let mut step = vec![msg];
        for call in &resp.tool_calls {
            let progress = spec.stream.as_ref().map(|p| &p.out);
            if let Some(p) = progress {
                p.tool_progress(&call.id, &call.name, &call.arguments, false);
            }
            let result = match repeats.refuse(call) {
                Some(refused) => refused,
                None => toolset.execute(&ctx, call).await,
            };
            if let Some(p) = progress {
                p.tool_progress(&call.id, &call.name, &call.arguments, true);
            }
            let mut t = Message::text(Role::Tool, result.content, app.inner.clock.now());
            t.tool_call_id = Some(call.id.clone());
            t.duration_ms = Some(result.duration_ms);
            step.push(t);
        }
        let (child_in, child_out) = hooks.take_usage();
        out.input_tokens += child_in;
        out.output_tokens += child_out;
        append(app, &spec, &with_unstored(&mut unstored, &step)).await?;
        out.appended += step.len() as u64;
        prompt.extend(step);
        // `clarify` asked: its question is this turn's answer; the next message answers it.
        if let Some(question) = hooks.take_end() {
            let msg = Message::text(Role::Assistant, question, app.inner.clock.now());
            finish(app, &spec, leased.as_ref(), &mut out, &mut unstored, msg, None, &mut stop).await?;
            return Ok(out);
        }
        if stop().await {
            out.interrupted = true;
            return Ok(out);
        }
    }
    out.reply = format!("I stopped after {max_iter} tool rounds without reaching a final answer. Please narrow the request.");
    let note = Message::text(Role::Assistant, out.reply.clone(), app.inner.clock.now());
    append(app, &spec, &with_unstored(&mut unstored, &[note])).await?;
    out.appended += 1;
    Ok(out)
}

/// Stores the turn's final answer `msg` and puts it in `out` (see [`run_leased`]): under a
/// lease in its settling write, a job run's held for the fire, else appended; `seg` (the
/// answer's stream, if it streamed) is finished with it. A turn superseded meanwhile drops
/// the answer and is marked interrupted.
#[allow(clippy::too_many_arguments)]
async fn finish<F, Fut>(
    app: &App,
    spec: &TurnSpec<'_>,
    leased: Option<&Leased<'_>>,
    out: &mut TurnOutput,
    unstored: &mut Vec<Message>,
    msg: Message,
    seg: Option<Segment>,
    stop: &mut F,
) -> Result<(), AppError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    // A newer message may have come in while the model answered (the poll runs only every
    // STOP_POLL): a superseded turn delivers nothing of its own. Under a lease the answer's
    // write is conditioned on the entry's version, which any stop request changes; otherwise
    // the store is asked first.
    let stored = match leased {
        Some(l) => app.settle_turn(l, &msg, (out.input_tokens, out.output_tokens), seg.is_none()).await?.map(Some),
        None if stop().await => None,
        // A job run's answer is held: the fire stores it with its ledger row or finish.
        None if spec.kind == TurnKind::Job => {
            out.held = Some(msg.clone());
            out.held_prompt = unstored.pop();
            Some(None)
        }
        None => {
            append(app, spec, &with_unstored(unstored, std::slice::from_ref(&msg))).await?;
            Some(None)
        }
    };
    let Some(settled) = stored else {
        tracing::info!(session_id = %spec.session_id, "turn superseded as the model answered; its answer is dropped");
        out.interrupted = true;
        return Ok(());
    };
    out.settled = settled;
    if out.held.is_none() {
        crate::app::crash::crash_point("turn:answer_stored");
    }
    if let Some(s) = seg {
        s.finish(Some(&msg.content)).await;
        out.streamed = true;
    }
    out.reply = msg.content;
    Ok(())
}

/// `msgs`, with the prompt not stored yet in front (taken: written once).
fn with_unstored(unstored: &mut Vec<Message>, msgs: &[Message]) -> Vec<Message> {
    let mut all = std::mem::take(unstored);
    all.extend_from_slice(msgs);
    all
}

/// Runs `call`, asking `stop` every [`STOP_POLL`] and whenever `signal` fires; `None` when
/// `stop` said yes first (the call is dropped, so a remote request is cancelled).
async fn interruptible<T, C, F, Fut>(call: C, stop: &mut F, signal: Option<&tokio::sync::Notify>) -> Option<T>
where
    C: std::future::Future<Output = T>,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::pin!(call);
    loop {
        let signalled = async {
            match signal {
                Some(n) => n.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = &mut call => return Some(r),
            () = signalled => {}
            () = tokio::time::sleep(STOP_POLL) => {}
        }
        if stop().await {
            return None;
        }
    }
}
