//! DynamoDB body of [`SessionDeleteStore`]. One transaction deletes the `RECORD` (which must
//! exist) and, when the place's entry points at the conversation, the entry conditioned on
//! the version read (so a turn taking the lease in between makes the delete re-read and
//! answer [`Deleted::Busy`]). Then the rest of the `SESSION#<id>` partition (messages,
//! notes, counter) and, with the entry, the place's queue items are deleted in batches of
//! transactions. A crash between those steps leaves only unreachable items: the record that
//! every listing and read starts from is gone first.

use super::items::{ENTRY_SK, Item, RECORD_SK, doc, get_n, key, n, req_s, s};
use super::query::Query;
use super::tx::{ATTEMPTS, Cond, MAX_ITEMS, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::session::SessionEntry;
use crate::ports::{Deleted, SessionDeleteStore, StoreError};
use async_trait::async_trait;

#[async_trait]
impl SessionDeleteStore for DynamoStore {
    async fn delete_session(&self, id: &SessionId) -> Result<Deleted, StoreError> {
        let pk = self.keys.session_pk(id);
        let mut place: Option<String> = None;
        let mut done = false;
        for attempt in 0..ATTEMPTS {
            let Some(rec) = self.get(key(pk.clone(), RECORD_SK)).await? else { return Ok(Deleted::NotFound) };
            let sk = SessionKey::parse(req_s(&rec, "session_key", id.as_str())?)
                .map_err(|e| StoreError::Corrupt { what: id.as_str().to_string(), reason: e.to_string() })?;
            let kpk = self.keys.key_pk(&sk);
            let mut tx = Tx::default();
            tx.delete(&self.table, Part::Record, key(pk.clone(), RECORD_SK), Some(Cond::new("attribute_exists(#pk)")))?;
            place = None;
            if let Some(it) = self.get(key(kpk.clone(), ENTRY_SK)).await? {
                let e: SessionEntry = doc(&it, sk.as_str())?;
                if e.session_id == *id {
                    if e.lease.is_some() {
                        return Ok(Deleted::Busy);
                    }
                    let v: u64 = get_n(&it, "version").unwrap_or(0);
                    tx.delete(&self.table, Part::Entry, key(kpk.clone(), ENTRY_SK), Some(Cond::new("#version = :v").val(":v", n(v))))?;
                    place = Some(kpk);
                }
            }
            match self.transact(tx).await? {
                Outcome::Done => {
                    done = true;
                    break;
                }
                o if o.lost(Part::Record) => return Ok(Deleted::NotFound),
                // The entry moved (a turn took the lease, or a message came): read again.
                _ => backoff(attempt).await,
            }
        }
        if !done {
            return Err(DynamoError::Contended("delete_session").into());
        }
        self.delete_partition(&pk).await?;
        self.seqs.forget(&pk);
        if let Some(kpk) = place {
            self.delete_partition(&kpk).await?;
        }
        Ok(Deleted::Deleted)
    }
}

impl DynamoStore {
    /// Deletes every item left in partition `pk`, in transactions of at most
    /// [`MAX_ITEMS`] unconditioned deletes.
    async fn delete_partition(&self, pk: &str) -> Result<(), StoreError> {
        // Every sort key of this table sorts after "!" (they start with a capital letter).
        let q = Query {
            index: None,
            cond: "#pk = :p AND #sk > :a",
            values: vec![(":p", s(pk)), (":a", s("!"))],
            forward: true,
            limit: None,
            keys_only: true,
        };
        let items: Vec<Item> = self.query(q).await?;
        for batch in items.chunks(MAX_ITEMS) {
            let mut attempt = 0;
            loop {
                let mut tx = Tx::default();
                for it in batch {
                    tx.delete(&self.table, Part::Message, it.clone(), None)?;
                }
                match self.transact(tx).await? {
                    Outcome::Done => break,
                    _ if attempt + 1 < ATTEMPTS => {
                        backoff(attempt).await;
                        attempt += 1;
                    }
                    _ => return Err(DynamoError::Contended("delete_session").into()),
                }
            }
        }
        Ok(())
    }
}
