//! The Anthropic Messages client against a local server that speaks the Messages API as
//! documented (`common::anthropic`): a tool round trip, the SSE stream, 429/529 with
//! `retry-after`, a refused key; then the real binary with `provider: anthropic` answering a
//! chat and a job with a tool call, a fallback chain whose primary fails, and `doctor` on
//! Hermes' own published example config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use chrono::Utc;
use common::anthropic::{AReply, FakeAnthropic};
use common::*;
use hermes_zero::clients::llm::anthropic::AnthropicLlm;
use hermes_zero::config::models::{Endpoint, PROVIDERS, Wire};
use hermes_zero::core::session::{Message, Role};
use hermes_zero::ports::{ChatRequest, Llm, LlmError, ToolSpec};
use serde_json::{Value, json};
use std::time::Duration;

fn client(fake: &FakeAnthropic, key: Option<&str>, attempts: u32) -> AnthropicLlm {
    let ep = Endpoint {
        provider: "anthropic",
        wire: Wire::AnthropicMessages,
        base_url: fake.url.clone(),
        model: "claude-test".into(),
        api_key: key.map(|k| secrecy::SecretString::from(k.to_string())),
        key_hint: "ANTHROPIC_API_KEY".into(),
        why: "test".into(),
        oauth_line: None,
    };
    AnthropicLlm::new(&ep, Duration::from_secs(10), attempts, "5m")
}

fn request(text: &str) -> ChatRequest {
    let now = Utc::now();
    let tool = ToolSpec {
        name: "current_time".into(),
        description: "The time".into(),
        parameters: json!({"type": "object", "properties": {"tz": {"type": "string"}}}),
    };
    ChatRequest {
        messages: vec![Message::text(Role::System, "You are terse.", now), Message::text(Role::User, text, now)],
        tools: vec![std::sync::Arc::new(tool)],
        model: None,
        route: None,
    }
}

