//! Context compression and interrupt tests (docs/design.md#compression, #turn): a scripted
//! model that tells the summarizer's request from chat turns, the real embedded store, and
//! an in-process outbox.

use crate::app::{App, Inbound, ReplyPath};
use crate::core::compress::{SUMMARIZER_SYSTEM, SUMMARY_PREFIX, SummaryIndex, meta_key};
use crate::core::ids::{ChatType, Origin, SessionId};
use crate::core::session::{Message, Role};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError};
use crate::store::counting::CountingStore;
use crate::store::sqlite::SqliteStore;
use crate::test_support::{Outbox, TestApp};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Answers the summarizer with a fixed summary and chat turns with `echo: <last>`; a chat
/// turn whose last message is `slow` answers after a few seconds, and one whose last
/// message is `race` first lets a newer message arrive (through `app`) and then answers.
#[derive(Default)]
struct Scripted(Mutex<Vec<ChatRequest>>, std::sync::OnceLock<App>);

impl Scripted {
    fn summaries(&self) -> Vec<ChatRequest> {
        self.0.lock().unwrap().iter().filter(|r| is_summary(r)).cloned().collect()
    }
    fn chats(&self) -> Vec<ChatRequest> {
        self.0.lock().unwrap().iter().filter(|r| !is_summary(r)).cloned().collect()
    }
}

fn is_summary(r: &ChatRequest) -> bool {
    r.messages.first().is_some_and(|m| m.content == SUMMARIZER_SYSTEM)
}

#[async_trait]
impl Llm for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }
    async fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.lock().unwrap().push(req.clone());
        if is_summary(req) {
            assert!(req.tools.is_empty(), "the summarizer gets no tools");
            return Ok(ChatResponse { content: "SUMMARY-TEXT: the user counted messages.".into(), ..ChatResponse::default() });
        }
        let last = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        if last == "slow" {
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        if last == "race" {
            let app = self.1.get().expect("the racing app is set");
            let out = app.handle_inbound(inbound("telegram", "newer")).await.unwrap();
            assert!(out.queued, "stored for the next turn");
        }
        Ok(ChatResponse { content: format!("echo: {last}"), ..ChatResponse::default() })
    }
}

fn kit(yaml: &str) -> (App, Arc<Scripted>, Arc<Outbox>) {
    let now = "2026-03-01T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
    let llm = Arc::new(Scripted::default());
    let outbox = Arc::new(Outbox::default());
    let app = TestApp::new(now).yaml(yaml).home("/nonexistent-home").llm(llm.clone()).delivery(outbox.clone()).build();
    (app, llm, outbox)
}

fn inbound(platform: &str, text: &str) -> Inbound {
    Inbound {
        origin: Origin::new(platform, "c1", ChatType::Dm, Some("u1"), None).unwrap(),
        text: text.into(),
        message_id: None,
        user_name: None,
        reply: ReplyPath::Origin,
        attachments: Vec::new(),
    }
}

/// Starts a session with one turn, then fills it to `total` messages of `size` characters.
async fn seeded(app: &App, total: usize, size: usize) -> SessionId {
    let first = app.handle_inbound(inbound("api", "m0")).await.unwrap();
    let id = SessionId::parse(&first.session_id).unwrap();
    let now = app.inner.clock.now();
    let msgs: Vec<Message> = (2..total)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            Message::text(role, format!("m{i} {}", "x".repeat(size)), now)
        })
        .collect();
    app.inner.store.append_messages(&id, &msgs, None).await.unwrap();
    assert_eq!(app.inner.store.count_messages(&id).await.unwrap(), total as u64);
    id
}

fn contents(r: &ChatRequest) -> Vec<String> {
    r.messages.iter().map(|m| m.content.clone()).collect()
}

