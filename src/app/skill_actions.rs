//! `skill_manage`'s actions (Hermes 0.19.0 `tools/skill_manager_tool.py`): create, edit,
//! patch, delete, write_file and remove_file on the skills in the store. A skill that so far
//! lives only as a folder under `$HERMES_HOME/skills` is copied into the store by its first
//! change (its `SKILL.md` and the allowed folders' files); deleting it leaves a tombstone
//! that hides the folder. Every input is checked (`core::skill_write`) before anything is
//! written; a refusal returns Hermes' error text and changes nothing.

use super::skill_store::{FileRef, Pending, StoreIndex, StoredSkill};
use super::skills::{Source, folder_files};
use super::{App, AppError};
use crate::core::skill;
use crate::core::skill_write::{self as rules, SKILL_MD};
use serde::Deserialize;
use serde_json::{Value, json};

/// `skill_manage`'s arguments, as Hermes names them.
#[derive(Debug, Default, Deserialize)]
pub(in crate::app) struct ManageArgs {
    #[serde(default)]
    action: String,
    #[serde(default)]
    name: String,
    content: Option<String>,
    category: Option<String>,
    file_path: Option<String>,
    file_content: Option<String>,
    old_string: Option<String>,
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
    absorbed_into: Option<String>,
}

/// A checked action, ready to apply.
enum Action {
    Create {
        content: String,
        category: Option<String>,
    },
    Delete {
        absorbed_into: Option<String>,
    },
    /// A change to an existing skill's files.
    Change(Change),
}

/// The actions that change an existing skill's files.
enum Change {
    Edit(String),
    Patch { old: String, new: String, path: String, replace_all: bool },
    WriteFile { path: String, content: String },
    RemoveFile(String),
}

fn not_found(name: &str, suffix: &str) -> String {
    format!("Skill '{name}' not found. Use skills_list() to see available skills.{suffix}")
}

/// The dispatcher's own checks (Hermes' `skill_manage`), then each action's input checks.
fn check(a: ManageArgs) -> Result<(String, Action), String> {
    let name = a.name.trim().to_string();
    let nonempty = |v: Option<String>| v.filter(|c| !c.is_empty());
    let action = match a.action.trim() {
        "create" => {
            let content =
                nonempty(a.content).ok_or("content is required for 'create'. Provide the full SKILL.md text (frontmatter + body).")?;
            rules::validate_name(&name)?;
            let category = rules::validate_category(a.category.as_deref())?;
            rules::validate_frontmatter(&content)?;
            rules::validate_content_size(&content, SKILL_MD)?;
            Action::Create { content, category }
        }
        "edit" => {
            let content = nonempty(a.content).ok_or("content is required for 'edit'. Provide the full updated SKILL.md text.")?;
            rules::validate_frontmatter(&content)?;
            rules::validate_content_size(&content, SKILL_MD)?;
            Action::Change(Change::Edit(content))
        }
        "patch" => {
            let old = nonempty(a.old_string).ok_or("old_string is required for 'patch'. Provide the text to find.")?;
            let new = a.new_string.ok_or("new_string is required for 'patch'. Use empty string to delete matched text.")?;
            let path = match nonempty(a.file_path) {
                Some(p) => rules::validate_file_path(&name, &p)?,
                None => SKILL_MD.to_string(),
            };
            Action::Change(Change::Patch { old, new, path, replace_all: a.replace_all })
        }
        "delete" => Action::Delete { absorbed_into: a.absorbed_into.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()) },
        "write_file" => {
            let path = nonempty(a.file_path).ok_or("file_path is required for 'write_file'. Example: 'references/api-guide.md'")?;
            let content = a.file_content.ok_or("file_content is required for 'write_file'.")?;
            let path = rules::validate_file_path(&name, &path)?;
            rules::validate_file_size(&content, &path)?;
            if path == SKILL_MD {
                rules::validate_frontmatter(&content)?;
            }
            Action::Change(Change::WriteFile { path, content })
        }
        "remove_file" => {
            let path = nonempty(a.file_path).ok_or("file_path is required for 'remove_file'.")?;
            let path = rules::validate_file_path(&name, &path)?;
            if path == SKILL_MD {
                return Err("SKILL.md cannot be removed; use action='delete' to remove the whole skill.".into());
            }
            Action::Change(Change::RemoveFile(path))
        }
        other => return Err(format!("Unknown action '{other}'. Use: create, edit, patch, delete, write_file, remove_file")),
    };
    if name.is_empty() {
        return Err("Skill name is required.".into());
    }
    skill::check_name(&name)?;
    Ok((name, action))
}

