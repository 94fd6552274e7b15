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
    let Some(moto) = moto_endpoint("dynamodb profiles") else { return };
    let table = format!("hz-profiles-{:08x}", rand::random::<u32>());
    let envs = moto_store_env(&moto, &table);
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

/// One `serve` for main and two routed profiles (`/p/<profile>/…`) on one home and store:
/// each route uses its profile's app, secrets (`.env`), SOUL, sessions, memory and jobs.
#[tokio::test]
async fn one_serve_routes_many_profiles_apart() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("profroute");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    for (p, key) in [("a", "key-a"), ("b", "key-b")] {
        home.write(&format!("profiles/{p}/config.yaml"), &config(Some(&llm), None, &pinned_key_chronos("inst")));
        home.write(&format!("profiles/{p}/.env"), &format!("# {p}'s secrets\nAPI_SERVER_KEY={key}\n"));
    }
    home.write("profiles/a/SOUL.md", "You are Alpha.");
    let gw = Gateway::start(home.path(), &[]);
    let http = &gw.http;
    let send = |method: reqwest::Method, path: &str, key: &str, body: Option<Value>| {
        let mut rq = http.request(method, format!("{}{path}", gw.base)).bearer_auth(key);
        if let Some(b) = body {
            rq = rq.json(&b);
        }
        async move {
            let r = rq.send().await.unwrap();
            let s = r.status().as_u16();
            (s, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let post = |path: &str, key: &str, body: Value| send(reqwest::Method::POST, path, key, Some(body));
    let get = |path: &str, key: &str| send(reqwest::Method::GET, path, key, None);
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});

    // A message to each profile and to main: three sessions for one chat id.
    llm.push(Reply::Tool { name: "memory".into(), args: json!({"action": "add", "target": "user", "content": "Likes walruses"}) });
    llm.push(Reply::Text("Noted.".into()));
    let (s, v) = post("/p/a/api/messages", "key-a", msg("walrus facts please")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("Noted.")), "{v}");
    assert!(llm.requests()[0]["messages"][0]["content"].as_str().unwrap().contains("You are Alpha."), "a's SOUL.md");
    let sid_a = v["session_id"].as_str().unwrap().to_string();
    llm.push(Reply::Text("Hi from b.".into()));
    let (s, v) = post("/p/b/api/messages", "key-b", msg("hello b")).await;
    assert_eq!(s, 200, "{v}");
    let sid_b = v["session_id"].as_str().unwrap().to_string();
    let prompt_b = llm.requests().last().unwrap()["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(!prompt_b.contains("Alpha") && !prompt_b.contains("walruses"), "nothing of a in b's prompt: {prompt_b}");
    llm.push(Reply::Text("Hi from main.".into()));
    let (s, v) = post("/api/messages", API_KEY, msg("hello main")).await;
    assert_eq!(s, 200, "{v}");
    let sid_m = v["session_id"].as_str().unwrap().to_string();
    assert!(sid_a != sid_b && sid_b != sid_m && sid_a != sid_m);

    // Each route takes only its own profile's key.
    for (path, key) in
        [("/p/a/api/messages", "key-b"), ("/p/a/api/messages", API_KEY), ("/p/b/api/messages", "key-a"), ("/api/messages", "key-a")]
    {
        let (s, v) = post(path, key, msg("intruder")).await;
        assert_eq!(s, 401, "{path} with {key}: {v}");
    }
    // Unknown or invalid profiles answer as a wrong key does (tests/profile_gate.rs).
    let refused = post("/p/a/api/messages", "key-b", msg("x")).await;
    for path in ["/p/zz/api/messages", "/p/Bad!/api/messages", "/p/a%2Fb/api/messages", "/p//api/messages"] {
        let answer = post(path, "key-a", msg("x")).await;
        assert_eq!(answer, refused, "{path}");
    }
    let (s, v) = get("/p/nobody/api/sessions", "key-a").await;
    assert_eq!((s, v["error"].is_string()), (401, true), "JSON like the other errors: {v}");
    assert!(!home.path().join("profiles/nobody").exists(), "nothing created for an unknown profile");

    // Sessions and memory apart.
    let (_, sa) = get("/p/a/api/sessions", "key-a").await;
    let (_, sb) = get("/p/b/api/sessions", "key-b").await;
    let (_, sm) = get("/api/sessions", API_KEY).await;
    let (sa, sb, sm) = (sa.to_string(), sb.to_string(), sm.to_string());
    assert!(sa.contains(&sid_a) && !sa.contains(&sid_b) && !sa.contains(&sid_m), "{sa}");
    assert!(sb.contains(&sid_b) && !sb.contains(&sid_a) && !sb.contains(&sid_m), "{sb}");
    assert!(sm.contains(&sid_m) && !sm.contains(&sid_a) && !sm.contains(&sid_b), "{sm}");
    let (s, v) = get(&format!("/p/b/api/sessions/{sid_a}"), "key-b").await;
    assert_eq!(s, 404, "b cannot open a's conversation: {v}");
    assert_eq!(get("/p/a/api/memory", "key-a").await.1["user"]["entries"], json!(["Likes walruses"]));
    assert_eq!(get("/p/b/api/memory", "key-b").await.1["user"]["entries"], json!([]));
    assert_eq!(get("/api/memory", API_KEY).await.1["user"]["entries"], json!([]));

    // A job of the same id in a and b: each lists only its own.
    let job = |prompt: &str| json!({"id": "census", "schedule": "every 1m", "prompt": prompt});
    let (s, ja) = post("/p/a/api/jobs", "key-a", job("walrus census")).await;
    assert_eq!(s, 200, "{ja}");
    assert_eq!(post("/p/b/api/jobs", "key-b", job("penguin census")).await.0, 200);
    let list_a = get("/p/a/api/jobs", "key-a").await.1.to_string();
    let list_b = get("/p/b/api/jobs", "key-b").await.1.to_string();
    assert!(list_a.contains("walrus census") && !list_a.contains("penguin"), "{list_a}");
    assert!(list_b.contains("penguin census") && !list_b.contains("walrus"), "{list_b}");
    assert!(!get("/api/jobs", API_KEY).await.1.to_string().contains("census"), "main has neither");

    // A fire for /p/a/ runs a's job only; its token's audience is a's (agent:inst:a).
    let fire_at = ja["job"]["next_run_at"].as_str().unwrap().to_string();
    let body = json!({"job_id": "census", "fire_at": fire_at});
    let (s, v) = post("/p/a/api/cron/fire", &rsa_fire_token("census", "inst", 0), body.clone()).await;
    assert_eq!(s, 401, "main's audience is not a's: {v}");
    llm.push(Reply::Text("Walrus count: 12.".into()));
    let (s, v) = post("/p/a/api/cron/fire", &rsa_fire_token("census", "inst:a", 0), body).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")), "{v}");
    let reqs = llm.requests().iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    assert!(reqs.contains("walrus census") && !reqs.contains("penguin census"), "only a's job ran");
    assert!(get("/p/a/api/jobs/census/runs", "key-a").await.1.to_string().contains("Walrus count"));
    assert!(!get("/p/b/api/jobs/census/runs", "key-b").await.1.to_string().contains("Walrus"));

    // One store file, at the root; a routed profile made no file of its own there.
    assert!(home.path().join("state.db").exists());
    assert!(!home.path().join("profiles/a/state.db").exists());
}
