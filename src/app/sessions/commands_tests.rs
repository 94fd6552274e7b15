//! The commands that edit a conversation or a setting (issue #27 item 6): `/title`,
//! `/sethome`, `/model`, `/undo`, `/retry`, `/compress`, `/<skill-name>`, and their
//! refusal while a turn runs — through `handle_inbound` with the real embedded store.

use crate::app::{App, Inbound, ReplyPath};
use crate::config::Env;
use crate::core::ids::{ChatType, Origin, SessionKey};
use crate::core::session::{Lease, Role};
use crate::ports::Store;
use crate::store::sqlite::SqliteStore;
use crate::test_support::{EchoLlm, Outbox, TestApp};
use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;

struct Kit {
    app: App,
    llm: Arc<EchoLlm>,
    store: Arc<dyn Store>,
    now: DateTime<Utc>,
}

fn kit_with(yaml: &str, home: &std::path::Path, env: &[(&str, &str)]) -> Kit {
    let now = Utc::now();
    let llm = Arc::new(EchoLlm::default());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::in_memory().unwrap());
    let app = TestApp::new(now)
        .yaml(yaml)
        .home(home)
        .env(Env::from_pairs(env.iter().copied()))
        .llm(llm.clone())
        .store(store.clone())
        .delivery(Arc::new(Outbox::default()))
        .build();
    Kit { app, llm, store, now }
}

fn kit(yaml: &str) -> Kit {
    kit_with(yaml, std::path::Path::new("/nonexistent-home"), &[])
}

const TG: &str = "platforms: {telegram: {allowed_users: [u1, u2], home_channel: '-100'}}";

fn origin(user: &str) -> Origin {
    let mut o = Origin::new("telegram", &format!("chat-{user}"), ChatType::Dm, Some(user), None).unwrap();
    o.chat_name = Some(format!("{user}'s chat"));
    o
}

async fn send(k: &Kit, o: &Origin, text: &str) -> String {
    let msg =
        Inbound { origin: o.clone(), text: text.into(), message_id: None, user_name: None, reply: ReplyPath::Origin, attachments: vec![] };
    k.app.handle_inbound(msg).await.unwrap().reply.unwrap_or_default()
}

async fn transcript(k: &Kit, o: &Origin) -> Vec<String> {
    let key = SessionKey::derive_in(k.app.profile(), o, k.app.key_rules());
    let e = k.store.get_entry(&key).await.unwrap().unwrap();
    k.store.recent_messages(&e.session_id, 100).await.unwrap().into_iter().map(|m| m.content).collect()
}

#[tokio::test]
async fn title_is_shown_set_cleaned_and_listed() {
    let k = kit(TG);
    let o = origin("u1");
    assert!(send(&k, &o, "/title").await.contains("No title set. Usage: `/title My Session Name`"));
    assert_eq!(send(&k, &o, "/title  Trip \u{200b} plans ").await, "✏️ Session title set: **Trip plans**");
    assert!(send(&k, &o, "/title").await.contains("Title: **Trip plans**"));
    assert!(send(&k, &o, "/sessions").await.contains("(current): 0 messages — Trip plans"));
    assert_eq!(send(&k, &o, "/title \u{200b}").await, "⚠️ Title is empty after cleanup. Please use printable characters.");
    assert!(send(&k, &o, &format!("/title {}", "x".repeat(101))).await.starts_with("⚠️ Title too long"));
    assert!(send(&k, &o, "/title").await.contains("Trip plans"), "a refused title changes nothing");
}

