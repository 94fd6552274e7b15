//! The skills as the agent sees them (docs/design.md#skills): the store's skills (written by
//! `skill_manage`, imported; `app::skill_store`) over the folders of `$HERMES_HOME/skills`,
//! which stay the source of every skill nobody edited and are read lazily (nothing happens
//! at start-up). Gives the index (for the chat system prompt, `skills_list`, the dashboard
//! and the CLI), where one skill lives ([`Source`]) and its files. The rules (front matter,
//! names, the prompt block) live in `core::skill`.
//!
//! A chat session's skills index is frozen when the session starts (its `skills_snapshot`
//! note, read with the transcript): one store read per session, none per turn.
//!
//! Why the folder scan is cached: a scan reads every `SKILL.md`. The first use scans once and
//! keeps the result for the life of the process, with a signature of the directory: its
//! mtime and, per skill directory, the directory's and its `SKILL.md`'s mtime and size.
//! Later uses only stat those (no file is read); a changed signature rescans. The signature
//! is taken before the scan, so a write racing a scan only causes one more rescan.

use super::skill_store::StoreIndex;
pub(in crate::app) use super::skill_store::StoredSkill;
use super::{App, AppError};
use crate::core::skill::{self, SkillEntry};
use crate::core::skill_write;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// The most of a `SKILL.md` read for the index (front matter and first lines).
const INDEX_READ_BYTES: u64 = 16 * 1024;

/// Name of a session's frozen skills index note (`TurnStore`; read with its transcript).
pub(in crate::app) const SKILLS_NOTE: &str = "skills_snapshot";

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

/// Where a skill's files are: in the store (created or edited there), or under
/// `$HERMES_HOME/skills/<name>/` (nobody edited it).
pub(in crate::app) enum Source {
    /// In the store.
    Store(StoredSkill),
    /// The folder under `skills/`.
    Files(PathBuf),
}