#[tokio::test]
async fn a_300_message_session_sends_one_summary_then_head_summary_and_tail() {
    let (app, llm, _) = kit("{}");
    let id = seeded(&app, 300, 20).await;
    let out = app.handle_inbound(inbound("api", "latest question")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("echo: latest question"));
    let sums = llm.summaries();
    assert_eq!(sums.len(), 1, "summarized once");
    let asked = &sums[0].messages[1].content;
    assert!(asked.contains("m3 ") && asked.contains("m150 "), "the middle is summarized");
    assert!(!asked.contains("m0\n") && !asked.contains("latest question"), "head and tail are not");

    let raw = app.inner.store.get_meta(&meta_key(id.as_str())).await.unwrap().expect("summary index stored");
    let index: SummaryIndex = serde_json::from_str(&raw).unwrap();
    assert_eq!(index.head.len(), 3);
    assert!(index.text.starts_with("SUMMARY-TEXT"));
    let stored = app.inner.store.recent_messages(&id, 10).await.unwrap();
    assert!(stored.iter().any(|m| m.summary_through == Some(index.through) && m.content.contains("SUMMARY-TEXT")), "in the transcript");

    let chat = llm.chats().last().cloned().unwrap();
    let c = contents(&chat);
    assert_eq!(c[1], "m0");
    assert_eq!(c[2], "echo: m0");
    assert!(c[3].starts_with("m2 "));
    assert!(c[4].starts_with(SUMMARY_PREFIX) && c[4].contains("SUMMARY-TEXT"), "{}", c[4]);
    assert_eq!(c.last().map(String::as_str), Some("latest question"));
    assert!(c.len() <= 1 + 3 + 1 + 100, "flat: {} messages", c.len());
    let tail_first = c[5].clone();

    // The next turn reuses the summary: no second summary, same head, the tail grows.
    let out = app.handle_inbound(inbound("api", "next one")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("echo: next one"));
    assert_eq!(llm.summaries().len(), 1, "not re-summarized");
    let c = contents(&llm.chats().last().cloned().unwrap());
    assert_eq!(c[1..4], contents(&chat)[1..4]);
    assert!(c[4].starts_with(SUMMARY_PREFIX));
    assert_eq!(c[5], tail_first);
    assert_eq!(c.iter().filter(|m| m.starts_with(SUMMARY_PREFIX)).count(), 1, "the stored summary is not sent twice");
    let n = c.len();
    assert_eq!(c[n - 3..], ["latest question".to_string(), "echo: latest question".into(), "next one".into()]);
    let status = app.handle_inbound(inbound("api", "/status")).await.unwrap().reply.unwrap();
    assert!(status.contains("Context: first 3 messages + a summary of"), "{status}");
}

#[tokio::test]
async fn a_grown_tail_updates_the_summary_from_the_previous_one() {
    let (app, llm, _) = kit("model: {max_context_messages: 40}");
    let id = seeded(&app, 100, 20).await;
    app.handle_inbound(inbound("api", "q1")).await.unwrap();
    let key = meta_key(id.as_str());
    let first: SummaryIndex = serde_json::from_str(&app.inner.store.get_meta(&key).await.unwrap().unwrap()).unwrap();
    assert_eq!(llm.summaries().len(), 1);
    assert!(llm.summaries()[0].messages[1].content.contains("TURNS TO SUMMARIZE"));
    let mut turns = 0;
    while llm.summaries().len() == 1 {
        turns += 1;
        assert!(turns <= 40, "the tail never triggered a second summary");
        app.handle_inbound(inbound("api", &format!("more {turns}"))).await.unwrap();
    }
    assert!(turns > 1, "not re-summarized on the very next turn");
    let update = &llm.summaries()[1].messages[1].content;
    assert!(update.contains("PREVIOUS SUMMARY:\nSUMMARY-TEXT"), "{update}");
    assert!(!update.contains("m50 "), "the already summarized middle is not read again");
    let second: SummaryIndex = serde_json::from_str(&app.inner.store.get_meta(&key).await.unwrap().unwrap()).unwrap();
    assert!(second.through > first.through);
    assert_eq!(second.head, first.head, "the protected head stays");
    let c = contents(&llm.chats().last().cloned().unwrap());
    assert!(c.len() <= 41, "{}", c.len());
    assert_eq!(c.iter().filter(|m| m.starts_with(SUMMARY_PREFIX)).count(), 1);
}

/// A turn's read is bounded by the context, not the transcript: once a 3,000-message session
/// is summarized, each turn takes `max_context_messages` + 64 messages in its one read (not
/// the 2,000 it used to decode every turn), and needs no second read.
#[tokio::test]
async fn after_the_summary_a_long_session_turn_reads_a_context_sized_window_once() {
    let now = "2026-03-01T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
    let llm = Arc::new(Scripted::default());
    let counting = Arc::new(CountingStore::new(Arc::new(SqliteStore::in_memory().unwrap())));
    let app = TestApp::new(now)
        .yaml("model: {max_context_messages: 40}")
        .home("/nonexistent-home")
        .store(counting.clone())
        .llm(llm.clone())
        .delivery(Arc::new(Outbox::default()))
        .build();
    let id = seeded(&app, 3000, 20).await;
    counting.take();
    app.handle_inbound(inbound("api", "q1")).await.unwrap();
    assert_eq!(llm.summaries().len(), 1, "the long session is summarized once");
    let first = counting.take();
    assert_eq!(first.get("recent_messages"), Some(&1), "the first summary reads the long tail again: {first:?}");
    let asked = &llm.summaries()[0].messages[1].content;
    assert!(asked.contains("m1001 ") && !asked.contains("m1000 "), "from the newest 2,000 messages on");

    let read = crate::app::turn::context::read(&app, &id).await.unwrap();
    assert_eq!(read.messages.len(), 40 + 64, "the folded read's window");
    assert!(read.count > 3000);
    counting.take();
    for i in 0..5 {
        let out = app.handle_inbound(inbound("api", &format!("next {i}"))).await.unwrap();
        assert_eq!(out.reply.as_deref(), Some(format!("echo: next {i}").as_str()));
    }
    let later = counting.take();
    assert_eq!(later.get("turn_read"), Some(&5), "{later:?}");
    assert_eq!(later.get("recent_messages"), None, "the window holds every message after the summary: {later:?}");
    assert_eq!(llm.summaries().len(), 1, "not re-summarized");
    let c = contents(&llm.chats().last().cloned().unwrap());
    assert!(c.iter().any(|m| m.starts_with(SUMMARY_PREFIX)) && c.last().map(String::as_str) == Some("next 4"));
}

