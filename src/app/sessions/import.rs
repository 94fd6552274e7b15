//! `hermes-zero import`: bringing a Hermes home over — its sessions (through the `Store` port,
//! so SQLite and DynamoDB alike) and its files (SOUL.md, skills, jobs.json, memory files).
//!
//! Idempotent: a session already in the store, or a file already in this home, is left
//! alone. A session becomes visible only with its last write (entry + record), so an
//! interrupted import leaves nothing half-shown, and the next run resumes it.

use crate::app::{App, AppError};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{ImportedSession, Message, SessionEntry, SessionRecord};
use crate::ports::{SessionChange, StoreError};
use std::path::Path;

/// Messages per store write: DynamoDB allows 100 items per transaction (entry, record and
/// counter included).
const CHUNK: usize = 90;
/// Encoded message bytes per store write: DynamoDB allows 4 MB per transaction, and Hermes
/// transcripts often hold long tool results, so 90 messages can be far more than that.
const CHUNK_BYTES: usize = 3_000_000;
/// What one stored message costs beyond its JSON (keys, attribute names).
const ITEM_OVERHEAD: usize = 200;

/// Splits `messages` into store writes of at most [`CHUNK`] messages and [`CHUNK_BYTES`]
/// (one larger message goes alone), in order.
fn chunks(messages: &[Message]) -> Vec<&[Message]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, m) in messages.iter().enumerate() {
        let size = serde_json::to_string(m).map_or(0, |j| j.len()) + ITEM_OVERHEAD;
        if i > start && (i - start == CHUNK || bytes + size > CHUNK_BYTES) {
            out.push(&messages[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < messages.len() {
        out.push(&messages[start..]);
    }
    out
}

/// What importing one session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionImport {
    /// Written under its own `imported-` key, with this many messages.
    Imported(usize),
    /// Written as its chat's current session (Hermes' routing), with this many messages: the
    /// chat's next message continues it.
    Continued(usize),
    /// Current in a chat there, but that chat already has a session here (kept): written under
    /// its own `imported-` key, with this many messages.
    ChatTaken(usize, SessionKey),
    /// Already in the store; nothing written.
    Present,
}

/// The session key an imported session lives under: its own key per session, on the
/// platform it came from, so it is listed and can be read but never receives a live chat
/// (`agent:main:<source>:dm:imported-<id>`).
pub fn imported_key(s: &ImportedSession) -> Result<(SessionKey, Origin), AppError> {
    let clean: String = s.source.to_ascii_lowercase().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
    let platform = if clean.is_empty() { "hermes".to_string() } else { clean };
    let user = s.user_id.as_deref().filter(|u| !u.is_empty() && !u.contains(':') && !u.contains(char::is_whitespace));
    let origin = Origin::new(&platform, &format!("imported-{}", s.id), ChatType::Dm, user, None)
        .map_err(|e| AppError::BadRequest(format!("session {}: {e}", s.id)))?;
    let key = SessionKey::derive(&origin, Default::default());
    Ok((key, origin))
}

impl App {
    /// Imports one session with its transcript, keeping id, title, times and order. Does
    /// nothing if a session with that id exists. Long transcripts are appended in chunks
    /// (by count and by size) first; the entry and record are written last, with the final
    /// chunk, in one write.
    pub(in crate::app) async fn import_session(&self, s: &ImportedSession, messages: &[Message]) -> Result<SessionImport, AppError> {
        let id = SessionId::parse(&s.id).map_err(|e| AppError::BadRequest(format!("session `{}`: {e}", s.id)))?;
        if self.inner.store.get_session(&id).await?.is_some() {
            return Ok(SessionImport::Present);
        }
        // Hermes' current session of a chat becomes that chat's current session here: under
        // the key the chat's next message derives (this profile, these key rules). Not when it
        // ended there (Hermes prunes such routes) or the chat has a session here already.
        let routed = match s.route.as_ref().filter(|_| s.ended_at.is_none()) {
            Some(o) => {
                let key = SessionKey::derive_in(self.profile(), o, self.key_rules());
                Some((self.inner.store.get_entry(&key).await?.is_none(), key, o.clone()))
            }
            None => None,
        };
        let (key, origin) = match &routed {
            Some((true, key, o)) => (key.clone(), o.clone()),
            _ => imported_key(s)?,
        };
        // A previous run may have stopped after some chunks: resume after what is there.
        let done = usize::try_from(self.inner.store.count_messages(&id).await?).unwrap_or(usize::MAX).min(messages.len());
        let mut parts = chunks(&messages[done..]);
        let last = parts.pop().unwrap_or_default();
        for chunk in parts {
            self.inner.store.append_messages(&id, chunk, None).await?;
        }
        let last_at = messages.last().map(|m| m.at).into_iter().chain(s.ended_at).chain([s.started_at]).max().unwrap_or(s.started_at);
        let mut entry = SessionEntry::new(key.clone(), id.clone(), origin.clone(), s.started_at);
        entry.updated_at = last_at;
        let record = SessionRecord {
            session_id: id.clone(),
            session_key: key,
            platform: origin.platform,
            title: s.title.clone(),
            started_at: s.started_at,
            ended_at: None,
            end_reason: None,
        };
        let mut changes = vec![SessionChange::Start(record)];
        if !last.is_empty() {
            changes.push(SessionChange::Append { session_id: id.clone(), messages: last.to_vec() });
        }
        if let Some(at) = s.ended_at {
            let reason = s.end_reason.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| "ended".into());
            changes.push(SessionChange::End { session_id: id.clone(), reason, at });
        }
        let n = messages.len();
        match self.inner.store.put_entry(&entry, &changes).await {
            Ok(_) => Ok(match routed {
                Some((true, ..)) => SessionImport::Continued(n),
                Some((false, taken, _)) => SessionImport::ChatTaken(n, taken),
                None => SessionImport::Imported(n),
            }),
            // Someone else imported it at the same moment.
            Err(StoreError::Conflict(_)) if self.inner.store.get_session(&id).await?.is_some() => Ok(SessionImport::Present),
            Err(e) => Err(e.into()),
        }
    }
}

/// What copying a file or directory did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// Copied.
    Yes,
    /// The source does not exist.
    NoSource,
    /// The destination already has the same content.
    Same,
    /// The destination exists with other content; kept.
    Kept,
}

