//! Prompt assembly for one agent turn: system prompt (SOUL.md or the default), turn notes,
//! and the transcript trimmed from the oldest end.

use crate::core::session::{Message, Role};
use chrono::{DateTime, Utc};

/// The system prompt used when the home has no `SOUL.md`.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Hermes, a helpful assistant reached through a chat gateway. \
Answer concisely. You can schedule recurring or one-off jobs with the `cronjob` tool when the user asks for reminders or reports.";

/// Keeps at most `max` newest messages, never starting with an orphaned tool result
/// (chat-completions APIs reject a `tool` message without its calling assistant message).
pub fn trim_context(transcript: &[Message], max: usize) -> &[Message] {
    let start = transcript.len().saturating_sub(max);
    let mut tail = &transcript[start..];
    while tail.first().is_some_and(|m| m.role == Role::Tool) {
        tail = &tail[1..];
    }
    tail
}

/// Builds the model's messages: one system message (system prompt + notes), then the
/// trimmed transcript.
pub fn assemble(system_prompt: &str, notes: &[String], transcript: &[Message], max_context: usize, now: DateTime<Utc>) -> Vec<Message> {
    let mut system = system_prompt.trim().to_string();
    for n in notes {
        system.push_str("\n\n");
        system.push_str(n);
    }
    let mut out = Vec::with_capacity(max_context.min(transcript.len()) + 1);
    out.push(Message::text(Role::System, system, now));
    out.extend_from_slice(trim_context(transcript, max_context));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::session::ToolCall;

    fn m(role: Role, c: &str) -> Message {
        Message::text(role, c, DateTime::UNIX_EPOCH)
    }

    #[test]
    fn trims_oldest_and_orphaned_tool_results() {
        let mut call = m(Role::Assistant, "");
        call.tool_calls.push(ToolCall { id: "1".into(), name: "t".into(), arguments: "{}".into() });
        let t = vec![m(Role::User, "a"), call, m(Role::Tool, "r"), m(Role::Assistant, "b"), m(Role::User, "c")];
        assert_eq!(trim_context(&t, 10).len(), 5);
        let cut = trim_context(&t, 3);
        assert_eq!(cut.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["b", "c"]);
    }

    #[test]
    fn notes_join_the_system_message() {
        let out = assemble("soul", &["note".into()], &[m(Role::User, "hi")], 200, DateTime::UNIX_EPOCH);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].role, Role::System);
        assert_eq!(out[0].content, "soul\n\nnote");
    }
}
