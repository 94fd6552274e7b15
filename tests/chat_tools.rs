//! `send_message` and the skills tools end to end on the real binary, with a scripted
//! OpenAI-compatible model and a fake Telegram Bot API: a send reaches Telegram once even when
//! the model repeats the very same call, a new call with the same text sends again, `list`
//! shows this chat and the home channel, bad targets are tool errors naming the valid ones;
//! the skills index is in the chat's system prompt, `skill_view` returns the body, refuses
//! traversal and names the available skills for an unknown one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

const HOME_CHANNEL: &str = "-100777";

/// The content of the newest tool message of a recorded model request.
fn last_tool_result(req: &Value) -> String {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

fn system_of(req: &Value) -> String {
    req["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

fn sent_to(tg: &FakeTelegram, chat: &str) -> Vec<String> {
    tg.sent().iter().filter(|m| m["chat_id"] == chat).map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect()
}

#[tokio::test]
async fn a_send_reaches_telegram_once_even_when_the_same_call_is_replayed() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = TempHome::new("send-once");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[("TELEGRAM_HOME_CHANNEL", HOME_CHANNEL)]);
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});
    let args = json!({"target": "telegram", "message": "Build finished"});
    let same = || Reply::ToolWithId { id: "call_same".into(), name: "send_message".into(), args: args.clone() };

    llm.push(same());
    llm.push(Reply::Text("sent".into()));
    let (s, v) = gw.post_message(msg("tell the team the build finished")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("sent")), "{v}");
    let first = last_tool_result(&llm.requests()[1]);
    assert!(first.contains("\"success\":true") && first.contains("home channel"), "{first}");
    assert_eq!(sent_to(&tg, HOME_CHANNEL), ["Build finished"]);

    // The model repeats the very same call (same id, same arguments): not sent again.
    llm.push(same());
    llm.push(Reply::Text("again".into()));
    let (s, _) = gw.post_message(msg("did it go out?")).await;
    assert_eq!(s, 200);
    let replay = last_tool_result(&llm.requests()[3]);
    assert!(replay.contains("already_sent"), "{replay}");
    assert_eq!(sent_to(&tg, HOME_CHANNEL), ["Build finished"], "a replayed call sends nothing");

    // A new call with the same text is a new message.
    llm.push(Reply::Tool { name: "send_message".into(), args });
    llm.push(Reply::Text("resent".into()));
    let (s, _) = gw.post_message(msg("send it once more")).await;
    assert_eq!(s, 200);
    assert_eq!(sent_to(&tg, HOME_CHANNEL), ["Build finished", "Build finished"]);
}

