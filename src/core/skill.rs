//! Skills as files (docs/design.md#skills): `$HERMES_HOME/skills/<name>/SKILL.md`, YAML front
//! matter (`name`, `description`) and a Markdown body. Owns the pure rules: reading the front
//! matter, which names are skill names (one plain path segment, so a name can never leave the
//! skills directory), and the index put into a chat's system prompt in Hermes' format.
//!
//! Must not know: the filesystem (the scan and its cache live in `app::skills`).

use serde::Deserialize;

/// The longest description kept for the index (Hermes' `MAX_DESCRIPTION_LENGTH`).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The longest skill name accepted.
pub const MAX_NAME_CHARS: usize = 128;

/// One installed skill as listed: its directory name (what `skill_view` and jobs take), its
/// description, and the front matter's `name` when it differs from the directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkillEntry {
    /// The directory name under `skills/`.
    pub name: String,
    /// The front matter's `description` (else the body's first line that is not a heading).
    pub description: String,
    /// The front matter's `name`, when it is not the directory name.
    pub title: Option<String>,
}

/// The front matter fields the index uses.
#[derive(Debug, Default, Deserialize)]
pub struct FrontMatter {
    /// `name`.
    #[serde(default)]
    pub name: Option<String>,
    /// `description`.
    #[serde(default)]
    pub description: Option<String>,
}

/// Splits `SKILL.md` into its front matter (the YAML between a leading `---` line and the
/// next `---` line) and its body. Without front matter, or with front matter that is not
/// valid YAML, the fields are empty.
pub fn split(text: &str) -> (FrontMatter, &str) {
    let text = text.trim_start_matches('\u{feff}');
    let Some(rest) = text.strip_prefix("---").filter(|r| r.starts_with('\n') || r.starts_with("\r\n")) else {
        return (FrontMatter::default(), text);
    };
    let mut yaml_end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if offset > 0 && line.trim_end() == "---" {
            yaml_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((end, body_start)) = yaml_end else { return (FrontMatter::default(), text) };
    let fm = serde_norway::from_str(&rest[..end]).unwrap_or_default();
    (fm, &rest[body_start..])
}

/// The index entry of the skill in directory `dir_name` whose `SKILL.md` is `text`.
pub fn entry(dir_name: &str, text: &str) -> SkillEntry {
    let (fm, body) = split(text);
    let description = fm
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .or_else(|| body.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string))
        .unwrap_or_default();
    let description = truncate(&description, MAX_DESCRIPTION_CHARS);
    let title = fm.name.map(|t| t.trim().to_string()).filter(|t| !t.is_empty() && t != dir_name);
    SkillEntry { name: dir_name.to_string(), description, title }
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

/// Checks that `name` names a skill directory: one path segment, not hidden, no separator,
/// no `..`, no control characters. Anything else could reach outside `skills/`.
pub fn check_name(name: &str) -> Result<&str, String> {
    let n = name.trim();
    if n.is_empty() {
        return Err("Skill name is required.".into());
    }
    if n.contains(['/', '\\']) || n.contains("..") || n.starts_with('.') || n.contains(':') {
        return Err(format!("Skill name '{n}' is not a plain name: path separators and '..' are refused."));
    }
    if n.chars().count() > MAX_NAME_CHARS || n.chars().any(char::is_control) {
        return Err("Skill name is too long or contains control characters.".into());
    }
    Ok(n)
}

/// The skills index of a chat's system prompt, in Hermes' shape (`## Skills (mandatory)`, an
/// `<available_skills>` block, one `- name: description` line per skill); empty without
/// skills.
pub fn index_prompt(skills: &[SkillEntry]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = skills
        .iter()
        .map(|s| if s.description.is_empty() { format!("  - {}", s.name) } else { format!("  - {}: {}", s.name, one_line(&s.description)) })
        .collect();
    format!(
        "## Skills (mandatory)\nBefore replying, scan the skills below. If a skill matches or is even partially relevant to \
your task, you MUST load it with skill_view(name) and follow its instructions.\n\n<available_skills>\n{}\n</available_skills>\n\n\
If none match, proceed normally without loading a skill.",
        lines.join("\n")
    )
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_and_body_are_split() {
        let (fm, body) = split("---\nname: News\ndescription: \"Summarise: the news\"\n---\n# News\nbody\n");
        assert_eq!((fm.name.as_deref(), fm.description.as_deref()), (Some("News"), Some("Summarise: the news")));
        assert_eq!(body, "# News\nbody\n");
        let (fm, body) = split("# No front matter\n");
        assert!(fm.name.is_none() && fm.description.is_none());
        assert_eq!(body, "# No front matter\n");
        // Broken YAML or no closing line: no fields, nothing lost.
        assert!(split("---\nname: [unclosed\n---\nx").0.name.is_none());
        assert_eq!(split("---\nname: a\n").1, "---\nname: a\n");
    }

    #[test]
    fn entries_fall_back_to_the_first_body_line_and_keep_a_differing_title() {
        let e = entry("news", "---\nname: Daily News\ndescription: Summarise the news\n---\nbody");
        assert_eq!(e, SkillEntry { name: "news".into(), description: "Summarise the news".into(), title: Some("Daily News".into()) });
        let e = entry("plain", "# Title\n\nDoes plain things.\nMore.");
        assert_eq!((e.description.as_str(), e.title), ("Does plain things.", None));
        let long = entry("x", &format!("---\ndescription: {}\n---\n", "a".repeat(2000)));
        assert_eq!(long.description.chars().count(), MAX_DESCRIPTION_CHARS + 3);
    }

    #[test]
    fn names_that_could_leave_the_skills_directory_are_refused() {
        for bad in ["", " ", "..", "../config.yaml", "a/b", "a\\b", ".hidden", "/etc/passwd", "x..y", "c:evil", "a\u{0}b"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(check_name(" news "), Ok("news"));
        assert_eq!(check_name("ai-news_summarizer.v2"), Ok("ai-news_summarizer.v2"));
    }

    #[test]
    fn the_index_lists_each_skill_in_hermes_shape() {
        assert_eq!(index_prompt(&[]), "");
        let p = index_prompt(&[entry("news", "---\ndescription: Summarise\n  the news\n---\n"), entry("bare", "")]);
        assert!(p.starts_with("## Skills (mandatory)\n"), "{p}");
        assert!(p.contains("skill_view(name)"), "{p}");
        assert!(p.contains("<available_skills>\n  - news: Summarise the news\n  - bare\n</available_skills>"), "{p}");
    }
}
