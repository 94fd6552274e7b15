//! Black-box tests of the chat commands that edit a conversation or its model (issue #27
//! item 6): the real `serve` binary, `POST /api/messages`, fake OpenAI-compatible models.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::json;

fn msg(text: &str) -> serde_json::Value {
    json!({"chat_id": "c1", "user_id": "u1", "text": text})
}

async fn say(gw: &Gateway, text: &str) -> serde_json::Value {
    let (s, v) = gw.post_message(msg(text)).await;
    assert_eq!(s, 200, "{text}: {v}");
    v
}

/// `/model` changes the model id the provider receives (and `provider:model` the provider
/// itself), `/retry` sends the last message again, `/undo` and `/title` edit the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_retry_undo_and_title_through_the_api() {
    let llm = FakeLlm::start().await;
    let other = FakeLlm::start().await;
    let home = TempHome::new("commands");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[("OPENROUTER_API_KEY", "or-key"), ("OPENROUTER_BASE_URL", other.url.as_str())]);
    assert_eq!(say(&gw, "hello").await["reply"], "echo: hello");
    assert_eq!(llm.requests()[0]["model"], "fake-model");

    let switched = say(&gw, "/model other-model").await;
    assert!(switched["reply"].as_str().unwrap().starts_with("Model switched to `other-model`\nProvider: openai"), "{switched}");
    assert_eq!(llm.calls(), 1, "a command is never agent input");
    assert_eq!(say(&gw, "again").await["reply"], "echo: again");
    assert_eq!(llm.requests()[1]["model"], "other-model");

    let retried = say(&gw, "/retry").await;
    assert_eq!(retried["reply"], "echo: again", "{retried}");
    assert_eq!(llm.calls(), 3);
    assert_eq!((last_user(&llm.requests()[2]).as_str(), llm.requests()[2]["model"].as_str()), ("again", Some("other-model")));
    let id = retried["session_id"].as_str().unwrap().to_string();
    let (_, show) = gw.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(user_texts(&show), ["hello", "again"], "the retried message is not stored twice");
    let answers = show["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "assistant").count();
    assert_eq!(answers, 2, "the replaced answer is gone: {show}");

    let refused = say(&gw, "/model nosuch:m").await;
    assert!(refused["reply"].as_str().unwrap().starts_with("Error: Unknown provider `nosuch`."), "{refused}");
    let routed = say(&gw, "/model openrouter:vendor/m1").await;
    assert!(routed["reply"].as_str().unwrap().contains("Provider: openrouter"), "{routed}");
    assert_eq!(say(&gw, "elsewhere").await["reply"], "echo: elsewhere");
    assert_eq!((llm.calls(), other.calls()), (3, 1), "the turn went to the other provider");
    assert_eq!(other.requests()[0]["model"], "vendor/m1");

    let undone = say(&gw, "/undo").await;
    assert!(undone["reply"].as_str().unwrap().starts_with("↩️ Undid 1 turn(s) (2 message(s)).\nBacked up to: \"elsewhere\""), "{undone}");
    assert_eq!(say(&gw, "/title Trip plans").await["reply"], "✏️ Session title set: **Trip plans**");
    let (_, show) = gw.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(user_texts(&show), ["hello", "again"]);
    let sessions = say(&gw, "/sessions").await;
    assert!(sessions["reply"].as_str().unwrap().contains("(current): 4 messages — Trip plans"), "{sessions}");
    let help = say(&gw, "/help").await;
    for c in ["/retry", "/undo", "/title", "/compress", "/model", "/sethome", "/<skill-name>"] {
        assert!(help["reply"].as_str().unwrap().contains(c), "{c} in {help}");
    }
}