#[tokio::test]
async fn a_tool_round_trip_in_anthropic_shape() {
    let fake = FakeAnthropic::start().await;
    let llm = client(&fake, Some("sk-ant-test"), 3);
    fake.push(AReply::Tool { name: "current_time".into(), input: json!({"tz": "UTC"}) });
    fake.push(AReply::Text("It is noon.".into()));
    let mut req = request("what time is it?");
    let first = llm.complete(&req).await.unwrap();
    assert_eq!((first.stop_reason.as_str(), first.tool_calls.len()), ("tool_use", 1));
    assert_eq!(first.tool_calls[0].arguments, r#"{"tz":"UTC"}"#);
    let mut call = Message::text(Role::Assistant, first.content.clone(), Utc::now());
    call.tool_calls = first.tool_calls.clone();
    let mut result = Message::text(Role::Tool, "12:00 UTC", Utc::now());
    result.tool_call_id = Some(first.tool_calls[0].id.clone());
    req.messages.extend([call, result]);
    let second = llm.complete(&req).await.unwrap();
    assert_eq!((second.content.as_str(), second.stop_reason.as_str(), second.model.as_str()), ("It is noon.", "end_turn", "claude-test"));
    assert_eq!((second.input_tokens, second.output_tokens, second.cache_read_tokens), (15, 6, 3));
    let seen = fake.requests();
    assert_eq!(seen.len(), 2, "the fake refused nothing");
    assert_eq!((seen[1].api_key.as_str(), seen[1].version.as_str()), ("sk-ant-test", "2023-06-01"));
    let b = &seen[1].body;
    assert_eq!(b["system"][0]["text"], "You are terse.");
    assert_eq!(b["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    let result_block = &b["messages"][2]["content"][0];
    assert_eq!(
        (result_block["type"].as_str(), result_block["tool_use_id"].as_str()),
        (Some("tool_result"), Some(first.tool_calls[0].id.as_str()))
    );
}

#[tokio::test]
async fn the_sse_stream_is_folded_and_its_text_seen_as_it_arrives() {
    let fake = FakeAnthropic::start().await;
    let llm = client(&fake, Some("k"), 1);
    fake.push(AReply::Text("Hello from the stream".into()));
    let mut pieces = Vec::new();
    let r = llm.stream(&request("hi"), |t| pieces.push(t.to_string())).await.unwrap();
    assert_eq!(r.content, "Hello from the stream");
    assert!(pieces.len() > 3 && pieces.concat() == r.content, "{pieces:?}");
    assert_eq!((r.stop_reason.as_str(), r.output_tokens), ("end_turn", 6));
    fake.push(AReply::Tool { name: "current_time".into(), input: json!({"tz": "Europe/Berlin"}) });
    let r = llm.stream(&request("time?"), |_| {}).await.unwrap();
    assert_eq!((r.tool_calls[0].name.as_str(), r.tool_calls[0].arguments.as_str()), ("current_time", r#"{"tz":"Europe/Berlin"}"#));
    assert_eq!(fake.requests()[0].body["stream"], true);
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_after_retry_after() {
    let fake = FakeAnthropic::start().await;
    let llm = client(&fake, Some("k"), 3);
    fake.push(AReply::Status(429, Some(1)));
    fake.push(AReply::Status(529, None));
    let r = llm.complete(&request("hi")).await.unwrap();
    assert_eq!(r.content, "echo: hi");
    let seen = fake.requests();
    assert_eq!(seen.len(), 3);
    assert!(seen[1].at - seen[0].at >= Duration::from_millis(990), "retry-after honoured");
    let once = client(&fake, Some("k"), 1);
    fake.push(AReply::Status(529, None));
    assert!(matches!(once.complete(&request("hi")).await, Err(LlmError::Status { status: 529, .. })));
    let keyless = client(&fake, None, 3);
    assert!(matches!(keyless.complete(&request("hi")).await, Err(LlmError::Unauthorized(401))));
}

fn anthropic_config(fake: &FakeAnthropic, extra: &str) -> String {
    format!("model:\n  provider: anthropic\n  base_url: {}\n  default: claude-test\n  timeout_seconds: 10\n{extra}", fake.url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_anthropic_answers_a_chat_and_a_job_with_a_tool_call() {
    let fake = FakeAnthropic::start().await;
    let home = TempHome::new("anthropic");
    home.write("config.yaml", &anthropic_config(&fake, ""));
    let env = [("ANTHROPIC_API_KEY", "sk-ant-bb")];
    let gw = Gateway::start(home.path(), &env);
    fake.push(AReply::Tool { name: "current_time".into(), input: json!({}) });
    fake.push(AReply::Text("It is time.".into()));
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "what time is it?"})).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("It is time.")), "{v}");
    let seen = fake.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].api_key, "sk-ant-bb");
    assert!(seen[0].body["tools"].as_array().unwrap().iter().any(|t| t["name"] == "current_time"));
    assert_eq!(seen[1].body["messages"][2]["content"][0]["type"], "tool_result");
    let (_, show) = gw.get(&format!("/api/sessions/{}", v["session_id"].as_str().unwrap())).await;
    let answer = show["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "assistant").unwrap().clone();
    assert_eq!(answer["model"], "claude-test", "{show}");
    drop(gw);
    // A job, run by the CLI, answers through the same provider with a tool call.
    let o = cli(home.path(), &["cron", "add", "every 1h", "Say the time.", "--name", "clock", "--deliver", "local"], &env);
    assert!(o.status.success(), "{}", stderr(&o));
    fake.push(AReply::Tool { name: "current_time".into(), input: json!({}) });
    fake.push(AReply::Text("Time reported.".into()));
    let o = cli(home.path(), &["cron", "run", "clock"], &env);
    assert!(stdout(&o).contains(": ok"), "{}{}", stdout(&o), stderr(&o));
    let seen = fake.requests();
    assert_eq!(seen.len(), 4, "two model calls for the job");
    assert!(last_text(&seen[2].body).contains("Say the time."), "{}", seen[2].body);
}

fn last_text(b: &Value) -> String {
    b["messages"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_primary_hands_the_turn_to_the_fallback_and_the_transcript_says_so() {
    let primary = FakeLlm::start().await;
    let fallback = FakeAnthropic::start().await;
    let home = TempHome::new("fallback");
    let yaml = format!(
        "model: {{provider: custom, base_url: '{}', default: primary-model, timeout_seconds: 10}}\nagent: {{api_max_retries: 2}}\n\
fallback_providers:\n  - {{provider: anthropic, model: claude-fallback, base_url: '{}', key_env: FALLBACK_KEY}}\n",
        primary.url, fallback.url
    );
    home.write("config.yaml", &yaml);
    let gw = Gateway::start(home.path(), &[("FALLBACK_KEY", "fb")]);
    primary.push(Reply::Status(500));
    primary.push(Reply::Status(429));
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hello"})).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("echo: hello")), "{v}");
    assert_eq!((primary.calls(), fallback.calls()), (2, 1), "api_max_retries attempts, then the fallback");
    assert_eq!(fallback.requests()[0].api_key, "fb");
    let (_, show) = gw.get(&format!("/api/sessions/{}", v["session_id"].as_str().unwrap())).await;
    let answer = show["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "assistant").unwrap().clone();
    assert_eq!(answer["model"], "claude-fallback");
    let shown = cli(home.path(), &["sessions", "show", v["session_id"].as_str().unwrap()], &[]);
    assert!(stdout(&shown).contains("assistant: echo: hello [model: claude-fallback]"), "{}", stdout(&shown));
    let (_, st) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "/status"})).await;
    let st = st["reply"].as_str().unwrap_or_default().to_string();
    assert!(st.contains("Model: primary-model (custom), fallbacks: claude-fallback (anthropic)"), "{st}");
    assert!(st.contains("Last answer by: claude-fallback"), "{st}");
    // The primary answers again: no fallback call, its model recorded.
    let (_, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "again"})).await;
    assert_eq!(v["reply"], "echo: again");
    assert_eq!(fallback.calls(), 1);
}

