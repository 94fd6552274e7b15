//! A job's Hermes run options at work in its runs (docs/jobs.md): `enabled_toolsets` narrows
//! the tools offered, `context_from` puts other jobs' newest outputs into the prompt (in
//! Hermes' order, an unknown id skipped), a manual run's one-time prompt goes under
//! `## Run Context` for that run only, `provider` / `base_url` ride on the model request,
//! and `attach_to_session` / `cron.mirror_delivery` append the delivered text to the job's
//! chat's session.

use crate::app::App;
use crate::core::ids::{ChatType, Origin};
use crate::core::job::{Job, RunOutcome, RunRecord};
use crate::core::session::Role;
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ModelRoute};
use crate::test_support::{Outbox, TestApp, say};
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Answers `ok` and keeps every request.
#[derive(Default)]
struct Recorder(Mutex<Vec<ChatRequest>>);

#[async_trait]
impl Llm for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.lock().unwrap().push(req.clone());
        Ok(ChatResponse { content: "ok".into(), ..ChatResponse::default() })
    }
}

impl Recorder {
    fn last(&self) -> ChatRequest {
        self.0.lock().unwrap().last().cloned().unwrap()
    }
}

fn now() -> DateTime<Utc> {
    "2026-03-01T08:00:00Z".parse().unwrap()
}

fn setup(yaml: &str) -> (App, Arc<Recorder>, Arc<Outbox>) {
    let llm = Arc::new(Recorder::default());
    let outbox = Arc::new(Outbox::default());
    let app = TestApp::new(now()).yaml(yaml).llm(llm.clone()).delivery(outbox.clone()).build();
    (app, llm, outbox)
}

async fn add(app: &App, spec: Value) -> Job {
    let s = crate::core::jobfile::parse_job(&spec, now(), chrono_tz::UTC).unwrap();
    let job = Job { next_run_at: Some(now()), ..Job::from_spec(&s, false, now(), chrono_tz::UTC) };
    app.test_store().put_job(&job).await.unwrap()
}

fn prompt_of(req: &ChatRequest) -> String {
    req.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.clone()).unwrap_or_default()
}

