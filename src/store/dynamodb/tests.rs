//! The conformance suite (one test per check, `store::dynamodb::tests::on_moto::*`, the
//! two-handle races among them) and DynamoDB-specific checks (pagination, transaction
//! limits, chunked clears) against a local DynamoDB API server (moto), whose URL
//! `scripts/test.sh` exports as `HZ_MOTO_ENDPOINT`. Each test uses fresh tables with
//! random names, so runs never see each other's data.

use super::{DynamoError, DynamoStore};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{Message, Role, SessionEntry, SessionRecord};
use crate::ports::{QueueStore, QueuedItem, SessionChange, SessionStore, Store, StoreError};
use crate::store::conformance;
use aws_sdk_dynamodb::config::{Credentials, Region};
use chrono::Utc;
use std::sync::Arc;

/// The local server, reached through [`linearized`]; `None` (and a note) when not running.
pub(super) async fn endpoint() -> Option<String> {
    let Some(moto) = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty()) else {
        println!("dynamodb conformance skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
        return None;
    };
    Some(linearized(moto, Requests::default()).await)
}

/// DynamoDB requests that went through a [`linearized`] proxy, by `X-Amz-Target` operation.
type Requests = Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>>;

/// A proxy that forwards one request at a time to `upstream`. Why: moto serves requests on
/// several threads and a transaction there is not atomic against a concurrent one (it checks,
/// then writes, and rolls back by restoring a copy of the table), so concurrent writers to
/// one table lose updates that DynamoDB never loses. One request at a time makes moto
/// linearizable, as DynamoDB is; the races still interleave between requests, which is
/// where the adapter's conditions and retries are tested.
async fn linearized(upstream: String, seen: Requests) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let gate = Arc::new(tokio::sync::Mutex::new(crate::clients::client_builder().build().unwrap()));
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let op = req.headers().get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or("?");
        let op = op.rsplit('.').next().unwrap_or(op).to_string();
        *seen.lock().unwrap().entry(op).or_default() += 1;
        forward(gate.clone(), upstream.clone(), req)
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn forward(
    gate: Arc<tokio::sync::Mutex<reqwest::Client>>,
    upstream: String,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let client = gate.lock().await;
    let mut r = client.request(parts.method, format!("{upstream}{path}")).body(body);
    for (k, v) in &parts.headers {
        if k != axum::http::header::HOST && k != axum::http::header::CONTENT_LENGTH {
            r = r.header(k, v);
        }
    }
    let resp = r.send().await.unwrap();
    let mut out = axum::response::Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        if k != axum::http::header::CONTENT_LENGTH && k != axum::http::header::TRANSFER_ENCODING {
            out = out.header(k, v);
        }
    }
    let bytes = resp.bytes().await.unwrap();
    drop(client);
    out.body(axum::body::Body::from(bytes)).unwrap()
}

/// A handle on `table` at the local server, with test credentials and region fixed here so
/// the tests do not depend on the caller's AWS environment.
pub(super) async fn handle(endpoint: &str, table: &str) -> DynamoStore {
    let cfg = crate::clients::aws_sdk_loader()
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "hz-tests"))
        .endpoint_url(endpoint)
        .load()
        .await;
    DynamoStore {
        client: aws_sdk_dynamodb::Client::new(&cfg),
        table: table.to_string(),
        page_size: None,
        shards: crate::store::shard::DEFAULT_SHARDS,
        shards_checked: Arc::default(),
        seqs: Default::default(),
        keys: super::items::Keys::default(),
    }
}

/// A new, empty table and a handle on it.
pub(super) async fn fresh(endpoint: &str) -> DynamoStore {
    let table = format!("hz-test-{:016x}", rand::random::<u64>());
    let s = handle(endpoint, &table).await;
    assert!(s.create_table().await.unwrap(), "a new table is created");
    s
}

/// A fresh table at the local server, with pages of 3 items so every listing crosses page
/// boundaries. A second handle is a new client on the same table.
struct OnMoto {
    endpoint: String,
    store: DynamoStore,
}

