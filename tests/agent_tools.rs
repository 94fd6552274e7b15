//! `todo`, `clarify` and `delegate_task` (CONTRACT §14) end to end on the real binary with a
//! scripted OpenAI-compatible model: the session's task list survives turns and a restart
//! (SQLite, and DynamoDB at moto); `clarify` in a chat sends its question, ends the turn, and
//! the next message reaches the model as the answer, while a job's `clarify` is refused with a
//! note; `delegate_task` runs its children at the same time, each with a fresh context and
//! without `delegate_task`, returns only their final answers, and counts their tokens.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{Value, json};

fn msg(text: &str) -> Value {
    json!({"chat_id": "c1", "user_id": "u1", "text": text})
}

fn tool(name: &str, args: Value) -> Reply {
    Reply::Tool { name: name.into(), args }
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"]
        .as_array()
        .map(|a| a.iter().map(|t| t["function"]["name"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default()
}

/// Plans a list in one turn, restarts the gateway, then merges into it and reads it back.
async fn todo_across_turns(home: &TempHome, llm: &FakeLlm, envs: &[(&str, &str)]) {
    let mut gw = Gateway::start(home.path(), envs);
    let plan = json!([
        {"id": "1", "content": "fetch the news", "status": "in_progress"},
        {"id": "2", "content": "summarise", "status": "pending"}
    ]);
    llm.push(tool("todo", json!({ "todos": plan })));
    llm.push(tool("todo", json!({"todos": "not a list"})));
    llm.push(Reply::Text("planned".into()));
    let (s, v) = gw.post_message(msg("plan the news digest")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("planned")), "{v}");
    let reqs = llm.requests();
    assert!(tool_names(&reqs[0]).contains(&"todo".to_string()));
    let written: Value = serde_json::from_str(&last_tool_result(&reqs[1])).unwrap();
    assert_eq!(written["todos"], plan);
    assert_eq!(written["summary"], json!({"total": 2, "pending": 1, "in_progress": 1, "completed": 0, "cancelled": 0}));
    let bad = last_tool_result(&reqs[2]);
    assert_eq!(bad, json!({"error": "todos must be a list of objects, got unparseable string"}).to_string());

    gw.kill();
    let gw = Gateway::start(home.path(), envs);
    llm.push(tool(
        "todo",
        json!({"todos": [{"id": "1", "status": "completed"}, {"id": "3", "content": "send it", "status": "pending"}], "merge": true}),
    ));
    llm.push(tool("todo", json!({})));
    llm.push(Reply::Text("on it".into()));
    let (s, v) = gw.post_message(msg("how far are we?")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("on it")), "{v}");
    let reqs = llm.requests();
    let read: Value = serde_json::from_str(&last_tool_result(&reqs[5])).unwrap();
    assert_eq!(
        read["todos"],
        json!([
            {"id": "1", "content": "fetch the news", "status": "completed"},
            {"id": "2", "content": "summarise", "status": "pending"},
            {"id": "3", "content": "send it", "status": "pending"}
        ]),
        "the list written before the restart, merged: {read}"
    );
    assert_eq!(read["summary"]["completed"], 1);
}

#[tokio::test]
async fn todo_keeps_the_sessions_list_across_turns_and_a_restart() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("todo");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    todo_across_turns(&home, &llm, &[]).await;
}

/// The same on DynamoDB (moto); skipped without `HZ_MOTO_ENDPOINT`.
#[cfg(feature = "aws")]
#[tokio::test]
async fn todo_keeps_the_sessions_list_on_dynamodb() {
    let Some(moto) = moto_endpoint("todo on dynamodb") else { return };
    let table = format!("hz-todo-{:08x}", rand::random::<u32>());
    let envs = moto_store_env(&moto, &table);
    let llm = FakeLlm::start().await;
    let home = TempHome::new("todo-ddb");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let created = cli(home.path(), &["doctor", "--create-table"], &envs);
    assert!(stdout(&created).contains(&format!("created DynamoDB table {table}")), "{}{}", stdout(&created), stderr(&created));
    todo_across_turns(&home, &llm, &envs).await;
    assert!(!home.path().join("state.db").exists(), "nothing went to a SQLite file");
}