fn tools_of(req: &ChatRequest) -> Vec<String> {
    req.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn enabled_toolsets_offer_only_those_toolsets_tools() {
    let (app, llm, _) = setup("{}");
    add(&app, json!({"id": "narrow", "schedule": "every 1h", "prompt": "p", "enabled_toolsets": ["time"]})).await;
    add(&app, json!({"id": "wide", "schedule": "every 1h", "prompt": "p"})).await;
    app.jobs().fire("narrow", None, "test").await.unwrap();
    assert_eq!(tools_of(&llm.last()), ["current_time"]);
    app.jobs().fire("wide", None, "test").await.unwrap();
    let wide = tools_of(&llm.last());
    assert!(wide.len() > 1 && wide.contains(&"web_fetch".to_string()), "{wide:?}");
}

fn run(job_id: &str, at: DateTime<Utc>, output: &str) -> RunRecord {
    RunRecord {
        run_id: format!("{job_id}-{}", at.timestamp()),
        job_id: job_id.into(),
        fire_at: at,
        trigger: "test".into(),
        started_at: at,
        finished_at: Some(at),
        status: RunOutcome::Ok,
        output: output.into(),
        error: None,
        deliveries: vec![],
        session_id: String::new(),
        attempt: 1,
    }
}

#[tokio::test]
async fn context_from_puts_the_newest_outputs_first_in_hermes_order_and_skips_an_unknown_id() {
    let (app, llm, _) = setup("{}");
    let store = app.test_store();
    let t = now() - Duration::hours(3);
    store.finish_run(&run("a", t, "old A"), 50).await.unwrap();
    store.finish_run(&run("a", t + Duration::hours(1), "new A"), 50).await.unwrap();
    store.finish_run(&run("b", t, "B out"), 50).await.unwrap();
    let spec = json!({"id": "c", "schedule": "every 1h", "prompt": "write the digest", "context_from": ["a", "ghost", "b"]});
    add(&app, spec).await;
    let fired = app.jobs().fire("c", None, "test").await.unwrap();
    assert_eq!(fired.to_json()["run_status"], "ok", "an unknown id is no error: {}", fired.to_json());
    let block = |id: &str, out: &str| {
        format!(
            "## Output from job '{id}'\nThe following is the most recent output from a preceding cron job. Use it as context for your analysis.\n\n```\n{out}\n```\n\n"
        )
    };
    // Each source is put before the prompt in turn, so the last one named comes first.
    let expected = format!("{}{}write the digest", block("b", "B out"), block("a", "new A"));
    assert_eq!(prompt_of(&llm.last()), expected);
}

#[tokio::test]
async fn a_manual_runs_prompt_is_for_that_run_only() {
    let (app, llm, _) = setup("{}");
    add(&app, json!({"id": "j", "schedule": "every 1h", "prompt": "the usual"})).await;
    app.jobs().run_with("j", Some("only today: the weather too")).await.unwrap();
    assert_eq!(prompt_of(&llm.last()), "the usual\n\n## Run Context\n\nonly today: the weather too");
    assert_eq!(app.jobs().find("j").await.unwrap().prompt, "the usual", "not stored on the job");
    app.jobs().run_with("j", None).await.unwrap();
    assert_eq!(prompt_of(&llm.last()), "the usual");
}

#[tokio::test]
async fn a_jobs_provider_and_base_url_ride_on_its_model_requests_and_a_chats_do_not() {
    let (app, llm, _) = setup("platforms: {telegram: {allowed_users: [u1]}}");
    let spec =
        json!({"id": "r", "schedule": "every 1h", "prompt": "p", "model": "m2", "provider": "custom", "base_url": "http://127.0.0.1:9/v1"});
    add(&app, spec).await;
    app.jobs().fire("r", None, "test").await.unwrap();
    let req = llm.last();
    assert_eq!(req.route, Some(ModelRoute { provider: Some("custom".into()), base_url: Some("http://127.0.0.1:9/v1".into()) }));
    assert_eq!(req.model.as_deref(), Some("m2"));
    say(&app, &Origin::new("telegram", "c1", ChatType::Dm, Some("u1"), None).unwrap(), "hi").await;
    let chat = llm.last();
    assert_eq!((chat.route, chat.model), (None, None));
}

/// A job made in the Telegram chat `c1` delivering there (`deliver: origin`).
fn origin_job(id: &str, attach: Option<bool>) -> Value {
    let mut j = json!({"id": id, "name": format!("{id} brief"), "schedule": "every 1h", "prompt": "p", "deliver": "origin",
        "origin": {"platform": "telegram", "chat_id": "c1", "user_id": "u1", "chat_type": "dm"}});
    if let Some(a) = attach {
        j["attach_to_session"] = json!(a);
    }
    j
}

async fn chat_transcript(app: &App, origin: &Origin) -> Vec<(Role, String)> {
    let sid = say(app, origin, "what did you send me?").await;
    let msgs = app.test_store().recent_messages(&sid, 50).await.unwrap();
    msgs.into_iter().map(|m| (m.role, m.content)).collect()
}

#[tokio::test]
async fn attach_to_session_appends_the_delivered_brief_to_the_jobs_chat() {
    let (app, llm, outbox) = setup("platforms: {telegram: {allowed_users: [u1]}}");
    let origin = Origin::new("telegram", "c1", ChatType::Dm, Some("u1"), None).unwrap();
    say(&app, &origin, "hello").await;
    add(&app, origin_job("on", Some(true))).await;
    add(&app, origin_job("off", None)).await;
    app.jobs().fire("on", None, "test").await.unwrap();
    app.jobs().fire("off", None, "test").await.unwrap();
    assert_eq!(outbox.sent().iter().filter(|t| t.starts_with("Cronjob Response:")).count(), 2, "both delivered");
    let t = chat_transcript(&app, &origin).await;
    let mirrored: Vec<&(Role, String)> = t.iter().filter(|(_, c)| c.starts_with("[Cron delivery:")).collect();
    assert_eq!(mirrored, [&(Role::User, "[Cron delivery: on brief]\nok".to_string())], "{t:?}");
    // The user's reply reaches the model with the brief before it.
    let prompt: Vec<String> = llm.last().messages.iter().map(|m| m.content.clone()).collect();
    let brief = prompt.iter().position(|c| c == "[Cron delivery: on brief]\nok");
    let reply = prompt.iter().position(|c| c.contains("what did you send me?"));
    assert!(brief.is_some() && brief < reply, "{prompt:?}");
}

#[tokio::test]
async fn cron_mirror_delivery_is_the_default_and_a_job_can_opt_out() {
    let (app, _, _) = setup("platforms: {telegram: {allowed_users: [u1]}}\ncron: {mirror_delivery: true}");
    let origin = Origin::new("telegram", "c1", ChatType::Dm, Some("u1"), None).unwrap();
    say(&app, &origin, "hello").await;
    add(&app, origin_job("dflt", None)).await;
    add(&app, origin_job("out", Some(false))).await;
    app.jobs().fire("dflt", None, "test").await.unwrap();
    app.jobs().fire("out", None, "test").await.unwrap();
    let t = chat_transcript(&app, &origin).await;
    let mirrored: Vec<&String> = t.iter().map(|(_, c)| c).filter(|c| c.starts_with("[Cron delivery:")).collect();
    assert_eq!(mirrored, ["[Cron delivery: dflt brief]\nok"], "{t:?}");
}