impl OnMoto {
    /// `None` (and a note) when the local server is not running.
    async fn new() -> Option<Self> {
        let endpoint = endpoint().await?;
        let store = fresh(&endpoint).await.with_page_size(3);
        Some(Self { endpoint, store })
    }
}

impl conformance::Fixture for OnMoto {
    fn store(&self) -> Arc<dyn Store> {
        Arc::new(self.store.clone())
    }
    async fn second(&self) -> Arc<dyn Store> {
        Arc::new(handle(&self.endpoint, self.store.table()).await.with_page_size(3))
    }
}

conformance::conformance_tests!(on_moto, OnMoto::new());

#[tokio::test]
async fn create_table_is_idempotent() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await;
    assert!(!s.create_table().await.unwrap(), "second run finds the table");
    assert!(!handle(&ep, s.table()).await.create_table().await.unwrap());
}

#[tokio::test]
async fn transcript_pages_past_one_megabyte() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await;
    let id = SessionId::generate(Utc::now(), &Utc);
    let t = Utc::now();
    let body = |i: usize| format!("{i:04}:{}", "x".repeat(4096));
    for batch in 0..30 {
        let msgs: Vec<Message> = (0..10).map(|j| Message::text(Role::User, body(batch * 10 + j), t)).collect();
        s.append_messages(&id, &msgs, None).await.unwrap();
    }
    assert_eq!(s.count_messages(&id).await.unwrap(), 300);
    let all = s.recent_messages(&id, usize::MAX >> 1).await.unwrap();
    assert_eq!(all.len(), 300, "every page read (300 × 4 KB > 1 MB)");
    assert!(all.iter().enumerate().all(|(i, m)| m.content == body(i)), "in order");
    let tail = s.recent_messages(&id, 5).await.unwrap();
    assert_eq!(tail.iter().map(|m| m.content[..4].to_string()).collect::<Vec<_>>(), ["0295", "0296", "0297", "0298", "0299"]);
    assert!(s.recent_messages(&id, 0).await.unwrap().is_empty());
}

#[tokio::test]
async fn oversized_atomic_writes_are_refused_whole() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await;
    let id = SessionId::generate(Utc::now(), &Utc);
    let msgs: Vec<Message> = (0..150).map(|i| Message::text(Role::Tool, format!("m{i}"), Utc::now())).collect();
    match s.append_messages(&id, &msgs, None).await {
        Err(StoreError::Backend(e)) => assert!(matches!(e.downcast_ref::<DynamoError>(), Some(DynamoError::TooManyItems(151)))),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(s.count_messages(&id).await.unwrap(), 0, "nothing written");
}

#[tokio::test]
async fn clear_removes_more_than_one_transaction_holds() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await.with_page_size(50);
    let key = SessionKey::parse("agent:main:api:dm:big").unwrap();
    let item = |i: usize| QueuedItem { text: format!("q{i}"), message_id: None, at: Utc::now(), attachments: Vec::new() };
    for i in 0..130 {
        assert_eq!(s.queue_push(&key, &item(i), 200, None).await.unwrap(), i + 1);
    }
    let listed = s.queue_list(&key).await.unwrap();
    assert_eq!(listed.iter().map(|q| q.text.clone()).collect::<Vec<_>>(), (0..130).map(|i| format!("q{i}")).collect::<Vec<_>>());
    assert!(s.wake_candidates(Utc::now(), false).await.unwrap().contains(&key));
    assert_eq!(s.queue_clear(&key).await.unwrap(), 130);
    assert!(s.queue_list(&key).await.unwrap().is_empty());
    assert!(!s.wake_candidates(Utc::now(), false).await.unwrap().contains(&key), "an empty queue leaves the wake index");
    assert_eq!(s.queue_push(&key, &item(0), 1, None).await.unwrap(), 1, "the cap counts from the new head");
}

