//! Black-box tests of `hermes-zero import`: a Hermes home with a real `state.db` in Hermes'
//! schema (3 sessions), 2 jobs, a skill in a category folder, memory files, SOUL.md and a
//! `.env`; the import, its idempotence, and refusals of corrupt, other-version and locked
//! state.db files (nothing imported). The imported sessions are checked through the CLI
//! and through `serve`'s `GET /api/sessions` (the dashboard's view), into SQLite and, when
//! `HZ_MOTO_ENDPOINT` is set and the build has `--features aws`, into DynamoDB.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use rusqlite::{Connection, params};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("fixtures/hermes_state_v30.sql");

/// Hermes' times: Unix seconds as REAL.
const T0: f64 = 1_767_261_600.25; // 2026-01-01T10:00:00.25Z

fn state_db(path: &std::path::Path, version: i64) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch(SCHEMA).unwrap();
    c.execute("INSERT INTO schema_version (version) VALUES (?1)", [version]).unwrap();
    c
}

fn session(c: &Connection, id: &str, source: &str, title: Option<&str>, started: f64, ended: Option<(f64, &str)>) {
    c.execute(
        "INSERT INTO sessions (id, source, user_id, model, title, started_at, ended_at, end_reason) VALUES (?1, ?2, '42', 'anthropic/claude', ?3, ?4, ?5, ?6)",
        params![id, source, title, started, ended.map(|e| e.0), ended.map(|e| e.1)],
    )
    .unwrap();
}

/// `tool`: the assistant's `tool_calls` JSON, or the tool result's `tool_call_id`.
fn message(c: &Connection, sid: &str, role: &str, content: Option<&str>, at: f64, tool: (Option<&str>, Option<&str>), active: i64) {
    c.execute(
        "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, tool_name, timestamp, active) VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
        params![sid, role, content, tool.0, tool.1, at, active],
    )
    .unwrap();
}

