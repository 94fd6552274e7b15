//! `skills_list` / `skill_view`: Hermes' skill tools (docs/design.md#skills). The index of
//! `$HERMES_HOME/skills` is already in a chat's system prompt; `skills_list` returns it and
//! `skill_view` loads one skill's `SKILL.md` on demand. Offered in chat turns and job runs,
//! as Hermes does (its cron runs keep the skills toolset). The scan and its cache live in
//! `app::skills`, the name rules in `core::skill`.

use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::app::skills::MAX_SKILL_BYTES;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The `skills_list` tool.
pub struct SkillsList;

/// The `skill_view` tool.
pub struct SkillView;

#[async_trait]
impl Tool for SkillsList {
    fn name(&self) -> &str {
        "skills_list"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "skills"
    }

    fn description(&self) -> &str {
        "List available skills (name + description). Use skill_view(name) to load full content."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "required": []})
    }

    async fn call(&self, ctx: &ToolCtx<'_>, _args: Value) -> Result<ToolOutput, ToolError> {
        let skills = ctx.app.skills_index().await;
        if skills.is_empty() {
            return Ok(json!({"success": true, "skills": [], "message": "No skills found in skills/ directory."}).into());
        }
        Ok(json!({
            "success": true, "skills": *skills, "count": skills.len(),
            "hint": "Use skill_view(name) to see full content",
        })
        .into())
    }
}

#[derive(Debug, Deserialize)]
struct ViewArgs {
    #[serde(default)]
    name: Option<String>,
}

#[async_trait]
impl Tool for SkillView {
    fn name(&self) -> &str {
        "skill_view"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "skills"
    }

    fn description(&self) -> &str {
        "Skills allow for loading information about specific tasks and workflows. Load a skill's full content \
(its SKILL.md instructions) by name; the available skills are listed in the system prompt and by skills_list."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill name (use skills_list to see available skills)."}
            },
            "required": ["name"]
        })
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: ViewArgs = parse_args(args)?;
        let name = a.name.unwrap_or_default();
        match ctx.app.skill_text(&name).await.map_err(ToolError::BadArgs)? {
            Some((content, truncated)) => {
                let entry = crate::core::skill::entry(name.trim(), &content);
                let mut v = json!({
                    "success": true, "name": entry.name, "description": entry.description,
                    "content": content, "path": format!("{}/SKILL.md", entry.name),
                });
                if truncated {
                    v["note"] = json!(format!("SKILL.md is longer than {} kB; only its start is shown.", MAX_SKILL_BYTES / 1024));
                }
                Ok(v.into())
            }
            None => {
                let available: Vec<String> = ctx.app.skills_index().await.iter().map(|s| s.name.clone()).collect();
                let list = if available.is_empty() { "none are installed".to_string() } else { available.join(", ") };
                Err(ToolError::Failed(format!("Skill '{}' not found. Available skills: {list}.", name.trim())))
            }
        }
    }
}
