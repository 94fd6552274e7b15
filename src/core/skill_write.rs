//! The rules of `skill_manage` (Hermes 0.19.0 `tools/skill_manager_tool.py`): which names,
//! categories, `SKILL.md` texts, sizes and supporting-file paths a write accepts, with
//! Hermes' limits and error texts, and the find-and-replace of `patch`. Pure: the writes
//! themselves live in `app::skill_store`.

/// Longest skill or category name (`MAX_NAME_LENGTH`).
pub const MAX_NAME_LENGTH: usize = 64;
/// Longest front-matter `description` (`MAX_DESCRIPTION_LENGTH`).
pub const MAX_DESCRIPTION_LENGTH: usize = 1024;
/// Most characters of a `SKILL.md` or supporting file an agent write may have
/// (`MAX_SKILL_CONTENT_CHARS`).
pub const MAX_SKILL_CONTENT_CHARS: usize = 100_000;
/// Most bytes of a supporting file (`MAX_SKILL_FILE_BYTES`, 1 MiB).
pub const MAX_SKILL_FILE_BYTES: usize = 1_048_576;
/// The folders a supporting file may live in (`ALLOWED_SUBDIRS`).
pub const ALLOWED_SUBDIRS: [&str; 4] = ["assets", "references", "scripts", "templates"];
/// The main file of a skill.
pub const SKILL_MD: &str = "SKILL.md";

/// Hermes' `VALID_NAME_RE` (`^[a-z0-9][a-z0-9._-]*$`).
fn valid_chars(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// `_validate_name`: a new skill's name. `..` inside a name is refused as well (a name is a
/// plain path segment everywhere here, `core::skill::check_name`).
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Skill name is required.".into());
    }
    if name.chars().count() > MAX_NAME_LENGTH {
        return Err(format!("Skill name exceeds {MAX_NAME_LENGTH} characters."));
    }
    if !valid_chars(name) || name.contains("..") {
        return Err(format!(
            "Invalid skill name '{name}'. Use lowercase letters, numbers, hyphens, dots, and underscores. Must start with a letter or digit."
        ));
    }
    Ok(())
}

/// `_validate_category`: an optional single folder name; blank is none.
pub fn validate_category(category: Option<&str>) -> Result<Option<String>, String> {
    let Some(c) = category.map(str::trim).filter(|c| !c.is_empty()) else { return Ok(None) };
    let invalid = || {
        format!(
            "Invalid category '{c}'. Use lowercase letters, numbers, hyphens, dots, and underscores. Categories must be a single directory name."
        )
    };
    if c.contains(['/', '\\']) {
        return Err(invalid());
    }
    if c.chars().count() > MAX_NAME_LENGTH {
        return Err(format!("Category exceeds {MAX_NAME_LENGTH} characters."));
    }
    if !valid_chars(c) || c.contains("..") {
        return Err(invalid());
    }
    Ok(Some(c.to_string()))
}

/// `_validate_frontmatter`: YAML front matter (a mapping with `name` and `description`, the
/// description at most [`MAX_DESCRIPTION_LENGTH`] characters) and a body after it.
pub fn validate_frontmatter(content: &str) -> Result<(), String> {
    if content.trim().is_empty() {
        return Err("Content cannot be empty.".into());
    }
    let content = content.trim_start_matches('\u{feff}');
    let Some(rest) = content.strip_prefix("---") else {
        return Err("SKILL.md must start with YAML frontmatter (---). See existing skills for format.".into());
    };
    let Some((yaml, body)) = close_fence(rest) else {
        return Err("SKILL.md frontmatter is not closed. Ensure you have a closing '---' line.".into());
    };
    let parsed: serde_json::Value = serde_norway::from_str(yaml).map_err(|e| format!("YAML frontmatter parse error: {e}"))?;
    let Some(map) = parsed.as_object() else {
        return Err("Frontmatter must be a YAML mapping (key: value pairs).".into());
    };
    if !map.contains_key("name") {
        return Err("Frontmatter must include 'name' field.".into());
    }
    let Some(description) = map.get("description") else {
        return Err("Frontmatter must include 'description' field.".into());
    };
    let description = description.as_str().map_or_else(|| description.to_string(), str::to_string);
    if description.chars().count() > MAX_DESCRIPTION_LENGTH {
        return Err(format!("Description exceeds {MAX_DESCRIPTION_LENGTH} characters."));
    }
    if body.trim().is_empty() {
        return Err("SKILL.md must have content after the frontmatter (instructions, procedures, etc.).".into());
    }
    Ok(())
}

