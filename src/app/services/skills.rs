//! [`Skills`]: the agent's skills as people see and manage them — `hermes-zero skills
//! list|show|export`, the dashboard's Skills tab (`/api/skills`) and `import` — over the same
//! store-over-folder view the agent uses (`app::skills`, `app::skill_store`).

use crate::app::skill_store::Pending;
use crate::app::skills::Source;
use crate::app::{App, AppError};
use crate::core::skill_write::SKILL_MD;
use serde_json::{Value, json};
use std::path::Path;

/// The skills service. Cheap to clone.
#[derive(Clone)]
pub struct Skills {
    app: App,
}

/// What [`Skills::import_folder`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SkillsImported {
    /// Skills copied into the store.
    pub imported: usize,
    /// Names already there with another `SKILL.md` (kept as they were).
    pub kept: Vec<String>,
}

/// Whether the skill `name` exists, in `store` or as `<skills_dir>/<name>/SKILL.md` (a skill
/// deleted in the store is gone even when its folder is there): `doctor`'s check of the
/// skills jobs bind.
pub async fn skill_exists(store: Option<&dyn crate::ports::Store>, skills_dir: &Path, name: &str) -> Result<bool, AppError> {
    let state = match store {
        Some(s) => crate::app::skill_store::stored_state(s, name).await?,
        None => None,
    };
    Ok(state.unwrap_or_else(|| crate::core::skill::check_name(name).is_ok_and(|n| skills_dir.join(n).join(SKILL_MD).is_file())))
}

impl App {
    /// The skills: list, show, export, delete, import.
    pub fn skills(&self) -> Skills {
        Skills { app: self.clone() }
    }
}

fn source_name(src: &Source) -> &'static str {
    match src {
        Source::Store(_) => "store",
        Source::Files(_) => "files",
    }
}

impl Skills {
    /// Every skill, sorted by name: `name`, `description`, `title` (when the front matter's
    /// name differs), `source` (`store` or `files`) and `category`.
    pub async fn list(&self) -> Result<Vec<Value>, AppError> {
        let store = self.app.skill_store_load().await?.index;
        let mut out = Vec::new();
        for e in self.app.skills_index_with(&store).await {
            let mut v = serde_json::to_value(&e).map_err(|x| AppError::BadRequest(x.to_string()))?;
            match store.skills.get(&e.name) {
                Some(s) => {
                    v["source"] = json!("store");
                    v["category"] = json!(s.category);
                }
                None => v["source"] = json!("files"),
            }
            out.push(v);
        }
        Ok(out)
    }

    /// One skill: its `SKILL.md` as `content`, its files, where it lives. `NotFound` when
    /// there is no such skill.
    pub async fn show(&self, name: &str) -> Result<Value, AppError> {
        let store = self.app.skill_store_load().await?.index;
        let src = self.app.skill_find(name, &store).await.ok_or_else(|| AppError::NotFound(format!("no skill named `{name}`")))?;
        let content = self.app.skill_file(&src, SKILL_MD).await?.unwrap_or_default();
        let entry = crate::core::skill::entry(name, &content);
        let category = match &src {
            Source::Store(s) => s.category.clone(),
            Source::Files(_) => None,
        };
        Ok(json!({
            "name": name, "description": entry.description, "title": entry.title, "source": source_name(&src),
            "category": category, "files": self.app.skill_paths(&src).await, "content": content,
        }))
    }

    /// Deletes a skill (a folder skill is hidden by a tombstone; its folder is untouched).
    pub async fn delete(&self, name: &str) -> Result<Value, AppError> {
        match self.app.skill_delete(name).await? {
            Ok(v) => Ok(v),
            Err(e) if e.contains("not found") => Err(AppError::NotFound(format!("no skill named `{name}`"))),
            Err(e) => Err(AppError::BadRequest(e)),
        }
    }

    /// Writes every skill into `dir/<name>/` (its `SKILL.md` and supporting files), in
    /// Hermes' layout, so the folder can serve as a `skills/` directory again. Returns how
    /// many skills were written. Files already there are overwritten.
    pub async fn export(&self, dir: &Path) -> Result<usize, AppError> {
        let store = self.app.skill_store_load().await?.index;
        let mut n = 0;
        for e in self.app.skills_index_with(&store).await {
            let Some(src) = self.app.skill_find(&e.name, &store).await else { continue };
            for path in self.app.skill_paths(&src).await {
                let Some(text) = self.app.skill_file(&src, &path).await? else { continue };
                let to = dir.join(&e.name).join(&path);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent).map_err(|x| AppError::BadRequest(format!("{}: {x}", parent.display())))?;
                }
                std::fs::write(&to, text).map_err(|x| AppError::BadRequest(format!("{}: {x}", to.display())))?;
            }
            n += 1;
        }
        Ok(n)
    }

    /// Copies each skill folder of a Hermes `skills/` directory (flat or in category
    /// folders) into the store, unless a skill of that name exists (in the store or this
    /// home's folder). A second run imports nothing.
    pub async fn import_folder(&self, from: &Path) -> Result<SkillsImported, AppError> {
        let mut found = Vec::new();
        crate::app::sessions::import::find_skills(from, 3, &mut found);
        let mut out = SkillsImported::default();
        for dir in found {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
            if crate::core::skill::check_name(&name).is_err() {
                continue;
            }
            let category = dir.parent().filter(|p| *p != from).and_then(|p| p.file_name()).and_then(|c| c.to_str()).map(str::to_string);
            let (n, d, c) = (name.as_str(), dir.as_path(), category.as_deref());
            let done = self
                .app
                .skill_store_change(n, |index, mut pending: Pending| async move {
                    let outcome = match self.app.skill_find(n, &index).await {
                        Some(src) => {
                            let theirs = std::fs::read_to_string(d.join(SKILL_MD)).ok();
                            let ours = self.app.skill_file(&src, SKILL_MD).await?;
                            Err(if theirs != ours { "kept" } else { "same" }.to_string())
                        }
                        None => {
                            let mut entry = self.app.skill_adopt(d, &mut pending).await?;
                            entry.category = c.map(str::to_string);
                            Ok((Some(entry), ()))
                        }
                    };
                    Ok((outcome, pending))
                })
                .await?;
            match done {
                Ok(()) => out.imported += 1,
                Err(why) if why == "kept" => out.kept.push(name),
                Err(_) => {}
            }
        }
        Ok(out)
    }
}
