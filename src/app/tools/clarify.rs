//! `clarify`: ask the user a question, Hermes 0.19.0's tool (`tools/clarify_tool.py`), with up
//! to four choices (dict-shaped choices unwrapped as Hermes does). A gateway that scales to
//! zero cannot hold a turn open for the answer, so in a chat the question (choices as a
//! numbered list with Hermes' "Other" row) becomes the turn's final reply: the turn ends,
//! and the user's next message, the next turn's input, is the answer. The tool result says
//! so, so the model reads that message as the answer. In a job run there is nobody to ask:
//! the call is refused with a note, as Hermes refuses it where no user can answer.

use super::{Tool, ToolCtx, ToolError, ToolOutput, TurnKind};
use async_trait::async_trait;
use serde_json::{Value, json};

/// Most predefined choices (Hermes' `MAX_CHOICES`); the "Other" row is always added.
const MAX_CHOICES: usize = 4;

/// The `clarify` tool.
pub struct Clarify;

#[async_trait]
impl Tool for Clarify {
    fn name(&self) -> &str {
        "clarify"
    }

    fn toolset(&self) -> &str {
        "clarify"
    }

    fn description(&self) -> &str {
        "Ask the user a question when you need clarification, feedback, or a decision before proceeding. Supports two \
modes:\n\n\
1. **Multiple choice** — provide up to 4 choices. The user picks one or types their own answer via a 5th 'Other' \
option.\n\
2. **Open-ended** — omit choices entirely. The user types a free-form response.\n\n\
CRITICAL: when you are offering options, put each option ONLY in the `choices` array — NEVER enumerate the options \
inside the `question` text. Right: question='Which deployment target?', choices=['staging', 'prod']. Wrong: \
question='Which target? 1) staging 2) prod', choices=[].\n\n\
Here the question is sent to the user and your turn ends; the user's next message is the answer.\n\n\
Use this tool when:\n\
- The task is ambiguous and you need the user to choose an approach\n\
- You want post-task feedback ('How did that work out?')\n\
- You want to offer to save a skill or update memory\n\
- A decision has meaningful trade-offs the user should weigh in on\n\n\
Prefer making a reasonable default choice yourself when the decision is low-stakes."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "description": "The question itself, and ONLY the question (e.g. 'Which deployment target?'). Do NOT embed the answer options here — pass them as separate elements in `choices`."
                },
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": MAX_CHOICES,
                    "description": "REQUIRED whenever you are presenting selectable options: each distinct option is its own array element (up to 4). An 'Other (type your answer)' option is added. Omit this parameter entirely ONLY for a genuinely open-ended free-text question."
                }
            },
            "required": ["question"]
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let question = match args.get("question") {
            Some(Value::String(q)) if !q.trim().is_empty() => q.trim().to_string(),
            _ => return Err(ToolError::BadArgs("Question text is required.".into())),
        };
        let choices = match args.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.iter().map(flatten_choice).filter(|c| !c.is_empty()).take(MAX_CHOICES).collect(),
            Some(_) => return Err(ToolError::BadArgs("choices must be a list of strings.".into())),
        };
        let turn = match ctx.turn {
            Some(turn) if ctx.kind == TurnKind::Chat => turn,
            _ => {
                return Err(ToolError::Failed(
                    "Clarify tool is not available in this execution context. No user can answer here (a scheduled job \
run or a delegated task): make a reasonable choice yourself and state the assumption in your answer."
                        .into(),
                ));
            }
        };
        turn.end_turn(render(&question, &choices));
        let offered = if choices.is_empty() { Value::Null } else { json!(choices) };
        Ok(json!({
            "question": question,
            "choices_offered": offered,
            "user_response": null,
            "status": "awaiting_user",
            "note": "The question was sent to the user and this turn ended. The user's next message is their answer to it.",
        })
        .into())
    }
}

/// Hermes' `_flatten_choice`: a string as is; a dict by its `label`, `description`, `text`
/// or `title`; a list joined; anything else as its text (trimmed; empty is dropped).
fn flatten_choice(c: &Value) -> String {
    match c {
        Value::Null => String::new(),
        Value::String(s) => s.trim().to_string(),
        Value::Object(m) => ["label", "description", "text", "title"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()))
            .unwrap_or_default()
            .to_string(),
        Value::Array(a) => a.iter().map(flatten_choice).collect::<Vec<_>>().join(" ").trim().to_string(),
        other => other.to_string().trim().to_string(),
    }
}

/// The message the user gets: the question, then the choices numbered with the "Other" row
/// (as Hermes renders them on messaging platforms).
fn render(question: &str, choices: &[String]) -> String {
    if choices.is_empty() {
        return format!("❓ {question}");
    }
    let mut text = format!("❓ {question}\n");
    for (i, c) in choices.iter().enumerate() {
        text.push_str(&format!("\n{}. {c}", i + 1));
    }
    text.push_str(&format!("\n{}. Other (type your answer)", choices.len() + 1));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_flattened_capped_and_rendered_with_the_other_row() {
        let raw = json!(["staging", {"description": "prod"}, {"name": "x"}, ["a", "b"], 3, "five"]);
        let choices: Vec<String> = raw.as_array().unwrap().iter().map(flatten_choice).filter(|c| !c.is_empty()).take(MAX_CHOICES).collect();
        assert_eq!(choices, ["staging", "prod", "a b", "3"]);
        assert_eq!(render("Which target?", &choices[..2]), "❓ Which target?\n\n1. staging\n2. prod\n3. Other (type your answer)");
        assert_eq!(render("Why?", &[]), "❓ Why?");
    }
}