/// A Hermes home: 3 sessions (7 live messages), 2 jobs, 1 skill, 3 memory entries.
fn hermes_home() -> TempHome {
    let h = TempHome::new("hermes-src");
    let c = state_db(&h.path().join("state.db"), 30);
    session(&c, "20260101_100000_a1b2c3d4", "telegram", Some("Trip planning"), T0, None);
    // Inserted out of time order: Hermes reads a transcript by timestamp, then row id.
    message(&c, "20260101_100000_a1b2c3d4", "assistant", Some("Lisbon is lovely in May."), T0 + 3.0, (None, None), 1);
    message(&c, "20260101_100000_a1b2c3d4", "user", Some("Where should I go in May?"), T0 + 1.0, (None, None), 1);
    let calls = r#"[{"id":"call_1","type":"function","function":{"name":"web_search","arguments":"{\"q\":\"lisbon may\"}"}}]"#;
    message(&c, "20260101_100000_a1b2c3d4", "assistant", None, T0 + 2.0, (Some(calls), None), 1);
    message(&c, "20260101_100000_a1b2c3d4", "tool", Some("sunny, 24C"), T0 + 2.5, (None, Some("call_1")), 1);
    message(&c, "20260101_100000_a1b2c3d4", "user", Some("rewound away"), T0 + 4.0, (None, None), 0);
    session(&c, "20260102_090000_beef01", "cli", None, T0 + 86_400.0, Some((T0 + 90_000.0, "new_session")));
    message(&c, "20260102_090000_beef01", "user", Some("hello from the terminal"), T0 + 86_401.0, (None, None), 1);
    message(&c, "20260102_090000_beef01", "assistant", Some("hi!"), T0 + 86_402.0, (None, None), 1);
    session(
        &c,
        "cron_a1b2c3_20260103_080000",
        "cron",
        Some("Morning brief"),
        T0 + 2.0 * 86_400.0,
        Some((T0 + 2.0 * 86_400.0 + 5.0, "cron_complete")),
    );
    message(&c, "cron_a1b2c3_20260103_080000", "user", Some("brief me"), T0 + 2.0 * 86_400.0 + 1.0, (None, None), 1);
    drop(c);
    h.write(
        "cron/jobs.json",
        &json!({"jobs": [
            {"id": "a1b2c3", "name": "Morning brief", "prompt": "Summarise the news", "skills": ["news"], "skill": "news",
             "schedule": {"kind": "cron", "expr": "0 8 * * *", "display": "0 8 * * *"}, "schedule_display": "0 8 * * *",
             "repeat": {"times": null, "completed": 3}, "enabled": true, "deliver": "local", "next_run_at": "2026-01-04T08:00:00+00:00",
             "model": "m2", "provider": "custom", "base_url": "http://127.0.0.1:1/v1", "context_from": ["d4e5f6"],
             "enabled_toolsets": ["web"], "attach_to_session": true},
            {"id": "d4e5f6", "name": "Stretch", "prompt": "Time to stand up", "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"},
             "deliver": "local", "enabled": true}
        ], "updated_at": "2026-01-03T08:00:05+00:00"})
        .to_string(),
    );
    h.write("skills/research/news/SKILL.md", "---\nname: news\ndescription: daily news\n---\nRead the news.\n");
    h.write("skills/research/news/references/sources.md", "- example\n");
    h.write("skills/.hub/cache.json", "{}");
    h.write("memories/MEMORY.md", "User's server runs Debian 12\n§\nDeploys go through fly.io\nwith two regions\n");
    h.write("memories/USER.md", "Prefers short answers\n");
    h.write("SOUL.md", "You are Hermes.\n");
    // Hermes' approved DM pairing lists, in the legacy and the new place (gateway/pairing.py).
    h.write(
        "pairing/telegram-approved.json",
        r#"{"111": {"user_name": "Ann", "approved_at": 1767261600.5}, "222": {"user_name": "Bob", "approved_at": 1767261700}}"#,
    );
    h.write("pairing/telegram-pending.json", r#"{"ab12": {"hash": "x", "salt": "00", "user_id": "333", "created_at": 1}}"#);
    h.write("platforms/pairing/discord-approved.json", r#"{"9001": {"user_name": "Cy", "approved_at": 1767261800}}"#);
    h.write(".env", "# keys\nOPENROUTER_API_KEY=sk-or-very-secret\nTELEGRAM_BOT_TOKEN=1:abc\n");
    h
}

fn import(home: &TempHome, src: &std::path::Path) -> std::process::Output {
    cli(home.path(), &["import", src.to_str().unwrap(), "--json"], &[])
}

/// Imports `hermes_home()` into `home` (whose store `envs` choose) and checks everything the
/// import must show: counts, files, `sessions list`/`show` (ids, titles, times, order), the
/// synced jobs, and that a second run adds nothing.
/// Makes every file of `dir` world-readable (0644) and every directory 0755, as a Hermes
/// home often is: the import must not carry those modes over.
#[cfg(unix)]
fn open_modes(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let open = if e.file_type().unwrap().is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(open)).unwrap();
        if e.file_type().unwrap().is_dir() {
            open_modes(&e.path());
        }
    }
}

