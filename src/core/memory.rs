//! The agent's curated memory (docs/design.md#memory), Hermes' semantics: two stores, `memory`
//! (the agent's notes) and `user` (the user's profile), each a list of entries bounded by a
//! character limit; add / replace / remove by substring; the usage lines and the system-prompt
//! block Hermes renders; the flush prompt given before a reset; and the plain-text format that
//! `memory edit` and the dashboard use. Pure functions: the store and the tool live in `app`.

use serde::{Deserialize, Serialize};

/// Between two entries, as Hermes writes its `MEMORY.md` / `USER.md`.
pub const ENTRY_DELIMITER: &str = "\n§\n";

/// How many writer marks a stored document keeps (for the write check in `app::memory`).
pub const WRITER_MARKS: usize = 8;

/// The flush prompt (Hermes' gateway wording, without the skill step: there is no
/// `skill_manage` here). The live memory is appended after it by [`flush_prompt`].
const FLUSH_PROMPT: &str = "[System: This session is about to be reset (inactivity, a scheduled daily reset or a \
/new command). The conversation context will be cleared after this turn.\n\n\
Review the conversation above and:\n\
1. Save any important facts, preferences, or decisions to memory (user profile or your notes) that would be useful in future sessions.\n\
2. If nothing is worth saving, that's fine — just skip.\n\n";

/// Told to the model in chat turns while memory is on (Hermes adds its memory guidance to
/// the system prompt whenever the `memory` tool is loaded).
pub const MEMORY_GUIDANCE: &str = "You have persistent memory across sessions: the `memory` tool. Save durable facts \
proactively, without waiting to be asked: the user's preferences and corrections and details about them (target 'user'), \
stable facts about their environment and conventions (target 'memory'). Write compact declarative facts; do not save \
task progress or temporary state.";

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// The agent's notes (`MEMORY.md` in Hermes).
    Memory,
    /// What the agent knows about the user (`USER.md`).
    User,
}

impl Target {
    /// Both, in display order.
    pub const ALL: [Target; 2] = [Target::Memory, Target::User];

    /// `memory` | `user`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "memory" => Ok(Self::Memory),
            "user" => Ok(Self::User),
            other => Err(format!("Invalid target '{other}'. Use 'memory' or 'user'.")),
        }
    }

    /// The argument value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::User => "user",
        }
    }

    /// Hermes' file name for this store (import, and the one-time seed from the home).
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Memory => "MEMORY.md",
            Self::User => "USER.md",
        }
    }

    /// The store's meta key.
    pub fn meta_key(self) -> &'static str {
        match self {
            Self::Memory => "memory:memory",
            Self::User => "memory:user",
        }
    }

    /// The block header's label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Memory => "MEMORY (your personal notes)",
            Self::User => "USER PROFILE (who the user is)",
        }
    }
}

/// Where one store lives: the agent's `memory`, the shared `user` profile, or one user's
/// profile (`memory.user_profile: per_user`, docs/who-sees-what.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shelf {
    /// Which store.
    pub target: Target,
    /// The profile's owner (`platform:user_id` or `id:<linked name>`); `None`: shared.
    pub owner: Option<String>,
}

/// Meta record listing the owners of per-user profiles (JSON list), for the dashboard.
pub const USER_INDEX_KEY: &str = "memory:user_index";

impl Shelf {
    /// The agent's notes or the shared profile.
    pub fn shared(target: Target) -> Self {
        Self { target, owner: None }
    }

    /// `target`, owned by `owner` when it is the user profile.
    pub fn new(target: Target, owner: Option<String>) -> Self {
        Self { target, owner: owner.filter(|_| target == Target::User) }
    }

    /// The meta key: the target's, plus `:<owner>` for a per-user profile.
    pub fn meta_key(&self) -> String {
        match &self.owner {
            Some(o) => format!("{}:{o}", self.target.meta_key()),
            None => self.target.meta_key().to_string(),
        }
    }

    /// Hermes' file a never-written store falls back to (shared stores only: a per-user
    /// profile starts empty, so nobody inherits the shared `USER.md`).
    pub fn file_name(&self) -> Option<&'static str> {
        self.owner.is_none().then(|| self.target.file_name())
    }
}

/// One store as kept in the meta record: its entries, a version bumped by every write, and
/// the marks of the last writers (so a writer can check, on re-reading, that its write held).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// Bumped by every write.
    #[serde(default)]
    pub version: u64,
    /// The entries, oldest first.
    #[serde(default)]
    pub entries: Vec<String>,
    /// Marks of the last [`WRITER_MARKS`] writes.
    #[serde(default)]
    pub writers: Vec<String>,
}

/// A change asked for by the model (or a person).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Append an entry.
    Add(String),
    /// Replace the one entry containing `old` with `new`.
    Replace {
        /// Substring of the entry.
        old: String,
        /// Its new text.
        new: String,
    },
    /// Remove the one entry containing the text.
    Remove(String),
}

