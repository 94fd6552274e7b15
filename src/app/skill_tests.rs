//! `skill_manage` on a real store: every action, the folder skills under it, and bad input
//! that changes nothing. [`scenario`] runs on any store, so the DynamoDB adapter runs it on
//! moto too (`store::dynamodb::tests`).

use crate::app::App;
use crate::ports::Store;
use crate::test_support::TestApp;
use serde_json::{Value, json};
use std::sync::Arc;

const MD: &str = "---\nname: news-digest\ndescription: Summarise the AI news\n---\n# News\n1. Search.\n2. Summarise.\n";

fn home() -> std::path::PathBuf {
    let home = std::env::temp_dir().join(format!("hz-skill-manage-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let dir = home.join("skills").join("folder-skill");
    std::fs::create_dir_all(dir.join("references")).unwrap();
    std::fs::write(dir.join("SKILL.md"), "---\nname: folder-skill\ndescription: From the folder\n---\nStep one.\n").unwrap();
    std::fs::write(dir.join("references").join("api.md"), "API notes").unwrap();
    home
}

async fn manage(app: &App, args: Value) -> Result<Value, String> {
    app.skill_manage(serde_json::from_value(args).unwrap()).await.unwrap()
}

async fn names(app: &App) -> Vec<String> {
    app.skills_index().await.iter().map(|s| s.name.clone()).collect()
}

async fn raw_index(app: &App) -> Option<String> {
    app.inner.store.get_meta(crate::app::skill_store::INDEX_KEY).await.unwrap()
}

/// Every action on `store`, with a folder skill under `$HERMES_HOME/skills`.
pub(crate) async fn scenario(store: Arc<dyn Store>) {
    let home = home();
    let app = TestApp::new(chrono::Utc::now()).home(&home).store(store.clone()).build();
    assert_eq!(names(&app).await, ["folder-skill"]);

    let v = manage(&app, json!({"action": "create", "name": "news-digest", "content": MD, "category": "research"})).await.unwrap();
    assert_eq!(
        (v["success"].as_bool(), v["path"].as_str(), v["category"].as_str()),
        (Some(true), Some("research/news-digest"), Some("research"))
    );
    assert_eq!(names(&app).await, ["folder-skill", "news-digest"]);
    let again = manage(&app, json!({"action": "create", "name": "news-digest", "content": MD})).await.unwrap_err();
    assert_eq!(again, "A skill named 'news-digest' already exists at skills/research/news-digest.");
    // Another process on the same store sees it.
    let other = TestApp::new(chrono::Utc::now()).home(&home).store(store.clone()).build();
    assert_eq!(other.skill_text("news-digest").await.unwrap().unwrap().0, MD);

    let v = manage(
        &app,
        json!({"action": "patch", "name": "news-digest", "old_string": "2. Summarise.", "new_string": "2. Summarise in 5 bullets."}),
    )
    .await
    .unwrap();
    assert_eq!(v["message"], "Patched SKILL.md in skill 'news-digest' (1 replacement).");
    assert!(app.skill_text("news-digest").await.unwrap().unwrap().0.contains("5 bullets"));

    // A supporting file larger than one stored part (within 100,000 characters) round-trips whole.
    let big = "𝕏".repeat(90_000); // 360 kB: more than one stored part
    manage(&app, json!({"action": "write_file", "name": "news-digest", "file_path": "references/big.md", "file_content": big}))
        .await
        .unwrap();
    let store_index = app.skill_store_load().await.unwrap().index;
    let src = app.skill_find("news-digest", &store_index).await.unwrap();
    assert_eq!(app.skill_file(&src, "references/big.md").await.unwrap().as_deref(), Some(big.as_str()));
    manage(&app, json!({"action": "remove_file", "name": "news-digest", "file_path": "references/big.md"})).await.unwrap();
    let e = manage(&app, json!({"action": "remove_file", "name": "news-digest", "file_path": "references/big.md"})).await.unwrap_err();
    assert_eq!(e, "File 'references/big.md' not found in skill 'news-digest'. Available files: none.");

    // Bad input: a clear error, and the stored index is byte for byte what it was.
    let before = raw_index(&app).await;
    let bad = [
        (
            json!({"action": "rename", "name": "news-digest"}),
            "Unknown action 'rename'. Use: create, edit, patch, delete, write_file, remove_file",
        ),
        (
            json!({"action": "write_file", "name": "news-digest", "file_path": "../../config.yaml", "file_content": "x"}),
            "Path traversal ('..') is not allowed.",
        ),
        (json!({"action": "create", "name": "Bad Name", "content": MD}), "Invalid skill name 'Bad Name'."),
        (json!({"action": "create", "name": "plain", "content": "# no front matter\nbody"}), "SKILL.md must start with YAML frontmatter"),
        (json!({"action": "edit", "name": "news-digest", "content": format!("{MD}{}", "x".repeat(100_000))}), "SKILL.md content is 100,"),
        (
            json!({"action": "patch", "name": "news-digest", "old_string": "---\nname", "new_string": "name"}),
            "Patch would break SKILL.md structure",
        ),
        (json!({"action": "write_file", "name": "news-digest", "file_path": "/etc/passwd", "file_content": "x"}), "File must be"),
        (json!({"action": "edit", "name": "missing", "content": MD}), "Skill 'missing' not found."),
        (json!({"action": "delete", "name": "news-digest", "absorbed_into": "nowhere"}), "absorbed_into='nowhere' does not exist."),
    ];
    for (args, want) in bad {
        let e = manage(&app, args.clone()).await.unwrap_err();
        assert!(e.starts_with(want), "{args}: {e}");
    }
    assert_eq!(raw_index(&app).await, before, "refused calls changed nothing");

    // Editing a folder skill copies it (with its files) into the store; the folder is untouched.
    let edited = "---\nname: folder-skill\ndescription: Edited in chat\n---\nStep two.\n";
    manage(&app, json!({"action": "edit", "name": "folder-skill", "content": edited})).await.unwrap();
    let idx = app.skills_index().await;
    assert_eq!(idx.iter().find(|s| s.name == "folder-skill").unwrap().description, "Edited in chat");
    let store_index = app.skill_store_load().await.unwrap().index;
    let src = app.skill_find("folder-skill", &store_index).await.unwrap();
    assert_eq!(app.skill_file(&src, "references/api.md").await.unwrap().as_deref(), Some("API notes"));
    assert!(std::fs::read_to_string(home.join("skills/folder-skill/SKILL.md")).unwrap().contains("Step one."));

    // Deleting hides the folder skill too (a tombstone); a store-only skill is removed.
    assert_eq!(
        manage(&app, json!({"action": "delete", "name": "folder-skill", "absorbed_into": "news-digest"})).await.unwrap()["message"],
        "Skill 'folder-skill' deleted. Content absorbed into 'news-digest'."
    );
    assert_eq!(names(&app).await, ["news-digest"]);
    manage(&app, json!({"action": "delete", "name": "news-digest"})).await.unwrap();
    assert!(names(&app).await.is_empty());
    assert!(app.skill_text("news-digest").await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&home);
}

#[tokio::test]
async fn every_action_works_on_sqlite_and_bad_input_changes_nothing() {
    scenario(Arc::new(crate::store::sqlite::SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn a_skill_written_in_a_session_shows_from_the_next_session_on() {
    let app = TestApp::new(chrono::Utc::now()).build();
    let (s1, s2) = (crate::core::ids::SessionId::named("s1".into()), crate::core::ids::SessionId::named("s2".into()));
    assert!(!app.chat_system_prompt(&s1).await.contains("news-digest"));
    manage(&app, json!({"action": "create", "name": "news-digest", "content": MD})).await.unwrap();
    assert!(!app.chat_system_prompt(&s1).await.contains("news-digest"), "the session's index is frozen");
    assert!(app.chat_system_prompt(&s2).await.contains("  - news-digest: Summarise the AI news"));
}