#[tokio::test]
async fn clarify_in_a_chat_sends_the_question_and_the_next_message_is_the_answer() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = TempHome::new("clarify");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    llm.push(tool("clarify", json!({"question": "  "})));
    llm.push(tool("clarify", json!({"question": "Which deployment target?", "choices": ["staging", {"label": "prod"}]})));
    assert_eq!(gw.telegram("tg-secret", tg_update(1, 1, 42, 7, "deploy the app")).await, 200);
    let question = "❓ Which deployment target?\n\n1. staging\n2. prod\n3. Other (type your answer)";
    assert!(wait_until(20, || tg.sent().iter().any(|m| m["text"] == question)).await, "{:?}", tg.sent());
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(llm.calls(), 2, "the turn ended with the question: no model call after it");
    let empty = last_tool_result(&llm.requests()[1]);
    assert_eq!(empty, json!({"error": "Question text is required."}).to_string());

    llm.push(Reply::Text("Deploying to staging.".into()));
    assert_eq!(gw.telegram("tg-secret", tg_update(2, 2, 42, 7, "staging")).await, 200);
    assert!(wait_until(20, || tg.sent().iter().any(|m| m["text"] == "Deploying to staging.")).await, "{:?}", tg.sent());
    let req = &llm.requests()[2];
    let msgs = req["messages"].as_array().unwrap();
    let tail = &msgs[msgs.len() - 4..];
    assert_eq!(tail[0]["tool_calls"][0]["function"]["name"], "clarify", "{req}");
    let result: Value = serde_json::from_str(tail[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!((result["question"].as_str(), result["status"].as_str()), (Some("Which deployment target?"), Some("awaiting_user")));
    assert_eq!(result["choices_offered"], json!(["staging", "prod"]));
    assert!(result["note"].as_str().unwrap().contains("next message is their answer"), "{result}");
    assert_eq!((tail[2]["role"].as_str(), tail[2]["content"].as_str()), (Some("assistant"), Some(question)));
    assert_eq!((tail[3]["role"].as_str(), tail[3]["content"].as_str()), (Some("user"), Some("staging")));
}

#[tokio::test]
async fn clarify_in_a_job_is_refused_with_a_note_and_the_run_answers() {
    let (llm, tg) = (FakeLlm::start().await, FakeTelegram::start().await);
    let home = TempHome::new("clarify-job");
    home.write("config.yaml", &config(Some(&llm), Some(&tg), ""));
    let gw = Gateway::start(home.path(), &[]);
    let body = json!({"name": "deploy", "schedule": "every 1h", "prompt": "deploy the app", "deliver": "telegram:42"});
    let r = gw.http.post(format!("{}/api/jobs", gw.base)).bearer_auth(&gw.key).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    llm.push(tool("clarify", json!({"question": "Which target?", "choices": ["staging", "prod"]})));
    llm.push(Reply::Text("Assumed staging and deployed.".into()));
    let r = gw.http.post(format!("{}/api/jobs/deploy/run", gw.base)).bearer_auth(&gw.key).send().await.unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    assert!(
        wait_until(20, || tg.sent().iter().any(|m| m["text"].as_str().unwrap_or("").contains("Assumed staging"))).await,
        "{:?}",
        tg.sent()
    );
    let refused = last_tool_result(&llm.requests()[1]);
    assert!(refused.starts_with("{\"error\":") && refused.contains("Clarify tool is not available in this execution context"), "{refused}");
    assert!(refused.contains("make a reasonable choice yourself"), "{refused}");
    assert!(!tg.sent().iter().any(|m| m["text"].as_str().unwrap_or("").contains("Which target?")), "no question was sent");
}

/// Whether a recorded request is a delegated child's (its system prompt says so).
fn is_child(req: &Value) -> bool {
    req["messages"][0]["content"].as_str().unwrap_or("").starts_with("You are a focused subagent")
}

#[tokio::test]
async fn delegate_task_runs_children_at_once_returns_only_their_answers_and_counts_their_tokens() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("delegate");
    home.write("config.yaml", &config(Some(&llm), None, ""));
    let gw = Gateway::start(home.path(), &[]);
    // Children answer by their goal; the one told to delegate tries, then says what it got.
    llm.route(|req| {
        if !is_child(req) {
            return None;
        }
        let goal = last_user(req);
        let tried = req["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
        Some(match (goal.contains("delegate further"), tried) {
            (true, false) => Reply::Tool { name: "delegate_task".into(), args: json!({"goal": "GRANDCHILD-SECRET"}) },
            (true, true) => {
                let result = last_tool_result(req);
                Reply::Text(format!("could not delegate: {}", result.contains("unknown tool `delegate_task`")))
            }
            (false, _) => Reply::Text(format!("answer to {goal}")),
        })
    });
    llm.hold_until(3, is_child);
    let tasks = json!([{"goal": "research A"}, {"goal": "research B", "context": "only B"}, {"goal": "delegate further"}]);
    llm.push(tool("delegate_task", json!({ "tasks": tasks })));
    llm.push(Reply::Text("all three done".into()));
    let (s, v) = gw.post_message(msg("research A and B")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("all three done")), "{v}");

    assert_eq!(llm.peak_in_flight(), 3, "the three children's model calls were in flight at once");
    let reqs = llm.requests();
    let children: Vec<&Value> = reqs.iter().filter(|r| is_child(r)).collect();
    assert_eq!(children.len(), 4, "three children, one of them made two calls");
    for c in &children {
        let names = tool_names(c);
        for blocked in ["delegate_task", "clarify", "todo", "memory"] {
            assert!(!names.contains(&blocked.to_string()), "a child is not offered {blocked}: {names:?}");
        }
        assert!(names.contains(&"current_time".to_string()), "{names:?}");
        assert!(!c.to_string().contains("research A and B"), "a child sees nothing of the parent's conversation");
    }
    let b = children.iter().find(|c| last_user(c) == "research B").unwrap();
    assert!(b["messages"][0]["content"].as_str().unwrap().contains("CONTEXT:\nonly B"));

    let parent = reqs.iter().rfind(|r| !is_child(r)).unwrap();
    assert!(!parent.to_string().contains("GRANDCHILD-SECRET"), "a child's intermediate calls never reach the parent");
    let out: Value = serde_json::from_str(&last_tool_result(parent)).unwrap();
    let results = out["results"].as_array().unwrap();
    let summaries: Vec<&str> = results.iter().map(|r| r["summary"].as_str().unwrap()).collect();
    assert_eq!(summaries, ["answer to research A", "answer to research B", "could not delegate: true"]);
    for (i, r) in results.iter().enumerate() {
        assert_eq!((r["task_index"].as_u64(), r["status"].as_str()), (Some(i as u64), Some("completed")), "{r}");
    }
    assert_eq!(results[2]["api_calls"], 2);
    assert_eq!(results[2]["tool_trace"][0]["tool"], "delegate_task");
    assert!(out["total_duration_seconds"].is_number());

    // Usage: 2 parent calls and 4 child calls, 10 prompt + 5 completion tokens each.
    let (_, sessions) = gw.get("/api/sessions").await;
    let sess = &sessions["sessions"][0];
    assert_eq!((sess["input_tokens"].as_u64(), sess["output_tokens"].as_u64()), (Some(60), Some(30)), "{sess}");

    // Bad input: too many tasks, no goal. Each is a tool error; the turn ends with the model's reply.
    let four = json!([{"goal": "a"}, {"goal": "b"}, {"goal": "c"}, {"goal": "d"}]);
    llm.push(tool("delegate_task", json!({ "tasks": four })));
    llm.push(tool("delegate_task", json!({"goal": " "})));
    llm.push(Reply::Text("I'll do it myself".into()));
    let (s, v) = gw.post_message(msg("split it four ways")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("I'll do it myself")), "{v}");
    let reqs = llm.requests();
    let n = reqs.len();
    let too_many = last_tool_result(&reqs[n - 2]);
    assert!(too_many.contains("Too many tasks: 4 provided, but max_concurrent_children is 3"), "{too_many}");
    let no_goal = last_tool_result(&reqs[n - 1]);
    assert!(no_goal.contains("Provide either 'goal' (single task) or 'tasks' (batch)."), "{no_goal}");
    assert_eq!(reqs.iter().filter(|r| is_child(r)).count(), 4, "no child ran for bad input");
}

