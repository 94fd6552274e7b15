//! Unit tests of `skill_manage`'s rules against Hermes 0.19.0's texts and limits.

use super::*;

const GOOD: &str = "---\nname: news\ndescription: Summarise the news\n---\n# News\nDo it.\n";

#[test]
fn names_follow_hermes_pattern_and_length() {
    for ok in ["news", "a", "0day", "ai-news_summary.v2", &"a".repeat(64)] {
        assert_eq!(validate_name(ok), Ok(()), "{ok}");
    }
    assert_eq!(validate_name(""), Err("Skill name is required.".into()));
    assert_eq!(validate_name(&"a".repeat(65)), Err("Skill name exceeds 64 characters.".into()));
    for bad in ["News", "-x", ".x", "_x", "a b", "a/b", "../x", "x..y", "é", "a\\b"] {
        let e = validate_name(bad).unwrap_err();
        assert!(e.starts_with(&format!("Invalid skill name '{bad}'.")), "{bad}: {e}");
    }
}

#[test]
fn categories_are_one_folder_name_or_none() {
    assert_eq!(validate_category(None), Ok(None));
    assert_eq!(validate_category(Some("  ")), Ok(None));
    assert_eq!(validate_category(Some(" devops ")), Ok(Some("devops".into())));
    for bad in ["a/b", "..", "../x", "Dev", "a\\b"] {
        assert!(validate_category(Some(bad)).unwrap_err().starts_with("Invalid category"), "{bad}");
    }
    assert_eq!(validate_category(Some(&"c".repeat(65))), Err("Category exceeds 64 characters.".into()));
}

#[test]
fn front_matter_needs_name_description_and_a_body() {
    assert_eq!(validate_frontmatter(GOOD), Ok(()));
    assert_eq!(validate_frontmatter(&format!("\u{feff}{GOOD}")), Ok(()), "a BOM is tolerated");
    assert_eq!(validate_frontmatter("---\nname: a\ndescription: b\n---  \n\nbody"), Ok(()));
    let cases = [
        ("  \n", "Content cannot be empty."),
        ("# News\nno front matter", "SKILL.md must start with YAML frontmatter (---). See existing skills for format."),
        ("---\nname: a\ndescription: b\nbody", "SKILL.md frontmatter is not closed. Ensure you have a closing '---' line."),
        ("---\n- a\n- b\n---\nbody", "Frontmatter must be a YAML mapping (key: value pairs)."),
        ("---\ndescription: b\n---\nbody", "Frontmatter must include 'name' field."),
        ("---\nname: a\n---\nbody", "Frontmatter must include 'description' field."),
        ("---\nname: a\ndescription: b\n---\n  \n", "SKILL.md must have content after the frontmatter (instructions, procedures, etc.)."),
    ];
    for (text, want) in cases {
        assert_eq!(validate_frontmatter(text), Err(want.to_string()), "{text:?}");
    }
    assert!(validate_frontmatter("---\nname: [a\n---\nbody").unwrap_err().starts_with("YAML frontmatter parse error"));
    let long = format!("---\nname: a\ndescription: {}\n---\nbody", "d".repeat(1025));
    assert_eq!(validate_frontmatter(&long), Err("Description exceeds 1024 characters.".into()));
}

#[test]
fn sizes_use_hermes_limits_and_messages() {
    assert_eq!(validate_content_size(&"é".repeat(100_000), "SKILL.md"), Ok(()), "characters, not bytes");
    let e = validate_content_size(&"x".repeat(100_001), "SKILL.md").unwrap_err();
    assert!(e.starts_with("SKILL.md content is 100,001 characters (limit: 100,000)."), "{e}");
    let e = validate_file_size(&"x".repeat(1_048_577), "references/a.md").unwrap_err();
    assert!(e.starts_with("File content is 1,048,577 bytes (limit: 1,048,576 bytes / 1 MiB)."), "{e}");
}

#[test]
fn file_paths_stay_inside_the_allowed_folders() {
    assert_eq!(validate_file_path("news", "references/api.md"), Ok("references/api.md".into()));
    assert_eq!(validate_file_path("news", "./templates//a/b.txt"), Ok("templates/a/b.txt".into()));
    assert_eq!(validate_file_path("news", "SKILL.md"), Ok("SKILL.md".into()));
    assert_eq!(validate_file_path("news", "news/SKILL.md"), Ok("SKILL.md".into()));
    assert_eq!(validate_file_path("news", "references/../../x"), Err("Path traversal ('..') is not allowed.".into()));
    assert_eq!(validate_file_path("news", "../config.yaml"), Err("Path traversal ('..') is not allowed.".into()));
    assert_eq!(validate_file_path("news", ""), Err("file_path is required.".into()));
    for bad in ["/etc/passwd", "/references/a.md", "references\\..\\x", "notes/a.md", "other/SKILL.md", "references/a\nb"] {
        assert!(validate_file_path("news", bad).unwrap_err().contains("File must be"), "{bad}");
    }
    assert_eq!(
        validate_file_path("news", "scripts"),
        Err("Provide a file path, not just a directory. Example: 'scripts/myfile.md'".into())
    );
}

#[test]
fn patch_replaces_a_unique_match_exactly_or_by_trimmed_lines() {
    assert_eq!(find_and_replace("a b a", "b", "c", false), Ok(("a c a".into(), 1)));
    assert_eq!(find_and_replace("a b a", "a", "c", true), Ok(("c b c".into(), 2)));
    assert_eq!(
        find_and_replace("a b a", "a", "c", false),
        Err("Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True.".into())
    );
    assert_eq!(find_and_replace("x", "y", "z", false), Err("Could not find a match for old_string in the file".into()));
    assert_eq!(find_and_replace("x", "x", "x", false), Err("old_string and new_string are identical".into()));
    // Indentation the model got wrong still matches whole lines.
    assert_eq!(find_and_replace("1. step\n    2. old\n3. end", "2. old", "2. new", false), Ok(("1. step\n    2. new\n3. end".into(), 1)));
    assert_eq!(find_and_replace("a\n  b  \nc", "a\nb", "z", false), Ok(("z\nc".into(), 1)));
}