/// The path a skill is shown under (`<category>/<name>`).
fn shown(name: &str, s: &StoredSkill) -> String {
    s.category.as_ref().map_or_else(|| name.to_string(), |c| format!("{c}/{name}"))
}

/// The description a `SKILL.md` gives the index, and its title.
fn described(entry: &mut StoredSkill, name: &str, md: &str) {
    let e = skill::entry(name, md);
    entry.description = e.description;
    entry.title = e.title;
}

/// What one action yields: the skill's new entry (`None`: removed) and the result, or the
/// refusal text.
type Outcome = Result<(Option<StoredSkill>, Value), String>;

/// `patch`'s new text of a file: the replacement, within the size limit, and for `SKILL.md`
/// with its front matter intact; else Hermes' error (with a preview when nothing matched).
fn patched(text: &str, old: &str, new: &str, path: &str, replace_all: bool) -> Result<(String, usize), String> {
    let (out, count) =
        rules::find_and_replace(text, old, new, replace_all).map_err(|e| format!("{e}. File preview: {}", first_chars(text, 500)))?;
    rules::validate_content_size(&out, path)?;
    if path == SKILL_MD {
        rules::validate_frontmatter(&out).map_err(|e| format!("Patch would break SKILL.md structure: {e}"))?;
    }
    Ok((out, count))
}

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