/// Hermes' `re.search(r'\n---\s*\n', content[3:])`: the YAML before the closing line and
/// the body after it.
fn close_fence(rest: &str) -> Option<(&str, &str)> {
    let mut from = 0;
    while let Some(i) = rest[from..].find("\n---") {
        let start = from + i;
        let after = &rest[start + 4..];
        // `\s*\n`: the whitespace run after the dashes, up to its last newline.
        let lead = after.len() - after.trim_start().len();
        if let Some(nl) = after[..lead].rfind('\n') {
            return Some((&rest[..start], &after[nl + 1..]));
        }
        from = start + 1;
    }
    None
}

/// `_validate_content_size`: at most [`MAX_SKILL_CONTENT_CHARS`] characters.
pub fn validate_content_size(content: &str, label: &str) -> Result<(), String> {
    let n = content.chars().count();
    if n > MAX_SKILL_CONTENT_CHARS {
        return Err(format!(
            "{label} content is {} characters (limit: {}). Consider splitting into a smaller SKILL.md with supporting files in references/ or templates/.",
            thousands(n),
            thousands(MAX_SKILL_CONTENT_CHARS)
        ));
    }
    Ok(())
}

/// A supporting file's size check (`_write_file`): bytes, then characters.
pub fn validate_file_size(content: &str, label: &str) -> Result<(), String> {
    if content.len() > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "File content is {} bytes (limit: {} bytes / 1 MiB). Consider splitting into smaller files.",
            thousands(content.len()),
            thousands(MAX_SKILL_FILE_BYTES)
        ));
    }
    validate_content_size(content, label)
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `_validate_file_path` for the skill `name`: the file's path inside the skill, normalized
/// (`SKILL.md`, or `<allowed folder>/<file>`). Refused: `..`, absolute paths, backslashes,
/// control characters and anything outside [`ALLOWED_SUBDIRS`].
pub fn validate_file_path(name: &str, file_path: &str) -> Result<String, String> {
    if file_path.is_empty() {
        return Err("file_path is required.".into());
    }
    let parts: Vec<&str> = file_path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return Err("Path traversal ('..') is not allowed.".into());
    }
    if file_path.starts_with('/') || file_path.contains('\\') || file_path.chars().any(char::is_control) {
        return Err(format!("File must be a relative path under one of: {}. Got: '{file_path}'", ALLOWED_SUBDIRS.join(", ")));
    }
    if parts == [SKILL_MD] || parts == [name, SKILL_MD] {
        return Ok(SKILL_MD.into());
    }
    if parts.first().is_none_or(|p| !ALLOWED_SUBDIRS.contains(p)) {
        return Err(format!("File must be under one of: {}. Got: '{file_path}'", ALLOWED_SUBDIRS.join(", ")));
    }
    if parts.len() < 2 {
        return Err(format!("Provide a file path, not just a directory. Example: '{}/myfile.md'", parts[0]));
    }
    Ok(parts.join("/"))
}

/// The outcome of `patch`'s find-and-replace: the new text and how many places changed.
pub fn find_and_replace(content: &str, old: &str, new: &str, replace_all: bool) -> Result<(String, usize), String> {
    if old.is_empty() {
        return Err("old_string cannot be empty".into());
    }
    if old == new {
        return Err("old_string and new_string are identical".into());
    }
    for strategy in [exact as fn(&str, &str) -> Vec<(usize, usize)>, line_trimmed] {
        let matches = strategy(content, old);
        if matches.is_empty() {
            continue;
        }
        if matches.len() > 1 && !replace_all {
            return Err(format!(
                "Found {} matches for old_string. Provide more context to make it unique, or use replace_all=True.",
                matches.len()
            ));
        }
        let mut out = String::with_capacity(content.len());
        let mut at = 0;
        for (s, e) in &matches {
            out.push_str(&content[at..*s]);
            out.push_str(new);
            at = *e;
        }
        out.push_str(&content[at..]);
        return Ok((out, matches.len()));
    }
    Err("Could not find a match for old_string in the file".into())
}

/// Byte ranges of every non-overlapping exact occurrence.
fn exact(content: &str, pat: &str) -> Vec<(usize, usize)> {
    content.match_indices(pat).map(|(i, m)| (i, i + m.len())).collect()
}

/// Hermes' second strategy: the same lines with each line's surrounding whitespace ignored;
/// a match covers whole lines of `content`.
fn line_trimmed(content: &str, pat: &str) -> Vec<(usize, usize)> {
    let want: Vec<&str> = pat.split('\n').map(str::trim).collect();
    let mut starts = Vec::new();
    let mut offset = 0;
    let lines: Vec<&str> = content.split('\n').collect();
    for l in &lines {
        starts.push(offset);
        offset += l.len() + 1;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i + want.len() <= lines.len() {
        if lines[i..i + want.len()].iter().map(|l| l.trim()).eq(want.iter().copied()) {
            let last = i + want.len() - 1;
            out.push((starts[i], starts[last] + lines[last].len()));
            i += want.len();
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
#[path = "skill_write_tests.rs"]
mod tests;
