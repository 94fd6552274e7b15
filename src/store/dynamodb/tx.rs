//! Atomic writes: one `TransactWriteItems` per port call, each item tagged with its [`Part`]
//! so a cancellation can be read per item (which condition lost decides the `StoreError`).

use super::items::Item;
use super::{DynamoError, DynamoStore, sdk};
use crate::ports::StoreError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, Put, TransactWriteItem, Update};
use std::collections::HashMap;

/// DynamoDB's limit of items per transaction.
pub(super) const MAX_ITEMS: usize = 100;
/// Attempts of an operation whose transaction lost to contention (not to a CAS the caller
/// must see).
pub(super) const ATTEMPTS: u32 = 12;

/// What an item of a transaction is, to interpret a failed condition on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// Session entry (version CAS).
    Entry,
    /// Inbound-seen marker (must not exist).
    Inbound,
    /// New session record (must not exist).
    NewRecord,
    /// Existing session record (unchanged since read).
    Record,
    /// Transcript counter (unchanged since read).
    Seq,
    /// Transcript message (must not exist).
    Message,
    /// Queue head (unchanged since read).
    QueueHead,
    /// Queue item.
    QueueItem,
    /// Occurrence claim (must not exist).
    Claim,
    /// Job (version CAS).
    Job,
    /// Ledger row or once key (must not exist).
    Marker,
    /// The session entry must still hold the writer's lease epoch (a check, no write).
    Fence,
    /// The key's FIFO must be empty (a check on its head, no write).
    QueueEmpty,
    /// A run record or a ledger row's status (no condition).
    Run,
}

/// A condition: text plus values; `#name` placeholders are bound to attribute `name`.
pub(super) struct Cond {
    text: String,
    values: Vec<(&'static str, AttributeValue)>,
}

impl Cond {
    /// A condition without values.
    pub fn new(text: &str) -> Self {
        Self { text: text.to_string(), values: Vec::new() }
    }

    /// Binds `:name`.
    pub fn val(mut self, name: &'static str, v: AttributeValue) -> Self {
        self.values.push((name, v));
        self
    }

    /// The item must not exist.
    pub fn absent() -> Self {
        Self::new("attribute_not_exists(#pk)")
    }