/// Copies one file unless the destination exists (idempotent; never overwrites). What is
/// imported (SOUL.md, memory files, skills, jobs) is private: files 0600, the directories
/// made for them 0700, whatever the source's modes.
pub fn copy_file(from: &Path, to: &Path) -> std::io::Result<Copied> {
    if !from.is_file() {
        return Ok(Copied::NoSource);
    }
    if to.exists() {
        return Ok(if std::fs::read(from)? == std::fs::read(to)? { Copied::Same } else { Copied::Kept });
    }
    if let Some(dir) = to.parent() {
        private_dir(dir)?;
    }
    copy_private(from, to)?;
    Ok(Copied::Yes)
}

/// Creates `dir` and its missing parents with mode 0700.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Copies the bytes of `from` to a new file `to` created with mode 0600 (not the source's
/// mode, which `std::fs::copy` would keep).
fn copy_private(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut out = opts.open(to)?;
    std::io::copy(&mut std::fs::File::open(from)?, &mut out)?;
    Ok(())
}

/// The skills under Hermes' `skills/` (flat or in category folders): every directory with a
/// `SKILL.md`, by directory name. Hidden directories are skipped.
pub fn find_skills(dir: &Path, depth: usize, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut dirs: Vec<_> = entries.filter_map(Result::ok).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
    dirs.sort();
    for d in dirs {
        let Some(name) = d.file_name().and_then(|n| n.to_str()) else { continue };
        if name.starts_with('.') {
            continue;
        }
        if d.join("SKILL.md").is_file() {
            out.push(d);
        } else if depth > 0 {
            find_skills(&d, depth - 1, out);
        }
    }
}

