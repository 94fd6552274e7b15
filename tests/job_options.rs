//! Black-box tests of a job's Hermes options (docs/jobs.md) through the real binary: its own
//! `provider` / `base_url` / `model` against two fake OpenAI-compatible servers (the job's
//! key variable the one sent, chats on the configured model), a manual run's one-time
//! prompt by the CLI and the REST API, the delivered brief mirrored into the Telegram chat
//! it was made in (`attach_to_session`), and the CLI flags' round trip.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn jobs_json(home: &TempHome) -> Vec<Value> {
    let o = cli(home.path(), &["cron", "list", "--all", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

const KEYS: [(&str, &str); 2] = [("OPENAI_API_KEY", "k-openai"), ("LM_API_KEY", "k-lmstudio")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_own_provider_reaches_its_endpoint_with_its_key_and_chats_keep_the_configured_model() {
    let (fake1, fake2) = (FakeLlm::start().await, FakeLlm::start().await);
    let home = TempHome::new("route");
    home.write("config.yaml", &config(Some(&fake1), None, ""));
    // `custom` to a local URL: no key at all (never the configured provider's).
    let add = ["cron", "add", "every 1h", "brief", "--name", "mine", "--deliver", "local", "--provider", "custom"];
    let o = cli(home.path(), &[&add[..], &["--base-url", &fake2.url, "--model", "m2"]].concat(), &KEYS);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cli(home.path(), &["cron", "run", "mine"], &KEYS);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    assert_eq!((fake1.calls(), fake2.calls()), (0, 1), "the job's endpoint answered");
    assert_eq!(fake2.requests()[0]["model"], "m2");
    assert_eq!(fake2.auth()[0], None, "no key sent to a custom local endpoint");
    // A named provider on its own host: its key variable is the one sent.
    let add = ["cron", "add", "every 1h", "brief", "--name", "lm", "--deliver", "local", "--provider", "lmstudio"];
    assert!(cli(home.path(), &[&add[..], &["--base-url", &fake2.url, "--model", "m3"]].concat(), &KEYS).status.success());
    let o = cli(home.path(), &["cron", "run", "lm"], &KEYS);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(fake2.auth()[1].as_deref(), Some("Bearer k-lmstudio"));
    assert_eq!(fake2.requests()[1]["model"], "m3");
    // The fields round-trip through the listing.
    let mine = jobs_json(&home).into_iter().find(|j| j["id"] == "mine").unwrap();
    assert_eq!((&mine["provider"], &mine["base_url"], &mine["model"]), (&json!("custom"), &json!(fake2.url), &json!("m2")));
    // A chat stays on the configured model and its key; the REST run's one-time prompt
    // reaches the job's endpoint under `## Run Context`, for that run only.
    let gw = Gateway::start(home.path(), &KEYS);
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hello"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(fake1.calls(), 1, "the chat went to the configured model");
    assert_eq!(fake1.auth()[0].as_deref(), Some("Bearer k-openai"));
    let run = |body: Value| gw.http.post(format!("{}/api/jobs/mine/run", gw.base)).bearer_auth(&gw.key).json(&body).send();
    let r = run(json!({"prompt": "only today: the weather too"})).await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.text().await);
    assert_eq!(fake2.calls(), 3);
    assert!(last_user(&fake2.requests()[2]).ends_with("brief\n\n## Run Context\n\nonly today: the weather too"), "{}", fake2.requests()[2]);
    let r = run(json!({"prompt": 5})).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("`prompt`"));
    assert_eq!(fake2.calls(), 3, "a refused run runs nothing");
    let (_, job) = gw.get("/api/jobs/mine").await;
    assert_eq!(job["job"]["prompt"], "brief", "the one-time prompt is not stored");
    // A wrong type over REST is a 400 naming the field, nothing changed.
    let r = gw.http.patch(format!("{}/api/jobs/mine", gw.base)).bearer_auth(&gw.key).json(&json!({"enabled_toolsets": 3})).send();
    let r = r.await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("`enabled_toolsets`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brief_attached_to_its_telegram_chat_is_in_the_context_of_the_users_reply() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("mirror");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    // The user talks to the agent in their chat (the session the brief will join).
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 1, 42, 42, "hello")).await, 200);
    assert_eq!(tg.wait_for(1, 20).await.len(), 1);
    let job = json!({"id": "brief", "name": "morning brief", "schedule": "0 8 * * *", "prompt": "brief me", "deliver": "origin",
        "attach_to_session": true, "origin": {"platform": "telegram", "chat_id": "42", "user_id": "42", "chat_type": "dm"}});
    let r = gw.http.post(format!("{}/api/jobs", gw.base)).bearer_auth(&gw.key).json(&job).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.text().await);
    llm.push(Reply::Text("Rain at noon; take the umbrella.".into()));
    let r = gw.http.post(format!("{}/api/jobs/brief/run", gw.base)).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let sent = tg.wait_for(2, 20).await;
    assert!(sent[1]["text"].as_str().unwrap().contains("Rain at noon"), "{sent:?}");
    // The user answers the brief: the model sees it, as Hermes mirrors it (a user turn).
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 2, 42, 42, "move it to 1pm?")).await, 200);
    tg.wait_for(3, 20).await;
    let req = llm.requests().last().cloned().unwrap();
    let msgs = req["messages"].as_array().unwrap();
    let brief =
        msgs.iter().position(|m| m["role"] == "user" && m["content"] == "[Cron delivery: morning brief]\nRain at noon; take the umbrella.");
    let reply = msgs.iter().position(|m| m["content"].as_str().is_some_and(|c| c.contains("move it to 1pm?")));
    assert!(brief.is_some() && brief < reply, "{req}");
}

