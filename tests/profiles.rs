//! Profiles on the real binary (docs/design.md#profiles): two profiles on one home and one
//! SQLite store, one selected by `HERMES_PROFILE`, the other by `--profile`, each with its
//! own config under `<home>/profiles/<name>/`. Messages, sessions, memory, jobs and search of
//! one are invisible to the other, and the same chat id gets a session in each. The same
//! runs on one DynamoDB table (moto) when the build has `--features aws`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn tool_result(req: &Value) -> String {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

type Envs<'a> = [(&'a str, &'a str)];

fn json_out(home: &std::path::Path, args: &[&str], envs: &Envs) -> Value {
    let out = cli(home, args, envs);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)))
}

#[tokio::test]
async fn two_profiles_share_a_store_and_see_nothing_of_each_other() {
    let home = TempHome::new("profiles");
    two_profiles(&home, &[]).await;
    // One store file, at the root; each profile's files in its own home.
    assert!(home.path().join("state.db").exists());
    assert!(!home.path().join("profiles/a/state.db").exists());
}

/// The same on one DynamoDB table at the local DynamoDB-API server (moto). Needs
/// `HZ_MOTO_ENDPOINT` (scripts/test.sh starts moto) and `--features aws`; skipped without it.
#[cfg(feature = "aws")]
#[tokio::test]
async fn two_profiles_share_a_dynamodb_table_and_see_nothing_of_each_other() {
    let Ok(moto) = std::env::var("HZ_MOTO_ENDPOINT") else {
        println!("dynamodb profiles skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
        return;
    };
    let table = format!("hz-profiles-{:08x}", rand::random::<u32>());
    let envs = [
        ("HERMES_STORE", "dynamodb"),
        ("HERMES_DYNAMODB_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", moto.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ];
    let home = TempHome::new("profiles-ddb");
    let created = cli(home.path(), &["doctor", "--create-table"], &envs);
    assert!(stdout(&created).contains(&format!("created DynamoDB table {table}")), "{}{}", stdout(&created), stderr(&created));
    two_profiles(&home, &envs).await;
    assert!(!home.path().join("state.db").exists(), "nothing went to a SQLite file");
}

/// Profiles `a` and `b` on one store (`envs` chooses it): messages, sessions, memory, jobs
/// and search of one are invisible to the other and to `main`.
async fn two_profiles(home: &TempHome, envs: &Envs<'_>) {
    let llm = FakeLlm::start().await;
    home.write("profiles/a/config.yaml", &config(Some(&llm), None, ""));
    home.write("profiles/b/config.yaml", &config(Some(&llm), None, ""));
    home.write("profiles/a/SOUL.md", "You are Alpha.");
    let a = Gateway::start(home.path(), &[envs, &[("HERMES_PROFILE", "a")]].concat());
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});

    // Profile a: a message, a memory, a job.
    llm.push(Reply::Tool { name: "memory".into(), args: json!({"action": "add", "target": "user", "content": "Likes walruses"}) });
    llm.push(Reply::Text("Noted.".into()));
    let (s, v) = a.post_message(msg("walrus facts please")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("Noted.")), "{v}");
    assert!(llm.requests()[0]["messages"][0]["content"].as_str().unwrap().contains("You are Alpha."), "a's SOUL.md");
    let sid_a = v["session_id"].as_str().unwrap().to_string();
    let added = cli(home.path(), &["--profile", "a", "cron", "add", "every 1h", "walrus census", "--deliver", "local"], envs);
    assert!(added.status.success(), "{}", stderr(&added));

    // Profile b on the same store (while a still runs): the same chat id.
    let b = Gateway::start(home.path(), &[envs, &[("HERMES_PROFILE", "b")]].concat());
    llm.push(Reply::Tool { name: "session_search".into(), args: json!({"query": "walrus"}) });
    llm.push(Reply::Text("Nothing found.".into()));
    let (s, v) = b.post_message(msg("what did we say about walruses?")).await;
    assert_eq!(s, 200, "{v}");
    let sid_b = v["session_id"].as_str().unwrap().to_string();
    assert_ne!(sid_a, sid_b, "the same chat id gets a session in each profile");
    let reqs = llm.requests();
    let last = reqs.last().unwrap();
    assert!(!last["messages"][0]["content"].as_str().unwrap().contains("Likes walruses"), "a's memory is not in b's prompt");
    assert!(!last["messages"][0]["content"].as_str().unwrap().contains("You are Alpha."), "a's SOUL.md is not b's");
    let found = tool_result(last);
    assert!(found.contains("\"count\":0"), "b's search sees none of a's messages: {found}");

    // The HTTP API of each shows only its own.
    let (_, list_a) = a.get("/api/sessions").await;
    let (_, list_b) = b.get("/api/sessions").await;
    let ids = |v: &Value| v.to_string();
    assert!(ids(&list_a).contains(&sid_a) && !ids(&list_a).contains(&sid_b), "{list_a}");
    assert!(ids(&list_b).contains(&sid_b) && !ids(&list_b).contains(&sid_a), "{list_b}");
    let (s, _) = b.get(&format!("/api/sessions/{sid_a}")).await;
    assert_eq!(s, 404, "b cannot open a's conversation");
    let (_, mem_b) = b.get("/api/memory").await;
    assert_eq!(mem_b["user"]["entries"], json!([]), "{mem_b}");
    drop((a, b));

    // The CLI with --profile likewise; the keys carry the profile.
    let sessions_a = json_out(home.path(), &["--profile", "a", "sessions", "list", "--json"], envs).to_string();
    let sessions_b = json_out(home.path(), &["--profile", "b", "sessions", "list", "--json"], envs).to_string();
    assert!(sessions_a.contains("agent:a:api:dm:c1") && !sessions_a.contains("agent:b:"), "{sessions_a}");
    assert!(sessions_b.contains("agent:b:api:dm:c1") && !sessions_b.contains("agent:a:"), "{sessions_b}");
    let main = json_out(home.path(), &["sessions", "list", "--json"], envs);
    assert_eq!(main, json!([]), "the main profile sees neither");
    let mem_a = json_out(home.path(), &["--profile", "a", "memory", "show", "--json"], envs);
    assert_eq!(mem_a["user"]["entries"], json!(["Likes walruses"]));
    assert_eq!(json_out(home.path(), &["--profile", "b", "memory", "show", "--json"], envs)["user"]["entries"], json!([]));
    let jobs_a = json_out(home.path(), &["--profile", "a", "cron", "list", "--json"], envs).to_string();
    assert!(jobs_a.contains("walrus census"), "{jobs_a}");
    assert!(!json_out(home.path(), &["--profile", "b", "cron", "list", "--json"], envs).to_string().contains("walrus"));
    assert!(!json_out(home.path(), &["cron", "list", "--json"], envs).to_string().contains("walrus"));
    let show = cli(home.path(), &["--profile", "b", "sessions", "show", &sid_b, "--json"], envs);
    assert!(stdout(&show).contains("walruses?") && !stdout(&show).contains("walrus facts"), "{}", stdout(&show));
}

#[test]
fn bad_profile_names_are_refused() {
    let home = TempHome::new("profiles-bad");
    let out = cli(home.path(), &["--profile", "../x", "sessions", "list"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid profile name `../x`"), "{}", stderr(&out));
    let out = cli(home.path(), &["sessions", "list"], &[("HERMES_PROFILE", "Big Bot")]);
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(stderr(&out).contains("HERMES_PROFILE"), "{}", stderr(&out));
    assert!(!home.path().join("profiles").exists(), "nothing written");
}
