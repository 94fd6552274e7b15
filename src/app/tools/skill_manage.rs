//! `skill_manage`: Hermes' tool for the agent's own skills (`create`, `patch`, `edit`,
//! `delete`, `write_file`, `remove_file`; Hermes 0.19.0 `tools/skill_manager_tool.py`), with
//! the skills kept in the store so it works on Lambda + DynamoDB as well. The actions live in
//! `app::skill_actions`, the rules in `core::skill_write`. A skill written here is in the
//! skills index of the next session and usable by jobs (`skills: [name]`) and `/<name>`.
//! Effectful: each call changes stored state.

use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::app::skill_actions::ManageArgs;
use async_trait::async_trait;
use serde_json::{Value, json};

/// The `skill_manage` tool.
pub struct SkillManage;

const DESCRIPTION: &str = "Manage skills (create, update, delete). Skills are your procedural memory — reusable approaches for \
recurring task types. New skills are kept in the agent's store; existing skills can be modified wherever they live.\n\n\
Actions: create (full SKILL.md + optional category), patch (old_string/new_string — preferred for fixes), edit (full SKILL.md \
rewrite — major overhauls only), delete, write_file, remove_file.\n\n\
On delete, pass `absorbed_into=<umbrella>` when you're merging this skill's content into another one, or `absorbed_into=\"\"` \
when you're pruning it with no forwarding target. The target you name in `absorbed_into` must already exist — create/patch the \
umbrella first, then delete.\n\n\
Create when: complex task succeeded (5+ calls), errors overcome, user-corrected approach worked, non-trivial workflow \
discovered, or user asks you to remember a procedure.\n\
Update when: instructions stale/wrong, OS-specific failures, missing steps or pitfalls found during use. If you used a skill \
and hit issues not covered by it, patch it immediately.\n\n\
After difficult/iterative tasks, offer to save as a skill. Skip for simple one-offs. Confirm with user before \
creating/deleting.\n\n\
Good skills: trigger conditions, numbered steps with exact commands, pitfalls section, verification steps. Use skill_view() \
to see format examples.";

#[async_trait]
impl Tool for SkillManage {
    fn name(&self) -> &str {
        "skill_manage"
    }

    fn toolset(&self) -> &str {
        "skills"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["create", "patch", "edit", "delete", "write_file", "remove_file"], "description": "The action to perform."},
                "name": {"type": "string", "description": "Skill name (lowercase, hyphens/underscores, max 64 chars). Must match an existing skill for patch/edit/delete/write_file/remove_file."},
                "content": {"type": "string", "description": "Full SKILL.md content (YAML frontmatter + markdown body). Required for 'create' and 'edit'. For 'edit', read the skill first with skill_view() and provide the complete updated text."},
                "old_string": {"type": "string", "description": "Text to find in the file (required for 'patch'). Must be unique unless replace_all=true. Include enough surrounding context to ensure uniqueness."},
                "new_string": {"type": "string", "description": "Replacement text (required for 'patch'). Can be empty string to delete the matched text."},
                "replace_all": {"type": "boolean", "description": "For 'patch': replace all occurrences instead of requiring a unique match (default: false)."},
                "category": {"type": "string", "description": "Optional category/domain for organizing the skill (e.g., 'devops', 'data-science', 'mlops'). Creates a subdirectory grouping. Only used with 'create'."},
                "file_path": {"type": "string", "description": "Path to a supporting file within the skill directory. For 'write_file'/'remove_file': required, must be under references/, templates/, scripts/, or assets/. For 'patch': optional, defaults to SKILL.md if omitted."},
                "file_content": {"type": "string", "description": "Content for the file. Required for 'write_file'."},
                "absorbed_into": {"type": "string", "description": "For 'delete' only — the umbrella skill name when this skill's content was merged into another (the target must already exist), or an empty string when the skill is pruned with no forwarding target."}
            },
            "required": ["action", "name"]
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: ManageArgs = parse_args(args)?;
        match ctx.app.skill_manage(a).await {
            Ok(Ok(v)) => Ok(ToolOutput::Json(v)),
            Ok(Err(refusal)) => Err(ToolError::Failed(refusal)),
            Err(e) => Err(ToolError::Failed(format!("skills are unavailable right now: {e}"))),
        }
    }
}
