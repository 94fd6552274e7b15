//! Registry tests: what chat turns and job runs are offered, and that every way a call can go
//! wrong (unknown name, malformed arguments, a tool error, a time-out) comes back to the model
//! as the tool result. The agent-loop test checks that each call's duration is recorded.

use super::*;
use crate::app::turn::agent;
use crate::app::turn::types::TurnSpec;
use crate::core::ids::ChatType;
use crate::core::session::{Message, Role, ToolCall};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError};
use crate::test_support::{CountingLlm, TestApp};
use serde_json::json;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

const NOW: &str = "2025-03-01T12:00:00Z";

/// The built-in tools a job run is offered.
const JOB_TOOLS: [&str; 9] =
    ["current_time", "skills_list", "skill_view", "skill_manage", "web_fetch", "session_search", "todo", "clarify", "delegate_task"];

fn test_app() -> App {
    TestApp::new(NOW.parse().unwrap()).yaml("timezone: Europe/Berlin\n").llm(CountingLlm::new("ok")).build()
}

fn origin() -> Origin {
    Origin::new("telegram", "42", ChatType::Dm, Some("u1"), None).unwrap()
}

fn sid() -> SessionId {
    SessionId::named("s1".into())
}

fn ctx<'a>(app: &'a App, sid: &'a SessionId, origin: Option<&'a Origin>, kind: TurnKind) -> ToolCtx<'a> {
    ToolCtx { app, session_id: sid, origin, kind, deadline: None, call_id: None, turn: None }
}

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall { id: "c1".into(), name: name.into(), arguments: arguments.into() }
}

fn names(set: &Toolset) -> Vec<String> {
    set.specs().into_iter().map(|s| s.name.clone()).collect()
}

