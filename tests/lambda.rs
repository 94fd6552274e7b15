//! The real binary as a Lambda function, driven through a local implementation of the Lambda
//! Runtime API (`/2018-06-01/runtime/...`, tests/common/lambda.rs): Function URL events served
//! by the one router and answered with response streaming (an SSE answer as it is made, and
//! the real API clients through a local Function URL), API Gateway events answered buffered,
//! and EventBridge fire events through the shared fire path. With
//! `HZ_MOTO_ENDPOINT` (scripts/test.sh), the EventBridge timers are checked against moto too,
//! and the function also runs on the DynamoDB store there: a message, a fire and its duplicate,
//! a wake armed for a dead sandbox's turn, and the cold start that recovers it.

#![cfg(feature = "aws")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::post;
use common::api_sdk::{check_hermes_client, check_openai_sdk, sdk_python};
use common::lambda::{FUNCTION_ARN, Function, function_url, function_url_front, start_rapid};
use common::sse::SseModel;
use common::{API_KEY, FakeLlm, TempHome, moto_endpoint, moto_store_env};
use serde_json::{Value, json};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An API Gateway REST (v1) proxy event on stage `prod`.
fn rest_v1(method: &str, path: &str) -> Value {
    json!({
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": {"Host": "abcdefghij.execute-api.us-east-1.amazonaws.com", "Accept": "application/json"},
        "multiValueHeaders": {"Host": ["abcdefghij.execute-api.us-east-1.amazonaws.com"], "Accept": ["application/json"]},
        "queryStringParameters": null,
        "multiValueQueryStringParameters": null,
        "pathParameters": {"proxy": path.trim_start_matches('/')},
        "stageVariables": null,
        "requestContext": {
            "resourceId": "abc123",
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": format!("/prod{path}"),
            "accountId": "123456789012",
            "stage": "prod",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "identity": {"sourceIp": "203.0.113.7", "userAgent": "tests"},
            "apiId": "abcdefghij",
            "protocol": "HTTP/1.1",
            "domainName": "abcdefghij.execute-api.us-east-1.amazonaws.com"
        },
        "body": null,
        "isBase64Encoded": false
    })
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The JSON body of an HTTP-shaped Lambda response.
fn body_json(resp: &Value) -> Value {
    let body = resp["body"].as_str().unwrap_or("");
    assert_eq!(resp["isBase64Encoded"], json!(false), "{resp}");
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// A job created with the CLI; returns (id, next_run_at).
fn add_job(home: &std::path::Path) -> (String, String) {
    let out = common::cli(home, &["cron", "add", "every 1h", "summarise the overnight news", "--deliver", "local"], &[]);
    assert!(out.status.success(), "cron add: {}", common::stderr(&out));
    let id = common::stdout(&out).trim().to_string();
    let list = common::cli(home, &["cron", "list", "--json"], &[]);
    let jobs: Value = serde_json::from_str(&common::stdout(&list)).unwrap();
    let job = jobs.as_array().unwrap().iter().find(|j| j["id"] == json!(id)).cloned().unwrap();
    let next = chrono::DateTime::parse_from_rfc3339(job["next_run_at"].as_str().unwrap()).unwrap().with_timezone(&chrono::Utc);
    (id, next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// A Scheduler client of the moto server at `endpoint`.
fn moto_scheduler(endpoint: &str) -> aws_sdk_scheduler::Client {
    use aws_sdk_scheduler::config::{BehaviorVersion, Credentials, Region};
    let conf = aws_sdk_scheduler::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
        .endpoint_url(endpoint)
        .http_client(hermes_zero::clients::aws_sdk_http_client())
        .build();
    aws_sdk_scheduler::Client::from_conf(conf)
}

/// Schedules in a group of the moto Scheduler API: (name, target ARN).
async fn moto_schedules(endpoint: &str, group: &str) -> Vec<(String, String)> {
    let c = moto_scheduler(endpoint);
    let out = c.list_schedules().group_name(group).send().await.unwrap();
    out.schedules()
        .iter()
        .map(|s| (s.name().unwrap_or("").to_string(), s.target().map(|t| t.arn().to_string()).unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn lambda_serves_http_events_and_fires_jobs_once() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda");
    let moto = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty());
    let group = format!("hz-lambda-{:08x}", rand::random::<u32>());
    let mut extra = String::new();
    if moto.is_some() {
        extra = format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n");
    } else {
        eprintln!("note: HZ_MOTO_ENDPOINT is not set; EventBridge schedules are not checked (scripts/test.sh starts moto)");
    }
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    let (job_id, fire_at) = add_job(home.path());

    let (api, rapid) = start_rapid().await;
    let mut envs = vec![("HERMES_CLOCK_OFFSET_SECS", "3700".to_string())];
    if let Some(ep) = &moto {
        envs.extend([
            ("AWS_ENDPOINT_URL_SCHEDULER", ep.clone()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ]);
    }
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut f = Function::start(&api, rapid.clone(), home.path(), &envs);

    // Function URL: GET /healthz, answered with response streaming (a prelude, then the body).
    let (kind, resp) = f.invoke(function_url("GET", "/healthz", json!({"accept": "application/json"}), None, false)).await;
    assert_eq!((kind, &resp["streamed"]), ("response", &json!(true)), "{resp}");
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert_eq!(resp["headers"]["content-type"], json!("application/json"), "{resp}");
    let health = body_json(&resp);
    assert_eq!(health["status"], json!("ok"));
    assert_eq!(health["store"], json!("sqlite"));
    assert_eq!(health["provider"], json!("eventbridge"));

    if let Some(ep) = &moto {
        // The first invocation's settle phase reconciled: the current occurrence is armed,
        // targeting the function ARN learned from the invocation context.
        f.settled().await;
        let stamp = chrono::DateTime::parse_from_rfc3339(&fire_at).unwrap().format("%Y%m%dT%H%M%SZ").to_string();
        let want = vec![(format!("hz-{job_id}-{stamp}"), FUNCTION_ARN.to_string())];
        assert_eq!(moto_schedules(ep, &group).await, want);
    }

    // Function URL: POST /api/messages, plain and base64 bodies.
    let auth = json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")});
    let msg = json!({"chat_id": "c1", "user_id": "u1", "text": "hello from a function url", "message_id": "m-1"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(msg), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    let reply = body_json(&resp);
    assert_eq!(reply["reply"], json!("echo: hello from a function url"), "{reply}");
    assert_eq!(reply["queued"], json!(false));
    let msg = json!({"chat_id": "c2", "user_id": "u1", "text": "hello in base64", "message_id": "m-2"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(base64(msg.as_bytes())), true)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert_eq!(body_json(&resp)["reply"], json!("echo: hello in base64"));
    assert_eq!(llm.calls(), 2);

    // Work the app leaves running after answering (a `/queue` item drained in the
    // background) finishes before the function asks for the next event: Lambda would freeze
    // it otherwise.
    llm.set_delay(400);
    let msg = json!({"chat_id": "c3", "user_id": "u1", "text": "/queue write the weekly summary"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(msg), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert!(body_json(&resp)["reply"].as_str().unwrap().starts_with("Queued for the next turn"), "{resp}");
    f.settled().await;
    assert_eq!(llm.inner.lock().unwrap().spans.len(), 3, "the queued turn's model call finished before the next poll");
    assert_eq!(common::last_user(&llm.requests()[2]), "write the weekly summary");
    llm.set_delay(0);

    // Without the key: 401 in the same shape.
    let body = json!({"chat_id": "c1", "user_id": "u1", "text": "x"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", json!({"content-type": "application/json"}), Some(body), false)).await;
    assert_eq!(resp["statusCode"], json!(401), "{resp}");

    // API Gateway REST (v1) on stage `prod`: the stage prefix does not reach the router, and
    // the answer uses the v1 shape (multiValueHeaders), buffered (API Gateway does not stream).
    let (_, resp) = f.invoke(rest_v1("GET", "/healthz")).await;
    assert_eq!((&resp["statusCode"], resp.get("streamed")), (&json!(200), None), "{resp}");
    assert_eq!(resp["multiValueHeaders"]["content-type"], json!(["application/json"]), "{resp}");
    assert_eq!(body_json(&resp)["status"], json!("ok"));

    // EventBridge fire event: runs once through the claim…
    let fire = json!({"hermes_zero_fire": {"job_id": job_id, "fire_at": fire_at}});
    let (kind, resp) = f.invoke(fire.clone()).await;
    assert_eq!(kind, "response", "{resp}");
    assert_eq!(resp["status"], json!("ok"), "{resp}");
    assert_eq!(resp["run_status"], json!("ok"), "{resp}");
    assert_eq!(llm.calls(), 4);
    assert!(common::last_user(&llm.requests()[3]).contains("summarise the overnight news"));
    let next = resp["next_fire_at"].as_str().unwrap().to_string();
    assert!(next > fire_at, "{resp}");

    // …and the same event again (EventBridge and Lambda are at-least-once) is a duplicate.
    let (_, resp) = f.invoke(fire).await;
    assert_eq!(resp, json!({"status": "duplicate"}));
    assert_eq!(llm.calls(), 4);

    // A job that does not exist, and a malformed fire event.
    let (_, resp) = f.invoke(json!({"hermes_zero_fire": {"job_id": "nope", "fire_at": fire_at}})).await;
    assert_eq!(resp, json!({"status": "gone"}));
    let (kind, resp) = f.invoke(json!({"hermes_zero_fire": {"fire_at": 5}})).await;
    assert_eq!((kind, &resp["status"]), ("response", &json!("invalid")), "{resp}");

    // The watchdog event runs one ticker pass.
    let (kind, resp) = f.invoke(json!({"hermes_zero_tick": {}})).await;
    assert_eq!((kind, resp), ("response", json!({"status": "ok"})));

    // Anything else is an invocation error, and the function keeps serving.
    let (kind, resp) = f.invoke(json!({"detail-type": "Scheduled Event"})).await;
    assert_eq!(kind, "error", "{resp}");
    let (_, resp) = f.invoke(function_url("GET", "/healthz", json!({}), None, false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");

    if let Some(ep) = &moto {
        // The fire moved the job's one schedule to the next occurrence.
        let stamp = chrono::DateTime::parse_from_rfc3339(&next).unwrap().format("%Y%m%dT%H%M%SZ").to_string();
        assert_eq!(moto_schedules(ep, &group).await, vec![(format!("hz-{job_id}-{stamp}"), FUNCTION_ARN.to_string())]);
    }
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

#[tokio::test]
async fn lambda_reports_bad_configuration_as_an_init_error() {
    let home = TempHome::new("lambda-bad");
    home.write("config.yaml", "busy_input_mode: sideways\n");
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    let code = tokio::task::spawn_blocking(move || {
        let code = f.wait_exit(20);
        (code, f)
    })
    .await
    .unwrap()
    .0;
    assert_eq!(code, Some(78));
    let errors = rapid.init_errors.lock().unwrap().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "Runtime.ConfigError");
    assert!(errors[0].1["errorMessage"].as_str().unwrap().contains("busy_input_mode"), "{errors:?}");
}

/// Environment variables of a function or CLI run.
type Envs = Vec<(String, String)>;

/// The DynamoDB store on moto, with EventBridge Scheduler on moto too: a fresh table (created
/// with `doctor --create-table`) and schedule group. None (with a note) without
/// `HZ_MOTO_ENDPOINT`; scripts/test.sh always sets it.
fn moto_dynamodb(tag: &str) -> Option<(Envs, String, String)> {
    let moto = moto_endpoint("the Lambda + DynamoDB test")?;
    let table = format!("hz-{tag}-{:08x}", rand::random::<u32>());
    let group = format!("hz-{tag}-{:08x}", rand::random::<u32>());
    let envs = moto_store_env(&moto, &table)
        .iter()
        .chain(&[("AWS_ENDPOINT_URL_SCHEDULER", moto.as_str())])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some((envs, group, moto))
}

fn as_refs(envs: &[(String, String)]) -> Vec<(&str, &str)> {
    envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Creates the table of `envs` with `doctor --create-table`.
fn create_table(home: &std::path::Path, envs: &[(String, String)]) {
    let out = common::cli(home, &["doctor", "--create-table"], &as_refs(envs));
    assert!(common::stdout(&out).contains("created DynamoDB table"), "{}{}", common::stdout(&out), common::stderr(&out));
}

/// A job added with the CLI against the store of `envs`; returns (id, next_run_at).
fn add_job_in(home: &std::path::Path, envs: &[(String, String)]) -> (String, String) {
    let envs = as_refs(envs);
    let out = common::cli(home, &["cron", "add", "every 1h", "summarise the overnight news", "--deliver", "local"], &envs);
    assert!(out.status.success(), "cron add: {}", common::stderr(&out));
    let id = common::stdout(&out).trim().to_string();
    let jobs: Value = serde_json::from_str(&common::stdout(&common::cli(home, &["cron", "list", "--json"], &envs))).unwrap();
    let job = jobs.as_array().unwrap().iter().find(|j| j["id"] == json!(id)).cloned().unwrap();
    let next = chrono::DateTime::parse_from_rfc3339(job["next_run_at"].as_str().unwrap()).unwrap().with_timezone(&chrono::Utc);
    (id, next.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_on_dynamodb_answers_a_message_and_fires_once() {
    let Some((mut envs, group, _moto)) = moto_dynamodb("lddb") else { return };
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-ddb");
    let extra = format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    let (job_id, fire_at) = tokio::task::block_in_place(|| {
        create_table(home.path(), &envs);
        add_job_in(home.path(), &envs)
    });
    envs.push(("HERMES_CLOCK_OFFSET_SECS".into(), "3700".into()));
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &as_refs(&envs));

    let (_, resp) = f.invoke(function_url("GET", "/healthz", json!({}), None, false)).await;
    assert_eq!(body_json(&resp)["store"], json!("dynamodb"), "{resp}");

    // A message turn, stored in DynamoDB.
    let auth = json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")});
    let msg = json!({"chat_id": "c1", "user_id": "u1", "text": "hello from dynamodb", "message_id": "m-1"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(msg.clone()), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    let reply = body_json(&resp);
    assert_eq!(reply["reply"], json!("echo: hello from dynamodb"), "{reply}");
    let (_, resp) =
        f.invoke(function_url("GET", &format!("/api/sessions/{}", reply["session_id"].as_str().unwrap()), auth.clone(), None, false)).await;
    let roles: Vec<Value> = body_json(&resp)["messages"].as_array().unwrap().iter().map(|m| m["role"].clone()).collect();
    assert_eq!(roles, vec![json!("user"), json!("assistant")], "{resp}");
    // The platform retry of the same message id is a duplicate (the dedupe record is in the table).
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(msg), false)).await;
    assert_eq!(body_json(&resp)["duplicate"], json!(true), "{resp}");
    assert_eq!(llm.calls(), 1);

    // A fire runs once through the DynamoDB claim; the repeated event is a duplicate.
    let fire = json!({"hermes_zero_fire": {"job_id": job_id, "fire_at": fire_at}});
    let (kind, resp) = f.invoke(fire.clone()).await;
    assert_eq!(kind, "response", "{resp}");
    assert_eq!((resp["status"].clone(), resp["run_status"].clone()), (json!("ok"), json!("ok")), "{resp}");
    assert_eq!(llm.calls(), 2);
    assert!(common::last_user(&llm.requests()[1]).contains("summarise the overnight news"));
    let (_, resp) = f.invoke(fire).await;
    assert_eq!(resp, json!({"status": "duplicate"}));
    assert_eq!(llm.calls(), 2, "the duplicate fire ran nothing");
    let runs = tokio::task::block_in_place(|| common::cli(home.path(), &["cron", "runs", &job_id, "--json"], &as_refs(&envs)));
    let runs: Value = serde_json::from_str(&common::stdout(&runs)).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "one run recorded: {runs}");
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

/// A sandbox dies mid-turn (SIGKILL while the model call runs): the user's message is stored
/// with the dead sandbox's lease. Another sandbox, before the lease expires, leaves the work to
/// a one-shot EventBridge wake (the watchdog event) at the lease's expiry; a cold start after
/// it expired recovers the turn and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_on_dynamodb_wakes_and_recovers_a_turn_whose_sandbox_died() {
    let Some((envs, group, moto)) = moto_dynamodb("lrec") else { return };
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-ddb-rec");
    let extra = format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    tokio::task::block_in_place(|| create_table(home.path(), &envs));
    let with = |stream: &str, offset: &str| {
        let mut e = envs.clone();
        e.push(("AWS_LAMBDA_LOG_STREAM_NAME".into(), stream.into()));
        e.push(("HERMES_CLOCK_OFFSET_SECS".into(), offset.into()));
        e
    };
    let auth = json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")});

    // Sandbox A takes the turn and dies during the model call.
    llm.set_delay(30_000);
    let (api, rapid) = start_rapid().await;
    let mut a = Function::start(&api, rapid.clone(), home.path(), &as_refs(&with("2026/12/01/[$LATEST]aaaa", "0")));
    let msg = json!({"chat_id": "c9", "user_id": "u1", "text": "remember the milk", "message_id": "m-9"}).to_string();
    rapid.queue.lock().unwrap().push_back(("dies".into(), function_url("POST", "/api/messages", auth.clone(), Some(msg), false)));
    assert!(common::wait_until(20, || llm.calls() == 1).await, "sandbox A never reached the model");
    a.child.kill().ok();
    a.child.wait().ok();
    llm.set_delay(0);

    // Sandbox B (another sandbox, lease still live): nothing to take over yet, so after its
    // invocation it arms a wake for the lease's expiry.
    let (api, rapid) = start_rapid().await;
    let mut b = Function::start(&api, rapid.clone(), home.path(), &as_refs(&with("2026/12/01/[$LATEST]bbbb", "0")));
    let (_, resp) = b.invoke(function_url("GET", "/healthz", json!({}), None, false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    b.settled().await;
    let wakes: Vec<(String, String)> = moto_schedules(&moto, &group).await.into_iter().filter(|(n, _)| n.starts_with("hzwake-")).collect();
    assert_eq!(wakes.len(), 1, "one wake for the stored turn: {wakes:?}");
    assert_eq!(wakes[0].1, FUNCTION_ARN);
    assert_eq!(llm.calls(), 1, "a live lease is not taken over");
    drop(b);

    // Sandbox C starts after the lease expired (the wake's time): its cold start, or the
    // watchdog event the wake sends, resumes the turn.
    let (api, rapid) = start_rapid().await;
    let mut c = Function::start(&api, rapid.clone(), home.path(), &as_refs(&with("2026/12/01/[$LATEST]cccc", "3700")));
    let (kind, resp) = c.invoke(json!({"hermes_zero_tick": {}})).await;
    assert_eq!((kind, resp), ("response", json!({"status": "ok"})));
    c.settled().await;
    assert!(common::wait_until(20, || llm.calls() == 2).await, "the interrupted turn was not resumed");
    let resumed = &llm.requests()[1];
    assert!(resumed.to_string().contains("interrupted by a gateway restart"), "a resume turn: {resumed}");
    let (_, resp) = c.invoke(function_url("GET", "/api/sessions", auth.clone(), None, false)).await;
    let sessions = body_json(&resp);
    let id = sessions["sessions"].as_array().and_then(|s| s.first()).map(|s| s["session_id"].as_str().unwrap().to_string());
    let id = id.unwrap_or_else(|| panic!("no session: {sessions}"));
    let (_, resp) = c.invoke(function_url("GET", &format!("/api/sessions/{id}"), auth, None, false)).await;
    let show = body_json(&resp);
    assert_eq!(common::user_texts(&show), vec!["remember the milk".to_string()], "the message was stored once: {show}");
    let last = show["messages"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!(last["role"], json!("assistant"), "the resumed turn answered: {show}");
}

/// An MCP tool works from the Lambda entry: a Streamable HTTP server's tools (listed once by
/// `mcp list` into the store) are offered on the cold start without connecting, the model's
/// call reaches the server, and a stdio entry is refused there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_calls_an_mcp_tool_and_refuses_stdio_servers() {
    let knobs = Arc::new(common::mcp_server::Knobs::default());
    let url = common::mcp_server::start_server(knobs.clone()).await;
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-mcp");
    let extra = format!("mcp_servers:\n  calc:\n    url: {url}\n  local:\n    command: /nonexistent/mcp-server\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    let h = home.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || common::cli(&h, &["mcp", "list"], &[])).await.unwrap();
    assert!(common::stdout(&out).contains("mcp_calc_add"), "{}", common::stderr(&out));
    let listed = knobs.hits.load(std::sync::atomic::Ordering::SeqCst);

    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    llm.push(common::Reply::Tool { name: "mcp_calc_add".into(), args: json!({"a": 20, "b": 22}) });
    llm.push(common::Reply::Text("forty-two".into()));
    let auth = json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")});
    let msg = json!({"chat_id": "c1", "user_id": "u1", "text": "add 20 and 22"}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/api/messages", auth.clone(), Some(msg), false)).await;
    assert_eq!(body_json(&resp)["reply"], json!("forty-two"), "{resp}");
    let names: Vec<String> =
        llm.requests()[0]["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect();
    assert!(names.contains(&"mcp_calc_add".to_string()) && !names.iter().any(|n| n.starts_with("mcp_local_")), "{names:?}");
    let tool = llm.requests()[1]["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap().clone();
    assert_eq!(tool["content"], json!(json!({"result": "42"}).to_string()));
    assert!(knobs.hits.load(std::sync::atomic::Ordering::SeqCst) > listed);

    let (_, resp) = f.invoke(function_url("GET", "/api/status", auth, None, false)).await;
    let st = body_json(&resp);
    assert_eq!(st["mcp"][0]["state"], "connected", "{st}");
    assert_eq!(st["mcp"][1]["state"], "refused: stdio servers run only self-hosted, not on Lambda", "{st}");
}

/// One recorded outbound platform call: (path, JSON body).
type Posts = Arc<Mutex<Vec<(String, Value)>>>;

/// A fake that answers Slack's Web API (`chat.postMessage`) and the Graph API (`/messages`)
/// and records every call.
async fn fake_platforms() -> (String, Posts) {
    async fn slack(State(p): State<Posts>, Path(method): Path<String>, Json(v): Json<Value>) -> Json<Value> {
        p.lock().unwrap().push((format!("slack/{method}"), v));
        Json(json!({"ok": true, "channel": "D1", "ts": "1700000000.000200"}))
    }
    async fn graph(State(p): State<Posts>, Path((version, phone)): Path<(String, String)>, Json(v): Json<Value>) -> Json<Value> {
        p.lock().unwrap().push((format!("graph/{version}/{phone}/messages"), v));
        Json(json!({"messaging_product": "whatsapp", "messages": [{"id": "wamid.OUT1"}]}))
    }
    let posts: Posts = Arc::default();
    let app = axum::Router::new()
        .route("/slack/{method}", post(slack))
        .route("/{version}/{phone}/messages", post(graph))
        .with_state(posts.clone());
    (common::spawn_server(app).await, posts)
}

fn hmac_hex(secret: &str, data: &[u8]) -> String {
    use ring::hmac;
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()), data).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Waits (≤ 30 s) until `posts` holds `n` calls.
async fn wait_posts(posts: &Posts, n: usize) -> Vec<(String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = posts.lock().unwrap().clone();
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn lambda_answers_signed_slack_and_whatsapp_webhooks_after_acknowledging() {
    let llm = FakeLlm::start().await;
    let (base, posts) = fake_platforms().await;
    let home = TempHome::new("lambda-chat");
    let extra = format!("platforms:\n  slack:\n    api_base: {base}/slack\n  whatsapp:\n    api_base: {base}\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    let (api, rapid) = start_rapid().await;
    let envs = [
        ("SLACK_SIGNING_SECRET", "slack-signing-secret"),
        ("SLACK_BOT_TOKEN", "xoxb-lambda"),
        ("SLACK_ALLOWED_USERS", "U1"),
        ("WHATSAPP_CLOUD_APP_SECRET", "wa-app-secret"),
        ("WHATSAPP_CLOUD_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_CLOUD_VERIFY_TOKEN", "wa-verify"),
        ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "106540352242922"),
        ("WHATSAPP_CLOUD_ALLOWED_USERS", "15551234567"),
    ];
    let mut f = Function::start(&api, rapid.clone(), home.path(), &envs);

    // Slack: a signed DM through the Function URL; 200 at once, the reply after it.
    let ts = epoch_secs().to_string();
    let body = json!({"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": {
        "type": "message", "channel": "D1", "channel_type": "im", "user": "U1", "text": "hello from slack", "ts": "1700000000.000100"}})
    .to_string();
    let sig = format!("v0={}", hmac_hex("slack-signing-secret", format!("v0:{ts}:{body}").as_bytes()));
    let headers = json!({"content-type": "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": sig});
    let (kind, resp) = f.invoke(function_url("POST", "/webhooks/slack", headers, Some(body), false)).await;
    assert_eq!((kind, resp["statusCode"].clone()), ("response", json!(200)), "{resp}");
    f.settled().await;
    let got = wait_posts(&posts, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "slack/chat.postMessage");
    assert_eq!((got[0].1["channel"].clone(), got[0].1["text"].clone()), (json!("D1"), json!("echo: hello from slack")), "{got:?}");

    // WhatsApp: the verify handshake (GET) and a signed text (POST) through the same router.
    let mut verify = function_url("GET", "/webhooks/whatsapp", json!({}), None, false);
    verify["rawQueryString"] = json!("hub.mode=subscribe&hub.verify_token=wa-verify&hub.challenge=1158201444");
    verify["queryStringParameters"] = json!({"hub.mode": "subscribe", "hub.verify_token": "wa-verify", "hub.challenge": "1158201444"});
    let (_, resp) = f.invoke(verify).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert_eq!(resp["body"], json!("1158201444"), "{resp}");
    let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
        "contacts": [{"profile": {"name": "Ann"}, "wa_id": "15551234567"}],
        "messages": [{"from": "15551234567", "id": "wamid.IN1", "timestamp": "1749416383", "type": "text", "text": {"body": "hello from whatsapp"}}]}}]}]})
    .to_string();
    let headers = json!({"content-type": "application/json", "x-hub-signature-256": format!("sha256={}", hmac_hex("wa-app-secret", body.as_bytes()))});
    let (_, resp) = f.invoke(function_url("POST", "/webhooks/whatsapp", headers.clone(), Some(body.clone()), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    f.settled().await;
    let got = wait_posts(&posts, 2).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].0, "graph/v21.0/106540352242922/messages");
    assert_eq!((got[1].1["to"].clone(), got[1].1["text"]["body"].clone()), (json!("15551234567"), json!("echo: hello from whatsapp")));

    // A forged Slack call: 401, and nothing more is sent.
    let headers =
        json!({"content-type": "application/json", "x-slack-request-timestamp": epoch_secs().to_string(), "x-slack-signature": "v0=00"});
    let (_, resp) = f.invoke(function_url("POST", "/webhooks/slack", headers, Some("{}".into()), false)).await;
    assert_eq!(resp["statusCode"], json!(401), "{resp}");
    f.settled().await;
    assert_eq!(posts.lock().unwrap().len(), 2);
    assert_eq!(llm.calls(), 2, "one model call per message");
}

/// Seconds since the epoch (Slack's signature timestamp).
fn epoch_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// One function, many agents (docs/design.md#profiles): `/p/a/…` is profile a's app with
/// a's key from its `.env`; the function's own key does not open it, an unknown profile
/// answers as a wrong key does (401), and a's session is not in main's list.
#[tokio::test]
async fn lambda_routes_a_profile_by_path() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-profiles");
    home.write("config.yaml", &common::config(Some(&llm), None, ""));
    home.write("profiles/a/config.yaml", &common::config(Some(&llm), None, ""));
    home.write("profiles/a/.env", "API_SERVER_KEY=key-a\n");
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid, home.path(), &[]);
    let headers = |key: &str| json!({"content-type": "application/json", "authorization": format!("Bearer {key}")});
    let msg = json!({"chat_id": "c1", "user_id": "u1", "text": "hello a"}).to_string();

    let (_, resp) = f.invoke(function_url("POST", "/p/a/api/messages", headers("key-a"), Some(msg.clone()), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert_eq!(body_json(&resp)["session_key"], json!("agent:a:api:dm:c1"), "{resp}");
    let (_, resp) = f.invoke(function_url("POST", "/p/a/api/messages", headers(API_KEY), Some(msg.clone()), false)).await;
    assert_eq!(resp["statusCode"], json!(401), "the function's own key is not a's: {resp}");
    let (_, refused) = f.invoke(function_url("POST", "/p/a/api/messages", headers("key-b"), Some(msg.clone()), false)).await;
    let (_, resp) = f.invoke(function_url("POST", "/p/ghost/api/messages", headers("key-a"), Some(msg), false)).await;
    assert_eq!((resp["statusCode"].clone(), body_json(&resp)["error"].is_string()), (json!(401), true), "{resp}");
    assert_eq!(body_json(&resp), body_json(&refused), "an unknown profile answers as a wrong key does");
    let (_, resp) = f.invoke(function_url("GET", "/api/sessions", headers(API_KEY), None, false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert!(!body_json(&resp).to_string().contains("agent:a:"), "main does not list a's session: {resp}");
    let (_, resp) = f.invoke(function_url("GET", "/p/a/api/sessions", headers("key-a"), None, false)).await;
    assert!(body_json(&resp).to_string().contains("agent:a:api:dm:c1"), "{resp}");
}

/// The input of a schedule in a group of the moto Scheduler API.
async fn moto_schedule_input(endpoint: &str, group: &str, name: &str) -> Value {
    let s = moto_scheduler(endpoint).get_schedule().name(name).group_name(group).send().await.unwrap();
    serde_json::from_str(s.target().and_then(|t| t.input()).unwrap()).unwrap()
}

/// A routed profile on Lambda arms EventBridge schedules of its own (docs/design.md#profiles):
/// the watchdog's pass over profile `a` (whose `config.yaml` has no `cron.eventbridge`)
/// arms `hzp.a.<job>-<time>` in the function's group, targeting the function ARN learned
/// from the invocation, and the function's own first reconcile leaves it alone. The
/// schedule's input, sent as the event, fires a's job in a's app and moves the schedule;
/// the same event without the profile finds no such job in the function's own profile.
#[tokio::test]
async fn lambda_routed_profile_arms_and_fires_its_own_schedules() {
    let Some(moto) = moto_endpoint("lambda_routed_profile_arms_and_fires_its_own_schedules") else { return };
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-profile-eb");
    let group = format!("hz-lpeb-{:08x}", rand::random::<u32>());
    let extra = format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n");
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    home.write("profiles/a/config.yaml", &common::config(Some(&llm), None, ""));
    home.write("profiles/a/.env", "API_SERVER_KEY=key-a\n");
    let (job_id, fire_at) = add_job_in(home.path(), &[("HERMES_PROFILE".into(), "a".into())]);

    // An hour and 40 s on: the occurrence is due, and not yet overdue for the ticker's
    // safety net (180 s late under a managed provider).
    let envs = [
        ("HERMES_CLOCK_OFFSET_SECS", "3640"),
        ("AWS_ENDPOINT_URL_SCHEDULER", moto.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &envs);
    let (kind, resp) = f.invoke(json!({"hermes_zero_tick": {}})).await;
    assert_eq!((kind, resp), ("response", json!({"status": "ok"})));
    f.settled().await;
    let stamp = |at: &str| chrono::DateTime::parse_from_rfc3339(at).unwrap().format("%Y%m%dT%H%M%SZ").to_string();
    let name = format!("hzp.a.{job_id}-{}", stamp(&fire_at));
    assert_eq!(moto_schedules(&moto, &group).await, vec![(name.clone(), FUNCTION_ARN.to_string())]);
    let input = moto_schedule_input(&moto, &group, &name).await;
    assert_eq!(input, json!({"hermes_zero_fire": {"job_id": job_id, "fire_at": fire_at, "profile": "a"}}));
    assert_eq!(llm.calls(), 0, "the safety-net tick left the job to its schedule");

    // The schedule's event runs a's job once, and a's schedule moves to the next occurrence.
    let (kind, resp) = f.invoke(input.clone()).await;
    assert_eq!(kind, "response", "{resp}");
    assert_eq!((resp["status"].clone(), resp["run_status"].clone()), (json!("ok"), json!("ok")), "{resp}");
    assert_eq!(llm.calls(), 1);
    assert!(common::last_user(&llm.requests()[0]).contains("summarise the overnight news"));
    let next = resp["next_fire_at"].as_str().unwrap().to_string();
    let (_, resp) = f.invoke(input).await;
    assert_eq!(resp, json!({"status": "duplicate"}));
    let moved = format!("hzp.a.{job_id}-{}", stamp(&next));
    assert_eq!(moto_schedules(&moto, &group).await, vec![(moved, FUNCTION_ARN.to_string())]);
    // Without the profile the event is the function's own profile's, which has no such job.
    let (_, resp) = f.invoke(json!({"hermes_zero_fire": {"job_id": job_id, "fire_at": fire_at}})).await;
    assert_eq!(resp, json!({"status": "gone"}));
    assert_eq!(llm.calls(), 1);
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

/// A paused job fired by its EventBridge event runs nothing and answers `paused`, on
/// DynamoDB when moto runs (else SQLite); resumed, the same kind of event runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_runs_nothing_for_a_paused_job() {
    let llm = FakeLlm::start().await;
    let home = TempHome::new("lambda-paused");
    let (mut envs, extra) = match moto_dynamodb("lpause") {
        Some((envs, group, _)) => {
            (envs, format!("cron:\n  eventbridge:\n    group: {group}\n    role_arn: arn:aws:iam::123456789012:role/hz-scheduler\n"))
        }
        None => (Vec::new(), String::new()),
    };
    home.write("config.yaml", &common::config(Some(&llm), None, &extra));
    let (job_id, fire_at) = tokio::task::block_in_place(|| {
        if !envs.is_empty() {
            create_table(home.path(), &envs);
        }
        let added = add_job_in(home.path(), &envs);
        let out = common::cli(home.path(), &["cron", "pause", &added.0], &as_refs(&envs));
        assert!(out.status.success(), "cron pause: {}", common::stderr(&out));
        added
    });
    envs.push(("HERMES_CLOCK_OFFSET_SECS".into(), "3700".into()));
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &as_refs(&envs));
    let fire = json!({"hermes_zero_fire": {"job_id": job_id, "fire_at": fire_at}});
    let (kind, resp) = f.invoke(fire.clone()).await;
    assert_eq!((kind, resp), ("response", json!({"status": "paused"})));
    let (_, resp) = f.invoke(json!({"hermes_zero_fire": {"job_id": job_id}})).await;
    assert_eq!(resp, json!({"status": "paused"}), "without fire_at too");
    assert_eq!(llm.calls(), 0, "nothing ran");
    let runs = tokio::task::block_in_place(|| common::cli(home.path(), &["cron", "runs", &job_id, "--json"], &as_refs(&envs)));
    assert_eq!(serde_json::from_str::<Value>(&common::stdout(&runs)).unwrap(), json!([]), "no run recorded");
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

/// A script job on Lambda: `scripts/build-lambda.sh --home H --scripts S --stage-only OUT`
/// lays out the package's home as the zip holds it (`hermes-home/scripts/` from S); the
/// function, with `HERMES_HOME` on that home, fires the job and runs the script from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_runs_a_script_job_from_its_packaged_scripts_folder() {
    let llm = FakeLlm::start().await;
    let src = TempHome::new("lambda-src");
    src.write("home/config.yaml", &common::config(Some(&llm), None, ""));
    src.write("scripts/probe.sh", "echo \"probe-6174 in $(basename \"$PWD\")\"\n");
    let pkg = TempHome::new("lambda-pkg");
    let script = format!("{}/scripts/build-lambda.sh", env!("CARGO_MANIFEST_DIR"));
    let (h, s) = (src.path().join("home"), src.path().join("scripts"));
    let out = Command::new("bash")
        .arg(script)
        .args(["--home", h.to_str().unwrap(), "--scripts", s.to_str().unwrap(), "--stage-only", pkg.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let home = pkg.path().join("hermes-home");
    assert!(home.join("scripts/probe.sh").is_file() && home.join("config.yaml").is_file());
    let o = common::cli(&home, &["cron", "add", "every 1h", "Report the probe.", "--script", "probe.sh", "--deliver", "local"], &[]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let id = common::stdout(&o).trim().to_string();
    let jobs: Value = serde_json::from_str(&common::stdout(&common::cli(&home, &["cron", "list", "--json"], &[]))).unwrap();
    let next = jobs[0]["next_run_at"].as_str().unwrap();
    let fire_at = chrono::DateTime::parse_from_rfc3339(next).unwrap().to_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);

    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid, &home, &[("HERMES_CLOCK_OFFSET_SECS", "3700")]);
    let (kind, resp) = f.invoke(json!({"hermes_zero_fire": {"job_id": id, "fire_at": fire_at}})).await;
    assert_eq!((kind, &resp["run_status"]), ("response", &json!("ok")), "{resp}");
    assert_eq!(llm.calls(), 1);
    let prompt = common::last_user(&llm.requests()[0]);
    assert!(prompt.starts_with("## Script Output\n") && prompt.contains("probe-6174 in scripts"), "{prompt}");
    assert!(prompt.ends_with("Report the probe."), "{prompt}");
}

/// The OpenAI-compatible API server through the Lambda entry (Function URL events): models,
/// a chat completion with its session header, the SSE answer (streamed), and a stored
/// response read back.
#[tokio::test]
async fn lambda_serves_the_openai_compatible_api_server() {
    let llm = FakeLlm::start().await;
    llm.stream_when_asked();
    let home = TempHome::new("lambda-v1");
    home.write("config.yaml", &common::config(Some(&llm), None, ""));
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    let auth = json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}")});

    let (_, resp) = f.invoke(function_url("GET", "/v1/models", auth.clone(), None, false)).await;
    assert_eq!(body_json(&resp)["data"][0]["id"], json!("hermes-agent"), "{resp}");
    let (_, resp) = f.invoke(function_url("POST", "/v1/chat/completions", json!({}), Some("{}".into()), false)).await;
    assert_eq!((resp["statusCode"].clone(), body_json(&resp)["error"]["code"].clone()), (json!(401), json!("invalid_api_key")), "{resp}");

    let mut headers = auth.clone();
    headers["x-hermes-session-id"] = json!("lambda-chat-1");
    let chat = json!({"model": "hermes-agent", "messages": [{"role": "user", "content": "hello lambda"}]}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/v1/chat/completions", headers.clone(), Some(chat), false)).await;
    assert_eq!(resp["statusCode"], json!(200), "{resp}");
    assert_eq!(body_json(&resp)["choices"][0]["message"]["content"], json!("echo: hello lambda"), "{resp}");
    assert_eq!(resp["headers"]["x-hermes-session-id"], json!("lambda-chat-1"), "{resp}");

    let chat = json!({"messages": [{"role": "user", "content": "stream lambda"}], "stream": true}).to_string();
    let (_, resp) = f.invoke(function_url("POST", "/v1/chat/completions", headers, Some(chat), false)).await;
    assert_eq!(resp["headers"]["content-type"], json!("text/event-stream"), "{resp}");
    assert_eq!(resp["streamed"], json!(true), "{resp}");
    let sse = resp["body"].as_str().unwrap_or("");
    assert_eq!(sse_content(sse), "echo: stream lambda", "{sse}");
    assert!(sse.ends_with("data: [DONE]\n\n"), "{sse}");

    let (_, resp) =
        f.invoke(function_url("POST", "/v1/responses", auth.clone(), Some(json!({"input": "remember me"}).to_string()), false)).await;
    let created = body_json(&resp);
    assert_eq!(created["output"][0]["content"][0]["text"], json!("echo: remember me"), "{resp}");
    let path = format!("/v1/responses/{}", created["id"].as_str().unwrap());
    let (_, resp) = f.invoke(function_url("GET", &path, auth, None, false)).await;
    assert_eq!(body_json(&resp)["id"], created["id"], "{resp}");
}

/// The text of an SSE answer's `chat.completion.chunk` deltas.
fn sse_content(sse: &str) -> String {
    sse.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| v["choices"][0]["delta"]["content"].as_str().map(str::to_string))
        .collect()
}

/// A Function URL answer is streamed (Lambda response streaming): the SSE answer of
/// `/v1/chat/completions` reaches the Runtime API as it is made — its first delta arrives
/// while the model still holds the rest of its answer open — and the prelude carries the
/// status and headers.
#[tokio::test]
async fn lambda_streams_an_sse_answer_through_the_function_url_as_it_is_made() {
    let model = SseModel::start(6, 5).await;
    model.answers.lock().unwrap().push("held after the first piece".into());
    model.hold_after_first();
    let home = TempHome::new("lambda-stream");
    home.write(
        "config.yaml",
        &format!("model:\n  provider: openai\n  base_url: {}\n  name: fake-model\n  timeout_seconds: 10\n", model.url),
    );
    let (api, rapid) = start_rapid().await;
    let mut f = Function::start(&api, rapid.clone(), home.path(), &[]);
    let headers =
        json!({"content-type": "application/json", "authorization": format!("Bearer {API_KEY}"), "x-hermes-session-id": "lambda-stream-1"});
    let chat = json!({"messages": [{"role": "user", "content": "stream it"}], "stream": true}).to_string();
    let id = f.queue(function_url("POST", "/v1/chat/completions", headers, Some(chat), false));

    let seen = || String::from_utf8_lossy(&rapid.chunks_of(&id).iter().flat_map(|(_, b)| b.to_vec()).collect::<Vec<u8>>()).into_owned();
    let first = common::wait_until(7, || seen().contains(r#"{"content":"held a"}"#)).await;
    assert!(first, "the first delta did not reach the Runtime API while the model held the rest: {:?}", seen());
    assert!(!seen().contains("fter t"), "the model still holds the rest: {:?}", seen());
    assert!(!rapid.results.lock().unwrap().contains_key(&id), "the answer is still open");
    let released = Instant::now();
    model.release();

    let (kind, resp) = f.result(&id).await;
    assert_eq!((kind, &resp["streamed"], &resp["statusCode"]), ("response", &json!(true), &json!(200)), "{resp}");
    assert_eq!(resp["headers"]["content-type"], "text/event-stream", "{resp}");
    assert_eq!(resp["headers"]["x-hermes-session-id"], "lambda-stream-1", "{resp}");
    let sse = resp["body"].as_str().unwrap();
    assert_eq!(sse_content(sse), "held after the first piece", "{sse}");
    assert!(sse.ends_with("data: [DONE]\n\n"), "{sse}");
    let late = rapid.chunks_of(&id).iter().filter(|(at, _)| *at >= released).count();
    assert!(late >= 2, "the rest of the answer came in chunks of its own after the release ({late})");
    assert!(rapid.init_errors.lock().unwrap().is_empty());
}

/// The function behind a local Function URL (the model streams when asked): (home, model,
/// function, the URL's base).
async fn behind_a_function_url(tag: &str) -> (TempHome, FakeLlm, Function, String) {
    let llm = FakeLlm::start().await;
    llm.stream_when_asked();
    let home = TempHome::new(tag);
    home.write("config.yaml", &common::config(Some(&llm), None, ""));
    let (api, rapid) = start_rapid().await;
    let f = Function::start(&api, rapid.clone(), home.path(), &[]);
    (home, llm, f, function_url_front(rapid).await)
}

/// The official `openai` SDK, unchanged, through the Function URL: the same script and
/// checks as against `serve` (tests/api_server.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_sdk_works_through_the_function_url() {
    let Some(python) = sdk_python() else { return };
    let (_home, llm, _f, base) = behind_a_function_url("lambda-openai-sdk").await;
    check_openai_sdk(&python, &base, &llm).await;
}

/// `hermes-agent-api-client`, unchanged, through the Function URL: its capability probe and
/// its chat event stream, checked as against `serve` (tests/api_server.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hermes_agent_api_client_works_through_the_function_url() {
    let Some(python) = sdk_python() else { return };
    let (_home, llm, _f, base) = behind_a_function_url("lambda-hermes-client").await;
    check_hermes_client(&python, &base, &llm).await;
}