#[tokio::test]
async fn changes_of_one_item_are_folded_into_one_write() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await;
    let origin = Origin::new("api", "fold", ChatType::Dm, Some("u"), None).unwrap();
    let now = Utc::now();
    let e = SessionEntry::new(SessionKey::derive(&origin, Default::default()), SessionId::generate(now, &Utc), origin, now);
    let rec = SessionRecord {
        session_id: e.session_id.clone(),
        session_key: e.session_key.clone(),
        platform: "api".into(),
        title: None,
        started_at: now,
        ended_at: None,
        end_reason: None,
    };
    let append = |t: &str| SessionChange::Append { session_id: e.session_id.clone(), messages: vec![Message::text(Role::User, t, now)] };
    let v1 = s.put_entry(&e, &[SessionChange::Start(rec), append("a"), append("b")]).await.unwrap();
    assert_eq!(s.recent_messages(&e.session_id, 10).await.unwrap().iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let end = |r: &str| SessionChange::End { session_id: e.session_id.clone(), reason: r.into(), at: now };
    let v2 = s.put_entry(&v1, &[end("first"), end("second")]).await.unwrap();
    assert_eq!(s.get_session(&e.session_id).await.unwrap().unwrap().end_reason.as_deref(), Some("first"));
    let v3 = s.put_entry(&v2, &[end("x"), SessionChange::Reopen(e.session_id.clone())]).await.unwrap();
    assert!(s.get_session(&e.session_id).await.unwrap().unwrap().ended_at.is_none());
    // Ending a conversation without a record changes nothing, as in SQLite.
    let ghost = SessionId::generate(now - chrono::Duration::days(1), &Utc);
    let ghost_end = SessionChange::End { session_id: ghost.clone(), reason: "x".into(), at: now };
    s.put_entry(&v3, &[ghost_end]).await.unwrap();
    assert!(s.get_session(&ghost).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_never_share_a_sequence_number_or_pass_the_cap() {
    let Some(ep) = endpoint().await else { return };
    let a = fresh(&ep).await;
    let b = handle(&ep, a.table()).await;
    let (a, b): (Arc<dyn Store>, Arc<dyn Store>) = (Arc::new(a), Arc::new(b));
    let id = SessionId::generate(Utc::now(), &Utc);
    let key = SessionKey::parse("agent:main:api:dm:cap").unwrap();
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (s, id, key) = (if w % 2 == 0 { a.clone() } else { b.clone() }, id.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let mut queued = 0;
            for i in 0..8 {
                s.append_messages(&id, &[Message::text(Role::User, format!("w{w}-{i}"), Utc::now())], None).await.unwrap();
                let item = QueuedItem { text: format!("w{w}-{i}"), message_id: None, at: Utc::now(), attachments: Vec::new() };
                match s.queue_push(&key, &item, 10, None).await {
                    Ok(_) => queued += 1,
                    Err(StoreError::QueueFull(n)) => assert_eq!(n, 10),
                    Err(e) => panic!("{e}"),
                }
            }
            queued
        }));
    }
    let mut queued = 0;
    for t in tasks {
        queued += t.await.unwrap();
    }
    assert_eq!(queued, 10, "exactly the cap was admitted");
    assert_eq!(a.queue_list(&key).await.unwrap().len(), 10);
    assert_eq!(a.count_messages(&id).await.unwrap(), 32);
    let mut texts: Vec<String> = b.recent_messages(&id, 100).await.unwrap().into_iter().map(|m| m.content).collect();
    assert_eq!(texts.len(), 32);
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 32, "no message overwritten another");
}