/// The files of a skill folder that travel with it (`SKILL.md` and the allowed folders'
/// text files), by path inside the skill, sorted; at most `MAX_SKILL_FILE_BYTES` each.
pub(in crate::app) fn folder_files(dir: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.filter_map(Result::ok) {
            let Ok(name) = e.file_name().into_string() else { continue };
            let (path, Ok(t)) = (format!("{rel}/{name}"), e.file_type()) else { continue };
            if t.is_dir() {
                walk(&e.path(), &path, out);
            } else if t.is_file() {
                match read_capped(&e.path(), skill_write::MAX_SKILL_FILE_BYTES as u64) {
                    Ok(text) => out.push((path, text)),
                    Err(err) => tracing::warn!(file = %e.path().display(), error = %err, "skill file not read"),
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(text) = read_capped(&dir.join(skill_write::SKILL_MD), skill_write::MAX_SKILL_FILE_BYTES as u64) {
        out.push((skill_write::SKILL_MD.to_string(), text));
    }
    for sub in skill_write::ALLOWED_SUBDIRS {
        walk(&dir.join(sub), sub, &mut out);
    }
    out.sort();
    out
}

impl App {
    /// The skills index: the store's skills and the files' skills nobody edited or deleted,
    /// sorted by name. A store failure leaves the index with the files' skills only.
    pub async fn skills_index(&self) -> Arc<Vec<SkillEntry>> {
        match self.skill_store_load().await {
            Ok(l) => Arc::new(self.skills_index_with(&l.index).await),
            Err(e) => {
                tracing::warn!(error = %e, "skills in the store unavailable; listing the skills folder only");
                self.files_index().await
            }
        }
    }

    /// The skills of `$HERMES_HOME/skills` (cached per process; see the module doc).
    async fn files_index(&self) -> Arc<Vec<SkillEntry>> {
        let (app, dir) = (self.clone(), self.skills_dir());
        tokio::task::spawn_blocking(move || app.inner.skills.index(&dir)).await.unwrap_or_default()
    }

    /// The merged index over an index document already read.
    pub(in crate::app) async fn skills_index_with(&self, store: &StoreIndex) -> Vec<SkillEntry> {
        let files = self.files_index().await;
        let mut out: Vec<SkillEntry> = files.iter().filter(|e| !store.skills.contains_key(&e.name)).cloned().collect();
        out.extend(store.skills.iter().filter(|(_, s)| !s.deleted).map(|(n, s)| SkillEntry {
            name: n.clone(),
            description: s.description.clone(),
            title: s.title.clone(),
        }));
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Where the skill `name` is, given the index document (`None`: no such skill).
    pub(in crate::app) async fn skill_find(&self, name: &str, store: &StoreIndex) -> Option<Source> {
        match store.skills.get(name) {
            Some(s) if s.deleted => None,
            Some(s) => Some(Source::Store(s.clone())),
            None => {
                let dir = self.skills_dir().join(skill::check_name(name).ok()?);
                let found = tokio::fs::metadata(dir.join(skill_write::SKILL_MD)).await.is_ok_and(|m| m.is_file());
                found.then_some(Source::Files(dir))
            }
        }
    }

    /// One file of a skill (`SKILL.md` or a supporting file's path): `Ok(None)` when the
    /// skill has no such file.
    pub(in crate::app) async fn skill_file(&self, src: &Source, path: &str) -> Result<Option<String>, AppError> {
        match src {
            Source::Store(s) => match s.files.get(path) {
                Some(f) => Ok(Some(self.skill_blob_read(f).await?)),
                None => Ok(None),
            },
            Source::Files(dir) => {
                let p = dir.join(path);
                match tokio::task::spawn_blocking(move || read_capped(&p, skill_write::MAX_SKILL_FILE_BYTES as u64)).await {
                    Ok(Ok(t)) => Ok(Some(t)),
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Ok(Err(e)) => Err(AppError::BadRequest(format!("skill file {path} could not be read: {e}"))),
                    Err(e) => Err(AppError::BadRequest(e.to_string())),
                }
            }
        }
    }

    /// The paths of a skill's files, sorted.
    pub(in crate::app) async fn skill_paths(&self, src: &Source) -> Vec<String> {
        match src {
            Source::Store(s) => s.files.keys().cloned().collect(),
            Source::Files(dir) => {
                let dir = dir.clone();
                let files = tokio::task::spawn_blocking(move || folder_files(&dir)).await.unwrap_or_default();
                files.into_iter().map(|(p, _)| p).collect()
            }
        }
    }

    /// The `SKILL.md` of the skill `name` (capped at [`MAX_SKILL_BYTES`]): `Ok(None)` when
    /// there is no such skill, `Err` for a name that is not a plain skill name or a read
    /// failure.
    pub(in crate::app) async fn skill_text(&self, name: &str) -> Result<Option<(String, bool)>, String> {
        let name = skill::check_name(name)?.to_string();
        let failed = |e: AppError| format!("Failed to read skill '{name}': {e}");
        let store = self.skill_store_load().await.map_err(failed)?;
        let Some(src) = self.skill_find(&name, &store.index).await else { return Ok(None) };
        let Some(text) = self.skill_file(&src, skill_write::SKILL_MD).await.map_err(failed)? else { return Ok(None) };
        let cap = usize::try_from(MAX_SKILL_BYTES).unwrap_or(usize::MAX);
        if text.len() <= cap {
            return Ok(Some((text, false)));
        }
        let mut cut = cap;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        Ok(Some((text[..cut].to_string(), true)))
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
        self.chat_system_prompt_from(session, None, None, None).await
    }

    /// [`App::chat_system_prompt`] with the session's snapshot notes as the turn's folded
    /// read found them (`Some(None)`: none yet), so they are not read again. The skills index
    /// is frozen per session like the memory snapshot: taken on the session's first turn
    /// (one store read) and kept as its note, so later turns read nothing more and a skill
    /// written in a chat shows from the next session on.
    pub(in crate::app) async fn chat_system_prompt_from(
        &self,
        session: &crate::core::ids::SessionId,
        known: Option<Option<&str>>,
        known_skills: Option<Option<&str>>,
        origin: Option<&crate::core::ids::Origin>,
    ) -> String {
        let base = self.memory_system_prompt_from(session, known, origin).await;
        let index = self.skills_snapshot(session, known_skills).await;
        if index.is_empty() { base } else { format!("{}\n\n{index}", base.trim_end()) }
    }

    /// The session's frozen skills index block (see [`App::chat_system_prompt_from`]).
    async fn skills_snapshot(&self, session: &crate::core::ids::SessionId, known: Option<Option<&str>>) -> String {
        let note = match known {
            Some(k) => k.map(str::to_string),
            None => self.inner.store.turn_read(session, 0, &[SKILLS_NOTE]).await.ok().and_then(|mut r| r.notes.remove(SKILLS_NOTE)),
        };
        if let Some(n) = note {
            return serde_json::from_str::<serde_json::Value>(&n)
                .ok()
                .and_then(|v| v["text"].as_str().map(str::to_string))
                .unwrap_or_default();
        }
        let store = match self.skill_store_load().await {
            Ok(l) => l.index,
            Err(e) => {
                tracing::warn!(session_id = %session, error = %e, "skills in the store unavailable; this turn lists the skills folder only");
                return skill::index_prompt(&self.files_index().await);
            }
        };
        let text = skill::index_prompt(&self.skills_index_with(&store).await);
        let note = serde_json::json!({ "text": text }).to_string();
        if let Err(e) = self.inner.store.turn_put_note(session, SKILLS_NOTE, Some(&note)).await {
            tracing::warn!(session_id = %session, error = %e, "skills index snapshot not stored; the next turn takes it again");
        }
        text
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
