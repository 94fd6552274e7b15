//! Skills kept in the store (docs/design/tools.md#skills-in-the-store), so an agent on
//! Lambda + DynamoDB can write skills: one index document (`skills/index`) listing every
//! skill the store holds — created or edited by `skill_manage`, imported, or deleted (a
//! tombstone that hides a skill of `$HERMES_HOME/skills`) — and each file's text in blob
//! records (`skills/blob/<id>/<part>`, cut into parts that fit a DynamoDB item).
//!
//! Writes: new blobs first (fresh ids, never overwritten), then the index by compare-and-set
//! (`MetaStore::swap_meta`); a writer that lost re-reads and redoes its change, and the blobs
//! nobody references any more are deleted after the index moved on. A reader thus always sees
//! a whole index whose blobs exist. Only this module knows the record layout.

use super::{App, AppError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The meta key of the index document.
pub(in crate::app) const INDEX_KEY: &str = "skills/index";
/// Prefix of the blob records.
const BLOB_PREFIX: &str = "skills/blob/";
/// Most bytes of one blob part (a DynamoDB item is at most 400 KB).
const PART_BYTES: usize = 256 * 1024;
/// Most bytes of the index document (it is one item too).
const MAX_INDEX_BYTES: usize = 350 * 1024;
/// Compare-and-set attempts of one change.
const ATTEMPTS: usize = 5;

/// The index document: every skill the store holds, by name.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(in crate::app) struct StoreIndex {
    /// The skills, by name.
    #[serde(default)]
    pub skills: BTreeMap<String, StoredSkill>,
}

/// One skill in the store, or the tombstone of a deleted one.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(in crate::app) struct StoredSkill {
    /// A tombstone: the skill was deleted (its files under `skills/` are hidden).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Hermes' category folder (`create`'s `category`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The front matter's description, for the index.
    #[serde(default)]
    pub description: String,
    /// The front matter's `name` when it differs from the skill's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its files by path inside the skill (`SKILL.md`, `references/…`).
    #[serde(default)]
    pub files: BTreeMap<String, FileRef>,
    /// When it was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Where one file's text is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::app) struct FileRef {
    /// The blob id.
    pub blob: String,
    /// How many parts it has.
    pub parts: u32,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The index as read: its raw text (what a compare-and-set expects) and its content.
pub(in crate::app) struct Loaded {
    raw: Option<String>,
    /// The content.
    pub index: StoreIndex,
}

/// Blobs written by a change in progress: kept when it commits, deleted when it loses.
#[derive(Default)]
pub(in crate::app) struct Pending {
    written: Vec<FileRef>,
}

fn blob_key(blob: &str, part: u32) -> String {
    format!("{BLOB_PREFIX}{blob}/{part}")
}

