//! Group commit (docs/design.md#group-commit): calls that wait share one transaction, each
//! caller gets its own result, a failing call undoes exactly its own changes, and no caller
//! is answered before the batch is on disk.
//!
//! How a batch is made to happen: the first call holds the store thread (it waits on a
//! channel) while the others are sent, all in one poll of a `join_all`, so they are waiting
//! in the thread's channel, in order, when it is let go.

use super::{SqliteStore, backend};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{Message, Role, SessionEntry};
use crate::ports::{InboundId, MetaStore, SessionChange, SessionStore, StoreError};
use chrono::{TimeZone, Utc};
use futures_util::FutureExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A store file in its own directory, removed on drop.
struct Temp {
    dir: std::path::PathBuf,
    store: SqliteStore,
}

impl Temp {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("hz-batch-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        let store = SqliteStore::open(&dir.join("state.db")).unwrap();
        Self { dir, store }
    }

    /// Another connection on the file, as another process would open it.
    fn reader(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.dir.join("state.db")).unwrap()
    }

    /// Holds the store thread until the returned sender sends (or 10 s pass).
    async fn hold(&self) -> std::sync::mpsc::Sender<()> {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (held, is_held) = tokio::sync::oneshot::channel();
        let s = self.store.clone();
        tokio::spawn(async move {
            s.with(move |_| {
                held.send(()).ok();
                wait.recv_timeout(Duration::from_secs(10)).ok();
                Ok(())
            })
            .await
        });
        is_held.await.unwrap();
        go
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

type Boxed = Pin<Box<dyn Future<Output = String> + Send>>;

fn meta_count(c: &rusqlite::Connection, value: &str) -> i64 {
    c.query_row("SELECT COUNT(*) FROM meta WHERE value = ?1", [value], |r| r.get(0)).unwrap()
}

/// 100 concurrent callers in batches: 96 plain writes, a compare-and-set that wins and one
/// that loses, a message whose inbound id was seen (its entry write and append come first
/// and must be undone), and a call that writes and then fails. Each gets its own result; the
/// failing ones changed nothing; the rest is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_callers_share_commits_and_a_failing_one_changes_nothing() {
    let t = Temp::new();
    let s = t.store.clone();
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let origin = Origin::new("telegram", "c1", ChatType::Dm, Some("u"), None).unwrap();
    let key = SessionKey::derive(&origin, Default::default());
    let sid = SessionId::generate(now, &Utc);
    let seen = InboundId { platform: "telegram".into(), chat_id: "c1".into(), message_id: "m1".into() };
    let first = [
        SessionChange::Append { session_id: sid.clone(), messages: vec![Message::text(Role::User, "hello", now)] },
        SessionChange::Inbound(seen.clone()),
    ];
    let entry = s.put_entry(&SessionEntry::new(key.clone(), sid.clone(), origin, now), &first).await.unwrap();
    s.put_meta("cas", "old").await.unwrap();
    let before = s.group_commits();

    let go = t.hold().await;
    let mut calls: Vec<Boxed> = Vec::new();
    for i in 0..96 {
        let s = s.clone();
        calls.push(Box::pin(async move { format!("{:?}", s.put_meta(&format!("k{i}"), &format!("v{i}")).await) }));
    }
    let (s1, s2, s3, s4) = (s.clone(), s.clone(), s.clone(), s.clone());
    calls.push(Box::pin(async move { format!("{:?}", s1.swap_meta("cas", Some("stale"), "lost").await) }));
    let dup = [
        SessionChange::Append { session_id: sid.clone(), messages: vec![Message::text(Role::User, "again", now)] },
        SessionChange::Inbound(seen),
    ];
    let e = entry.clone();
    calls.push(Box::pin(async move { format!("{:?}", s2.put_entry(&e, &dup).await.map(|e| e.version)) }));
    calls.push(Box::pin(async move {
        let r = s3
            .with(|c| -> Result<(), StoreError> {
                c.execute("INSERT INTO meta (key, value) VALUES ('half', 'written')", []).map_err(backend)?;
                Err(StoreError::Conflict("by design".into()))
            })
            .await;
        format!("{r:?}")
    }));
    calls.push(Box::pin(async move { format!("{:?}", s4.swap_meta("cas", Some("old"), "won").await) }));
    let mut all = Box::pin(futures_util::future::join_all(calls));
    assert!((&mut all).now_or_never().is_none(), "every call waits behind the held thread");
    go.send(()).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), all).await.unwrap();

    for (i, r) in out[..96].iter().enumerate() {
        assert_eq!(r, "Ok(())", "caller {i}");
    }
    assert_eq!(out[96], "Ok(false)", "the losing compare-and-set");
    assert_eq!(out[97], "Err(DuplicateInbound)", "the seen inbound id");
    assert_eq!(out[98], format!("{:?}", Err::<(), _>(StoreError::Conflict("by design".into()))));
    assert_eq!(out[99], "Ok(true)", "the winning compare-and-set");
    let (batches, batched) = s.group_commits();
    let (batches, batched) = (batches - before.0, batched - before.1);
    assert!(batched >= 64 && batches <= 20, "100 callers in {batches} batches holding {batched} calls");

    // Seen from another connection: every plain write and the winning swap are on disk; the
    // duplicate left the entry and transcript as they were; the failed call's row is gone.
    let r = t.reader();
    for i in 0..96 {
        assert_eq!(meta_count(&r, &format!("v{i}")), 1, "k{i}");
    }
    let cas: String = r.query_row("SELECT value FROM meta WHERE key = 'cas'", [], |r| r.get(0)).unwrap();
    assert_eq!(cas, "won");
    assert_eq!(meta_count(&r, "written"), 0);
    assert_eq!(s.get_entry(&key).await.unwrap().unwrap().version, entry.version);
    assert_eq!(s.count_messages(&sid).await.unwrap(), 1);
}

