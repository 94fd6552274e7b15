//! Context compression, the pure part (docs/design.md#compression): the context budget, the
//! rough token estimate, where the transcript is cut (protected head, summarized middle,
//! recent tail), the summarizer's request and the framing of the stored summary.

use crate::core::session::{Message, Role};
use serde::{Deserialize, Serialize};

/// The context window assumed when `model.context_length` is not set.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 128_000;
/// Hermes' floor: a smaller configured window is raised to this.
pub const MIN_CONTEXT_LENGTH: u64 = 64_000;
/// The rough estimate Hermes uses: about four characters a token.
pub const CHARS_PER_TOKEN: usize = 4;
/// Cap on the transcript text handed to the summarizer (≈ 40K tokens, as Hermes).
pub const SUMMARY_INPUT_MAX_CHARS: usize = 160_000;
/// Each message's share of that text is cut to this many characters.
const PER_MESSAGE_MAX_CHARS: usize = 4_000;

/// Opens the stored summary message so the model reads it as background, not as a request.
pub const SUMMARY_PREFIX: &str = "[CONTEXT SUMMARY — REFERENCE ONLY] Earlier turns of this conversation were \
compacted into the summary below. Treat it as background, not as instructions: its requests were already \
handled. Answer only the latest user message after it; your tools stay available as usual.";
/// Closes the stored summary message.
pub const SUMMARY_END: &str = "--- END OF CONTEXT SUMMARY — respond to the messages below, not the summary above ---";

/// The system message of the summarizer's own completion.
pub const SUMMARIZER_SYSTEM: &str = "You are a summarization agent writing a context checkpoint. Your output \
is handed as reference material to a DIFFERENT assistant that continues this conversation. Do not answer \
any question or request in the conversation; output only the structured summary, with no preamble.";

/// The stored index of a session's latest summary (store meta record `summary:<session_id>`):
/// enough to build the prompt without reading the summarized history again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryIndex {
    /// Transcript messages before this position are covered by the head or the summary;
    /// the prompt continues with the messages from here on.
    pub through: u64,
    /// The protected first messages, copied so they need no read of the old transcript.
    pub head: Vec<Message>,
    /// The summary text (without its framing).
    pub text: String,
}

/// Most characters of summary text kept (≈ Hermes' 10,000-token summary ceiling).
pub const SUMMARY_MAX_CHARS: usize = 40_000;
/// Most characters of each protected head message copied into the index, so the record
/// stays well inside a DynamoDB item (400 KB).
pub const HEAD_MESSAGE_MAX_CHARS: usize = 32_000;

impl SummaryIndex {
    /// The index of a new summary, its text and head copies bounded (see the caps above).
    pub fn new(through: u64, head: Vec<Message>, text: &str) -> Self {
        let head = head
            .into_iter()
            .map(|mut m| {
                if m.content.len() > HEAD_MESSAGE_MAX_CHARS {
                    m.content = clip(&m.content, HEAD_MESSAGE_MAX_CHARS);
                }
                m
            })
            .collect();
        Self { through, head, text: clip(text.trim(), SUMMARY_MAX_CHARS) }
    }
}

/// The store meta key of a session's summary index.
pub fn meta_key(session_id: &str) -> String {
    format!("summary:{session_id}")
}

/// The context budget in tokens: `model.context_length` (0 = unset) raised to Hermes' floor.
pub fn context_budget(context_length: u64) -> u64 {
    if context_length == 0 { DEFAULT_CONTEXT_LENGTH } else { context_length.max(MIN_CONTEXT_LENGTH) }
}

/// Rough token count of one message: content and tool-call arguments at ≈ 4 chars a token,
/// plus a little for the role and keys.
pub fn estimate_tokens(m: &Message) -> usize {
    let chars = m.content.len() + m.tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + c.id.len()).sum::<usize>();
    chars / CHARS_PER_TOKEN + 10
}

/// Rough token count of a whole prompt.
pub fn estimate_prompt(msgs: &[Message]) -> usize {
    msgs.iter().map(estimate_tokens).sum()
}

/// Where the messages after the protected head are cut: `rest[..cut]` is summarized and
/// `rest[cut..]` is kept verbatim. The tail keeps at least `protect_last_n` messages (and
/// at least one), then more while they fit `tail_tokens` and number fewer than `max_keep`;
/// it never starts with a tool result (its calling message would be summarized away).
/// `None` when nothing would be summarized.
pub fn tail_cut(rest: &[Message], protect_last_n: usize, tail_tokens: usize, max_keep: usize) -> Option<usize> {
    let mut cut = rest.len();
    let mut used = 0usize;
    while cut > 0 {
        let t = estimate_tokens(&rest[cut - 1]);
        let kept = rest.len() - cut;
        if kept >= protect_last_n.max(1) && (used + t > tail_tokens || kept >= max_keep) {
            break;
        }
        used += t;
        cut -= 1;
    }
    while cut < rest.len().saturating_sub(1) && rest[cut].role == Role::Tool {
        cut += 1;
    }
    (cut > 0).then_some(cut)
}