#[test]
fn the_cli_flags_round_trip_and_a_wrong_type_is_a_usage_error() {
    let home = TempHome::new("flags");
    let add = [
        "cron",
        "add",
        "every 2h",
        "digest",
        "--name",
        "digest",
        "--deliver",
        "local",
        "--context-from",
        "news,weather",
        "--enabled-toolsets",
        "web,time",
        "--attach-to-session",
        "true",
    ];
    let o = cli(home.path(), &add, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = &jobs_json(&home)[0];
    assert_eq!((&j["context_from"], &j["enabled_toolsets"]), (&json!(["news", "weather"]), &json!(["web", "time"])));
    assert_eq!(j["attach_to_session"], true);
    // Edit changes one field, keeps the others; an empty value clears.
    let o = cli(home.path(), &["cron", "edit", "digest", "--enabled-toolsets", "", "--attach-to-session", "false"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = &jobs_json(&home)[0];
    assert_eq!(
        (&j["context_from"], &j["enabled_toolsets"], &j["attach_to_session"]),
        (&json!(["news", "weather"]), &json!([]), &json!(false))
    );
    let o = cli(home.path(), &["cron", "edit", "digest", "--attach-to-session", "maybe"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--attach-to-session"), "{}", stderr(&o));
    // jobs.json in Hermes' own form: the fields load; a wrong type skips that job, naming it.
    home.write(
        "cron/jobs.json",
        r#"{"jobs": [{"id": "a1b2c3d4e5f6", "prompt": "p", "schedule": {"kind": "interval", "minutes": 60}, "context_from": "digest",
            "enabled_toolsets": null, "provider": "custom", "base_url": "http://127.0.0.1:1/v1", "attach_to_session": true},
           {"id": "bad", "prompt": "p", "schedule": "every 1h", "context_from": 7}]}"#,
    );
    let o = cli(home.path(), &["cron", "sync"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let all = jobs_json(&home);
    let a = all.iter().find(|j| j["id"] == "a1b2c3d4e5f6").unwrap();
    assert_eq!((&a["context_from"], &a["provider"], &a["attach_to_session"]), (&json!(["digest"]), &json!("custom"), &json!(true)));
    let bad = all.iter().find(|j| j["id"] == "bad").unwrap();
    assert_eq!(bad["state"], "skipped");
    assert!(bad["skip_reason"].as_str().unwrap().contains("`context_from`"), "{bad}");
}
