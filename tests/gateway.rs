//! Black-box tests of the walking skeleton: the real `serve` binary with fake upstreams.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_with_one_tool_round_through_openai_compatible_model() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::Tool { name: "current_time".into(), args: json!({}) });
    llm.push(Reply::Text("It is tea time.".into()));
    let home = TempHome::new("tool");
    home.write("config.yaml", &config(Some(&llm), None, "timezone: Europe/Berlin\n"));
    home.write("SOUL.md", "You are a test soul.");
    let gw = Gateway::start(home.path(), &[]);
    let (status, body) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "what time is it?"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "It is tea time.");
    assert_eq!(body["session_key"], "agent:main:api:dm:c1");
    assert_eq!(body["queued"], false);
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["model"], "fake-model");
    assert_eq!(reqs[0]["messages"][0]["role"], "system");
    assert!(reqs[0]["messages"][0]["content"].as_str().unwrap().contains("test soul"));
    assert!(reqs[0]["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "current_time"));
    // The second request carries the tool call and its result.
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let call = &msgs[msgs.len() - 2];
    let result = &msgs[msgs.len() - 1];
    assert_eq!(call["tool_calls"][0]["function"]["name"], "current_time");
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], call["tool_calls"][0]["id"]);
    assert!(result["content"].as_str().unwrap().contains("Europe/Berlin"));
    // Token totals are kept on the entry.
    let (_, list) = gw.get("/api/sessions").await;
    assert_eq!(list["sessions"][0]["input_tokens"], 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_process_restart() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("restart");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let mut gw = Gateway::start(home.path(), &[]);
    let (s, first) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "remember the word zebra"})).await;
    assert_eq!(s, 200);
    gw.kill();
    let gw2 = Gateway::start(home.path(), &[]);
    let (s, second) = gw2.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "what was the word?"})).await;
    assert_eq!(s, 200);
    assert_eq!(first["session_id"], second["session_id"]);
    let last = llm.requests().pop().unwrap();
    let texts: Vec<String> = last["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").to_string()).collect();
    assert!(texts.contains(&"remember the word zebra".to_string()), "{texts:?}");
    assert!(texts.contains(&"echo: remember the word zebra".to_string()), "{texts:?}");
    assert_eq!(texts.last().unwrap(), "what was the word?");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_message_id_runs_no_second_turn() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("dup");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    let body = json!({"chat_id": "c1", "user_id": "u1", "text": "hi", "message_id": "m-1"});
    let (s1, b1) = gw.post_message(body.clone()).await;
    let (s2, b2) = gw.post_message(body).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(b1["reply"], "echo: hi");
    assert_eq!(b2["duplicate"], true);
    assert!(b2.get("reply").is_none());
    assert_eq!(llm.calls(), 1);
    let (_, show) = gw.get(&format!("/api/sessions/{}", b1["session_id"].as_str().unwrap())).await;
    assert_eq!(show["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_webhook_replies_through_bot_api_and_refuses_strangers() {
    let llm = FakeLlm::start().await;
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("tg");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("wrong", tg_update(1, 10, 42, 42, "hello")).await, 401);
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 42, 42, "hello")).await, 200);
    let sent = tg.wait_for(1, 10).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["chat_id"], "42");
    assert_eq!(sent[0]["text"], "echo: hello");
    assert_eq!(sent[0]["_bot"], "bot123:abc");
    // Telegram re-sends the same update: no second turn, no second reply.
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 10, 42, 42, "hello")).await, 200);
    // A user not on the allow list: one refusal, no model call.
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 11, 99, 99, "let me in")).await, 200);
    let sent = tg.wait_for(2, 10).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["chat_id"], "99");
    assert!(sent[1]["text"].as_str().unwrap().contains("allow list"));
    assert_eq!(llm.calls(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_telegram_reply_is_split_on_lines() {
    let llm = FakeLlm::start().await;
    let long = format!("{}\n{}\n", "a".repeat(4000), "b".repeat(300));
    llm.push(Reply::Text(long.clone()));
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("tgsplit");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(5, 50, 42, 42, "essay please")).await, 200);
    let sent = tg.wait_for(2, 10).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(format!("{}{}", sent[0]["text"].as_str().unwrap(), sent[1]["text"].as_str().unwrap()), long);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_limit_counts_utf16_code_units() {
    // 3000 emoji: 3000 characters, but 6000 UTF-16 code units, which is what Telegram counts.
    let llm = FakeLlm::start().await;
    let long = "😀".repeat(3000);
    llm.push(Reply::Text(long.clone()));
    let tg = FakeTelegram::start().await;
    let home = TempHome::new("tgutf16");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    assert_eq!(gw.telegram("tg-secret", tg_update(6, 51, 42, 42, "emoji please")).await, 200);
    let sent = tg.wait_for(2, 10).await;
    let texts: Vec<&str> = sent.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts.iter().map(|t| t.encode_utf16().count()).collect::<Vec<_>>(), vec![4096, 1904]);
    assert_eq!(texts.concat(), long);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_failure_gives_502_and_keeps_the_message() {
    let llm = FakeLlm::start().await;
    for _ in 0..3 {
        llm.push(Reply::Status(500));
    }
    let home = TempHome::new("fail");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    let (s, b) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "are you there?"})).await;
    assert_eq!(s, 502, "{b}");
    assert!(b["error"].as_str().unwrap().contains("model"));
    assert_eq!(llm.calls(), 3, "retried on 5xx");
    let (_, list) = gw.get("/api/sessions").await;
    let id = list["sessions"][0]["session_id"].as_str().unwrap().to_string();
    let (_, show) = gw.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(show["messages"][0]["content"], "are you there?");
    // The lease was released: the next message gets a turn.
    let (s, b) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "again"})).await;
    assert_eq!(s, 200, "{b}");
}