/// The store budgets of `app::budget_tests` on DynamoDB: port calls counted by the wrapper,
/// and the DynamoDB requests that actually went out: a turn's real requests must stay within
/// the same budget (its appends take the `SEQ` counter from the hint, not a read).
#[tokio::test]
async fn a_message_turn_and_a_fire_stay_within_their_store_budgets_on_dynamodb() {
    use crate::app::budget_tests::{FIRE_BUDGET, TURN_BUDGET, assert_within, measure};
    let Some(moto) = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty()) else {
        println!("skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
        return;
    };
    let seen = Requests::default();
    let ep = linearized(moto, seen.clone()).await;
    let store = fresh(&ep).await;
    let steps = std::sync::Mutex::new(Vec::new());
    let mark = |step: &str| {
        let mut seen = seen.lock().unwrap();
        if step != "end" {
            seen.clear();
        } else {
            steps.lock().unwrap().push(std::mem::take(&mut *seen));
        }
    };
    let (turn, fire) = measure(Arc::new(store), &mark).await;
    let steps = steps.lock().unwrap().clone();
    for (name, r) in ["message turn", "fire"].iter().zip(steps.iter()) {
        println!("{name}: {} DynamoDB requests {r:?}", r.values().sum::<u64>());
    }
    let real: u64 = steps[0].values().sum();
    assert!(real <= TURN_BUDGET, "message turn: {real} real DynamoDB requests, budget {TURN_BUDGET}: {:?}", steps[0]);
    assert_within("message turn (dynamodb)", &turn, TURN_BUDGET);
    assert_within("fire (dynamodb)", &fire, FIRE_BUDGET);
    // The fire's appends take their position from the fresh session: no `SEQ` read, so the
    // real requests are the port calls.
    let real: u64 = steps[1].values().sum();
    assert!(real <= FIRE_BUDGET, "fire: {real} DynamoDB requests, budget {FIRE_BUDGET}: {:?}", steps[1]);
}

/// Retry of a run that had no effect on DynamoDB (`app::jobs::retry_tests::scenario`): 503
/// then 200 delivers once with two attempts recorded, a duplicate attempt is refused, and
/// the attempt's fire stays within the fire budget.
#[tokio::test]
async fn a_503_then_200_delivers_once_with_two_attempts_on_dynamodb() {
    let Some(ep) = endpoint().await else { return };
    crate::app::jobs::retry_tests::scenario(Arc::new(fresh(&ep).await)).await;
}

/// `skill_manage`'s every action and its refusals on DynamoDB (`app::skill_tests`): the
/// index by compare-and-set, files over one item cut into parts.
#[tokio::test]
async fn skills_written_by_the_agent_live_in_the_table() {
    let Some(ep) = endpoint().await else { return };
    crate::app::skill_tests::scenario(Arc::new(fresh(&ep).await)).await;
}

/// Failure alerts (`app::jobs::alerts`) on DynamoDB: two handles on one table are the two
/// processes; the streak's compare-and-set is the record they share.
#[tokio::test]
async fn failure_alerts_hold_across_two_processes_on_dynamodb() {
    let Some(ep) = endpoint().await else { return };
    let store = fresh(&ep).await;
    let second = handle(&ep, store.table()).await;
    crate::app::jobs::alerts_tests::alerts_across_two_processes(Arc::new(store), Arc::new(second)).await;
}

/// Budgets (`app::budget`, `app::spend`) on DynamoDB: the day's job spend is one counter
/// record both processes add to.
#[tokio::test]
async fn budgets_hold_across_two_processes_on_dynamodb() {
    let Some(ep) = endpoint().await else { return };
    let store = fresh(&ep).await;
    let second = handle(&ep, store.table()).await;
    crate::app::jobs::alerts_tests::budgets_across_two_processes(Arc::new(store), Arc::new(second)).await;
}

/// `app::budget_tests::caller_turn_commits` on DynamoDB: a caller-answered turn's settling
/// write releases the lease (`QueueEmpty` in the same transaction) when nothing waits.
#[tokio::test]
async fn a_caller_answered_turn_commits_twice_on_dynamodb() {
    let Some(moto) = std::env::var("HZ_MOTO_ENDPOINT").ok().filter(|e| !e.is_empty()) else {
        println!("skipped: HZ_MOTO_ENDPOINT not set (scripts/test.sh starts moto)");
        return;
    };
    let ep = linearized(moto, Requests::default()).await;
    let turn = crate::app::budget_tests::caller_turn_commits(Arc::new(fresh(&ep).await)).await;
    crate::app::budget_tests::assert_within("caller-answered turn (dynamodb)", &turn, crate::app::budget_tests::TURN_BUDGET - 1);
}
