//! DM pairing black-box (CONTRACT §17, docs/pairing.md): the real binary, a fake Telegram
//! and model. An unknown DM sender gets Hermes' code message and no turn; the operator's
//! `pairing approve` (another process on the same store) lets them in; `ignore` sends
//! nothing. On SQLite always, on DynamoDB when HZ_MOTO_ENDPOINT is set.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

/// The code out of Hermes' message (`Here's your pairing code: `XXXX``).
fn code_of(text: &str) -> String {
    let rest = text.split("pairing code: `").nth(1).unwrap_or_else(|| panic!("no code in {text:?}"));
    rest.split('`').next().unwrap().to_string()
}

async fn cli_async(home: &std::path::Path, args: &[&str], envs: &[(String, String)]) -> std::process::Output {
    let (h, a, e) = (home.to_path_buf(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), envs.to_vec());
    tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let e: Vec<(&str, &str)> = e.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        cli(&h, &a, &e)
    })
    .await
    .unwrap()
}

/// The whole loop on one store: code, wrong code, approve, a turn, revoke.
async fn pair_then_talk(tag: &str, envs: &[(String, String)]) {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new(tag);
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "unauthorized_dm_behavior: pair\n"));
    let e: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let gw = Gateway::start(home.path(), &e);
    // User 77 is on no allow list: Hermes' pairing message, no model call.
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 77, 77, "hello?")).await, 200);
    let sent = tg.wait_for(1, 15).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["chat_id"], "77");
    let text = sent[0]["text"].as_str().unwrap();
    assert!(text.starts_with("Hi~ I don't recognize you yet!"), "{text}");
    let code = code_of(text);
    assert_eq!(code.len(), 8);
    assert!(code.bytes().all(|b| b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789".contains(&b)), "{code}");
    assert!(text.contains(&format!("hermes-zero pairing approve telegram {code}")), "{text}");
    // A second message within the rate limit: silence.
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 11, 77, 77, "hello??")).await, 200);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(tg.sent().len(), 1, "rate limited: nothing more sent");
    assert_eq!(llm.calls(), 0, "no turn for an unpaired sender");

    // The operator's terminal: the code is listed hashed, never in plain text.
    let list = cli_async(home.path(), &["pairing", "list", "--json"], envs).await;
    assert!(list.status.success(), "{}", stderr(&list));
    let v: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(v["pending"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["pending"][0]["user_id"], "77");
    assert!(!stdout(&list).contains(&code), "the code is not shown");
    // Usage errors exit 2; a wrong code exits 1 with a clear line.
    assert_eq!(cli_async(home.path(), &["pairing", "approve", "telegram"], envs).await.status.code(), Some(2));
    assert_eq!(cli_async(home.path(), &["pairing", "approve", "Tele gram", &code], envs).await.status.code(), Some(2));
    let wrong = cli_async(home.path(), &["pairing", "approve", "telegram", "ZZZZZZZZ"], envs).await;
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stderr(&wrong).contains("no pending code"), "{}", stderr(&wrong));
    let ok = cli_async(home.path(), &["pairing", "approve", "telegram", &code.to_lowercase()], envs).await;
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("Approved telegram user 77"), "{}", stdout(&ok));
    let again = cli_async(home.path(), &["pairing", "approve", "telegram", &code], envs).await;
    assert_eq!(again.status.code(), Some(1), "a code is used once");

    // The user's next message gets an agent turn.
    assert_eq!(gw.telegram("tg-secret", tg_update(3, 12, 77, 77, "now?")).await, 200);
    let sent = tg.wait_for(2, 15).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1]["text"], "echo: now?");
    assert_eq!(llm.calls(), 1);

    // Revoked: the next message is not a turn (a new code, as for any unknown sender, once
    // the rate limit allows; here it is still running, so nothing).
    let rev = cli_async(home.path(), &["pairing", "revoke", "telegram", "77"], envs).await;
    assert!(rev.status.success(), "{}", stderr(&rev));
    assert_eq!(cli_async(home.path(), &["pairing", "revoke", "telegram", "77"], envs).await.status.code(), Some(1));
    assert_eq!(gw.telegram("tg-secret", tg_update(4, 13, 77, 77, "still me")).await, 200);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(llm.calls(), 1, "a revoked user gets no turn");
    // The allow-listed user is unaffected.
    assert_eq!(gw.telegram("tg-secret", tg_update(5, 14, 42, 42, "hi")).await, 200);
    assert_eq!(tg.wait_for(3, 15).await[2]["text"], "echo: hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_dm_sender_is_paired_by_the_operator_and_then_talks() {
    pair_then_talk("pair-sqlite", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_works_on_dynamodb() {
    let Some(moto) = moto_endpoint("pairing on dynamodb") else { return };
    let table = format!("hz-pair-{:08x}", rand::random::<u32>());
    let envs: Vec<(String, String)> = moto_store_env(&moto, &table).iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let home = TempHome::new("pair-ddb-setup");
    let created = cli_async(home.path(), &["doctor", "--create-table"], &envs).await;
    assert!(stdout(&created).contains("dynamodb ok"), "{}{}", stdout(&created), stderr(&created));
    pair_then_talk("pair-ddb", &envs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_sends_nothing_and_runs_no_turn() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("pair-ignore");
    // The platform's own key, in Hermes' place.
    home.write(
        "config.yaml",
        &format!(
            "model: {{provider: openai, base_url: '{}', name: fake-model}}\nunauthorized_dm_behavior: pair\nplatforms:\n  telegram:\n    api_base: {}\n    allowed_users: ['42']\n    unauthorized_dm_behavior: ignore\n",
            llm.url, tg.url
        ),
    );
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 77, 77, "hello?")).await, 200);
    // The allow-listed user's reply arriving shows the first update was handled.
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 11, 42, 42, "hi")).await, 200);
    let sent = tg.wait_for(1, 15).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent_all = tg.sent();
    assert_eq!(sent_all.len(), 1, "nothing to the unknown sender: {sent:?}");
    assert_eq!(sent_all[0]["chat_id"], "42");
    assert_eq!(llm.calls(), 1);
    let list = cli(home.path(), &["pairing", "list", "--json"], &[]);
    let v: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert!(v["pending"].as_array().unwrap().is_empty(), "no code was made: {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_is_never_paired() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("pair-group");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "unauthorized_dm_behavior: pair\n"));
    let gw = Gateway::start(home.path(), &[]);
    let mut up = tg_update(1, 10, 77, -100, "hello group");
    up["message"]["chat"] = serde_json::json!({"id": -100, "type": "group", "title": "G"});
    assert_eq!(gw.telegram("tg-secret", up).await, 200);
    let sent = tg.wait_for(1, 15).await;
    assert_eq!(sent.len(), 1);
    assert!(!sent[0]["text"].as_str().unwrap().contains("pairing code"), "{sent:?}");
    assert_eq!(llm.calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_api_lists_and_approves_with_the_api_key() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("pair-rest");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), "unauthorized_dm_behavior: pair\n"));
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 77, 77, "hello?")).await, 200);
    let sent = tg.wait_for(1, 15).await;
    let code = code_of(sent[0]["text"].as_str().unwrap());
    // Without the key: 401, before anything is read.
    let anon = gw.http.get(format!("{}/api/pairing", gw.base)).send().await.unwrap();
    assert_eq!(anon.status().as_u16(), 401);
    let anon = gw
        .http
        .post(format!("{}/api/pairing/approve", gw.base))
        .json(&serde_json::json!({"platform": "telegram", "code": code}))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status().as_u16(), 401);
    let (s, v) = gw.get("/api/pairing").await;
    assert_eq!(s, 200);
    assert_eq!(v["pending"][0]["platform"], "telegram", "{v}");
    assert!(!v.to_string().contains(&code));
    let post = |body: Value| {
        let req = gw.http.post(format!("{}/api/pairing/approve", gw.base)).bearer_auth(&gw.key).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    assert_eq!(post(serde_json::json!({"platform": "telegram", "code": "ZZZZZZZZ"})).await.0, 404);
    assert_eq!(post(serde_json::json!({"platform": "Bad Name", "code": code})).await.0, 400);
    assert_eq!(post(serde_json::json!({"platform": "telegram"})).await.0, 400, "a missing field is a 400");
    let (s, v) = post(serde_json::json!({"platform": "telegram", "code": code})).await;
    assert_eq!((s, &v["user_id"]), (200, &serde_json::json!("77")), "{v}");
    let (_, v) = gw.get("/api/pairing").await;
    assert!(v["pending"].as_array().unwrap().is_empty());
    assert_eq!(v["approved"][0]["user_id"], "77");
    // The dashboard page has the tab.
    let page = gw.http.get(format!("{}/ui", gw.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("data-testid=\"tab-pairing\""));
    let r = gw
        .http
        .post(format!("{}/api/pairing/revoke", gw.base))
        .bearer_auth(&gw.key)
        .json(&serde_json::json!({"platform": "telegram", "user_id": "77"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["revoked"], true);
}