    /// Attribute `#attr` placeholders used by `text`, bound to their names.
    fn names(&self) -> HashMap<String, String> {
        names_in(&self.text)
    }
}

/// `#word` placeholders of an expression, each bound to attribute `word`.
pub(super) fn names_in(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = text;
    while let Some(i) = rest.find('#') {
        let tail = &rest[i + 1..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        out.insert(format!("#{}", &tail[..end]), tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// The items of one atomic write.
#[derive(Default)]
pub(super) struct Tx {
    items: Vec<(Part, TransactWriteItem)>,
    /// Transcript counters this write sets (partition, new value): hints once it landed.
    pub seqs: Vec<(String, u64)>,
}

/// How a transaction ended.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Written.
    Done,
    /// Nothing written: these parts' conditions failed.
    Failed(Vec<Part>),
    /// Nothing written: another transaction held an item, or throttling; worth retrying.
    Contended,
}

impl Outcome {
    /// Whether `part`'s condition failed.
    pub fn lost(&self, part: Part) -> bool {
        matches!(self, Self::Failed(p) if p.contains(&part))
    }
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Backend(Box::new(e))
}

impl Tx {
    /// Number of items so far.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Adds a put of `item`, guarded by `cond`.
    pub fn put(&mut self, table: &str, part: Part, item: Item, cond: Option<Cond>) -> Result<(), StoreError> {
        let mut b = Put::builder().table_name(table).set_item(Some(item));
        if let Some(c) = cond {
            b = b
                .condition_expression(c.text.clone())
                .set_expression_attribute_names(Some(c.names()))
                .set_expression_attribute_values((!c.values.is_empty()).then(|| values(c.values)));
        }
        self.items.push((part, TransactWriteItem::builder().put(b.build().map_err(build_err)?).build()));
        Ok(())
    }

    /// Adds a condition check on the item at `key`: the whole write fails unless `cond` holds.
    pub fn check(&mut self, table: &str, part: Part, key: Item, cond: Cond) -> Result<(), StoreError> {
        let b = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key))
            .condition_expression(cond.text.clone())
            .set_expression_attribute_names(Some(cond.names()))
            .set_expression_attribute_values((!cond.values.is_empty()).then(|| values(cond.values)));
        self.items.push((part, TransactWriteItem::builder().condition_check(b.build().map_err(build_err)?).build()));
        Ok(())
    }

    /// Adds an update of the item at `key` by the expression `set` (with its values),
    /// guarded by `cond` (whose values must not reuse `set`'s names).
    pub fn update(&mut self, table: &str, part: Part, key: Item, set: Cond, cond: Option<Cond>) -> Result<(), StoreError> {
        let mut names = set.names();
        let mut vals = set.values;
        let mut b = Update::builder().table_name(table).set_key(Some(key)).update_expression(set.text);
        if let Some(c) = cond {
            names.extend(c.names());
            vals.extend(c.values);
            b = b.condition_expression(c.text);
        }
        b = b.set_expression_attribute_names(Some(names)).set_expression_attribute_values((!vals.is_empty()).then(|| values(vals)));
        self.items.push((part, TransactWriteItem::builder().update(b.build().map_err(build_err)?).build()));
        Ok(())
    }

    /// Adds a delete of `key`, guarded by `cond`.
    pub fn delete(&mut self, table: &str, part: Part, key: Item, cond: Option<Cond>) -> Result<(), StoreError> {
        let mut b = Delete::builder().table_name(table).set_key(Some(key));
        if let Some(c) = cond {
            b = b
                .condition_expression(c.text.clone())
                .set_expression_attribute_names(Some(c.names()))
                .set_expression_attribute_values((!c.values.is_empty()).then(|| values(c.values)));
        }
        self.items.push((part, TransactWriteItem::builder().delete(b.build().map_err(build_err)?).build()));
        Ok(())
    }
}

fn values(v: Vec<(&'static str, AttributeValue)>) -> HashMap<String, AttributeValue> {
    v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl DynamoStore {
    /// Runs `tx` as one `TransactWriteItems` with a fresh idempotency token (so the SDK's own
    /// retries of a timed-out request cannot report our write as someone else's).
    pub(super) async fn transact(&self, mut tx: Tx) -> Result<Outcome, StoreError> {
        let seqs = std::mem::take(&mut tx.seqs);
        let out = self.transact_items(tx).await;
        for (pk, n) in seqs {
            match out {
                Ok(Outcome::Done) => self.seqs.set(pk, n),
                // A counter guessed from a stale hint fails the write: read it next time.
                _ => self.seqs.forget(&pk),
            }
        }
        out
    }

    async fn transact_items(&self, tx: Tx) -> Result<Outcome, StoreError> {
        if tx.items.is_empty() {
            return Ok(Outcome::Done);
        }
        if tx.items.len() > MAX_ITEMS {
            return Err(DynamoError::TooManyItems(tx.items.len()).into());
        }
        let (parts, items): (Vec<Part>, Vec<TransactWriteItem>) = tx.items.into_iter().unzip();
        let token = format!("{:032x}", rand::random::<u128>());
        let res = self.client.transact_write_items().set_transact_items(Some(items)).client_request_token(token).send().await;
        let err = match res {
            Ok(_) => return Ok(Outcome::Done),
            Err(e) => e,
        };
        let service = match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => Some(c.cancellation_reasons().to_vec()),
            Some(TransactWriteItemsError::TransactionInProgressException(_)) => return Ok(Outcome::Contended),
            _ => None,
        };
        let Some(reasons) = service else { return Err(sdk("TransactWriteItems")(err)) };
        let mut failed = Vec::new();
        let mut contended = false;
        for (part, r) in parts.iter().zip(&reasons) {
            match r.code().unwrap_or("None") {
                "None" => {}
                "ConditionalCheckFailed" => failed.push(*part),
                "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded" | "RequestLimitExceeded" => contended = true,
                other => {
                    let msg = r.message().unwrap_or("");
                    return Err(DynamoError::Cancelled(format!("{other} on {part:?}: {msg}")).into());
                }
            }
        }
        if !failed.is_empty() {
            Ok(Outcome::Failed(failed))
        } else if contended {
            Ok(Outcome::Contended)
        } else {
            Err(DynamoError::Cancelled(aws_sdk_dynamodb::error::DisplayErrorContext(&err).to_string()).into())
        }
    }
}

/// A short random pause before retrying a contended write (grows with `attempt`).
pub(super) async fn backoff(attempt: u32) {
    let cap = 5u64 << attempt.min(6);
    let ms = 1 + rand::random::<u64>() % cap;
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_bind_to_their_names() {
        let n = names_in("attribute_not_exists(#pk) OR (#version = :v AND #tail = :t)");
        assert_eq!(n.len(), 3);
        assert_eq!(n["#version"], "version");
        assert_eq!(n["#pk"], "pk");
    }
}
