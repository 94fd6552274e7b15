//! The store thread: it owns the one connection and runs every call sent to it, in order,
//! with group commit (docs/design.md#group-commit).
//!
//! A call that finds no other call waiting runs alone, exactly as without group commit: its
//! own transaction ([`super::tx::Tx`]) commits, then it is answered. When calls are waiting,
//! the thread opens one `IMMEDIATE` transaction and runs them in it, each inside a savepoint
//! of its own (a call that fails rolls back to it: exactly its own changes are undone), taking
//! further waiting calls until [`MAX_BATCH`] calls or [`MAX_WORK`] of work, then commits once
//! (one `fsync` for the batch) and only then answers every caller: the durability promise is
//! unchanged (a caller is answered after its write is on disk). If the commit fails, every
//! caller of the batch gets the error. The thread never waits for more calls to arrive.

use super::StoreStats;
use crate::ports::StoreError;
use crate::store::backend;
use rusqlite::Connection;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Most calls one batch runs before it commits.
pub(super) const MAX_BATCH: usize = 64;

/// Longest a batch goes on taking waiting calls, counted from its first call: the wait a
/// batch adds to its first caller stays bounded however much work queues behind it.
pub(super) const MAX_WORK: Duration = Duration::from_millis(10);

/// A store call as the store thread runs it: it runs against the connection and leaves its
/// answer for after the commit.
pub(super) type Call = Box<dyn FnOnce(&mut Connection) -> Ran + Send>;

/// A call's answer, sent when its write is on disk; `Some` replaces its result with the
/// error of a batch that did not commit.
pub(super) type Reply = Box<dyn FnOnce(Option<StoreError>) + Send>;

/// What a call left after running.
pub(super) struct Ran {
    /// Its result is an error: in a batch its savepoint is rolled back.
    pub(super) failed: bool,
    /// That error is [`StoreError::Full`] (nothing was written).
    pub(super) full: bool,
    /// Sends its answer.
    pub(super) reply: Reply,
}

/// A batch that did not commit: nothing of the calls it held was written.
#[derive(Debug, thiserror::Error)]
#[error("the store's group commit failed, nothing of this call was written: {0}")]
struct BatchFailed(String);

/// The error every caller of a batch that did not commit gets.
fn batch_error(why: &str, full: bool) -> StoreError {
    if full { StoreError::Full(why.to_string()) } else { backend(BatchFailed(why.to_string())) }
}

/// Runs the calls sent on `rx` until every sender is gone.
pub(super) fn serve(mut conn: Connection, rx: mpsc::Receiver<Call>, stats: Arc<StoreStats>) {
    let grouped = group_commit();
    while let Ok(first) = rx.recv() {
        match rx.try_recv() {
            Ok(second) if grouped => batch(&mut conn, &rx, first, second, &stats),
            Ok(second) => {
                alone(&mut conn, first);
                alone(&mut conn, second);
            }
            Err(_) => alone(&mut conn, first),
        }
    }
}

/// Group commit is on. `HZ_BENCH_GROUP_COMMIT=off` turns it off, to measure the difference
/// on one build (`scripts/bench/serve.py`); it exists only in builds with the `testing`
/// feature, as `HZ_BENCH_SQLITE_SYNC` does.
fn group_commit() -> bool {
    #[cfg(feature = "testing")]
    if std::env::var("HZ_BENCH_GROUP_COMMIT").is_ok_and(|v| v == "off") {
        return false;
    }
    true
}

/// One call with the connection to itself: its own transaction has committed when it returns.
fn alone(conn: &mut Connection, call: Call) {
    let ran = call(conn);
    (ran.reply)(None);
}

/// How one call of a batch went.
enum Step {
    /// It ran; its changes (none if it failed) are in the batch.
    Done(Reply),
    /// Its savepoint could not be opened; it did not run.
    NotRun(Call),
    /// The batch's transaction is gone (SQLite rolls it back itself on some errors, e.g.
    /// `SQLITE_FULL`, `SQLITE_IOERR`): nothing of the batch will be written.
    Lost(Ran),
}

/// Runs `call` inside a savepoint of the batch, rolled back if the call failed.
fn in_savepoint(conn: &mut Connection, call: Call) -> Step {
    if conn.execute_batch("SAVEPOINT hz_call").is_err() {
        return Step::NotRun(call);
    }
    let ran = call(conn);
    if conn.is_autocommit() {
        return Step::Lost(ran);
    }
    let end = if ran.failed { "ROLLBACK TO hz_call; RELEASE hz_call" } else { "RELEASE hz_call" };
    match conn.execute_batch(end) {
        Ok(()) => Step::Done(ran.reply),
        Err(_) => Step::Lost(ran),
    }
}

/// Runs `first`, `second` and the calls waiting behind them in one transaction, commits it
/// once, then answers each caller.
fn batch(conn: &mut Connection, rx: &mpsc::Receiver<Call>, first: Call, second: Call, stats: &StoreStats) {
    // Not in autocommit (a call left a transaction open) or the lock stayed busy past the
    // timeout: each call alone, as without group commit.
    if conn.execute_batch("BEGIN IMMEDIATE").is_err() {
        alone(conn, first);
        alone(conn, second);
        return;
    }
    let start = Instant::now();
    let mut replies: Vec<Reply> = Vec::new();
    // Calls taken but not run in the batch: they run alone after it.
    let mut left: Vec<Call> = Vec::new();
    let (mut call, mut next) = (first, Some(second));
    loop {
        match in_savepoint(conn, call) {
            Step::Done(reply) => replies.push(reply),
            Step::NotRun(c) => {
                left.push(c);
                break;
            }
            Step::Lost(ran) => {
                lost(conn, replies, ran);
                next.into_iter().for_each(|c| alone(conn, c));
                return;
            }
        }
        if replies.len() >= MAX_BATCH || start.elapsed() >= MAX_WORK {
            break;
        }
        call = match next.take().map_or_else(|| rx.try_recv().ok(), Some) {
            Some(c) => c,
            None => break,
        };
    }
    left.extend(next);
    commit(conn, replies, stats);
    left.into_iter().for_each(|c| alone(conn, c));
}

/// Commits the batch, then answers its callers: each its own result, or every one the
/// error of a commit that failed.
fn commit(conn: &mut Connection, replies: Vec<Reply>, stats: &StoreStats) {
    match conn.execute_batch("COMMIT") {
        Ok(()) => {
            stats.batch(replies.len());
            replies.into_iter().for_each(|r| r(None));
        }
        Err(e) => {
            if !conn.is_autocommit() {
                conn.execute_batch("ROLLBACK").ok();
            }
            let full = matches!(&e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DiskFull);
            let why = e.to_string();
            replies.into_iter().for_each(|r| r(Some(batch_error(&why, full))));
        }
    }
}

/// The batch's transaction ended with `ran`: every earlier caller gets an error (nothing of
/// theirs was written); `ran`'s caller gets its own error, or one if it had succeeded.
fn lost(conn: &mut Connection, replies: Vec<Reply>, ran: Ran) {
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK").ok();
    }
    let why = if ran.full { "the disk is full" } else { "another call of the batch ended its transaction" };
    replies.into_iter().for_each(|r| r(Some(batch_error(why, ran.full))));
    let own = (!ran.failed).then(|| batch_error(why, ran.full));
    (ran.reply)(own);
}