#[tokio::test]
async fn the_token_threshold_uses_the_context_floor() {
    // context_length 1000 is raised to 64000: threshold 32000 tokens ≈ 128000 characters.
    let yaml = "model: {context_length: 1000, max_context_messages: 5000}";
    let (app, llm, _) = kit(yaml);
    seeded(&app, 100, 500).await;
    app.handle_inbound(inbound("api", "small")).await.unwrap();
    assert!(llm.summaries().is_empty(), "~13500 tokens stay under the raised budget's threshold");
    let (app, llm, _) = kit(yaml);
    seeded(&app, 300, 500).await;
    app.handle_inbound(inbound("api", "big")).await.unwrap();
    assert_eq!(llm.summaries().len(), 1, "~40500 tokens pass 0.5 × 64000");
    let c = contents(&llm.chats().last().cloned().unwrap());
    assert!(c[4].starts_with(SUMMARY_PREFIX));
    let tail_tokens: usize = llm.chats().last().unwrap().messages[5..].iter().map(crate::core::compress::estimate_tokens).sum();
    assert!(tail_tokens <= 20 * 135 + 6400, "tail within target_ratio × threshold: {tail_tokens}");
}

#[tokio::test]
async fn without_compression_the_trim_shows_in_status() {
    let (app, llm, _) = kit("compression: {enabled: false}");
    let id = seeded(&app, 300, 20).await;
    app.handle_inbound(inbound("api", "hello")).await.unwrap();
    assert!(llm.summaries().is_empty());
    assert_eq!(llm.chats().last().unwrap().messages.len(), 201, "system + the newest 200");
    let status = app.handle_inbound(inbound("api", "/status")).await.unwrap().reply.unwrap();
    let count = app.inner.store.count_messages(&id).await.unwrap();
    assert!(status.contains(&format!("Context: 200 of {count} messages sent ({} trimmed, compression off)", count - 200)), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_text_turn_delivers_nothing_of_its_own() {
    let (app, llm, outbox) = kit("allow_all_users: true");
    let a = app.clone();
    let first = tokio::spawn(async move { a.handle_inbound(inbound("telegram", "slow")).await });
    let started = tokio::time::Instant::now();
    while llm.chats().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "the first turn never reached the model");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.handle_inbound(inbound("telegram", "second")).await.unwrap();
    first.await.unwrap().unwrap();
    while !outbox.sent().iter().any(|t| t == "echo: second") {
        assert!(started.elapsed() < Duration::from_secs(10), "the latest message was not answered: {:?}", outbox.sent());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(started.elapsed() < Duration::from_secs(3), "the text-only turn stopped before its model answered");
    // Past the slow answer's time: it was never sent nor stored.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let sent = outbox.sent();
    assert!(!sent.iter().any(|t| t == "echo: slow"), "{sent:?}");
    assert_eq!(sent.iter().filter(|t| t.starts_with("echo:")).count(), 1, "{sent:?}");
    let e = app.inner.store.list_entries(10).await.unwrap().remove(0);
    let stored = app.inner.store.recent_messages(&e.session_id, 20).await.unwrap();
    assert!(!stored.iter().any(|m| m.content == "echo: slow"));
    let users: Vec<&str> = stored.iter().filter(|m| m.role == Role::User).map(|m| m.content.as_str()).collect();
    assert_eq!(users, ["slow", "second"], "both inputs stay in the transcript");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_arrives_after_a_newer_message_is_dropped() {
    let (app, llm, outbox) = kit("allow_all_users: true");
    assert!(llm.1.set(app.clone()).is_ok());
    app.handle_inbound(inbound("telegram", "race")).await.unwrap();
    let started = tokio::time::Instant::now();
    while !outbox.sent().iter().any(|t| t == "echo: newer") {
        assert!(started.elapsed() < Duration::from_secs(10), "the newer message was not answered: {:?}", outbox.sent());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sent = outbox.sent();
    assert!(!sent.iter().any(|t| t == "echo: race"), "the superseded answer was sent: {sent:?}");
    let e = app.inner.store.list_entries(10).await.unwrap().remove(0);
    let stored = app.inner.store.recent_messages(&e.session_id, 20).await.unwrap();
    assert!(!stored.iter().any(|m| m.content == "echo: race"), "nor stored");
}
