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
    assert!(text.contains("echo  stdio  connected  1 tools") && text.contains("mcp_echo_echo"), "{text}{}", stderr(&out));

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
