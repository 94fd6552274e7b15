//! MCP tools end to end on the real binary against a real MCP server written with `rmcp`'s
//! server side (Streamable HTTP on 127.0.0.1:0): the scripted model calls
//! `mcp_<server>_add` and the result reaches it in the next request; a hanging tool times
//! out as a tool error; oversized results are capped; a tool that vanished from the server
//! is a clear tool error; `mcp list` shows servers, state and tools; a second start offers
//! the cached tools without connecting until a call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::mcp_server::{Knobs, start_server};
use common::*;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn mcp_config(llm: &FakeLlm, url: &str, extra: &str) -> String {
    config(Some(llm), None, &format!("mcp_servers:\n  calc:\n    url: {url}\n    timeout: 2\n{extra}"))
}

/// The content of the newest tool message of a recorded model request.
fn last_tool_result(req: &Value) -> String {
    req["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_string()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_string()).collect()
}

fn msg(text: &str) -> Value {
    json!({"chat_id": "c1", "user_id": "u1", "text": text})
}

async fn cli_async(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let (home, args) = (home.to_path_buf(), args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    tokio::task::spawn_blocking(move || cli(&home, &args.iter().map(String::as_str).collect::<Vec<_>>(), &[])).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_calls_an_mcp_tool_and_a_second_start_does_not_connect_before_a_call() {
    let knobs = Arc::new(Knobs::default());
    let url = start_server(knobs.clone()).await;
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-add");
    home.write("config.yaml", &mcp_config(&llm, &url, ""));

    // `mcp list` connects (nothing cached yet), lists and caches the tools.
    let out = cli_async(home.path(), &["mcp", "list"]).await;
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("calc  http  connected  3 tools"), "{text}");
    assert!(text.contains("mcp_calc_add") && text.contains("mcp_calc_big_output") && text.contains("mcp_calc_slow"), "{text}");
    let after_list = knobs.hits.load(Ordering::SeqCst);
    assert!(after_list > 0);

    // A start with a fresh cache offers the tools without connecting.
    let gw = Gateway::start(home.path(), &[]);
    llm.push(Reply::Text("hi".into()));
    let (s, v) = gw.post_message(msg("hello")).await;
    assert_eq!(s, 200, "{v}");
    assert!(tool_names(&llm.requests()[0]).contains(&"mcp_calc_add".to_string()), "{:?}", tool_names(&llm.requests()[0]));
    assert_eq!(knobs.hits.load(Ordering::SeqCst), after_list, "no connection before a call");
    let (_, st) = gw.get("/api/status").await;
    assert_eq!(st["mcp"][0]["name"], "calc", "{st}");
    assert_eq!((st["mcp"][0]["state"].as_str(), st["mcp"][0]["tool_count"].as_u64()), (Some("cached"), Some(3)), "{st}");

    // The call connects; its result reaches the model in the next request.
    llm.push(Reply::Tool { name: "mcp_calc_add".into(), args: json!({"a": 2, "b": 40}) });
    llm.push(Reply::Text("42 it is".into()));
    let (s, v) = gw.post_message(msg("what is 2+40?")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("42 it is")), "{v}");
    let result: Value = serde_json::from_str(&last_tool_result(&llm.requests()[2])).unwrap();
    assert_eq!(result, json!({"result": "42"}));
    assert!(knobs.hits.load(Ordering::SeqCst) > after_list);
    let (_, st) = gw.get("/api/status").await;
    assert_eq!(st["mcp"][0]["state"], "connected", "{st}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hangs_oversized_results_and_vanished_tools_are_tool_errors() {
    let knobs = Arc::new(Knobs::default());
    let url = start_server(knobs.clone()).await;
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-bad");
    home.write("config.yaml", &mcp_config(&llm, &url, ""));
    assert!(cli_async(home.path(), &["mcp", "list"]).await.status.success());
    let gw = Gateway::start(home.path(), &[]);

    // A tool that hangs past the server's `timeout` (2 s) is cancelled.
    llm.push(Reply::Tool { name: "mcp_calc_slow".into(), args: json!({}) });
    llm.push(Reply::Text("gave up".into()));
    let started = std::time::Instant::now();
    let (s, v) = gw.post_message(msg("be slow")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("gave up")), "{v}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    let r = last_tool_result(&llm.requests()[1]);
    assert!(r.contains("did not finish in time"), "{r}");

    // 300 kB of text reaches the model capped at 100 kB.
    llm.push(Reply::Tool { name: "mcp_calc_big_output".into(), args: json!({}) });
    llm.push(Reply::Text("big".into()));
    let (s, _) = gw.post_message(msg("be big")).await;
    assert_eq!(s, 200);
    let r: Value = serde_json::from_str(&last_tool_result(&llm.requests()[3])).unwrap();
    let text = r["result"].as_str().unwrap();
    assert!(text.len() < 101_000 && text.contains("[truncated"), "{}", text.len());

    // The server drops `add` mid-session: a call is a clear error and the tool is withdrawn.
    knobs.add_gone.store(true, Ordering::SeqCst);
    llm.push(Reply::Tool { name: "mcp_calc_add".into(), args: json!({"a": 1, "b": 1}) });
    llm.push(Reply::Text("gone".into()));
    let (s, _) = gw.post_message(msg("add again")).await;
    assert_eq!(s, 200);
    let r = last_tool_result(&llm.requests()[5]);
    assert!(r.contains("no longer offered by MCP server `calc`"), "{r}");
    llm.push(Reply::Text("ok".into()));
    gw.post_message(msg("next turn")).await;
    let names = tool_names(&llm.requests()[6]);
    assert!(!names.contains(&"mcp_calc_add".to_string()) && names.contains(&"mcp_calc_slow".to_string()), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_reports_unreachable_and_misconfigured_servers() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-down");
    let dead = format!("http://127.0.0.1:{}/mcp", free_port());
    home.write("config.yaml", &mcp_config(&llm, &dead, "  empty:\n    timeout: 1\n"));
    let out = cli_async(home.path(), &["mcp", "list", "--json"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["name"], "calc");
    assert!(v[0]["state"].as_str().unwrap().starts_with("error: cannot connect"), "{v}");
    assert_eq!(v[1]["name"], "empty");
    assert!(v[1]["state"].as_str().unwrap().starts_with("refused:"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_cached_list_is_fetched_again_in_the_background() {
    let knobs = Arc::new(Knobs::default());
    let url = start_server(knobs.clone()).await;
    let llm = FakeLlm::start().await;
    let home = TempHome::new("mcp-stale");
    home.write("config.yaml", &mcp_config(&llm, &url, "mcp_cache_seconds: 0\n"));
    assert!(cli_async(home.path(), &["mcp", "list"]).await.status.success());
    let listed = knobs.hits.load(Ordering::SeqCst);
    let gw = Gateway::start(home.path(), &[]);
    assert!(wait_until(10, || knobs.hits.load(Ordering::SeqCst) > listed).await, "a stale list is fetched again at start");
    let (_, st) = gw.get("/api/status").await;
    assert_eq!(st["mcp"][0]["tool_count"], 3, "{st}");
}