fn imports_once(home: &std::path::Path, src: &std::path::Path, envs: &[(&str, &str)]) {
    let run = |args: &[&str]| cli(home, args, envs);
    #[cfg(unix)]
    open_modes(src);
    let o = run(&["import", src.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let counts: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(counts, json!({"sessions": 3, "messages": 7, "jobs": 2, "skills": 1, "memory_entries": 3, "paired_users": 3}));
    // The approved users are approved here (pending codes are not brought over).
    let paired: Value = serde_json::from_str(&stdout(&run(&["pairing", "list", "--json"]))).unwrap();
    let mut users: Vec<(&str, &str)> =
        paired["approved"].as_array().unwrap().iter().map(|a| (a["platform"].as_str().unwrap(), a["user_id"].as_str().unwrap())).collect();
    users.sort();
    assert_eq!(users, [("discord", "9001"), ("telegram", "111"), ("telegram", "222")], "{paired}");
    assert!(paired["pending"].as_array().unwrap().is_empty(), "{paired}");
    // The .env is never copied; its variable names (never values) are listed.
    let err = stderr(&o);
    assert!(err.contains("OPENROUTER_API_KEY") && err.contains("TELEGRAM_BOT_TOKEN"), "{err}");
    assert!(!err.contains("very-secret") && !stdout(&o).contains("very-secret"));
    assert!(!home.join(".env").exists());
    // Files.
    assert_eq!(std::fs::read_to_string(home.join("SOUL.md")).unwrap(), "You are Hermes.\n");
    // Skills are imported into the store (not copied as files), with their supporting files
    // and their category; hidden folders (`.hub`) are not skills.
    assert!(!home.join("skills").exists(), "skills live in the store");
    let news: Value = serde_json::from_str(&stdout(&run(&["skills", "show", "news", "--json"]))).unwrap();
    assert_eq!((news["source"].as_str(), news["category"].as_str()), (Some("store"), Some("research")), "{news}");
    assert_eq!(news["files"], json!(["SKILL.md", "references/sources.md"]));
    assert_eq!(news["content"], "---\nname: news\ndescription: daily news\n---\nRead the news.\n");
    let listed: Vec<Value> = serde_json::from_str(&stdout(&run(&["skills", "list", "--json"]))).unwrap();
    assert_eq!(listed.iter().map(|s| s["name"].as_str().unwrap()).collect::<Vec<_>>(), ["news"]);
    assert!(home.join("memories/MEMORY.md").is_file() && home.join("memories/USER.md").is_file());
    // Imported files are private (0600, their new directories 0700), whatever the source's modes.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| std::fs::metadata(home.join(p)).unwrap().permissions().mode() & 0o777;
        for f in ["SOUL.md", "memories/MEMORY.md", "memories/USER.md"] {
            assert_eq!(mode(f), 0o600, "{f}");
        }
        assert_eq!(mode("memories"), 0o700, "memories");
    }
    // Sessions: listed with their ids and titles.
    let list: Vec<Value> = serde_json::from_str(&stdout(&run(&["sessions", "list", "--json"]))).unwrap();
    let mut ids: Vec<(&str, &Value)> = list.iter().map(|e| (e["session_id"].as_str().unwrap(), &e["title"])).collect();
    ids.sort_by_key(|p| p.0);
    assert_eq!(
        ids,
        [
            ("20260101_100000_a1b2c3d4", &json!("Trip planning")),
            ("20260102_090000_beef01", &Value::Null),
            ("cron_a1b2c3_20260103_080000", &json!("Morning brief"))
        ]
    );
    assert!(list.iter().any(|e| e["session_key"] == "agent:main:telegram:dm:imported-20260101_100000_a1b2c3d4"));
    let text = stdout(&run(&["sessions", "list"]));
    assert!(text.contains("Trip planning") && text.contains("20260102_090000_beef01"), "{text}");
    // A transcript in Hermes' order, with the tool call and its result; times kept.
    let show: Value = serde_json::from_str(&stdout(&run(&["sessions", "show", "20260101_100000_a1b2c3d4", "--json"]))).unwrap();
    let roles: Vec<&str> = show["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(show["messages"][0]["content"], "Where should I go in May?");
    assert_eq!(show["messages"][1]["tool_calls"][0]["name"], "web_search");
    assert_eq!(show["messages"][2]["tool_call_id"], "call_1");
    assert_eq!(show["messages"][3]["content"], "Lisbon is lovely in May.");
    assert_eq!(show["session"]["title"], "Trip planning");
    assert!(show["session"]["started_at"].as_str().unwrap().starts_with("2026-01-01T10:00:00.25"), "{}", show["session"]);
    let cli_s: Value = serde_json::from_str(&stdout(&run(&["sessions", "show", "20260102_090000_beef01", "--json"]))).unwrap();
    assert_eq!(cli_s["session"]["end_reason"], "new_session");
    // Jobs synced: the skill bound once.
    let jobs: Vec<Value> = serde_json::from_str(&stdout(&run(&["cron", "list", "--all", "--json"]))).unwrap();
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    let brief = jobs.iter().find(|j| j["id"] == "a1b2c3").unwrap();
    assert_eq!(brief["skills"], json!(["news"]));
    // Hermes' run options survive the import (docs/jobs.md#run-options).
    let opts = ["model", "provider", "base_url", "context_from", "enabled_toolsets", "attach_to_session"].map(|k| brief[k].clone());
    assert_eq!(opts, [json!("m2"), json!("custom"), json!("http://127.0.0.1:1/v1"), json!(["d4e5f6"]), json!(["web"]), json!(true)]);
    // A second run adds nothing.
    let o = run(&["import", src.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(again, json!({"sessions": 0, "messages": 0, "jobs": 0, "skills": 0, "memory_entries": 0, "paired_users": 0}));
    let show2: Value = serde_json::from_str(&stdout(&run(&["sessions", "show", "20260101_100000_a1b2c3d4", "--json"]))).unwrap();
    assert_eq!(show2["messages"].as_array().unwrap().len(), 4);
    let list2: Vec<Value> = serde_json::from_str(&stdout(&run(&["sessions", "list", "--json"]))).unwrap();
    assert_eq!(list2.len(), 3, "{list2:?}");
    // The plain output prints the counts.
    let o = run(&["import", src.to_str().unwrap()]);
    assert!(o.status.success() && stdout(&o).contains("sessions:       0 (0 messages)"), "{}", stdout(&o));
}

/// The dashboard's view of the imported home: `GET /api/sessions` lists the three sessions,
/// `GET /api/sessions/{id}` has the record and the transcript in order.
async fn dashboard_shows_the_import(home: &std::path::Path, envs: &[(&str, &str)]) {
    let gw = Gateway::start(home, envs);
    let (s, list) = gw.get("/api/sessions").await;
    assert_eq!(s, 200, "{list}");
    let mut ids: Vec<(&str, &str)> =
        list["sessions"].as_array().unwrap().iter().map(|e| (e["session_id"].as_str().unwrap(), e["platform"].as_str().unwrap())).collect();
    ids.sort();
    assert_eq!(ids, [("20260101_100000_a1b2c3d4", "telegram"), ("20260102_090000_beef01", "cli"), ("cron_a1b2c3_20260103_080000", "cron")]);
    // Most recent first, as the dashboard lists them.
    assert_eq!(list["sessions"][0]["session_id"], "cron_a1b2c3_20260103_080000");
    let (s, show) = gw.get("/api/sessions/20260101_100000_a1b2c3d4").await;
    assert_eq!(s, 200, "{show}");
    assert_eq!(show["session"]["title"], "Trip planning");
    let contents: Vec<&Value> = show["messages"].as_array().unwrap().iter().map(|m| &m["content"]).collect();
    assert_eq!(contents, [&json!("Where should I go in May?"), &json!(""), &json!("sunny, 24C"), &json!("Lisbon is lovely in May.")]);
    assert_eq!(show["messages"][1]["tool_calls"][0]["name"], "web_search");
    let (s, cron) = gw.get("/api/sessions/cron_a1b2c3_20260103_080000").await;
    assert_eq!((s, &cron["session"]["end_reason"]), (200, &json!("cron_complete")), "{cron}");
    assert_eq!(user_texts(&cron), ["brief me"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hermes_home_imports_once_with_ids_titles_times_and_order() {
    let src = hermes_home();
    let home = TempHome::new("import-dst");
    tokio::task::block_in_place(|| imports_once(home.path(), src.path(), &[]));
    dashboard_shows_the_import(home.path(), &[]).await;
}

/// The same Hermes home into the DynamoDB store on the local DynamoDB-API server (moto), then
/// a session of 250 messages added to the Hermes home since: more than one DynamoDB
/// transaction holds, so it lands in several writes, in order. Needs `HZ_MOTO_ENDPOINT`
/// (scripts/test.sh starts moto) and `--features aws`; skipped without it.
#[cfg(feature = "aws")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hermes_home_imports_into_dynamodb() {
    let Some(moto) = moto_endpoint("dynamodb import") else { return };
    let table = format!("hz-import-{:08x}", rand::random::<u32>());
    let envs = moto_store_env(&moto, &table);
    let src = hermes_home();
    let home = TempHome::new("import-ddb");
    tokio::task::block_in_place(|| {
        let created = cli(home.path(), &["doctor", "--create-table"], &envs);
        assert!(stdout(&created).contains(&format!("created DynamoDB table {table}")), "{}{}", stdout(&created), stderr(&created));
        imports_once(home.path(), src.path(), &envs);
        // Nothing went to a SQLite file by mistake.
        assert!(!home.path().join("state.db").exists());
    });
    dashboard_shows_the_import(home.path(), &envs).await;
    // Hermes went on and had a long conversation; it imports on the next run, whole and in order.
    let long = "20260104_120000_f00d42";
    {
        let c = Connection::open(src.path().join("state.db")).unwrap();
        session(&c, long, "discord", Some("Long chat"), T0 + 3.0 * 86_400.0, None);
        for i in (0..250).rev() {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            message(&c, long, role, Some(&format!("m{i:03}")), T0 + 3.0 * 86_400.0 + f64::from(i), (None, None), 1);
        }
    }
    tokio::task::block_in_place(|| {
        let o = cli(home.path(), &["import", src.path().to_str().unwrap(), "--json"], &envs);
        assert!(o.status.success(), "{}", stderr(&o));
        let counts: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(counts, json!({"sessions": 1, "messages": 250, "jobs": 0, "skills": 0, "memory_entries": 0, "paired_users": 0}));
        let show: Value = serde_json::from_str(&stdout(&cli(home.path(), &["sessions", "show", long, "--json"], &envs))).unwrap();
        let got: Vec<&str> = show["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
        let want: Vec<String> = (0..250).map(|i| format!("m{i:03}")).collect();
        assert_eq!(got, want);
        assert_eq!(show["session"]["title"], "Long chat");
        let o = cli(home.path(), &["import", src.path().to_str().unwrap(), "--json"], &envs);
        let again: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(again, json!({"sessions": 0, "messages": 0, "jobs": 0, "skills": 0, "memory_entries": 0, "paired_users": 0}));
        let list: Vec<Value> = serde_json::from_str(&stdout(&cli(home.path(), &["sessions", "list", "--json"], &envs))).unwrap();
        assert_eq!(list.len(), 4, "{list:?}");
        assert_eq!(list[0]["session_id"], long, "most recent first");
    });
}

/// `state.db` refusals: a clear error, exit 1, nothing imported (not even the files).
fn refused(src: &TempHome, needle: &str) {
    let home = TempHome::new("import-refused");
    let o = import(&home, src.path());
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains(needle) && err.contains("nothing was imported"), "{err}");
    assert!(!home.path().join("SOUL.md").exists() && !home.path().join("skills").exists());
    let list = stdout(&cli(home.path(), &["sessions", "list"], &[]));
    assert!(list.contains("no sessions yet"), "{list}");
}

#[test]
fn a_corrupt_or_foreign_state_db_imports_nothing() {
    let src = hermes_home();
    std::fs::write(src.path().join("state.db"), b"this is not a database, just text pretending to be one..........").unwrap();
    refused(&src, "not a readable Hermes state.db");
    // A SQLite file with no Hermes tables.
    std::fs::remove_file(src.path().join("state.db")).unwrap();
    Connection::open(src.path().join("state.db")).unwrap().execute_batch("CREATE TABLE t (x);").unwrap();
    refused(&src, "schema version none");
}

#[test]
fn another_schema_version_imports_nothing() {
    let src = hermes_home();
    let c = Connection::open(src.path().join("state.db")).unwrap();
    c.execute("UPDATE schema_version SET version = 99", []).unwrap();
    drop(c);
    refused(&src, "schema version 99");
}

#[test]
fn a_locked_state_db_imports_nothing() {
    let src = hermes_home();
    let c = Connection::open(src.path().join("state.db")).unwrap();
    c.execute_batch("PRAGMA journal_mode=DELETE; BEGIN EXCLUSIVE;").unwrap();
    refused(&src, "is locked by another process");
    c.execute_batch("ROLLBACK;").unwrap();
}

#[test]
fn the_hermes_config_is_copied_when_this_home_has_none_and_doctor_shows_it() {
    let src = hermes_home();
    let hermes_config = include_str!("fixtures/hermes-cli-config.yaml");
    src.write("config.yaml", hermes_config);
    let home = TempHome::new("import-config");
    let to = home.path().join("config.yaml");
    let o = cli(home.path(), &["import", src.path().to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("config.yaml:    copied to {}", to.display())), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(&to).unwrap(), hermes_config);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&to).unwrap().permissions().mode() & 0o777, 0o600, "it may hold an inline key");
    }
    let doctor = stdout(&cli(home.path(), &["doctor"], &[]));
    assert!(doctor.contains(&format!("config:   {}", to.display())), "{doctor}");
    assert!(doctor.contains("ignored:  ") && doctor.contains("terminal"), "the Hermes file is the one read: {doctor}");
    // Again: nothing to copy, and it says so.
    let o = cli(home.path(), &["import", src.path().to_str().unwrap()], &[]);
    assert!(stdout(&o).contains("config.yaml:    already in place"), "{}", stdout(&o));
    // A home with a config of its own keeps it, and says why the Hermes one was not copied.
    let own = TempHome::new("import-config-own");
    own.write("config.yaml", "timezone: Europe/Berlin\n");
    let o = cli(own.path(), &["import", src.path().to_str().unwrap()], &[]);
    let out = stdout(&o);
    assert!(out.contains("config.yaml:    not copied: this home already reads") && out.contains("kept it"), "{out}");
    assert_eq!(std::fs::read_to_string(own.path().join("config.yaml")).unwrap(), "timezone: Europe/Berlin\n");
    // A Hermes config that does not load here is not copied; with --json stdout stays the counts.
    let bad = hermes_home();
    bad.write("config.yaml", "display: {busy_input_mode: shout}\n");
    let fresh = TempHome::new("import-config-bad");
    let o = cli(fresh.path(), &["import", bad.path().to_str().unwrap(), "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(serde_json::from_str::<Value>(stdout(&o).trim()).is_ok(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("config.yaml not copied: it does not load here") && stderr(&o).contains("busy_input_mode"),
        "{}",
        stderr(&o)
    );
    assert!(!fresh.path().join("config.yaml").exists() && !fresh.path().join(".config.yaml.import").exists());
}

/// The Hermes 0.19.0 homes made by Hermes' own code (tests/fixtures/hermes-0.19-home/make.sh):
/// `home` keeps its routing in state.db's `gateway_routing`, `legacy` in `sessions/sessions.json`.
const HERMES_019: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hermes-0.19-home/");

fn fixture_id(name: &str) -> String {
    let ids = std::fs::read_to_string(format!("{HERMES_019}ids.env")).unwrap();
    ids.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap().to_string()
}

/// A writable copy of one fixture home.
fn hermes_019(variant: &str) -> TempHome {
    let h = TempHome::new("hermes-019");
    let from = std::path::Path::new(HERMES_019).join(variant);
    std::fs::copy(from.join("state.db"), h.path().join("state.db")).unwrap();
    std::fs::create_dir_all(h.path().join("sessions")).unwrap();
    std::fs::copy(from.join("sessions/sessions.json"), h.path().join("sessions/sessions.json")).unwrap();
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chat_s_current_hermes_session_is_continued_by_its_next_telegram_message() {
    let (current, first, bob, cli_id) = (fixture_id("ann_current"), fixture_id("ann_first"), fixture_id("bob"), fixture_id("cli"));
    for variant in ["home", "legacy"] {
        let src = hermes_019(variant);
        let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
        let home = TempHome::new("import-routing");
        home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
        let o = cli(home.path(), &["import", src.path().to_str().unwrap()], &[]);
        assert!(o.status.success(), "{variant}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("sessions:       4 (10 messages)") && stdout(&o).contains("chats continued: 2"),
            "{variant}: {}",
            stdout(&o)
        );
        let list: Vec<Value> = serde_json::from_str(&stdout(&cli(home.path(), &["sessions", "list", "--json"], &[]))).unwrap();
        let key_of = |id: &str| list.iter().find(|e| e["session_id"] == id).map(|e| e["session_key"].as_str().unwrap().to_string());
        assert_eq!(key_of(&current).as_deref(), Some("agent:main:telegram:dm:42"), "{variant}: {list:?}");
        assert_eq!(key_of(&bob).as_deref(), Some("agent:main:telegram:dm:77"), "{variant}");
        assert_eq!(key_of(&first), Some(format!("agent:main:telegram:dm:imported-{first}")), "{variant}: ended by /new, no route");
        assert_eq!(key_of(&cli_id), Some(format!("agent:main:cli:dm:imported-{cli_id}")), "{variant}: no route");
        // Ann writes again on Telegram: her Lisbon conversation goes on.
        let gw = Gateway::start(home.path(), &[]);
        assert_eq!(gw.telegram("tg-secret", tg_update(9001, 500, 42, 42, "Which seat did I ask for?")).await, 200);
        assert!(wait_until(20, || llm.calls() >= 1).await, "{variant}: no model call");
        let seen = llm.requests()[0]["messages"].to_string();
        assert!(
            seen.contains("Lisbon in May") && seen.contains("window seat"),
            "{variant}: the model did not see the old messages: {seen}"
        );
        assert!(!seen.contains("Miso"), "{variant}: the session before /new is not part of it");
        assert_eq!(tg.wait_for(1, 20).await.len(), 1);
        let (_, show) = gw.get(&format!("/api/sessions/{current}")).await;
        let texts = user_texts(&show);
        assert_eq!(
            texts,
            ["I am planning a trip to Lisbon in May.", "Book me a window seat.", "Which seat did I ask for?"],
            "{variant}: the same session id, continued"
        );
        let (_, all) = gw.get("/api/sessions").await;
        assert_eq!(all["sessions"].as_array().unwrap().len(), 4, "{variant}: no new session: {all}");
    }
}

/// Hermes' `scripts/` folder comes over with its script jobs: folders 0700, files keep their
/// exec bit but lose group/world write, and the imported script job runs from the new home.
#[cfg(unix)]
#[test]
fn hermes_job_scripts_are_copied_private_and_their_jobs_run() {
    use std::os::unix::fs::PermissionsExt;
    let src = TempHome::new("hermes-scripts");
    drop(state_db(&src.path().join("state.db"), 30));
    src.write("scripts/disk.sh", "echo \"disk ok from $(basename \"$PWD\")\"\n");
    src.write("scripts/lib/feed.py", "print('feed')\n");
    std::fs::set_permissions(src.path().join("scripts/disk.sh"), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(src.path().join("scripts/lib/feed.py"), std::fs::Permissions::from_mode(0o666)).unwrap();
    let job = json!({"jobs": [{"id": "0a1b2c3d4e5f", "name": "disk", "prompt": "", "script": "disk.sh", "no_agent": true,
        "schedule": {"kind": "interval", "minutes": 30, "display": "every 30m"}, "deliver": "local", "enabled": true}]});
    src.write("cron/jobs.json", &job.to_string());
    let home = TempHome::new("import-scripts");
    let o = import(&home, src.path());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("copied 2 job script(s)"), "{}", stderr(&o));
    let mode = |p: &str| std::fs::metadata(home.path().join(p)).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode("scripts"), mode("scripts/lib")), (0o700, 0o700));
    assert_eq!((mode("scripts/disk.sh"), mode("scripts/lib/feed.py")), (0o755, 0o644));
    let o = cli(home.path(), &["cron", "run", "0a1b2c3d4e5f"], &[]);
    assert!(stdout(&o).contains(": ok") && stdout(&o).contains("disk ok from scripts"), "{}{}", stdout(&o), stderr(&o));
    // A second run copies nothing and keeps a script changed here.
    std::fs::write(home.path().join("scripts/disk.sh"), "echo mine\n").unwrap();
    let o = import(&home, src.path());
    assert!(!stderr(&o).contains("copied") && stderr(&o).contains("script `disk.sh` exists with other content"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(home.path().join("scripts/disk.sh")).unwrap(), "echo mine\n");
}