/// What an op did: the new entry list (None: nothing to write) and Hermes' message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The entries to store, or None when unchanged.
    pub entries: Option<Vec<String>>,
    /// `Entry added.` and the like.
    pub message: &'static str,
}

/// Characters of a store as Hermes counts them: the entries joined by the delimiter.
pub fn char_count(entries: &[String]) -> usize {
    if entries.is_empty() {
        return 0;
    }
    entries.iter().map(|e| e.chars().count()).sum::<usize>() + (entries.len() - 1) * ENTRY_DELIMITER.chars().count()
}

/// `1234567` → `1,234,567` (Hermes formats usage with thousands separators).
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(current: usize, limit: usize) -> usize {
    (current * 100).checked_div(limit).map_or(0, |p| p.min(100))
}

/// `1,234/2,200` — the usage shown with a refusal.
pub fn usage_short(entries: &[String], limit: usize) -> String {
    format!("{}/{}", thousands(char_count(entries)), thousands(limit))
}

/// `56% — 1,234/2,200 chars` — the usage shown after a write and in the prompt block.
pub fn usage(entries: &[String], limit: usize) -> String {
    let current = char_count(entries);
    format!("{}% — {}/{} chars", percent(current, limit), thousands(current), thousands(limit))
}

fn list(entries: &[String]) -> String {
    if entries.is_empty() {
        return " (none)".into();
    }
    entries.iter().map(|e| format!("\n- {e}")).collect()
}

fn preview(e: &str) -> String {
    let cut: String = e.chars().take(80).collect();
    if cut.len() < e.len() { format!("{cut}...") } else { cut }
}

/// The index of the one entry containing `old`. Several identical entries count as one
/// (the first is used); no match or several distinct ones is an error for the model.
fn find_one(entries: &[String], old: &str, what: &str) -> Result<usize, String> {
    let hits: Vec<usize> = entries.iter().enumerate().filter(|(_, e)| e.contains(old)).map(|(i, _)| i).collect();
    let Some(&first) = hits.first() else {
        return Err(format!(
            "No entry matched '{old}'. Retry with a short unique substring of the entry you want to {what}. Current entries:{}",
            list(entries)
        ));
    };
    if hits.iter().any(|&i| entries[i] != entries[first]) {
        let previews: Vec<String> = hits.iter().map(|&i| preview(&entries[i])).collect();
        return Err(format!("Multiple entries matched '{old}'. Be more specific. Matches:{}", list(&previews)));
    }
    Ok(first)
}

/// Applies `op` to `entries` under `limit` (Hermes' rules: contents trimmed, exact
/// duplicates not added, an add or replace past the limit refused with the usage and the
/// entries, so the model can consolidate). `Err` is the message for the model.
pub fn apply(entries: &[String], op: &Op, limit: usize) -> Result<Applied, String> {
    let over = |next: &[String], verb: &str| {
        let cur = char_count(entries);
        Err(format!(
            "Memory at {}/{} chars. {verb} would put it at {}/{} chars, over the limit. Consolidate: 'replace' overlapping \
entries with shorter ones or 'remove' stale ones, then retry. Current entries:{}",
            thousands(cur),
            thousands(limit),
            thousands(char_count(next)),
            thousands(limit),
            list(entries)
        ))
    };
    match op {
        Op::Add(content) => {
            let content = content.trim();
            if content.is_empty() {
                return Err("Content cannot be empty.".into());
            }
            if entries.iter().any(|e| e == content) {
                return Ok(Applied { entries: None, message: "Entry already exists (no duplicate added)." });
            }
            let mut next = entries.to_vec();
            next.push(content.to_string());
            if char_count(&next) > limit {
                return over(&next, &format!("Adding this entry ({} chars)", content.chars().count()));
            }
            Ok(Applied { entries: Some(next), message: "Entry added." })
        }
        Op::Replace { old, new } => {
            let (old, new) = (old.trim(), new.trim());
            if old.is_empty() {
                return Err(format!("'replace' needs old_text: a short unique substring of the entry. Current entries:{}", list(entries)));
            }
            if new.is_empty() {
                return Err("content cannot be empty. Use 'remove' to delete entries.".into());
            }
            let i = find_one(entries, old, "replace")?;
            let mut next = entries.to_vec();
            next[i] = new.to_string();
            if char_count(&next) > limit {
                return over(&next, "The replacement");
            }
            Ok(Applied { entries: Some(next), message: "Entry replaced." })
        }
        Op::Remove(old) => {
            let old = old.trim();
            if old.is_empty() {
                return Err(format!("'remove' needs old_text: a short unique substring of the entry. Current entries:{}", list(entries)));
            }
            let i = find_one(entries, old, "remove")?;
            let mut next = entries.to_vec();
            next.remove(i);
            Ok(Applied { entries: Some(next), message: "Entry removed." })
        }
    }
}

