//! Job delivery of a long message against a local fake of the Telegram Bot API (real HTTP on
//! 127.0.0.1): each part is recorded in the ledger before it is sent, and a part whose answer
//! never came is not sent again (docs/design.md#delivery).

use crate::config::Env;
use crate::core::job::Occurrence;
use crate::ports::{Clock, ManualClock};
use crate::test_support::{CountingLlm, TestApp};
use axum::extract::{Path, State};
use axum::{Json, Router, routing::post};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every `sendMessage` text received; the first time a text starting with `slow` arrives, the
/// answer comes only after the client's timeout (the message was taken, the answer lost).
#[derive(Clone, Default)]
struct Fake {
    got: Arc<Mutex<Vec<String>>>,
    slow: Arc<Mutex<Option<String>>>,
}

async fn send_message(State(f): State<Fake>, Path(_bot): Path<String>, Json(body): Json<Value>) -> Json<Value> {
    let text = body["text"].as_str().unwrap_or_default().to_string();
    let n = {
        let mut got = f.got.lock().unwrap();
        got.push(text.clone());
        got.len()
    };
    let slow = f.slow.lock().unwrap().take_if(|s| text.starts_with(s.as_str())).is_some();
    if slow {
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    Json(json!({"ok": true, "result": {"message_id": n}}))
}

async fn fake_telegram(f: Fake) -> String {
    let app = Router::new().route("/{bot}/sendMessage", post(send_message)).with_state(f);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_part_that_timed_out_is_not_sent_again() {
    let fake = Fake::default();
    *fake.slow.lock().unwrap() = Some("B".into());
    let url = fake_telegram(fake.clone()).await;
    // Three parts of ~3000 characters: Telegram's limit is 4096.
    let answer: &'static str = Box::leak(format!("{}\n{}\n{}", "A".repeat(3000), "B".repeat(3000), "C".repeat(3000)).into_boxed_str());
    let now: DateTime<Utc> = "2026-03-01T08:00:00Z".parse().unwrap();
    let env = Env::from_pairs([("TELEGRAM_BOT_TOKEN", "123:abc")]);
    let yaml = format!("platforms:\n  telegram:\n    api_base: {url}\n");
    let builder = TestApp::new(now).yaml(&yaml).env(env).home("/nonexistent-home");
    // A client that gives up on an answer after 300 ms; retries without waiting.
    let channels =
        crate::test_support::telegram_channels(&builder.loaded(), Duration::from_millis(300)).with_backoff(Duration::from_millis(1));
    let clock = Arc::new(ManualClock::new(now));
    let app = builder.clock(clock.clone()).llm(CountingLlm::new(answer)).delivery(Arc::new(channels)).build();
    let mut job = crate::store::conformance::sample_job("j", Some(now));
    job.deliver = vec!["telegram:42".into()];
    app.test_store().put_job(&job).await.unwrap();

    let fired = app.jobs().fire("j", None, "ticker").await.unwrap();
    let crate::app::FireStatus::Ran { run, .. } = fired else { panic!("{fired:?}") };
    // Let the slow answer finish, so a second send of part 2 would have been recorded.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    // The failed delivery starts the job's failing streak: its one alert goes to the job's own
    // target (no failure_deliver), and is no part of the answer.
    let (alerts, got): (Vec<String>, Vec<String>) = fake.got.lock().unwrap().iter().cloned().partition(|t| t.contains("is failing"));
    assert_eq!(alerts.len(), 1, "one failure alert: {alerts:?}");
    // Each part named by the run of letters it carries (the first starts with the job's header
    // lines, the last ends with Hermes' footer).
    let parts: Vec<char> =
        got.iter().map(|t| ['A', 'B', 'C'].into_iter().find(|c| t.contains(&c.to_string().repeat(100))).unwrap_or('?')).collect();
    assert_eq!(parts, ['A', 'B', 'C'], "each part once, in order; part 2 not re-sent after its timeout");
    // The run says what happened: part 2's outcome is unknown.
    let d = &run.deliveries[0];
    assert_eq!(d.status, "failed", "{d:?}");
    assert!(d.error.as_deref().unwrap().contains("part 2 of 3") && d.error.as_deref().unwrap().contains("unknown"), "{d:?}");
    // Every part has its ledger row: a re-run of this occurrence would send none of them.
    let occ = Occurrence::new("j", now);
    let store = app.test_store();
    for part in ["telegram:42:#1", "telegram:42:#2", "telegram:42:#3", "telegram:42:"] {
        assert!(!store.ledger_begin(&occ, part, clock.now()).await.unwrap(), "{part} has no ledger row");
    }
}
