//! Skills the agent writes itself (CONTRACT §14, issue #31 item 2), end to end on the real
//! binary with a scripted OpenAI-compatible model: `skill_manage` creates a skill in a chat
//! (bad input gets a clear tool error and changes nothing); the next session's system prompt
//! lists it; a job that binds it gets its `SKILL.md`; `/<skill-name>` invokes it; the CLI's
//! `skills list|show|export` and the dashboard's `/api/skills/{name}` view and delete it.
//! The same store part runs on DynamoDB in `store::dynamodb::tests` and `tests/import.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

const MD: &str = "---\nname: news-digest\ndescription: Summarise the AI news in five bullets\n---\n# News digest\n1. Search the news.\n2. Write five bullets.\n";

fn system_of(req: &Value) -> String {
    req["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

/// The tool results the model was sent in `req`, in order.
fn tool_results(req: &Value) -> Vec<String> {
    req["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_string()).collect()
}

// Two workers: the fake model answers while a `cron tick` child process waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_made_in_chat_is_in_the_next_sessions_index_and_used_by_a_job() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("skills-e2e");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    home.write("skills/folder-skill/SKILL.md", "---\nname: folder-skill\ndescription: Shipped as a file\n---\nDo the folder thing.\n");
    let gw = Gateway::start(home.path(), &[]);
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});

    // One turn: a path escape and a missing front matter are refused, then the create works.
    let escape = json!({"action": "write_file", "name": "folder-skill", "file_path": "../../config.yaml", "file_content": "x"});
    llm.push(Reply::Tool { name: "skill_manage".into(), args: escape });
    llm.push(Reply::Tool { name: "skill_manage".into(), args: json!({"action": "create", "name": "bare", "content": "no front matter"}) });
    llm.push(Reply::Tool { name: "skill_manage".into(), args: json!({"action": "create", "name": "news-digest", "content": MD}) });
    llm.push(Reply::Text("Saved the skill.".into()));
    let (s, v) = gw.post_message(msg("save how you did the news as a skill")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("Saved the skill.")), "{v}");
    let reqs = llm.requests();
    let results = tool_results(reqs.last().unwrap());
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], json!({"error": "Path traversal ('..') is not allowed."}).to_string());
    assert!(results[1].contains("SKILL.md must start with YAML frontmatter (---)"), "{}", results[1]);
    let created: Value = serde_json::from_str(&results[2]).unwrap();
    assert_eq!((created["success"].as_bool(), created["message"].as_str()), (Some(true), Some("Skill 'news-digest' created.")));
    assert!(!system_of(&reqs[0]).contains("news-digest"), "not in the session that wrote it");
    assert!(system_of(&reqs[0]).contains("  - folder-skill: Shipped as a file"), "{}", system_of(&reqs[0]));
    assert!(!std::fs::read_to_string(home.path().join("config.yaml")).unwrap().contains("x\n"), "nothing was written");

    // The next session lists it.
    assert_eq!(gw.post_message(msg("/new")).await.0, 200);
    let (s, _) = gw.post_message(msg("hello again")).await;
    assert_eq!(s, 200);
    let sys = system_of(llm.requests().last().unwrap());
    assert!(sys.contains("  - news-digest: Summarise the AI news in five bullets"), "{sys}");
    assert!(!sys.contains("bare"), "the refused create left nothing: {sys}");

    // `/news-digest <text>` runs the turn with the skill.
    let (s, _) = gw.post_message(msg("/news-digest only about robotics")).await;
    assert_eq!(s, 200);
    let user = last_user(llm.requests().last().unwrap());
    assert!(
        user.contains("\"news-digest\" skill") && user.contains("2. Write five bullets.") && user.contains("only about robotics"),
        "{user}"
    );

    // A job bound to it gets its SKILL.md in the prompt.
    let url = |p: &str| format!("{}{p}", gw.base);
    let job = json!({"id": "digest", "schedule": "every 1h", "prompt": "Run the digest.", "skills": ["news-digest"]});
    let r = gw.http.post(url("/api/jobs")).bearer_auth(&gw.key).json(&job).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = gw.http.post(url("/api/jobs/digest/run")).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["status"], "ok");
    let prompt = last_user(llm.requests().last().unwrap());
    assert!(prompt.starts_with("# Skill: news-digest\n\n---\nname: news-digest") && prompt.contains("Run the digest."), "{prompt}");

    // The next morning (a manual clock: the process's clock set past 08:00), the ticker runs a
    // morning job bound to the skill made in chat.
    #[cfg(feature = "testing")] // HERMES_CLOCK_OFFSET_SECS
    {
        // The hourly job above would be due too: only the morning job is left.
        assert!(cli(home.path(), &["cron", "remove", "digest"], &[]).status.success());
        let o = cli(home.path(), &["cron", "add", "0 8 * * *", "Morning digest.", "--name", "morning", "--skill", "news-digest"], &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let now = chrono::Utc::now();
        let today = now.date_naive().and_hms_opt(8, 1, 0).unwrap().and_utc();
        let morning = if today > now { today } else { today + chrono::Duration::days(1) };
        let offset = (morning - now).num_seconds().to_string();
        let calls = llm.calls();
        let o = cli(home.path(), &["cron", "tick"], &[("HERMES_CLOCK_OFFSET_SECS", offset.as_str())]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(llm.calls(), calls + 1, "the morning job ran once");
        let prompt = last_user(llm.requests().last().unwrap());
        assert!(prompt.starts_with("# Skill: news-digest") && prompt.contains("Morning digest."), "{prompt}");
        let runs: Value = serde_json::from_str(&stdout(&cli(home.path(), &["cron", "runs", "morning", "--json"], &[]))).unwrap();
        assert_eq!((runs[0]["trigger"].as_str(), runs[0]["status"].as_str()), (Some("ticker"), Some("ok")), "{runs}");
    }

    // The CLI sees the store's skill and the folder's.
    let o = cli(home.path(), &["skills", "list", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let rows: Vec<(&str, &str)> = list.iter().map(|s| (s["name"].as_str().unwrap(), s["source"].as_str().unwrap())).collect();
    assert_eq!(rows, [("folder-skill", "files"), ("news-digest", "store")]);
    let o = cli(home.path(), &["skills", "show", "news-digest"], &[]);
    assert_eq!(stdout(&o), MD);
    let o = cli(home.path(), &["skills", "show", "nope"], &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no skill named `nope`"), "{}", stderr(&o));
    let out = home.path().join("exported");
    let o = cli(home.path(), &["skills", "export", out.to_str().unwrap()], &[]);
    assert!(stdout(&o).contains("exported 2 skill(s)"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(out.join("news-digest/SKILL.md")).unwrap(), MD);
    assert!(out.join("folder-skill/SKILL.md").is_file());

    // The dashboard: view one, delete one (a folder skill is hidden, its folder kept).
    let (s, v) = gw.get("/api/skills/news-digest").await;
    assert_eq!((s, v["content"].as_str(), v["source"].as_str()), (200, Some(MD), Some("store")), "{v}");
    assert_eq!(gw.get("/api/skills/nope").await.0, 404);
    let del = |name: &str| gw.http.delete(url(&format!("/api/skills/{name}"))).bearer_auth(&gw.key).send();
    assert_eq!(del("folder-skill").await.unwrap().status(), 200);
    assert_eq!(del("folder-skill").await.unwrap().status(), 404);
    assert_eq!(gw.http.delete(url("/api/skills/news-digest")).send().await.unwrap().status(), 401);
    let (_, v) = gw.get("/api/skills").await;
    let names: Vec<&str> = v["skills"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["news-digest"]);
    assert!(home.path().join("skills/folder-skill/SKILL.md").is_file());
}
