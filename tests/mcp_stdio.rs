//! A stdio `mcp_servers` entry end to end (feature `testing`): the binary's hidden
//! `mcp-dev-stdio` command is the server (rmcp server on stdin/stdout); `mcp list` starts
//! it and lists `echo`, and the scripted model's call of `mcp_echo_echo` gets its answer.
//! (The refusal on Lambda is a unit test in `app::tools::mcp`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn stdio_config(llm: &FakeLlm) -> String {
    config(Some(llm), None, &format!("mcp_servers:\n  echo:\n    command: {}\n    args: [mcp-dev-stdio]\n    timeout: 10\n", bin()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_is_listed_and_called() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-stdio");
    home.write("config.yaml", &stdio_config(&llm));
    let h = home.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || cli(&h, &["mcp", "list"], &[])).await.unwrap();
    let text = stdout(&out);
    assert!(text.contains("echo  stdio  connected  2 tools") && text.contains("mcp_echo_echo"), "{text}{}", stderr(&out));

    let gw = Gateway::start(home.path(), &[]);
    llm.push(Reply::Tool { name: "mcp_echo_echo".into(), args: json!({"text": "ping"}) });
    llm.push(Reply::Text("pong".into()));
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "echo ping"})).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("pong")), "{v}");
    let req = &llm.requests()[1];
    let tool = req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap();
    let result: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(result, json!({"result": "echo: ping"}));
}

/// Secrets stay home (CONTRACT §17): the child's environment is the OS basics plus the
/// server's own `env`, never a gateway secret, whatever the gateway itself was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_gets_no_gateway_secret() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-stdio-env");
    let extra = format!(
        "mcp_servers:\n  probe:\n    command: {}\n    args: [mcp-dev-stdio]\n    timeout: 10\n    env:\n      PROBE_OWN: given-by-config\n",
        bin()
    );
    home.write("config.yaml", &config(Some(&llm), None, &extra));
    // The tool list is cached first (as in the test above): a gateway on a fresh home fetches
    // it in the background, so under load its first turn could be offered no `probe` tools.
    // The call below still spawns the child from the gateway, with the gateway's environment.
    let h = home.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || cli(&h, &["mcp", "list"], &[])).await.unwrap();
    assert!(stdout(&out).contains("mcp_probe_env"), "{}{}", stdout(&out), stderr(&out));
    let secrets = [
        ("SLACK_SIGNING_SECRET", "slack-signing-s3cret"),
        ("SLACK_BOT_TOKEN", "xoxb-s3cret"),
        ("DISCORD_BOT_TOKEN", "discord-s3cret"),
        ("OPENAI_API_KEY", "sk-model-s3cret"),
        ("WHATSAPP_CLOUD_APP_SECRET", "wa-s3cret"),
        ("AWS_SECRET_ACCESS_KEY", "aws-s3cret"),
        ("TZ", "Europe/Berlin"),
    ];
    let gw = Gateway::start(home.path(), &secrets);
    llm.push(Reply::Tool { name: "mcp_probe_env".into(), args: json!({}) });
    llm.push(Reply::Text("seen".into()));
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "env please"})).await;
    assert_eq!(s, 200, "{v}");
    let req = &llm.requests()[1];
    let tool = req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap();
    let result: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    let env: Value = serde_json::from_str(result["result"].as_str().unwrap_or_else(|| panic!("not a tool result: {result}"))).unwrap();
    let env = env.as_object().unwrap();
    assert_eq!(env.get("PROBE_OWN").and_then(Value::as_str), Some("given-by-config"), "the server's own entry: {env:?}");
    assert_eq!(env.get("TZ").and_then(Value::as_str), Some("Europe/Berlin"), "{env:?}");
    assert!(env.contains_key("PATH"), "{env:?}");
    let text = Value::Object(env.clone()).to_string();
    for (name, value) in secrets.iter().filter(|(n, _)| *n != "TZ").chain(&[
        ("API_SERVER_KEY", API_KEY),
        ("TELEGRAM_BOT_TOKEN", "123:abc"),
        ("TELEGRAM_WEBHOOK_SECRET", "tg-secret"),
    ]) {
        assert!(!env.contains_key(*name) && !text.contains(value), "{name} reached the MCP child: {text}");
    }
    for name in env.keys() {
        assert!(!name.starts_with("CARGO") && !name.starts_with("HERMES") && !name.starts_with("RUST"), "{name} is not a safe name");
    }
}
