//! The real API clients (CONTRACT §15) as the tests run them against any base URL (`serve`,
//! the Lambda entry behind a local Function URL): the scripts in tests/fixtures, run by the
//! API SDKs' venv (`HZ_API_SDK_PY`, made by scripts/test.sh; under CI=true a missing venv
//! fails), and what each must have seen.

use crate::common::{API_KEY, FakeLlm, Reply};
use serde_json::{Value, json};
use std::time::Duration;

/// The Python of the API SDKs' venv (`HZ_API_SDK_PY`); required under CI. None (with a
/// note) otherwise.
pub fn sdk_python() -> Option<String> {
    match std::env::var("HZ_API_SDK_PY") {
        Ok(p) if !p.trim().is_empty() => Some(p),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("HZ_API_SDK_PY is not set under CI=true: scripts/test.sh makes target/api-sdk-venv and exports it")
        }
        _ => {
            println!("SKIPPED: HZ_API_SDK_PY is not set (scripts/test.sh makes target/api-sdk-venv)");
            None
        }
    }
}

/// Runs `tests/fixtures/<script>` with the base URL and key; its one line of JSON.
pub async fn run_py(python: &str, script: &str, base: &str) -> Value {
    let path = format!("{}/tests/fixtures/{script}", env!("CARGO_MANIFEST_DIR"));
    let child = tokio::process::Command::new(python).arg(path).arg(base).arg(API_KEY).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(120), child).await.expect("the script ended in time").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {stdout}"))
}

/// Runs `api_openai_sdk.py` against `base` (whose model is `llm`, streaming when asked) and
/// checks what the official `openai` SDK saw: models, chat completions with the derived
/// session id and the stored history, a streamed completion, responses with
/// `previous_response_id`, retrieve and delete, and OpenAI's error shapes.
pub async fn check_openai_sdk(python: &str, base: &str, llm: &FakeLlm) {
    let r = run_py(python, "api_openai_sdk.py", base).await;
    assert_eq!(r["models"], json!(["hermes-agent"]));
    assert_eq!(r["chat"]["content"], "echo: hello");
    assert_eq!((r["chat"]["finish_reason"].as_str(), r["chat"]["object"].as_str()), (Some("stop"), Some("chat.completion")));
    assert_eq!(r["chat"]["total_tokens"], 15, "the turn's usage: {r}");
    let derived = r["chat"]["session_id"].as_str().unwrap();
    assert!(derived.starts_with("api-") && derived.len() == 20, "{derived}");
    assert_eq!(r["chat2"]["session_id"], derived, "the same conversation, the same derived id");
    assert_eq!(r["chat2"]["content"], "echo: again");
    // The second turn's context is the stored history (the body's was not used twice).
    let second = llm.requests()[1]["messages"].as_array().unwrap().clone();
    let users: Vec<&str> = second.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(users, ["hello", "again"], "{second:?}");
    assert_eq!(r["stream"]["content"], "echo: stream me");
    assert_eq!(r["stream"]["finish_reasons"], json!(["stop"]));
    assert_eq!(r["stream"]["roles"], json!(["assistant"]));
    assert!(r["stream"]["chunks"].as_u64().unwrap() >= 4, "the answer came in several chunks: {r}");
    assert_eq!((r["responses"]["first"].as_str(), r["responses"]["second"].as_str()), (Some("echo: first"), Some("echo: second")));
    assert_eq!(r["responses"]["retrieved"], r["responses"]["id"]);
    assert_eq!(r["responses"]["after_delete"], 404);
    // previous_response_id continued the first response's session.
    let last = llm.requests().last().unwrap()["messages"].as_array().unwrap().clone();
    let users: Vec<&str> = last.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(users, ["first", "second"], "{last:?}");
    assert_eq!(r["bad_key"], json!({"status": 401, "code": "invalid_api_key", "type": "invalid_request_error"}));
    assert_eq!(r["bad_part"], json!({"status": 400, "code": "unsupported_content_type", "param": "messages[0].content"}));
}

/// Scripts `llm` for one tool call, runs `api_hermes_client.py` against `base` and checks
/// what `hermes-agent-api-client` saw: the capability probe's model, and a chat event stream
/// with the tool's progress (running, completed), the answer's deltas, the usage and a
/// successful terminal event.
pub async fn check_hermes_client(python: &str, base: &str, llm: &FakeLlm) {
    llm.push(Reply::ToolWithId { id: "call_t1".into(), name: "current_time".into(), args: json!({"tz": "UTC"}) });
    llm.push(Reply::Text("it is now".into()));
    let r = run_py(python, "api_hermes_client.py", base).await;
    assert_eq!(r["model"], "hermes-agent");
    let events = r["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let tools: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["kind"] == "ToolProgressEvent")
        .map(|e| (e["tool_name"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(tools, [("current_time", "running"), ("current_time", "completed")], "{events:?}");
    let text: String = events.iter().filter(|e| e["kind"] == "AssistantDeltaEvent").filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(text, "it is now");
    assert!(kinds.contains(&"UsageEvent"), "{kinds:?}");
    assert_eq!(events.last().unwrap()["kind"], "TerminalEvent", "{events:?}");
    assert_eq!(events.last().unwrap()["outcome"], "success", "{events:?}");
}