/// A test tool: counts its calls; fails, sleeps or echoes depending on its arguments.
#[derive(Default)]
struct Probe(AtomicUsize);

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn toolset(&self) -> &str {
        "test"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn schema(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(&self, _ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        if let Some(msg) = args["fail"].as_str() {
            return Err(ToolError::Failed(msg.into()));
        }
        if let Some(ms) = args["sleep_ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        Ok(ToolOutput::Text(format!("echo {}", args["say"].as_str().unwrap_or_default())))
    }
}

#[test]
fn builtin_names_are_unique_and_in_offer_order() {
    assert_eq!(
        builtin(&crate::test_support::tool_ports()).names(),
        [
            "current_time",
            "cronjob",
            "memory",
            "send_message",
            "skills_list",
            "skill_view",
            "skill_manage",
            "web_fetch",
            "web_search",
            "web_extract",
            "session_search",
            "todo",
            "clarify",
            "delegate_task",
            "vision_analyze",
            "text_to_speech"
        ]
    );
}

#[test]
fn every_builtin_names_its_hermes_toolset_and_the_registry_answers_by_toolset() {
    let r = builtin(&crate::test_support::tool_ports());
    assert_eq!(
        r.toolsets(),
        ["time", "cronjob", "memory", "messaging", "skills", "web", "session_search", "todo", "clarify", "delegation", "vision", "tts"]
    );
    for (set, tools) in [
        ("time", &["current_time"][..]),
        ("cronjob", &["cronjob"]),
        ("memory", &["memory"]),
        ("messaging", &["send_message"]),
        ("skills", &["skills_list", "skill_view", "skill_manage"]),
        ("web", &["web_fetch", "web_search", "web_extract"]),
        ("session_search", &["session_search"]),
        ("todo", &["todo"]),
        ("clarify", &["clarify"]),
        ("delegation", &["delegate_task"]),
        ("vision", &["vision_analyze"]),
        ("tts", &["text_to_speech"]),
    ] {
        assert_eq!(r.of_toolsets(&[set]), tools, "{set}");
    }
    // Several toolsets: registration order, not the order asked for; unknown ones add nothing.
    assert_eq!(r.of_toolsets(&["web", "terminal", "memory"]), ["memory", "web_fetch", "web_search", "web_extract"]);
    assert!(r.of_toolsets(&[]).is_empty() && r.of_toolsets(&["Web", ""]).is_empty());
    // A tool registered at run time joins its toolset, and leaves it when unregistered.
    r.register(Arc::new(Echo)).unwrap();
    assert_eq!(r.of_toolsets(&["echo", "time"]), ["current_time", "echo"]);
    assert!(r.unregister("echo"));
    assert!(r.of_toolsets(&["echo"]).is_empty() && !r.toolsets().contains(&"echo".to_string()));
}

#[test]
fn a_turns_toolset_narrows_to_the_enabled_toolsets() {
    let (app, sid, o) = (test_app(), sid(), origin());
    let chat = app.inner.tools.toolset(&ctx(&app, &sid, Some(&o), TurnKind::Chat));
    assert_eq!(names(&chat.in_toolsets(&["web", "skills"])), ["skills_list", "skill_view", "skill_manage", "web_fetch"]);
    // What a turn is not offered stays out, whatever the toolsets say.
    let job = app.inner.tools.toolset(&ctx(&app, &sid, None, TurnKind::Job));
    assert_eq!(names(&job.in_toolsets(&["cronjob", "time"])), ["current_time"]);
}

#[test]
fn chat_turns_get_cronjob_and_job_runs_do_not() {
    let (app, sid, o) = (test_app(), sid(), origin());
    let chat = app.inner.tools.toolset(&ctx(&app, &sid, Some(&o), TurnKind::Chat));
    // No web backend is configured here: web_search and web_extract are not offered.
    assert_eq!(
        names(&chat),
        [
            "current_time",
            "cronjob",
            "memory",
            "send_message",
            "skills_list",
            "skill_view",
            "skill_manage",
            "web_fetch",
            "session_search",
            "todo",
            "clarify",
            "delegate_task"
        ]
    );
    let job = app.inner.tools.toolset(&ctx(&app, &sid, None, TurnKind::Job));
    assert_eq!(names(&job), JOB_TOOLS, "Hermes' cron runs have no messaging toolset");
    let schema = &chat.specs()[1].parameters;
    assert_eq!(schema["required"], json!(["action"]));
}

#[tokio::test]
async fn a_tool_not_offered_or_not_known_is_an_error_result() {
    let (app, sid) = (test_app(), sid());
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let set = app.inner.tools.toolset(&c);
    for name in ["nope", "cronjob", "send_message"] {
        let r = set.execute(&c, &call(name, r#"{"action":"list"}"#)).await;
        assert!(r.is_error);
        assert_eq!(serde_json::from_str::<Value>(&r.content).unwrap(), json!({"error": format!("unknown tool `{name}`")}));
    }
}

#[tokio::test]
async fn malformed_arguments_are_an_error_result_and_the_tool_is_not_called() {
    let (app, sid) = (test_app(), sid());
    let probe = Arc::new(Probe::default());
    app.inner.tools.register(probe.clone()).unwrap();
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let set = app.inner.tools.toolset(&c);
    for bad in ["{not json", "[1, 2]", "\"text\"", "7"] {
        let r = set.execute(&c, &call("probe", bad)).await;
        assert!(r.is_error, "{bad}");
        assert!(r.content.contains("arguments must be a JSON object"), "{bad}: {}", r.content);
    }
    assert_eq!(probe.0.load(Ordering::SeqCst), 0);
    for none in ["", "  ", "null", "{}"] {
        let r = set.execute(&c, &call("probe", none)).await;
        assert_eq!((r.is_error, r.content.as_str()), (false, "echo "), "{none:?}");
    }
    let r = set.execute(&c, &call("probe", r#"{"say":"hi"}"#)).await;
    assert_eq!(r.content, "echo hi");
}

#[tokio::test]
async fn a_tool_error_goes_back_as_the_result() {
    let (app, sid) = (test_app(), sid());
    app.inner.tools.register(Arc::new(Probe::default())).unwrap();
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let r = app.inner.tools.toolset(&c).execute(&c, &call("probe", r#"{"fail":"disk full"}"#)).await;
    assert!(r.is_error);
    assert_eq!(serde_json::from_str::<Value>(&r.content).unwrap(), json!({"error": "disk full"}));
    // cronjob's own errors take the same path.
    let o = origin();
    let c = ctx(&app, &sid, Some(&o), TurnKind::Chat);
    let r = app.inner.tools.toolset(&c).execute(&c, &call("cronjob", r#"{"action":"explode"}"#)).await;
    assert!(r.is_error && r.content.contains("unknown action `explode`"), "{}", r.content);
}

#[tokio::test]
async fn a_call_past_the_turn_deadline_is_cancelled_and_reported() {
    let (app, sid) = (test_app(), sid());
    app.inner.tools.register(Arc::new(Probe::default())).unwrap();
    let mut c = ctx(&app, &sid, None, TurnKind::Job);
    c.deadline = Some(Instant::now() + Duration::from_millis(50));
    let r = app.inner.tools.toolset(&c).execute(&c, &call("probe", r#"{"sleep_ms": 60000}"#)).await;
    assert!(r.is_error);
    assert!(r.content.contains("`probe` did not finish in time"), "{}", r.content);
    assert!((40..10_000).contains(&r.duration_ms), "{}", r.duration_ms);
}

#[test]
fn tools_registered_at_run_time_join_later_turns_and_names_stay_unique() {
    let (app, sid) = (test_app(), sid());
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let before = app.inner.tools.toolset(&c);
    app.inner.tools.register(Arc::new(Probe::default())).unwrap();
    assert_eq!(app.inner.tools.register(Arc::new(Probe::default())), Err(DuplicateTool("probe".into())));
    assert_eq!(names(&before), JOB_TOOLS, "a running turn keeps its set");
    assert_eq!(names(&app.inner.tools.toolset(&c)), [JOB_TOOLS.as_slice(), &["probe"]].concat());
    assert!(app.inner.tools.unregister("probe") && !app.inner.tools.unregister("probe"));
    assert_eq!(names(&app.inner.tools.toolset(&c)), JOB_TOOLS);
}

#[tokio::test]
async fn current_time_reads_the_clock_in_the_configured_timezone() {
    let (app, sid) = (test_app(), sid());
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let r = app.inner.tools.toolset(&c).execute(&c, &call("current_time", "")).await;
    let v: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(v, json!({"now": "2025-03-01T13:00:00+01:00", "timezone": "Europe/Berlin"}));
}

/// A model that calls `probe` once, then answers.
#[derive(Default)]
struct CallsProbe(Mutex<Vec<ChatRequest>>);

#[async_trait]
impl Llm for CallsProbe {
    fn name(&self) -> &'static str {
        "calls-probe"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut seen = self.0.lock().unwrap();
        seen.push(req.clone());
        if seen.len() == 1 {
            return Ok(ChatResponse { tool_calls: vec![call("probe", r#"{"sleep_ms": 20}"#)], ..ChatResponse::default() });
        }
        Ok(ChatResponse { content: "done".into(), ..ChatResponse::default() })
    }
}

#[tokio::test]
async fn the_turn_records_each_call_with_its_duration() {
    let llm = Arc::new(CallsProbe::default());
    let app = TestApp::new(NOW.parse().unwrap()).yaml("{}").llm(llm.clone()).build();
    app.inner.tools.register(Arc::new(Probe::default())).unwrap();
    let sid = sid();
    let user = Message::text(Role::User, "go", app.inner.clock.now());
    app.inner.store.append_messages(&sid, &[user], None).await.unwrap();
    let spec = TurnSpec {
        session_id: &sid,
        notes: vec![],
        kind: TurnKind::Job,
        deadline: None,
        model: None,
        route: None,
        toolsets: Vec::new(),
        system: "sys".into(),
        origin: None,
        fence: None,
        stream: None,
        transcript: None,
        prompt_unstored: false,
    };
    let out = agent::run(&app, spec, || async { false }).await.unwrap();
    assert_eq!(out.reply, "done");
    let offered: Vec<_> = llm.0.lock().unwrap()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(offered, [JOB_TOOLS.as_slice(), &["probe"]].concat());
    let stored = app.inner.store.recent_messages(&sid, 10).await.unwrap();
    let result = stored.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.content, "echo ");
    let ms = result.duration_ms.unwrap();
    assert!((15..10_000).contains(&ms), "{ms}");
    let encoded = serde_json::to_value(result).unwrap();
    assert_eq!(encoded["duration_ms"], ms);
    let mut old = encoded.clone();
    old.as_object_mut().unwrap().remove("duration_ms");
    assert_eq!(serde_json::from_value::<Message>(old).unwrap().duration_ms, None, "old records decode");
}

/// The example of docs/design.md#add-tool, kept compiling here.
struct Echo;

#[derive(serde::Deserialize)]
struct EchoArgs {
    text: String,
}

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn toolset(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Returns its text."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    async fn call(&self, _ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        Ok(parse_args::<EchoArgs>(args)?.text.into())
    }
}

#[tokio::test]
async fn typed_arguments_that_do_not_fit_are_bad_args() {
    let (app, sid) = (test_app(), sid());
    app.inner.tools.register(Arc::new(Echo)).unwrap();
    let c = ctx(&app, &sid, None, TurnKind::Job);
    let set = app.inner.tools.toolset(&c);
    assert_eq!(set.execute(&c, &call("echo", r#"{"text":"hi"}"#)).await.content, "hi");
    let r = set.execute(&c, &call("echo", r#"{"txt":"hi"}"#)).await;
    assert!(r.is_error && r.content.contains("invalid arguments: missing field `text`"), "{}", r.content);
}

#[test]
fn a_jobs_enabled_toolsets_take_in_the_mcp_servers_as_hermes_does() {
    let known: Vec<String> = ["web", "time", "mcp-files", "mcp-git"].iter().map(|s| s.to_string()).collect();
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(job_toolsets(&v(&["web"]), &known), ["web", "mcp-files", "mcp-git"], "every MCP server joins a native list");
    assert_eq!(job_toolsets(&v(&["web", "files"]), &known), ["web", "mcp-files"], "a named server makes it an allowlist");
    assert_eq!(job_toolsets(&v(&["web", "mcp-git"]), &known), ["web", "mcp-git"]);
    assert_eq!(job_toolsets(&v(&["web", "no_mcp"]), &known), ["web"], "no_mcp: none");
}