/// Entries of a Hermes memory file: blocks separated by lines holding only `§` (Hermes'
/// `ENTRY_DELIMITER`), empty ones and repeats not counted (Hermes drops them on load).
pub fn memory_entries(text: &str) -> usize {
    let mut seen = std::collections::HashSet::new();
    let mut entry = String::new();
    let mut count = 0;
    for line in text.lines().chain(std::iter::once("§")) {
        if line.trim() == "§" {
            let e = entry.trim().to_string();
            if !e.is_empty() && seen.insert(e) {
                count += 1;
            }
            entry.clear();
        } else {
            entry.push_str(line);
            entry.push('\n');
        }
    }
    count
}

/// Variable names set in a `.env` file (never their values).
pub fn env_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("export ").unwrap_or(l).split_once('='))
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| {
            k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One platform's approved users by id, as in Hermes' `<platform>-approved.json`.
pub type ApprovedList = std::collections::BTreeMap<String, crate::core::pairing::Approved>;

/// Hermes' approved pairing lists (`gateway/pairing.py`): `<platform>-approved.json` under
/// `platforms/pairing/` and the legacy `pairing/` (which Hermes prefers when it has content,
/// so its entries win), by platform. Unreadable files and bad platform names become notes.
pub fn approved_lists(src: &Path) -> (Vec<(String, ApprovedList)>, Vec<String>) {
    use crate::core::pairing::Approved;
    let mut by: std::collections::BTreeMap<String, ApprovedList> = Default::default();
    let mut notes = Vec::new();
    for dir in [src.join("platforms").join("pairing"), src.join("pairing")] {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let Some(platform) = f.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix("-approved.json")) else { continue };
            if platform.starts_with('_') || !crate::core::pairing::is_platform_name(platform) {
                notes.push(format!("{} skipped: `{platform}` is not a platform name", f.display()));
                continue;
            }
            let parsed =
                std::fs::read_to_string(&f).ok().and_then(|t| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&t).ok());
            let Some(map) = parsed else {
                notes.push(format!("{} skipped: not a JSON object", f.display()));
                continue;
            };
            let slot = by.entry(platform.to_string()).or_default();
            for (id, v) in map {
                let a = serde_json::from_value::<Approved>(v).unwrap_or(Approved { user_name: String::new(), approved_at: 0.0 });
                slot.insert(id, a);
            }
        }
    }
    (by.into_iter().collect(), notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::session::Role;
    use chrono::{DateTime, Duration, Utc};

    fn session(id: &str, n: usize) -> (ImportedSession, Vec<Message>) {
        let t0: DateTime<Utc> = "2026-01-01T10:00:00Z".parse().unwrap();
        let s = ImportedSession {
            id: id.into(),
            source: "Telegram!".into(),
            user_id: Some("7".into()),
            title: None,
            started_at: t0,
            ended_at: None,
            end_reason: None,
            route: None,
        };
        let msgs = (0..n).map(|i| Message::text(Role::User, format!("m{i}"), t0 + Duration::seconds(i as i64))).collect();
        (s, msgs)
    }

    #[tokio::test]
    async fn long_transcripts_import_in_chunks_and_an_interrupted_import_resumes() {
        let now = "2026-03-01T00:00:00Z".parse().unwrap();
        let app = crate::test_support::TestApp::new(now).yaml("{}").llm(crate::test_support::CountingLlm::new("x")).build();
        let (s, msgs) = session("20260101_100000_abcdef", 200);
        // A previous run stopped after its first chunk: the transcript exists, the record does not.
        let id = SessionId::parse(&s.id).unwrap();
        app.inner.store.append_messages(&id, &msgs[..CHUNK], None).await.unwrap();
        assert!(app.inner.store.list_entries(10).await.unwrap().is_empty(), "nothing shows before the last write");
        assert_eq!(app.import_session(&s, &msgs).await.unwrap(), SessionImport::Imported(200));
        let got = app.inner.store.recent_messages(&id, 1000).await.unwrap();
        assert_eq!(got.iter().map(|m| m.content.clone()).collect::<Vec<_>>(), msgs.iter().map(|m| m.content.clone()).collect::<Vec<_>>());
        assert_eq!(app.import_session(&s, &msgs).await.unwrap(), SessionImport::Present);
        let e = app.inner.store.list_entries(10).await.unwrap();
        assert_eq!(e[0].session_key.as_str(), "agent:main:telegram:dm:imported-20260101_100000_abcdef");
        assert_eq!(e[0].updated_at, msgs[199].at);
        let (bad, m) = session("not an id", 1);
        assert!(matches!(app.import_session(&bad, &m).await, Err(AppError::BadRequest(_))));
    }

    #[tokio::test]
    async fn a_routed_session_becomes_its_chats_current_session_unless_the_chat_has_one() {
        let now = "2026-03-01T00:00:00Z".parse().unwrap();
        let app = crate::test_support::TestApp::new(now).yaml("{}").llm(crate::test_support::CountingLlm::new("x")).build();
        let chat = Origin::new("telegram", "5", ChatType::Dm, Some("5"), None).unwrap();
        let (mut a, m) = session("20260101_100000_aaaaaa", 2);
        a.route = Some(chat.clone());
        assert_eq!(app.import_session(&a, &m).await.unwrap(), SessionImport::Continued(2));
        let key = SessionKey::derive(&chat, Default::default());
        assert_eq!(app.inner.store.get_entry(&key).await.unwrap().unwrap().session_id.as_str(), a.id);
        // Another session routed to the same chat: the chat keeps the one it has.
        let (mut b, m) = session("20260101_100000_bbbbbb", 1);
        b.route = Some(chat.clone());
        assert_eq!(app.import_session(&b, &m).await.unwrap(), SessionImport::ChatTaken(1, key.clone()));
        assert_eq!(app.inner.store.get_entry(&key).await.unwrap().unwrap().session_id.as_str(), a.id);
        // An ended session is no chat's current one, whatever the index says.
        let (mut c, m) = session("20260101_100000_cccccc", 1);
        let other = Origin::new("telegram", "6", ChatType::Dm, Some("6"), None).unwrap();
        (c.route, c.ended_at) = (Some(other.clone()), Some(now));
        assert_eq!(app.import_session(&c, &m).await.unwrap(), SessionImport::Imported(1));
        assert!(app.inner.store.get_entry(&SessionKey::derive(&other, Default::default())).await.unwrap().is_none());
    }

    #[test]
    fn chunks_hold_at_most_90_messages_and_3_mb_in_order() {
        let (_, small) = session("20260101_100000_abcdef", 200);
        let sizes: Vec<usize> = chunks(&small).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [90, 90, 20]);
        assert!(chunks(&[]).is_empty());
        // 40 tool results of 200 kB each: 8 MB of transcript, 14 per write; a 5 MB one alone.
        let (_, mut big) = session("20260101_100000_abcdef", 40);
        big.iter_mut().for_each(|m| m.content = "x".repeat(200_000));
        big[20].content = "y".repeat(5_000_000);
        let parts = chunks(&big);
        let sizes: Vec<usize> = parts.iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [14, 6, 1, 14, 5]);
        assert_eq!(parts.concat(), big);
    }

    #[test]
    fn memory_entries_follow_hermes_delimiter() {
        assert_eq!(memory_entries(""), 0);
        assert_eq!(memory_entries("one fact"), 1);
        assert_eq!(memory_entries("a\nmultiline\n§\nb\n§\n\n§\na\nmultiline\n"), 2);
        assert_eq!(memory_entries("x\n § \ny"), 2);
    }

    #[test]
    fn env_names_never_values() {
        let names = env_names("# c\nOPENROUTER_API_KEY=sk-secret\nexport TELEGRAM_BOT_TOKEN = \"1:2\"\nbad line\n=x\nA=1\nA=2\n");
        assert_eq!(names, ["A", "OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN"]);
    }
}