/// `doctor` with every model key variable removed from the environment.
fn doctor(home: &std::path::Path, envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("--home").arg(home).arg("doctor").env_remove("HERMES_HOME").env("RUST_LOG", "warn");
    for p in PROVIDERS {
        for k in p.key_env.iter().chain([&p.base_url_env]) {
            cmd.env_remove(k);
        }
    }
    for k in ["HERMES_MODEL_PROVIDER", "HERMES_MODEL_BASE_URL", "HERMES_MODEL", "TELEGRAM_BOT_TOKEN"] {
        cmd.env_remove(k);
    }
    cmd.envs(envs.iter().copied());
    cmd.output().unwrap()
}

#[test]
fn hermes_published_example_config_passes_doctor_unchanged() {
    let home = TempHome::new("hermes-example");
    home.write("config.yaml", include_str!("fixtures/hermes-cli-config.yaml"));
    let o = doctor(home.path(), &[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("model:    offline (auto: no model key in the environment"), "{out}");
    assert!(
        out.contains("ignored:  ") && out.contains("terminal") && out.contains("browser") && out.contains("not supported by hermes-zero"),
        "{out}"
    );
    assert!(!out.contains("warning:  unknown config key"), "Hermes' keys are not typos: {out}");
    // The same file with an Anthropic key picks Anthropic at its own URL, not OpenRouter's.
    let o = doctor(home.path(), &[("ANTHROPIC_API_KEY", "k")]);
    let out = stdout(&o);
    assert!(out.contains("model:    anthropic (anthropic-messages) anthropic/claude-opus-4.6 at https://api.anthropic.com"), "{out}");
}

#[test]
fn oauth_only_unknown_and_wrong_values() {
    let home = TempHome::new("oauth");
    home.write("config.yaml", "model: {provider: nous, default: Hermes-4-70B}\n");
    let o = doctor(home.path(), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("`nous`") && stdout(&o).contains("nous-api"), "{}", stdout(&o));
    home.write("config.yaml", "model: {provider: skynet}\n");
    let o = doctor(home.path(), &[]);
    assert_eq!(o.status.code(), Some(78));
    let err = stderr(&o);
    assert!(err.contains("config.yaml") && err.contains("model.provider") && err.contains("openrouter"), "{err}");
    home.write("config.yaml", "display: {busy_input_mode: shout}\nterminal: {backend: local}\n");
    let o = doctor(home.path(), &[]);
    assert_eq!(o.status.code(), Some(78));
    assert!(stderr(&o).contains("display.busy_input_mode"), "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oauth_only_provider_answers_with_one_line_and_calls_nothing() {
    let home = TempHome::new("oauth-turn");
    home.write("config.yaml", "model: {provider: openai-codex, default: gpt-5}\n");
    let gw = Gateway::start(home.path(), &[]);
    let (s, v) = gw.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hi"})).await;
    assert_eq!(s, 200);
    let reply = v["reply"].as_str().unwrap_or_default();
    assert!(reply.contains("`openai-codex`") && reply.contains("OPENAI_API_KEY") && !reply.contains('\n'), "{reply}");
}