/// A store's block for the system prompt, as Hermes renders it (empty store: empty string).
/// A store grown past twice its limit by an outside edit is cut head + tail.
pub fn render_block(target: Target, entries: &[String], limit: usize) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut content = entries.join(ENTRY_DELIMITER);
    let current = content.chars().count();
    let cap = (limit * 2).max(4000);
    if current > cap {
        let chars: Vec<char> = content.chars().collect();
        let (head, tail) = (cap * 7 / 10, cap * 2 / 10);
        let omitted = current - head - tail;
        content = format!(
            "{}\n\n[... {} chars truncated — memory over budget ({}/{}); consolidate via memory(action=remove/replace) ...]\n\n{}",
            chars[..head].iter().collect::<String>(),
            thousands(omitted),
            thousands(current),
            thousands(limit),
            chars[current - tail..].iter().collect::<String>()
        );
    }
    let over = if current > limit { " ⚠ OVER BUDGET" } else { "" };
    let sep = "═".repeat(46);
    format!(
        "{sep}\n{} [{}% — {}/{} chars{over}]\n{sep}\n{content}",
        target.label(),
        percent(current, limit),
        thousands(current),
        thousands(limit)
    )
}

/// The flush turn's prompt: Hermes' wording plus the live state of memory, so the model
/// adds to it rather than overwriting newer entries.
pub fn flush_prompt(live: &[(Target, Vec<String>)]) -> String {
    let mut p = FLUSH_PROMPT.to_string();
    let current: String = live
        .iter()
        .filter(|(_, e)| !e.is_empty())
        .map(|(t, e)| format!("\n\n## Current {}:\n{}", t.label(), e.join(ENTRY_DELIMITER)))
        .collect();
    if !current.is_empty() {
        p.push_str(
            "IMPORTANT — here is the current live state of memory. Other sessions, cron jobs, or the user may have updated \
it since this conversation ended. Do NOT overwrite or remove entries unless the conversation above reveals something \
that genuinely supersedes them. Only add new information that is not already captured below.",
        );
        p.push_str(&current);
        p.push_str("\n\n");
    }
    p.push_str("Do NOT respond to the user. Just use the memory tool if needed, then stop.]");
    p
}