#[tokio::test]
async fn delegation_max_concurrent_children_sets_the_batch_limit() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("delegate-limit");
    home.write("config.yaml", &config(Some(&llm), None, "delegation:\n  max_concurrent_children: 1\n  provider: ignored\n"));
    let gw = Gateway::start(home.path(), &[]);
    llm.route(|req| is_child(req).then(|| Reply::Text(format!("child: {}", last_user(req)))));
    llm.push(tool("delegate_task", json!({"tasks": [{"goal": "a"}, {"goal": "b"}]})));
    llm.push(tool("delegate_task", json!({"goal": "just one"})));
    llm.push(Reply::Text("done".into()));
    let (s, v) = gw.post_message(msg("go")).await;
    assert_eq!((s, v["reply"].as_str()), (200, Some("done")), "{v}");
    let reqs = llm.requests();
    assert!(last_tool_result(&reqs[1]).contains("max_concurrent_children is 1"), "{}", last_tool_result(&reqs[1]));
    // The single goal ran as one child.
    assert_eq!(reqs.iter().filter(|r| is_child(r)).count(), 1);
    let out: Value = serde_json::from_str(&last_tool_result(reqs.last().unwrap())).unwrap();
    assert_eq!(out["results"][0]["summary"], "child: just one", "{out}");
}
