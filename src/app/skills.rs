//! The installed skills as the agent sees them (docs/design.md#skills): the index of
//! `$HERMES_HOME/skills` (for the chat system prompt, `skills_list` and the dashboard) and one
//! skill's `SKILL.md` (for `skill_view`). The rules (front matter, names, the prompt block)
//! live in `core::skill`.
//!
//! Why cached, and when it scans: a scan reads every `SKILL.md`, so nothing scans at start-up
//! (a cold start never touches the skills directory). The first turn that needs the index
//! scans once and the result is kept in memory for the life of the process, with a signature
//! of the directory: its mtime and, per skill directory, the directory's and its `SKILL.md`'s
//! mtime and size. Later turns only stat those (no file is read); a changed signature — a
//! skill added, removed or edited — rescans. The signature is taken before the scan, so a
//! write racing a scan only causes one more rescan, never a stale index kept.

use super::App;
use crate::core::skill::{self, SkillEntry};
use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// The most of a `SKILL.md` read for the index (front matter and first lines).
const INDEX_READ_BYTES: u64 = 16 * 1024;

/// The most of a `SKILL.md` that `skill_view` returns.
pub(in crate::app) const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The process's cached index and the directory signature it was built from.
#[derive(Default)]
pub(in crate::app) struct SkillCache {
    last: Mutex<Option<(Signature, Arc<Vec<SkillEntry>>)>>,
}

/// What a cached index is checked against before it is reused.
#[derive(Debug, PartialEq)]
struct Signature {
    dir: Option<SystemTime>,
    skills: Vec<SkillStamp>,
}

/// One skill directory's name and mtime, and its `SKILL.md`'s mtime and size.
type SkillStamp = (OsString, Option<SystemTime>, Option<(SystemTime, u64)>);

impl SkillCache {
    /// The index of `dir`: the cached one while the signature holds, else a fresh scan.
    fn index(&self, dir: &Path) -> Arc<Vec<SkillEntry>> {
        let sig = signature(dir);
        if let Some((s, v)) = &*self.last.lock().unwrap_or_else(PoisonError::into_inner)
            && *s == sig
        {
            return v.clone();
        }
        let fresh = Arc::new(scan(dir));
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((sig, fresh.clone()));
        fresh
    }
}

fn signature(dir: &Path) -> Signature {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut skills: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| {
            let md = std::fs::metadata(e.path().join("SKILL.md")).ok();
            (e.file_name(), mtime(&e.path()), md.and_then(|m| Some((m.modified().ok()?, m.len()))))
        })
        .collect();
    skills.sort_by(|a, b| a.0.cmp(&b.0));
    Signature { dir: mtime(dir), skills }
}

/// Every `<dir>/<name>/SKILL.md` whose `<name>` is a valid skill name, sorted by name.
fn scan(dir: &Path) -> Vec<SkillEntry> {
    let mut out: Vec<SkillEntry> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            skill::check_name(&name).ok()?;
            let text = read_capped(&e.path().join("SKILL.md"), INDEX_READ_BYTES).ok()?;
            Some(skill::entry(&name, &text))
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Up to `cap` bytes of a file as text (a cut in the middle of a character is dropped).
fn read_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(cap).read_to_end(&mut bytes)?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut b = e.into_bytes();
            b.truncate(valid);
            String::from_utf8(b).unwrap_or_default()
        }
    })
}

impl App {
    /// Installed skills, sorted by name (cached per process; see the module doc).
    pub async fn skills_index(&self) -> Arc<Vec<SkillEntry>> {
        let (app, dir) = (self.clone(), self.skills_dir());
        tokio::task::spawn_blocking(move || app.inner.skills.index(&dir)).await.unwrap_or_default()
    }

    /// The `SKILL.md` of the skill `name` (capped at [`MAX_SKILL_BYTES`]): `Ok(None)` when
    /// there is no such skill, `Err` for a name that is not a plain skill name or a read
    /// failure.
    pub(in crate::app) async fn skill_text(&self, name: &str) -> Result<Option<(String, bool)>, String> {
        let name = skill::check_name(name)?.to_string();
        let path = self.skills_dir().join(&name).join("SKILL.md");
        let read = tokio::task::spawn_blocking(move || {
            let len = std::fs::metadata(&path)?.len();
            Ok::<_, std::io::Error>((read_capped(&path, MAX_SKILL_BYTES)?, len > MAX_SKILL_BYTES))
        });
        match read.await {
            Ok(Ok(found)) => Ok(Some(found)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Ok(Err(e)) => Err(format!("Failed to read skill '{name}': {e}")),
            Err(e) => Err(format!("Failed to read skill '{name}': {e}")),
        }
    }

    /// The message a `/<skill-name> [text]` chat message stands for (docs/sessions.md#commands):
    /// Hermes' invocation with that skill's `SKILL.md` and the text as the instruction.
    /// `None` when `text` names no installed skill (it then goes on as typed).
    pub(in crate::app) async fn skill_message(&self, text: &str) -> Option<String> {
        let (name, instruction) = crate::core::commands::skill_word(text)?;
        let index = self.skills_index().await;
        let entry = index.iter().find(|s| s.name.eq_ignore_ascii_case(&name) || s.name.replace('_', "-").eq_ignore_ascii_case(&name))?;
        match self.skill_text(&entry.name).await {
            Ok(Some((md, _))) => Some(crate::core::commands::skill_invocation(&entry.name, &md, instruction)),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(skill = %entry.name, error = %e, "skill command: SKILL.md unreadable; the message goes on as typed");
                None
            }
        }
    }

    /// The system prompt of a chat turn: SOUL.md (or the default) and the memory snapshot
    /// (`memory_system_prompt_from`), then the skills index when skills are installed.
    #[cfg(test)]
    pub(in crate::app) async fn chat_system_prompt(&self, session: &crate::core::ids::SessionId) -> String {
        self.chat_system_prompt_from(session, None, None).await
    }

    /// [`App::chat_system_prompt`] with the session's snapshot note as the turn's folded read
    /// found it (`Some(None)`: none yet), so it is not read again.
    pub(in crate::app) async fn chat_system_prompt_from(
        &self,
        session: &crate::core::ids::SessionId,
        known: Option<Option<&str>>,
        origin: Option<&crate::core::ids::Origin>,
    ) -> String {
        let base = self.memory_system_prompt_from(session, known, origin).await;
        let index = skill::index_prompt(&self.skills_index().await);
        if index.is_empty() { base } else { format!("{}\n\n{index}", base.trim_end()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_cached_until_the_directory_changes() {
        let dir = std::env::temp_dir().join(format!("hz-skills-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = SkillCache::default();
        assert!(cache.index(&dir).is_empty(), "no directory: no skills");
        let write = |name: &str, text: &str| {
            std::fs::create_dir_all(dir.join(name)).unwrap();
            std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
        };
        write("news", "---\ndescription: Summarise the news\n---\nbody");
        std::fs::create_dir_all(dir.join("no-skill-file")).unwrap();
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        std::fs::write(dir.join(".hidden").join("SKILL.md"), "x").unwrap();
        let first = cache.index(&dir);
        assert_eq!(first.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["news"]);
        assert!(Arc::ptr_eq(&first, &cache.index(&dir)), "unchanged directory: the cached index");
        // An edit that changes the size is seen without waiting for an mtime tick.
        write("news", "---\ndescription: Summarise today's news, briefly\n---\nbody");
        assert_eq!(cache.index(&dir)[0].description, "Summarise today's news, briefly");
        write("alpha", "# Alpha\nFirst.");
        assert_eq!(cache.index(&dir).iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["alpha", "news"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
