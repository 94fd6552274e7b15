//! `send_message`: Hermes' cross-channel message tool (docs/design.md#send-message). `list`
//! returns the targets this agent can reach: the current chat (`origin`) and each configured
//! platform's home channel (a `/sethome` choice first). `send` resolves a delivery target (`origin`, `<platform>` = its
//! home channel, `<platform>:<chat_id>[:<thread_id>]`) on a platform that can send now, and
//! sends through the delivery ledger under a key derived from the call — the session, the
//! tool call id and a digest of target and text — so a replayed call (a resumed turn, a
//! model repeating the same call) is never sent twice. A `<platform>:<chat_id>` target must pass
//! the delivery policy (`core::access`, docs/who-sees-what.md); a refused one is a tool error
//! and nothing is sent.
//!
//! Offered in chat turns only: Hermes' cron runs disable the messaging toolset (a job
//! delivers its own output through its `deliver` targets).

use super::{Tool, ToolCtx, ToolError, ToolOutput, TurnKind, parse_args};
use crate::app::homes::Homes;
use crate::core::job::Occurrence;
use crate::ports::Target;
use async_trait::async_trait;
use chrono::DateTime;
use serde::Deserialize;
use serde_json::{Value, json};

/// The `send_message` tool.
pub struct SendMessage;

/// The call's arguments (Hermes' names).
#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// A target the agent can reach right now.
struct Reachable {
    label: String,
    target: Target,
    note: String,
}

#[async_trait]
impl Tool for SendMessage {
    fn name(&self) -> &str {
        "send_message"
    }

    fn toolset(&self) -> &str {
        "messaging"
    }

    fn description(&self) -> &str {
        "Send a message to a connected messaging platform, or list available targets.\n\n\
IMPORTANT: When the user asks to send to a specific channel or person (not just a bare platform name), call \
send_message(action='list') FIRST to see available targets, then send to the correct one.\n\
If the user just says a platform name like 'send to telegram', send directly to the home channel without listing first."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["send", "list"], "description": "Action to perform. 'send' (default) sends a message. 'list' returns all available targets across connected platforms."},
                "target": {"type": "string", "description": "Delivery target. Format: 'platform' (uses its home channel), 'platform:chat_id', 'platform:chat_id:thread_id' for Telegram topics and Discord threads, or 'origin' for this chat. Examples: 'telegram', 'telegram:-1001234567890:17585', 'discord:999888777'."},
                "message": {"type": "string", "description": "The message text to send."}
            },
            "required": []
        })
    }

    fn offered(&self, ctx: &ToolCtx<'_>) -> bool {
        ctx.kind == TurnKind::Chat
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: Args = parse_args(args)?;
        let homes = ctx.app.homes().await;
        match a.action.as_deref().map(str::trim).unwrap_or("send") {
            "list" => Ok(list(ctx, &homes).into()),
            "send" | "" => {
                let (target, message) = (a.target.unwrap_or_default(), a.message.unwrap_or_default());
                if target.trim().is_empty() || message.trim().is_empty() {
                    return Err(ToolError::BadArgs("Both 'target' and 'message' are required when action='send'".into()));
                }
                send(ctx, &homes, target.trim(), &message).await
            }
            other => Err(ToolError::BadArgs(format!("Unknown action '{other}'. Use: send, list"))),
        }
    }
}

fn label_of(t: &Target) -> String {
    match &t.thread_id {
        Some(th) => format!("{}:{}:{th}", t.platform, t.chat_id),
        None => format!("{}:{}", t.platform, t.chat_id),
    }
}

/// The current chat (when its platform can send) and every home channel, in that order.
fn reachable(ctx: &ToolCtx<'_>, homes: &Homes) -> Vec<Reachable> {
    let platforms = ctx.app.inner.delivery.platforms();
    let mut out = Vec::new();
    if let Some(o) = ctx.origin.filter(|o| platforms.contains(&o.platform)) {
        let target = Target { platform: o.platform.clone(), chat_id: o.chat_id.clone(), thread_id: o.thread_id.clone() };
        let note = format!("this chat ({})", label_of(&target));
        out.push(Reachable { label: "origin".into(), target, note });
    }
    for p in platforms {
        if let Some(target) = homes.get(&p).cloned() {
            let note = format!("{p} home channel ({})", label_of(&target));
            out.push(Reachable { label: p, target, note });
        }
    }
    out
}

fn list(ctx: &ToolCtx<'_>, homes: &Homes) -> Value {
    let targets: Vec<Value> = reachable(ctx, homes)
        .into_iter()
        .map(|r| json!({"target": r.label, "resolves_to": label_of(&r.target), "description": r.note}))
        .collect();
    let platforms = ctx.app.inner.delivery.platforms();
    json!({
        "targets": targets,
        "platforms": platforms,
        "hint": "Send to a listed target, or to '<platform>:<chat_id>[:<thread_id>]' on a listed platform.",
    })
}