/// Splits a Hermes memory file (or an edited section) into entries: blocks separated by
/// lines holding only `§`, trimmed, empty ones dropped, exact duplicates kept once.
pub fn split_entries(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        let e = cur.trim().to_string();
        if !e.is_empty() && !out.contains(&e) {
            out.push(e);
        }
        cur.clear();
    };
    for line in text.lines() {
        if line.trim() == "§" {
            flush(&mut cur, &mut out);
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    flush(&mut cur, &mut out);
    out
}

const SECTION_PREFIX: &str = "=== ";

fn section_line(t: Target) -> String {
    format!("{SECTION_PREFIX}{} ===", t.as_str())
}

/// The text `memory edit` opens: a short header, then one section per store with its
/// entries separated by `§` lines.
pub fn edit_text(stores: &[(Target, Vec<String>, usize)]) -> String {
    let mut s = String::from(
        "# hermes-zero memory. Edit the entries below and save; close without saving to keep them.\n\
# Entries are separated by a line holding only §. Lines above the first === section line are ignored.\n",
    );
    for (t, entries, limit) in stores {
        s.push_str(&format!("# {}: {} (limit {} chars)\n", t.as_str(), usage(entries, *limit), thousands(*limit)));
    }
    for (t, entries, _) in stores {
        s.push('\n');
        s.push_str(&section_line(*t));
        s.push('\n');
        s.push_str(&entries.join(ENTRY_DELIMITER));
        s.push('\n');
    }
    s
}

/// Parses [`edit_text`]'s format back: the entries of each section present. A section
/// line naming no store is an error.
pub fn parse_edit_text(text: &str) -> Result<Vec<(Target, Vec<String>)>, String> {
    let mut out: Vec<(Target, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix(SECTION_PREFIX) {
            let name = name.trim_end_matches('=').trim();
            let t =
                Target::parse(name).map_err(|_| format!("unknown section `{}` (use `=== memory ===` or `=== user ===`)", line.trim()))?;
            if out.iter().any(|(o, _)| *o == t) {
                return Err(format!("section `{}` appears twice", line.trim()));
            }
            out.push((t, String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if out.is_empty() {
        return Err("no `=== memory ===` or `=== user ===` section found".into());
    }
    Ok(out.into_iter().map(|(t, body)| (t, split_entries(&body))).collect())
}

/// Refuses entries past `limit`, naming the store and its usage.
pub fn check_limit(target: Target, entries: &[String], limit: usize) -> Result<(), String> {
    if char_count(entries) > limit {
        return Err(format!("{} is over its limit: {} chars", target.as_str(), usage_short(entries, limit)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn counts_like_hermes() {
        assert_eq!(char_count(&[]), 0);
        assert_eq!(char_count(&v(&["ab"])), 2);
        assert_eq!(char_count(&v(&["ab", "cd"])), 7);
        assert_eq!(char_count(&v(&["é"])), 1);
        assert_eq!(thousands(2200), "2,200");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(usage(&v(&["x".repeat(1100).as_str()]), 2200), "50% — 1,100/2,200 chars");
    }

    #[test]
    fn add_refuses_past_the_limit_with_the_usage() {
        let cur = v(&["a".repeat(15).as_str()]);
        let err = apply(&cur, &Op::Add("b".repeat(10)), 20).unwrap_err();
        assert!(err.contains("15/20 chars"), "{err}");
        assert!(err.contains("Current entries:\n- aaaa"), "{err}");
        let ok = apply(&cur, &Op::Add("  tidy  ".into()), 100).unwrap();
        assert_eq!(ok.entries.unwrap(), v(&["a".repeat(15).as_str(), "tidy"]));
        assert_eq!(apply(&cur, &Op::Add("a".repeat(15)), 100).unwrap().entries, None);
        assert!(apply(&cur, &Op::Add(" ".into()), 100).is_err());
    }

    #[test]
    fn replace_and_remove_by_unique_substring() {
        let cur = v(&["likes tea", "lives in Oslo", "likes jazz"]);
        let r = apply(&cur, &Op::Replace { old: "Oslo".into(), new: "lives in Bergen".into() }, 100).unwrap();
        assert_eq!(r.entries.unwrap(), v(&["likes tea", "lives in Bergen", "likes jazz"]));
        let err = apply(&cur, &Op::Remove("likes".into()), 100).unwrap_err();
        assert!(err.starts_with("Multiple entries matched 'likes'"), "{err}");
        let err = apply(&cur, &Op::Remove("coffee".into()), 100).unwrap_err();
        assert!(err.starts_with("No entry matched 'coffee'"), "{err}");
        assert_eq!(apply(&cur, &Op::Remove("jazz".into()), 100).unwrap().entries.unwrap(), v(&["likes tea", "lives in Oslo"]));
        let err = apply(&cur, &Op::Replace { old: "tea".into(), new: "x".repeat(200) }, 100).unwrap_err();
        assert!(err.contains("over the limit"), "{err}");
    }

    #[test]
    fn block_has_hermes_header_and_usage() {
        let b = render_block(Target::User, &v(&["Name: Ann", "Prefers short answers"]), 1375);
        let lines: Vec<&str> = b.lines().collect();
        assert_eq!(lines[0], "═".repeat(46));
        assert_eq!(lines[1], "USER PROFILE (who the user is) [2% — 33/1,375 chars]");
        assert_eq!(lines[3..], ["Name: Ann", "§", "Prefers short answers"]);
        assert_eq!(render_block(Target::Memory, &[], 2200), "");
        let big = render_block(Target::Memory, &v(&["x".repeat(9000).as_str()]), 100);
        assert!(big.contains("OVER BUDGET") && big.contains("chars truncated") && big.chars().count() < 4500);
    }

    #[test]
    fn entries_split_on_section_sign_lines() {
        assert_eq!(split_entries("a\nmultiline\n§\nb\n § \n\n§\na\nmultiline\n"), v(&["a\nmultiline", "b"]));
        assert!(split_entries("  \n").is_empty());
    }

    #[test]
    fn edit_text_round_trips_and_rejects_unknown_sections() {
        let text = edit_text(&[(Target::Memory, v(&["one", "two\nlines"]), 2200), (Target::User, vec![], 1375)]);
        let back = parse_edit_text(&text).unwrap();
        assert_eq!(back, vec![(Target::Memory, v(&["one", "two\nlines"])), (Target::User, vec![])]);
        assert!(parse_edit_text("=== notes ===\nx").unwrap_err().contains("unknown section"));
        assert!(parse_edit_text("just text").is_err());
        assert!(check_limit(Target::User, &v(&["x".repeat(30).as_str()]), 20).unwrap_err().contains("30/20"));
    }

    #[test]
    fn flush_prompt_shows_live_memory_only_when_any() {
        let p = flush_prompt(&[(Target::Memory, vec![]), (Target::User, vec![])]);
        assert!(p.starts_with("[System: This session is about to be reset") && !p.contains("IMPORTANT"));
        let p = flush_prompt(&[(Target::Memory, v(&["uses vim"])), (Target::User, vec![])]);
        assert!(p.contains("## Current MEMORY (your personal notes):\nuses vim"));
        assert!(p.ends_with("then stop.]"));
    }
}