#[test]
fn bad_config_exits_78_naming_file_and_key() {
    let home = TempHome::new("badcfg");
    home.write("config.yaml", "model:\n  max_iterations: many\n");
    let out = std::process::Command::new(bin()).args(["--home", home.path().to_str().unwrap(), "doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(78));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.yaml") && err.contains("model.max_iterations"), "{err}");
}

#[test]
fn usage_error_exits_2() {
    let out = std::process::Command::new(bin()).arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn offline_chat_works_from_the_terminal_and_keeps_history() {
    use std::io::Write;
    let home = TempHome::new("chat");
    for round in 0..2 {
        let mut child = std::process::Command::new(bin())
            .args(["--home", home.path().to_str().unwrap(), "chat"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        writeln!(child.stdin.take().unwrap(), "hello {round}").unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("I received: \"hello {round}\"")), "{text}");
    }
    let out = std::process::Command::new(bin()).args(["--home", home.path().to_str().unwrap(), "sessions", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("agent:main:local:dm:terminal"), "{text}");
    assert!(text.split_whitespace().any(|w| w == "4"), "two rounds = 4 messages in one session: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_creates_a_private_api_key_and_never_logs_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = TempHome::new("apikey");
    let out = std::process::Command::new(bin())
        .args(["--home", home.path().to_str().unwrap(), "serve", "--listen", "127.0.0.1:0"])
        .env("API_SERVER_KEY", "")
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = out.id();
    std::thread::sleep(std::time::Duration::from_millis(700));
    std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
    let out = out.wait_with_output().unwrap();
    let key_path = home.path().join("api_key");
    let key = std::fs::read_to_string(&key_path).unwrap();
    assert!(key.trim().len() >= 32);
    assert_eq!(std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777, 0o600);
    let logs = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(logs.contains(key_path.to_str().unwrap()), "says where the key is: {logs}");
    assert!(!logs.contains(key.trim()), "the key itself is never printed");
}

/// build.rs links the binary as a non-PIE executable on Linux (BENCHMARKS.md §5): the ELF
/// header says `ET_EXEC` (2), not `ET_DYN` (3, a PIE), and there is no table of relative
/// relocations for the loader to apply at every start.
#[cfg(target_os = "linux")]
#[test]
fn the_binary_is_linked_without_pie() {
    let elf = std::fs::read(bin()).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "a 64-bit ELF");
    assert_eq!(elf[5], 1, "little-endian");
    let e_type = u16::from_le_bytes([elf[16], elf[17]]);
    assert_eq!(e_type, 2, "ELF type {e_type}: 2 is a fixed-address executable, 3 a PIE (build.rs passes -no-pie)");
}