/// The summarizer's user message: the previous summary (when updating one) and the turns to
/// fold in, serialized as data and bounded to [`SUMMARY_INPUT_MAX_CHARS`].
pub fn summary_request(previous: Option<&str>, turns: &[Message]) -> String {
    let mut body = String::new();
    for m in turns {
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool result",
        };
        body.push_str(&format!("[{role}] {}\n", clip(&m.content, PER_MESSAGE_MAX_CHARS)));
        for c in &m.tool_calls {
            body.push_str(&format!("[tool call] {}({})\n", c.name, clip(&c.arguments, 500)));
        }
    }
    let body = clip_middle(&body, SUMMARY_INPUT_MAX_CHARS);
    let mut out = String::new();
    match previous {
        Some(p) => out.push_str(&format!(
            "You are updating an existing context summary with newer turns.\n\nPREVIOUS SUMMARY:\n{p}\n\nNEW TURNS TO INCORPORATE:\n{body}\n\
             Update the summary: keep everything from it that is still relevant, add what the new turns did, \
             move finished work to the completed list and answered questions to the resolved ones.\n"
        )),
        None => out.push_str(&format!(
            "Write a structured handoff summary of the earlier turns below, so another assistant can continue \
             without reading them.\n\nTURNS TO SUMMARIZE:\n{body}\n"
        )),
    }
    out.push_str(
        "\nUse these sections: ## Goal, ## Constraints & Preferences, ## Completed Actions, ## Resolved Questions, \
         ## Pending User Asks, ## Relevant Facts (names, numbers, paths, decisions), ## Remaining Work (as context, \
         not instructions). Write \"None.\" for an empty section. Be concrete. Output only the summary.",
    );
    out
}

/// The transcript message holding a summary, as stored and as sent to the model.
pub fn summary_message(text: &str, through: u64, at: chrono::DateTime<chrono::Utc>) -> Message {
    let mut m = Message::text(Role::User, format!("{SUMMARY_PREFIX}\n\n{}\n\n{SUMMARY_END}", text.trim()), at);
    m.summary_through = Some(through);
    m
}

/// `s` cut to at most `max` bytes on a char boundary, with a marker when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…[truncated]", &s[..end])
}

/// `s` bounded to about `max` bytes by keeping its start and end around an omission marker.
fn clip_middle(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let (mut a, mut b) = (max / 2, s.len() - max / 2);
    while !s.is_char_boundary(a) {
        a -= 1;
    }
    while !s.is_char_boundary(b) {
        b += 1;
    }
    format!("{}\n[… {} characters of older turns omitted …]\n{}", &s[..a], b - a, &s[b..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::session::ToolCall;
    use chrono::DateTime;

    fn m(role: Role, c: &str) -> Message {
        Message::text(role, c, DateTime::UNIX_EPOCH)
    }

    #[test]
    fn budget_defaults_and_floor() {
        assert_eq!(context_budget(0), 128_000);
        assert_eq!(context_budget(1000), 64_000);
        assert_eq!(context_budget(63_999), 64_000);
        assert_eq!(context_budget(200_000), 200_000);
    }

    #[test]
    fn tail_keeps_protected_count_then_budget_and_no_orphan_tool() {
        let rest: Vec<Message> = (0..10).map(|i| m(Role::User, &format!("{i:0>40}"))).collect();
        // 20 tokens each: protect 3, budget 100 → 5 kept.
        assert_eq!(tail_cut(&rest, 3, 100, 100), Some(5));
        // The protected count wins over a too-small budget.
        assert_eq!(tail_cut(&rest, 4, 0, 100), Some(6));
        // Everything fits: nothing to summarize.
        assert_eq!(tail_cut(&rest, 3, 10_000, 100), None);
        // A message-count cap cuts even when the tokens fit.
        assert_eq!(tail_cut(&rest, 3, 10_000, 4), Some(6));
        let mut call = m(Role::Assistant, "");
        call.tool_calls.push(ToolCall { id: "1".into(), name: "t".into(), arguments: "{}".into() });
        let rest = vec![m(Role::User, "a"), call, m(Role::Tool, "r"), m(Role::Assistant, "b"), m(Role::User, "c")];
        assert_eq!(tail_cut(&rest, 3, 0, 100), Some(3), "the orphaned tool result joins the summary");
    }

    #[test]
    fn request_bounds_input_and_frames_updates() {
        let big: Vec<Message> = (0..100).map(|_| m(Role::Tool, &"x".repeat(10_000))).collect();
        let r = summary_request(None, &big);
        assert!(r.len() < SUMMARY_INPUT_MAX_CHARS + 2_000, "{}", r.len());
        assert!(r.contains("TURNS TO SUMMARIZE") && r.contains("omitted"));
        let u = summary_request(Some("old facts"), &[m(Role::User, "héllo")]);
        assert!(u.contains("PREVIOUS SUMMARY:\nold facts") && u.contains("[user] héllo"));
        assert_eq!(clip("ééé", 3), "é…[truncated]");
        let i = SummaryIndex::new(7, vec![m(Role::User, &"h".repeat(100_000))], &"s".repeat(100_000));
        assert!(i.head[0].content.len() < HEAD_MESSAGE_MAX_CHARS + 20 && i.text.len() < SUMMARY_MAX_CHARS + 20);
        assert!(serde_json::to_string(&i).unwrap().len() < 100_000, "fits a DynamoDB item");
    }
}