/// `text` cut into parts of at most [`PART_BYTES`], never inside a character.
fn parts(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(PART_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// The blobs of `before` that `after` no longer references.
fn unreferenced(before: Option<&StoredSkill>, after: Option<&StoredSkill>) -> Vec<FileRef> {
    let mut out = Vec::new();
    for f in before.map(|b| b.files.values().cloned().collect::<Vec<_>>()).unwrap_or_default() {
        if !after.is_some_and(|a| a.files.values().any(|g| *g == f)) {
            out.push(f);
        }
    }
    out
}

/// Whether `store` holds the skill `name`: `Some(true)` present, `Some(false)` deleted (a
/// tombstone hides its folder), `None` not in the store (its folder decides). For `doctor`,
/// which has a store but no app.
pub(in crate::app) async fn stored_state(store: &dyn crate::ports::Store, name: &str) -> Result<Option<bool>, AppError> {
    let index: StoreIndex = match store.get_meta(INDEX_KEY).await? {
        Some(r) => serde_json::from_str(&r).map_err(|e| AppError::BadRequest(format!("stored skills index is not valid: {e}")))?,
        None => return Ok(None),
    };
    Ok(index.skills.get(name).map(|s| !s.deleted))
}

impl App {
    /// The index document (one store read).
    pub(in crate::app) async fn skill_store_load(&self) -> Result<Loaded, AppError> {
        let raw = self.inner.store.get_meta(INDEX_KEY).await?;
        let index = match &raw {
            Some(r) => serde_json::from_str(r).map_err(|e| AppError::BadRequest(format!("stored skills index is not valid: {e}")))?,
            None => StoreIndex::default(),
        };
        Ok(Loaded { raw, index })
    }

    /// One stored file's text.
    pub(in crate::app) async fn skill_blob_read(&self, f: &FileRef) -> Result<String, AppError> {
        let mut text = String::with_capacity(usize::try_from(f.bytes).unwrap_or(0));
        for part in 0..f.parts.max(1) {
            match self.inner.store.get_meta(&blob_key(&f.blob, part)).await? {
                Some(p) => text.push_str(&p),
                None if f.bytes == 0 => {}
                None => return Err(AppError::NotFound(format!("a stored skill file is missing its part {part} ({})", f.blob))),
            }
        }
        Ok(text)
    }

    /// Stores `text` as a new blob (recorded in `pending`).
    pub(in crate::app) async fn skill_blob_write(&self, text: &str, pending: &mut Pending) -> Result<FileRef, AppError> {
        let blob = format!("{:016x}{:08x}", rand::random::<u64>(), rand::random::<u32>());
        let ps = parts(text);
        let f = FileRef { blob, parts: u32::try_from(ps.len().max(1)).unwrap_or(u32::MAX), bytes: text.len() as u64 };
        pending.written.push(f.clone());
        for (i, p) in ps.iter().enumerate() {
            self.inner.store.put_meta(&blob_key(&f.blob, u32::try_from(i).unwrap_or(u32::MAX)), p).await?;
        }
        if ps.is_empty() {
            self.inner.store.put_meta(&blob_key(&f.blob, 0), "").await?;
        }
        Ok(f)
    }

    /// Deletes blobs (best effort: a leftover blob costs space, never correctness).
    async fn skill_blobs_drop(&self, refs: impl IntoIterator<Item = &FileRef>) {
        for f in refs {
            for part in 0..f.parts.max(1) {
                if let Err(e) = self.inner.store.delete_meta(&blob_key(&f.blob, part)).await {
                    tracing::warn!(blob = %f.blob, error = %e, "unreferenced skill blob not deleted");
                }
            }
        }
    }

    /// Applies one change to the index by compare-and-set. `change` gets the index as read
    /// and a [`Pending`] for the blobs it writes; it returns the new entry of its skill
    /// (`None` removes it) and its result, or a refusal (nothing is written). A lost race
    /// re-reads and calls `change` again.
    pub(in crate::app) async fn skill_store_change<R, F, Fut>(&self, name: &str, mut change: F) -> Result<Result<R, String>, AppError>
    where
        F: FnMut(StoreIndex, Pending) -> Fut,
        Fut: std::future::Future<Output = Result<(Result<(Option<StoredSkill>, R), String>, Pending), AppError>>,
    {
        for _ in 0..ATTEMPTS {
            let loaded = self.skill_store_load().await?;
            let before = loaded.index.skills.get(name).cloned();
            let (outcome, pending) = change(loaded.index.clone(), Pending::default()).await?;
            let (entry, out) = match outcome {
                Ok(x) => x,
                Err(refusal) => {
                    self.skill_blobs_drop(&pending.written).await;
                    return Ok(Err(refusal));
                }
            };
            let mut next = loaded.index;
            match entry.clone() {
                Some(e) => next.skills.insert(name.to_string(), e),
                None => next.skills.remove(name),
            };
            let raw = serde_json::to_string(&next).map_err(|e| AppError::BadRequest(e.to_string()))?;
            if raw.len() > MAX_INDEX_BYTES {
                self.skill_blobs_drop(&pending.written).await;
                return Ok(Err(format!("The skill store is full ({} kB of index); delete unused skills first.", raw.len() / 1024)));
            }
            if self.inner.store.swap_meta(INDEX_KEY, loaded.raw.as_deref(), &raw).await? {
                let dropped = unreferenced(before.as_ref(), entry.as_ref());
                self.skill_blobs_drop(&dropped).await;
                return Ok(Ok(out));
            }
            tracing::info!(skill = name, "skills index changed under a write; applying it again");
            self.skill_blobs_drop(&pending.written).await;
        }
        Err(AppError::Contended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fit_an_item_and_never_split_a_character() {
        assert!(parts("").is_empty());
        let text = "é".repeat(PART_BYTES); // 2 bytes each: two parts' worth
        let ps = parts(&text);
        assert_eq!(ps.len(), 2);
        assert!(ps.iter().all(|p| p.len() <= PART_BYTES));
        assert_eq!(ps.concat(), text);
    }
}