#[tokio::test]
async fn sethome_makes_this_chat_the_home_and_wins_over_config() {
    let k = kit(TG);
    let job = |deliver: &str| {
        let spec = serde_json::json!({"id": "j1", "schedule": "every 1h", "prompt": "p", "deliver": deliver});
        crate::core::job::Job::from_spec(
            &crate::core::jobfile::parse_job(&spec, k.now, chrono_tz::UTC).unwrap(),
            false,
            k.now,
            chrono_tz::UTC,
        )
    };
    let chat = |r: &crate::app::jobs::deliver::Resolved| match r {
        crate::app::jobs::deliver::Resolved::Chat(t) => (t.chat_id.clone(), t.thread_id.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(chat(&k.app.resolve_targets(&job("telegram")).await[0].1), ("-100".into(), None), "configured home");
    let mut o = origin("u2");
    o.thread_id = Some("7".into());
    let reply = send(&k, &o, "/sethome").await;
    assert_eq!(reply, "✅ Home channel set to **u2's chat** (ID: chat-u2).\nCron jobs and cross-platform messages will be delivered here.");
    assert_eq!(chat(&k.app.resolve_targets(&job("telegram")).await[0].1), ("chat-u2".into(), Some("7".into())), "stored home wins");
    // Another process sees it (the store is the truth).
    let other = TestApp::new(k.now).yaml(TG).store(k.store.clone()).delivery(Arc::new(Outbox::default())).build();
    assert_eq!(chat(&other.resolve_targets(&job("telegram")).await[0].1).0, "chat-u2");
    // A non-admin job made in u1's chat may now deliver to the new home explicitly.
    let homes = k.app.homes().await;
    assert!(k.app.access_with(&homes).check_delivery(false, Some(&origin("u1")), "telegram", "chat-u2", None).is_ok());
    // And the job's creation and update hold it to the same rules (the stored home counts).
    let spec = |id: &str, deliver: &str| {
        let v = serde_json::json!({"id": id, "schedule": "every 1h", "prompt": "p", "deliver": deliver});
        crate::core::jobfile::parse_job(&v, k.now, chrono_tz::UTC).unwrap()
    };
    let u1 = origin("u1");
    let made = k.app.create_job(spec("to-home", "telegram:chat-u2"), false, Some(&u1)).await;
    assert!(made.is_ok(), "{:?}", made.err());
    let refused = k.app.create_job(spec("elsewhere", "telegram:chat-u9"), false, Some(&u1)).await;
    assert!(matches!(refused, Err(crate::app::AppError::NotAllowed(_))), "{refused:?}");
    let moved = k.app.update_job("to-home", &serde_json::json!({"deliver": "telegram:chat-u2:7"}), Some(&u1)).await;
    assert!(moved.is_ok(), "{:?}", moved.err());
}

#[tokio::test]
async fn with_an_admin_list_only_admins_set_the_home_or_the_global_model() {
    let k = kit("admin_users: [u1]\nplatforms: {telegram: {allowed_users: [u1, u2]}}");
    assert_eq!(send(&k, &origin("u2"), "/sethome").await, "⛔ /sethome is limited to admins here (admin_users).");
    assert_eq!(k.store.get_meta(crate::app::homes::HOMES_KEY).await.unwrap(), None, "nothing stored");
    assert_eq!(send(&k, &origin("u2"), "/model m9 --global").await, "⛔ /model --global is limited to admins here (admin_users).");
    assert!(send(&k, &origin("u1"), "/sethome").await.starts_with("✅ Home channel set"));
    assert!(send(&k, &origin("u1"), "/model m9 --global").await.starts_with("Model switched to `m9`"));
}

#[tokio::test]
async fn model_switches_this_session_then_the_default_and_refuses_unknown_providers() {
    let env = [("HERMES_MODEL_PROVIDER", "custom"), ("HERMES_MODEL_BASE_URL", "http://127.0.0.1:9/v1"), ("HERMES_MODEL", "m0")];
    let k = kit_with(TG, std::path::Path::new("/nonexistent-home"), &env);
    let (a, b) = (origin("u1"), origin("u2"));
    assert!(send(&k, &a, "/model").await.starts_with("Current: `m0` on custom (config.yaml)"));
    assert_eq!(send(&k, &a, "/model m2").await, "Model switched to `m2`\nProvider: custom\n_(session only — add `--global` to persist)_");
    assert!(send(&k, &a, "/status").await.contains("\nModel in use: m2 (custom; /model, this session)"));
    send(&k, &a, "hi").await;
    send(&k, &b, "hi").await;
    let used: Vec<(Option<String>, Option<String>)> =
        k.llm.requests().into_iter().map(|r| (r.route.and_then(|r| r.provider), r.model)).collect();
    assert_eq!(used, [(Some("custom".into()), Some("m2".into())), (None, None)], "only this session switched");
    assert!(send(&k, &a, "/model nosuch:x").await.starts_with("Error: Unknown provider `nosuch`. Known providers: auto, "));
    assert_eq!(send(&k, &a, "/model openrouter:x/y").await, "Error: Provider `openrouter` has no API key here: set OPENROUTER_API_KEY.");
    assert!(send(&k, &a, "/model").await.starts_with("Current: `m2` on custom (this session)"), "a refusal changes nothing");
    assert!(send(&k, &b, "/model m3 --global").await.contains("Saved as the agent's default (`--global`)"));
    send(&k, &b, "again").await;
    send(&k, &a, "/new").await;
    send(&k, &a, "fresh").await;
    let used: Vec<Option<String>> = k.llm.requests().into_iter().skip(2).map(|r| r.model).collect();
    assert_eq!(used, [Some("m3".into()), Some("m3".into())], "the default, and /new drops the session's choice");
    assert!(send(&k, &a, "/model").await.starts_with("Current: `m3` on custom (the agent's default)"));
}

#[tokio::test]
async fn undo_removes_the_last_exchanges_and_retry_answers_again() {
    let k = kit(TG);
    let o = origin("u1");
    assert_eq!(send(&k, &o, "/undo").await, "Nothing to undo.");
    assert_eq!(send(&k, &o, "/retry").await, "No previous message to retry.");
    send(&k, &o, "one").await;
    send(&k, &o, "two").await;
    send(&k, &o, "three").await;
    assert_eq!(
        send(&k, &o, "/undo").await,
        "↩️ Undid 1 turn(s) (2 message(s)).\nBacked up to: \"three\"\nCopy/edit the text above and send it to re-prompt from here."
    );
    assert_eq!(transcript(&k, &o).await, ["one", "echo: one", "two", "echo: two"]);
    assert_eq!(send(&k, &o, "/undo x").await, "Invalid count \"x\" — use /undo or /undo N.");
    let calls = k.llm.requests().len();
    assert_eq!(send(&k, &o, "/retry").await, "echo: two", "the turn answers the last message again");
    assert_eq!(k.llm.requests().len(), calls + 1);
    let prompt = k.llm.requests().last().unwrap().messages.clone();
    assert_eq!(
        prompt.iter().filter(|m| m.role != Role::System).map(|m| m.content.as_str()).collect::<Vec<_>>(),
        ["one", "echo: one", "two"]
    );
    assert_eq!(transcript(&k, &o).await, ["one", "echo: one", "two", "echo: two"], "one answer, not two");
    assert!(send(&k, &o, "/undo 5").await.starts_with("↩️ Undid 2 turn(s) (4 message(s)).\nBacked up to: \"one\""));
    assert!(transcript(&k, &o).await.is_empty());
    send(&k, &o, "after").await;
    assert_eq!(transcript(&k, &o).await, ["after", "echo: after"]);
}

#[tokio::test]
async fn commands_that_change_the_conversation_wait_for_a_running_turn() {
    let k = kit(TG);
    let o = origin("u1");
    send(&k, &o, "one").await;
    let key = SessionKey::derive_in(k.app.profile(), &o, k.app.key_rules());
    let mut e = k.store.get_entry(&key).await.unwrap().unwrap();
    let now = Utc::now();
    e.grant(Lease { token: "other".into(), epoch: 0, owner: "elsewhere:1".into(), started_at: now, expires_at: now + Duration::hours(1) });
    k.store.put_entry(&e, &[]).await.unwrap();
    for c in ["retry", "undo", "compress", "title T", "sethome"] {
        let name = c.split(' ').next().unwrap();
        assert_eq!(
            send(&k, &o, &format!("/{c}")).await,
            format!("⏳ Agent is running — `/{name}` can't run mid-turn. Wait for the current response or `/stop` first.")
        );
    }
    assert_eq!(send(&k, &o, "/model m2").await, "Agent is running — wait or /stop first, then switch models.");
    assert!(send(&k, &o, "/status").await.contains("Running: yes"), "info commands still answer");
    assert_eq!(transcript(&k, &o).await, ["one", "echo: one"], "nothing changed");
    assert_eq!(k.llm.requests().len(), 1, "and no turn ran");
    let after = k.store.get_entry(&key).await.unwrap().unwrap();
    assert_eq!((after.model, after.lease.map(|l| l.token)), (None, Some("other".into())));
}

#[tokio::test]
async fn compress_summarizes_now_and_keeps_the_protected_tail() {
    let k = kit(&format!("{TG}\ncompression: {{protect_first_n: 1, protect_last_n: 2}}"));
    let o = origin("u1");
    send(&k, &o, "one").await;
    assert_eq!(send(&k, &o, "/compress").await, "Not enough conversation to compress (need at least 4 messages).");
    send(&k, &o, "two").await;
    send(&k, &o, "three").await;
    let reply = send(&k, &o, "/compress").await;
    assert!(reply.starts_with("🗜️ Compressed: 6 → 4 messages\nApprox request size: ~"), "{reply}");
    let summarizer = k.llm.requests().last().unwrap().clone();
    assert!(summarizer.tools.is_empty() && summarizer.messages[1].content.contains("echo: one"), "{summarizer:?}");
    let status = send(&k, &o, "/status").await;
    assert!(status.contains("Context: first 1 messages + a summary of"), "{status}");
    send(&k, &o, "four").await;
    let prompt = k.llm.requests().last().unwrap().messages.clone();
    assert!(prompt.iter().any(|m| m.content.contains("[CONTEXT SUMMARY")), "the next turn reads the summary");
    assert!(!prompt.iter().any(|m| m.content == "two"), "summarized turns are not resent");
}

#[tokio::test]
async fn a_skill_command_runs_the_turn_with_that_skill() {
    let home = std::env::temp_dir().join(format!("hz-skillcmd-{}-{:08x}", std::process::id(), rand::random::<u32>()));
    let dir = home.join("skills").join("paper-search");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), "---\nname: paper-search\ndescription: Find papers\n---\n# Papers\nSearch arXiv first.\n")
        .unwrap();
    let k = kit_with(TG, &home, &[]);
    let o = origin("u1");
    send(&k, &o, "/paper_search@bot LLM agents").await;
    let user = transcript(&k, &o).await.remove(0);
    assert!(user.starts_with("[IMPORTANT: The user has invoked the \"paper-search\" skill, indicating they want you to follow its instructions. The full skill content is loaded below.]"), "{user}");
    assert!(user.contains("Search arXiv first.") && user.ends_with("alongside the skill invocation: LLM agents"), "{user}");
    send(&k, &o, "/dance now").await;
    assert_eq!(transcript(&k, &o).await[2], "/dance now", "an unknown /word goes to the agent as typed");
    let _ = std::fs::remove_dir_all(&home);
}