/// What the model is told when a target cannot be used.
fn invalid(ctx: &ToolCtx<'_>, homes: &Homes, why: &str) -> ToolError {
    let mut valid: Vec<String> = reachable(ctx, homes).into_iter().map(|r| r.label).collect();
    valid.extend(ctx.app.inner.delivery.platforms().into_iter().map(|p| format!("{p}:<chat_id>[:<thread_id>]")));
    let valid = if valid.is_empty() { "none (no messaging platform is configured)".to_string() } else { valid.join(", ") };
    ToolError::Failed(format!("{why}. Valid targets: {valid}."))
}

/// The chat `label` names, or why it cannot be sent to.
fn resolve(ctx: &ToolCtx<'_>, homes: &Homes, label: &str) -> Result<Target, ToolError> {
    let invalid = |why: &str| invalid(ctx, homes, why);
    if let Some(r) = reachable(ctx, homes).into_iter().find(|r| r.label == label) {
        return Ok(r.target);
    }
    match label {
        "origin" => return Err(invalid("This turn has no chat that messages can be sent to")),
        "local" => return Err(invalid("'local' only stores a job's output; send_message needs a chat")),
        _ => {}
    }
    crate::core::jobfile::check_target(label).map_err(|e| invalid(&e))?;
    let mut parts = label.splitn(3, ':');
    let platform = parts.next().unwrap_or_default();
    if !ctx.app.inner.delivery.platforms().iter().any(|p| p == platform) {
        let why = if ctx.app.inner.delivery.delivers_to(platform) {
            format!("Platform '{platform}' is not configured (its credentials are not set)")
        } else {
            format!("Unknown platform: {platform}")
        };
        return Err(invalid(&why));
    }
    match parts.next() {
        None => {
            Err(invalid(&format!("No home channel set for {platform} ({}_HOME_CHANNEL)", crate::config::platform_env_prefix(platform))))
        }
        Some(chat) => {
            let thread = parts.next();
            // The delivery policy: the current chat, home channels, allowed users' chats,
            // `delivery.allow_targets`; admins anywhere (docs/who-sees-what.md).
            let rules = ctx.app.access_with(homes);
            rules.check_delivery(rules.is_admin(ctx.origin), ctx.origin, platform, chat, thread).map_err(|e| invalid(&e))?;
            Ok(Target { platform: platform.into(), chat_id: chat.into(), thread_id: thread.map(str::to_string) })
        }
    }
}

/// The ledger record of this call: its own occurrence key space (`send~…`; `~` is never part
/// of a job id) and a target that includes a digest of the text.
fn ledger_key(ctx: &ToolCtx<'_>, target: &Target, message: &str) -> (Occurrence, String) {
    let digest = ring::digest::digest(&ring::digest::SHA256, message.as_bytes());
    let hex: String = digest.as_ref().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let occ = Occurrence::new(&format!("send~{}~{}", ctx.session_id, ctx.call_id.unwrap_or_default()), DateTime::UNIX_EPOCH);
    (occ, format!("{}~{hex}", label_of(target)))
}

async fn send(ctx: &ToolCtx<'_>, homes: &Homes, label: &str, message: &str) -> Result<ToolOutput, ToolError> {
    let target = resolve(ctx, homes, label)?;
    let (occ, key) = ledger_key(ctx, &target, message);
    let store = &ctx.app.inner.store;
    match store.ledger_begin(&occ, &key, ctx.now()).await {
        Ok(true) => {}
        Ok(false) => {
            return Ok(json!({
                "success": true, "skipped": true, "reason": "already_sent", "target": label_of(&target),
                "note": "This exact call was already made once (a replayed call); it was not sent again.",
            })
            .into());
        }
        Err(e) => return Err(ToolError::Failed(format!("Send failed: the delivery ledger is unavailable ({e})"))),
    }
    let sent = ctx.app.inner.delivery.send(&target, message).await;
    let status = if sent.is_ok() { "sent" } else { "failed" };
    if let Err(e) = store.ledger_finish(&occ, &key, status, ctx.now()).await {
        tracing::warn!(session_id = %ctx.session_id, error = %e, "could not update the delivery ledger");
    }
    match sent {
        Ok(()) => {
            let mut v = json!({"success": true, "platform": target.platform, "chat_id": target.chat_id});
            if label == target.platform {
                v["note"] = json!(format!("Sent to {} home channel (chat_id: {})", target.platform, target.chat_id));
            }
            Ok(v.into())
        }
        Err(e) => {
            tracing::warn!(session_id = %ctx.session_id, target = %label_of(&target), error = %e, "send_message failed");
            Err(ToolError::Failed(format!("Send failed: {e}")))
        }
    }
}