/// A caller is answered only once the batch holding its write has committed: while the
/// batch's last call still runs, the earlier calls of the batch have run but none is
/// answered and another connection sees none of their writes; once it is let go, each
/// caller, as its answer arrives, finds its write visible to the other connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_are_answered_only_after_the_commit() {
    let t = Temp::new();
    let s = t.store.clone();
    let path = t.dir.join("state.db");
    let answered = Arc::new(AtomicUsize::new(0));
    let go = t.hold().await;
    let mut calls: Vec<Boxed> = Vec::new();
    for i in 0..10 {
        let (s, answered, path) = (s.clone(), answered.clone(), path.clone());
        calls.push(Box::pin(async move {
            s.put_meta(&format!("k{i}"), &format!("after{i}")).await.unwrap();
            answered.fetch_add(1, Ordering::SeqCst);
            let other = rusqlite::Connection::open(path).unwrap();
            format!("{}", meta_count(&other, &format!("after{i}")))
        }));
    }
    let (last_go, last_wait) = std::sync::mpsc::channel::<()>();
    let (running, is_running) = tokio::sync::oneshot::channel();
    let last = s.clone();
    calls.push(Box::pin(async move {
        let r = last
            .with(move |_| {
                running.send(()).ok();
                last_wait.recv_timeout(Duration::from_secs(10)).map_err(backend)
            })
            .await;
        format!("{r:?}")
    }));
    let mut all = Box::pin(futures_util::future::join_all(calls));
    assert!((&mut all).now_or_never().is_none());
    go.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), is_running).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!((&mut all).now_or_never().is_none());
    assert_eq!(answered.load(Ordering::SeqCst), 0, "no caller is answered before the commit");
    assert_eq!(meta_count(&t.reader(), "after0"), 0, "the batch has not committed yet");
    last_go.send(()).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), all).await.unwrap();
    assert_eq!(out[..10], vec!["1".to_string(); 10], "each caller sees its own write on disk when answered");
    assert_eq!(out[10], "Ok(())");
    assert!(s.group_commits().0 >= 1);
}

/// A commit that fails fails every caller of the batch, and nothing of it is written. The
/// failure is made real: a call defers the foreign-key checks to the commit
/// (`PRAGMA defer_foreign_keys`) and leaves a dangling reference, which SQLite refuses only
/// at `COMMIT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_fails_every_caller_and_writes_nothing() {
    let t = Temp::new();
    let s = t.store.clone();
    s.with(|c| {
        c.execute_batch("CREATE TABLE t_parent (id INTEGER PRIMARY KEY); CREATE TABLE t_child (pid INTEGER REFERENCES t_parent(id));")
            .map_err(backend)
    })
    .await
    .unwrap();
    let go = t.hold().await;
    let mut calls: Vec<Boxed> = Vec::new();
    for i in 0..5 {
        let s = s.clone();
        calls.push(Box::pin(async move { format!("{}", s.put_meta(&format!("k{i}"), "doomed").await.is_err()) }));
    }
    let bad = s.clone();
    calls.push(Box::pin(async move {
        let r =
            bad.with(|c| c.execute_batch("PRAGMA defer_foreign_keys = ON; INSERT INTO t_child (pid) VALUES (42);").map_err(backend)).await;
        format!("{}", r.is_err())
    }));
    let mut all = Box::pin(futures_util::future::join_all(calls));
    assert!((&mut all).now_or_never().is_none());
    go.send(()).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), all).await.unwrap();
    assert_eq!(out, vec!["true".to_string(); 6], "every caller of the batch gets the commit's error");
    assert_eq!(meta_count(&t.reader(), "doomed"), 0);
    // The store goes on: the next write commits.
    s.put_meta("after", "fine").await.unwrap();
    assert_eq!(meta_count(&t.reader(), "fine"), 1);
}

/// A call that finds nobody waiting runs alone, with its own commit: sequential calls make
/// no batch (a lone caller does not wait for company).
#[tokio::test]
async fn a_lone_call_commits_alone() {
    let t = Temp::new();
    for i in 0..20 {
        t.store.put_meta(&format!("k{i}"), "v").await.unwrap();
    }
    assert_eq!(t.store.group_commits(), (0, 0));
    assert_eq!(meta_count(&t.reader(), "v"), 20);
}