impl App {
    /// Runs one `skill_manage` call: Hermes' success result, or its error text.
    pub(in crate::app) async fn skill_manage(&self, args: ManageArgs) -> Result<Result<Value, String>, AppError> {
        let (name, action) = match check(args) {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        let name = name.as_str();
        let action = &action;
        self.skill_store_change(name, |index, mut pending| async move {
            let out = self.skill_apply(name, action, &index, &mut pending).await?;
            Ok((out, pending))
        })
        .await
    }

    /// Deletes a skill (the dashboard's delete): as `skill_manage` `delete`.
    pub(in crate::app) async fn skill_delete(&self, name: &str) -> Result<Result<Value, String>, AppError> {
        self.skill_manage(ManageArgs { action: "delete".into(), name: name.into(), ..ManageArgs::default() }).await
    }

    /// One action on the index as read: the skill's new entry (`None`: gone) and the result.
    async fn skill_apply(&self, name: &str, action: &Action, index: &StoreIndex, pending: &mut Pending) -> Result<Outcome, AppError> {
        let found = self.skill_find(name, index).await;
        match (action, found) {
            (Action::Create { content, category }, None) => self.skill_create_entry(name, content, category.as_deref(), pending).await,
            (Action::Create { .. }, Some(src)) => {
                let at = match &src {
                    Source::Store(s) => format!("skills/{}", shown(name, s)),
                    Source::Files(dir) => dir.display().to_string(),
                };
                Ok(Err(format!("A skill named '{name}' already exists at {at}.")))
            }
            (Action::Change(Change::WriteFile { .. }), None) => Ok(Err(not_found(name, " Create it first with action='create'."))),
            (_, None) => Ok(Err(not_found(name, ""))),
            (Action::Delete { absorbed_into }, Some(src)) => self.skill_delete_entry(name, absorbed_into.as_deref(), &src, index).await,
            (Action::Change(change), Some(src)) => self.skill_change_entry(name, change, &src, pending).await,
        }
    }

    /// `create`: a new entry with its `SKILL.md`.
    async fn skill_create_entry(
        &self,
        name: &str,
        content: &str,
        category: Option<&str>,
        pending: &mut Pending,
    ) -> Result<Outcome, AppError> {
        let mut entry =
            StoredSkill { category: category.map(str::to_string), updated_at: Some(self.inner.clock.now()), ..StoredSkill::default() };
        entry.files.insert(SKILL_MD.into(), self.skill_blob_write(content, pending).await?);
        described(&mut entry, name, content);
        let path = shown(name, &entry);
        let mut v = json!({
            "success": true, "message": format!("Skill '{name}' created."), "path": path,
            "skill_md": format!("skills/{path}/SKILL.md"),
            "_change": {"description": first_chars(&entry.description, 120)},
        });
        if let Some(c) = category {
            v["category"] = json!(c);
        }
        v["hint"] = json!(format!(
            "To add reference files, templates, or scripts, use skill_manage(action='write_file', name='{name}', file_path='references/example.md', file_content='...')"
        ));
        Ok(Ok((Some(entry), v)))
    }

    /// `edit`, `patch`, `write_file`, `remove_file` on an existing skill (a folder skill is
    /// copied into the store first).
    async fn skill_change_entry(&self, name: &str, change: &Change, src: &Source, pending: &mut Pending) -> Result<Outcome, AppError> {
        let mut entry = match src {
            Source::Store(s) => s.clone(),
            Source::Files(dir) => self.skill_adopt(dir, pending).await?,
        };
        entry.updated_at = Some(self.inner.clock.now());
        let v = match change {
            Change::Edit(content) => {
                entry.files.insert(SKILL_MD.into(), self.skill_blob_write(content, pending).await?);
                described(&mut entry, name, content);
                json!({"success": true, "message": format!("Skill '{name}' updated (full rewrite)."), "path": shown(name, &entry),
                    "_change": {"description": first_chars(&entry.description, 120)}})
            }
            Change::Patch { old, new, path, replace_all } => {
                let Some(text) = self.skill_file(src, path).await? else { return Ok(Err(format!("File not found: {path}"))) };
                let (patched, count) = match patched(&text, old, new, path, *replace_all) {
                    Ok(x) => x,
                    Err(e) => return Ok(Err(e)),
                };
                if path == SKILL_MD {
                    described(&mut entry, name, &patched);
                }
                entry.files.insert(path.clone(), self.skill_blob_write(&patched, pending).await?);
                let s = if count > 1 { "s" } else { "" };
                json!({"success": true, "message": format!("Patched {path} in skill '{name}' ({count} replacement{s})."),
                    "_change": {"old": first_chars(old, 200), "new": first_chars(new, 200)}})
            }
            Change::WriteFile { path, content } => {
                if path == SKILL_MD {
                    described(&mut entry, name, content);
                }
                entry.files.insert(path.clone(), self.skill_blob_write(content, pending).await?);
                json!({"success": true, "message": format!("File '{path}' written to skill '{name}'."), "path": format!("{}/{path}", shown(name, &entry))})
            }
            Change::RemoveFile(path) => {
                if entry.files.remove(path).is_none() {
                    let available: Vec<&str> = entry.files.keys().map(String::as_str).filter(|p| *p != SKILL_MD).collect();
                    let list = if available.is_empty() { "none".to_string() } else { available.join(", ") };
                    return Ok(Err(format!("File '{path}' not found in skill '{name}'. Available files: {list}.")));
                }
                json!({"success": true, "message": format!("File '{path}' removed from skill '{name}'.")})
            }
        };
        Ok(Ok((Some(entry), v)))
    }

    /// `delete`: checks `absorbed_into`, then removes the entry, or leaves a tombstone when
    /// a folder of that name would show the skill again.
    async fn skill_delete_entry(
        &self,
        name: &str,
        absorbed_into: Option<&str>,
        src: &Source,
        index: &StoreIndex,
    ) -> Result<Outcome, AppError> {
        let mut message = format!("Skill '{name}' deleted.");
        if let Some(target) = absorbed_into {
            if target == name {
                return Ok(Err(format!("absorbed_into='{target}' cannot equal the skill being deleted.")));
            }
            if self.skill_find(target, index).await.is_none() {
                return Ok(Err(format!(
                    "absorbed_into='{target}' does not exist. Create or patch the umbrella skill first, then retry the delete."
                )));
            }
            message.push_str(&format!(" Content absorbed into '{target}'."));
        }
        let folder = match src {
            Source::Files(_) => true,
            Source::Store(_) => tokio::fs::metadata(self.skills_dir().join(name).join(SKILL_MD)).await.is_ok(),
        };
        let entry = folder.then(|| StoredSkill { deleted: true, updated_at: Some(self.inner.clock.now()), ..StoredSkill::default() });
        Ok(Ok((entry, json!({"success": true, "message": message}))))
    }

    /// A folder skill's files copied into new blobs: the entry that takes its place.
    pub(in crate::app) async fn skill_adopt(&self, dir: &std::path::Path, pending: &mut Pending) -> Result<StoredSkill, AppError> {
        let d = dir.to_path_buf();
        let files = tokio::task::spawn_blocking(move || folder_files(&d)).await.unwrap_or_default();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let mut entry = StoredSkill { updated_at: Some(self.inner.clock.now()), ..StoredSkill::default() };
        for (path, text) in files {
            if path == SKILL_MD {
                described(&mut entry, name, &text);
            }
            let f: FileRef = self.skill_blob_write(&text, pending).await?;
            entry.files.insert(path, f);
        }
        Ok(entry)
    }
}
