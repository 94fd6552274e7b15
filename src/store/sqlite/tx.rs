//! The one way a store call opens its transaction: [`Tx`]. Alone on the connection it is an
//! SQLite transaction of the behaviour asked for (`IMMEDIATE` for a write); inside the store
//! thread's group commit (docs/design.md#group-commit) it is a savepoint of the batch's
//! `IMMEDIATE` transaction, so a call that fails (a lost compare-and-set, a seen inbound id, a
//! fence) rolls back exactly its own changes and the batch goes on.
//!
//! No call opens a transaction any other way: `BEGIN` inside the batch's transaction would
//! fail. `every_call_opens_its_transaction_through_tx` checks the sources for it.

use crate::ports::StoreError;
use crate::store::backend;
use rusqlite::{Connection, Savepoint, Transaction, TransactionBehavior};

/// A call's transaction: its own, or a savepoint of the batch it runs in. Reads and writes go
/// through it as through the connection; dropped without [`Tx::commit`], it rolls back.
pub(super) enum Tx<'c> {
    /// The connection was in autocommit: a transaction of its own.
    Top(Transaction<'c>),
    /// Inside the batch's transaction: a savepoint, released into the batch on commit.
    Nested(Savepoint<'c>),
}

impl<'c> Tx<'c> {
    /// A write: `BEGIN IMMEDIATE` (the write lock up front, so a read-check-write is atomic
    /// across processes), or a savepoint of the batch, which already holds that lock.
    pub(super) fn immediate(c: &'c mut Connection) -> Result<Self, StoreError> {
        Self::begin(c, TransactionBehavior::Immediate)
    }

    /// A consistent read of several statements: `BEGIN DEFERRED`, or a savepoint of the batch.
    pub(super) fn deferred(c: &'c mut Connection) -> Result<Self, StoreError> {
        Self::begin(c, TransactionBehavior::Deferred)
    }

    fn begin(c: &'c mut Connection, behavior: TransactionBehavior) -> Result<Self, StoreError> {
        let tx = if c.is_autocommit() { c.transaction_with_behavior(behavior).map(Tx::Top) } else { c.savepoint().map(Tx::Nested) };
        tx.map_err(backend)
    }

    /// Commits (alone: `COMMIT`, on disk when it returns) or releases the savepoint into the
    /// batch (on disk when the batch commits, before any of its callers is answered).
    pub(super) fn commit(self) -> rusqlite::Result<()> {
        match self {
            Tx::Top(t) => t.commit(),
            Tx::Nested(s) => s.commit(),
        }
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            Tx::Top(t) => t,
            Tx::Nested(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every transaction of a store call goes through [`super::Tx`]: a call that ran
    /// `BEGIN` itself would fail whenever the store thread batches it with others. Only the
    /// store thread (which opens the batch), the migrations (run before the store thread
    /// starts) and this file open one directly.
    #[test]
    fn every_call_opens_its_transaction_through_tx() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/sqlite");
        let mut offenders = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if name == "tx.rs" || name == "schema.rs" || name == "thread.rs" || !name.ends_with(".rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let l = line.to_ascii_uppercase();
                if line.contains("transaction_with_behavior(")
                    || line.contains(".transaction()")
                    || line.contains(".savepoint()")
                    || l.contains("\"BEGIN")
                    || l.contains("\"COMMIT")
                {
                    offenders.push(format!("{name}:{}: {}", i + 1, line.trim()));
                }
            }
        }
        assert!(offenders.is_empty(), "open transactions with `Tx::immediate` / `Tx::deferred`:\n{}", offenders.join("\n"));
    }
}