#[tokio::test]
async fn list_shows_this_chat_and_the_home_channel_and_bad_targets_are_tool_errors() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = TempHome::new("send-list");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[("TELEGRAM_HOME_CHANNEL", HOME_CHANNEL)]);
    let tool = |args: Value| Reply::Tool { name: "send_message".into(), args };
    llm.push(tool(json!({"action": "list"})));
    llm.push(tool(json!({"target": "discord:123456", "message": "x"})));
    llm.push(tool(json!({"target": "matrix", "message": "x"})));
    llm.push(tool(json!({"target": "telegram:../../etc", "message": "x"})));
    llm.push(tool(json!({"target": "origin"})));
    llm.push(tool(json!({"target": "origin", "message": "to this chat"})));
    llm.push(Reply::Text("done".into()));
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 1, 42, 7, "who can you reach?")).await, 200);
    assert!(wait_until(20, || sent_to(&tg, "7").contains(&"done".to_string())).await, "{:?}", tg.sent());
    let reqs = llm.requests();
    assert!(reqs[0]["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "send_message"));

    let listed: Value = serde_json::from_str(&last_tool_result(&reqs[1])).unwrap();
    assert_eq!(
        listed["targets"],
        json!([
            {"target": "origin", "resolves_to": "telegram:7", "description": "this chat (telegram:7)"},
            {"target": "telegram", "resolves_to": format!("telegram:{HOME_CHANNEL}"), "description": format!("telegram home channel (telegram:{HOME_CHANNEL})")},
        ]),
        "{listed}"
    );
    for (i, why) in [(2, "Platform 'discord' is not configured"), (3, "Unknown platform: matrix"), (4, "invalid delivery target")] {
        let r = last_tool_result(&reqs[i]);
        assert!(r.starts_with("{\"error\":") && r.contains(why), "{r}");
        assert!(r.contains("Valid targets: origin, telegram, telegram:<chat_id>[:<thread_id>]"), "{r}");
    }
    assert!(last_tool_result(&reqs[5]).contains("Both 'target' and 'message' are required"));
    assert!(last_tool_result(&reqs[6]).contains("\"success\":true"));
    assert_eq!(sent_to(&tg, "7"), ["to this chat", "done"]);
    assert!(sent_to(&tg, HOME_CHANNEL).is_empty(), "nothing reached the home channel");
}

#[tokio::test]
async fn the_skills_index_is_in_the_chat_prompt_and_skill_view_loads_on_demand() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("skills-chat");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    home.write(
        "skills/news/SKILL.md",
        "---\nname: news\ndescription: Summarise the news\n---\n# News\nFetch three headlines and summarise each.\n",
    );
    home.write("skills/alpha/SKILL.md", "# Alpha\nDoes alpha things.\n");
    let gw = Gateway::start(home.path(), &[]);
    let view = |name: &str| Reply::Tool { name: "skill_view".into(), args: json!({ "name": name }) };
    llm.push(view("news"));
    llm.push(view("../config.yaml"));
    llm.push(view("missing"));
    llm.push(Reply::Tool { name: "skills_list".into(), args: json!({}) });
    llm.push(Reply::Text("ok".into()));
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "summarise the news"})).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("ok")), "{v}");
    let reqs = llm.requests();

    let sys = system_of(&reqs[0]);
    assert!(sys.contains("## Skills (mandatory)"), "{sys}");
    assert!(sys.contains("<available_skills>\n  - alpha: Does alpha things.\n  - news: Summarise the news\n</available_skills>"), "{sys}");
    assert!(!sys.contains("Fetch three headlines"), "only the index, not the bodies");
    let viewed: Value = serde_json::from_str(&last_tool_result(&reqs[1])).unwrap();
    assert_eq!((viewed["success"].as_bool(), viewed["name"].as_str()), (Some(true), Some("news")), "{viewed}");
    assert!(viewed["content"].as_str().unwrap().contains("Fetch three headlines and summarise each."), "{viewed}");
    let traversal = last_tool_result(&reqs[2]);
    assert!(traversal.contains("not a plain name") && !traversal.contains("base_url"), "{traversal}");
    let missing = last_tool_result(&reqs[3]);
    assert!(missing.contains("Skill 'missing' not found. Available skills: alpha, news."), "{missing}");
    let listed: Value = serde_json::from_str(&last_tool_result(&reqs[4])).unwrap();
    assert_eq!(listed["count"], 2, "{listed}");

    // A skill installed later is in the next session's prompt (the cached folder index is
    // re-checked); a running session keeps the index it started with (issue #31: skills are
    // read once per session start, not per turn).
    home.write("skills/zeta/SKILL.md", "---\ndescription: Last one\n---\n");
    let (s, _) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "anything new?"})).await;
    assert_eq!(s, 200);
    assert!(!system_of(llm.requests().last().unwrap()).contains("zeta"), "frozen for the session");
    assert_eq!(gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "/new"})).await.0, 200);
    let (s, _) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "anything new now?"})).await;
    assert_eq!(s, 200);
    assert!(system_of(llm.requests().last().unwrap()).contains("  - zeta: Last one\n</available_skills>"));
}

#[tokio::test]
async fn agent_max_turns_bounds_the_loop_and_a_third_identical_call_is_not_run() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("tool-guards");
    home.write("config.yaml", &config(Some(&llm), None, "agent:\n  max_turns: 4\n"));
    let gw = Gateway::start(home.path(), &[]);
    let msg = |text: &str| json!({"chat_id": "c1", "user_id": "u1", "text": text});
    let time = |args: Value| Reply::Tool { name: "current_time".into(), args };

    // The same call three times: the third is answered with a note instead of running.
    for _ in 0..3 {
        llm.push(time(json!({})));
    }
    llm.push(Reply::Text("ok".into()));
    let (s, v) = gw.post_message(msg("what time is it, really?")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("ok")), "{v}");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 4);
    assert!(last_tool_result(&reqs[1]).contains("\"now\""));
    assert!(last_tool_result(&reqs[2]).contains("\"now\""), "the second identical call still runs");
    let third = last_tool_result(&reqs[3]);
    assert!(third.contains("Not run: `current_time` was already called 2 times in this turn"), "{third}");

    // Different calls each round: the turn stops after agent.max_turns model calls.
    for n in 0..4 {
        llm.push(time(json!({ "n": n })));
    }
    let (s, v) = gw.post_message(msg("keep checking")).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["reply"].as_str().unwrap().starts_with("I stopped after 4 tool rounds"), "{v}");
    assert_eq!(llm.calls(), 8, "4 model calls in the second turn");
}
