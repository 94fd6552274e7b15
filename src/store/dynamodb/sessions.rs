//! Session entries and records: `put_entry` is one transaction holding the entry's
//! compare-and-set and every [`SessionChange`] (records, inbound id, transcript appends).

use super::items::{ENTRY_SK, Item, QUEUE_SK, RECORD_SK, doc, get_n, get_s, key, ms, n, req_s, s};
use super::query::Query;
use super::table::{GSI_KEY, GSI_RECENT};
use super::transcript::{plan_append, plan_inbound};
use super::tx::{ATTEMPTS, Cond, Outcome, Part, Tx, backoff};
use super::{DynamoError, DynamoStore};
use crate::core::ids::{SessionId, SessionKey};
use crate::core::session::{Message, SessionEntry, SessionRecord};
use crate::ports::{InboundId, SessionChange, StoreError};
use crate::store::encode;

const ENTRIES: &str = "ENTRIES";
const SESSIONS: &str = "SESSIONS";
/// The wake index's partition name (shared with the queue head, `queue::head_item`).
pub(super) const WAKE: &str = "WAKE";

/// Where a sweep must look: 0 for stored work (pending slot, resume mark), else the lease's
/// expiry; `None` keeps the entry out of the wake index.
fn wake_at(e: &SessionEntry) -> Option<i64> {
    if e.needs_wake() { Some(0) } else { e.lease.as_ref().map(|l| ms(l.expires_at)) }
}

fn entry_item(st: &DynamoStore, e: &SessionEntry) -> Result<Item, StoreError> {
    let k = e.session_key.as_str();
    let mut it = key(st.keys.key_pk(&e.session_key), ENTRY_SK);
    it.insert("doc".into(), s(encode(e.session_key.as_str(), e)?));
    it.insert("version".into(), n(e.version));
    it.insert("recent_pk".into(), st.index_value(ENTRIES, k));
    it.insert("recent_at".into(), n(ms(e.updated_at)));
    if let Some(w) = wake_at(e) {
        it.insert("wake_pk".into(), st.index_value(WAKE, k));
        it.insert("wake_at".into(), n(w));
    }
    // The held lease's epoch, for fenced writes' condition checks (absent without a lease).
    if let Some(l) = &e.lease {
        it.insert("fence".into(), n(l.epoch));
    }
    Ok(it)
}

fn record_item(st: &DynamoStore, r: &SessionRecord) -> Item {
    let mut it = key(st.keys.session_pk(&r.session_id), RECORD_SK);
    let started = ms(r.started_at);
    it.insert("session_id".into(), s(r.session_id.as_str()));
    it.insert("session_key".into(), s(r.session_key.as_str()));
    it.insert("platform".into(), s(&r.platform));
    it.insert("started_at".into(), n(started));
    if let Some(t) = &r.title {
        it.insert("title".into(), s(t));
    }
    if let Some(t) = r.ended_at {
        it.insert("ended_at".into(), n(ms(t)));
    }
    if let Some(why) = &r.end_reason {
        it.insert("end_reason".into(), s(why));
    }
    it.insert("recent_pk".into(), st.index_value(SESSIONS, r.session_id.as_str()));
    it.insert("recent_at".into(), n(started));
    it.insert("key_pk".into(), s(st.keys.key_sessions_pk(&r.session_key)));
    it.insert("key_at".into(), n(started));
    it
}

fn record_of(it: &Item) -> Result<SessionRecord, StoreError> {
    let id = req_s(it, "session_id", "session")?;
    let key = req_s(it, "session_key", id)?;
    let num = |name: &str| get_n::<i64>(it, name).map(super::items::from_ms);
    Ok(SessionRecord {
        session_id: SessionId::named(id.to_string()),
        session_key: SessionKey::parse(key).map_err(|e| StoreError::Corrupt { what: id.to_string(), reason: e.to_string() })?,
        platform: req_s(it, "platform", id)?.to_string(),
        title: get_s(it, "title").map(str::to_string),
        started_at: num("started_at").ok_or_else(|| StoreError::Corrupt { what: id.to_string(), reason: "no started_at".into() })?,
        ended_at: num("ended_at"),
        end_reason: get_s(it, "end_reason").map(str::to_string),
    })
}

/// `SessionStore::get_entry`.
pub(super) async fn get_entry(st: &DynamoStore, k: &SessionKey) -> Result<Option<SessionEntry>, StoreError> {
    let Some(it) = st.get(key(st.keys.key_pk(k), ENTRY_SK)).await? else { return Ok(None) };
    let e: SessionEntry = doc(&it, k.as_str())?;
    if let Some(seq) = get_n(&it, "seq") {
        st.seqs.raise(st.keys.session_pk(&e.session_id), seq);
    }
    Ok(Some(e))
}

/// `SessionStore::put_entry`.
pub(super) async fn put_entry(st: &DynamoStore, entry: &SessionEntry, changes: &[SessionChange]) -> Result<SessionEntry, StoreError> {
    st.check_shards().await?;
    let mut next = entry.clone();
    next.version = entry.version + 1;
    let conflict = || StoreError::Conflict(entry.session_key.as_str().to_string());
    for attempt in 0..ATTEMPTS {
        let mut tx = Tx::default();
        let cond = if entry.version == 0 { Cond::absent() } else { Cond::new("#version = :v").val(":v", n(entry.version)) };
        plan_changes(st, &mut tx, changes, entry.updated_at).await?;
        let mut item = entry_item(st, &next)?;
        // The counter of the entry's conversation, as this write leaves it or as last seen: a
        // process that reads the entry appends without reading the counter (`turn`).
        let spk = st.keys.session_pk(&next.session_id);
        if let Some(seq) = tx.seqs.iter().rev().find(|(pk, _)| *pk == spk).map(|(_, n)| *n).or_else(|| st.seqs.get(&spk)) {
            item.insert("seq".into(), n(seq));
        }
        tx.put(&st.table, Part::Entry, item, Some(cond))?;
        match st.transact(tx).await? {
            Outcome::Done => return Ok(next),
            // Same precedence as SQLite: the entry's version is checked first.
            o if o.lost(Part::Entry) => return Err(conflict()),
            o if o.lost(Part::Inbound) => return Err(StoreError::DuplicateInbound),
            o if o.lost(Part::QueueEmpty) => return Err(StoreError::QueueNotEmpty(entry.session_key.as_str().to_string())),
            o if o.lost(Part::Marker) => return Err(StoreError::OnceUsed(once_keys(changes))),
            o if o.lost(Part::NewRecord) => return Err(DynamoError::RecordExists(new_record_ids(changes)).into()),
            // A record or transcript moved under us (not the entry): re-read and retry.
            _ => backoff(attempt).await,
        }
    }
    Err(conflict())
}

fn once_keys(changes: &[SessionChange]) -> String {
    let keys: Vec<&str> =
        changes.iter().filter_map(|c| if let SessionChange::Once { key, .. } = c { Some(key.as_str()) } else { None }).collect();
    keys.join(", ")
}

fn new_record_ids(changes: &[SessionChange]) -> String {
    let ids: Vec<&str> =
        changes.iter().filter_map(|c| if let SessionChange::Start(r) = c { Some(r.session_id.as_str()) } else { None }).collect();
    ids.join(", ")
}

/// A session record's planned state: `base` is what was stored (None: new or missing).
struct RecordPlan {
    id: SessionId,
    new: bool,
    base: Option<SessionRecord>,
    rec: Option<SessionRecord>,
}

/// Folds `changes` into `tx`. Several changes of one record (or one transcript) become one
/// item: a transaction may touch each item only once.
async fn plan_changes(
    st: &DynamoStore,
    tx: &mut Tx,
    changes: &[SessionChange],
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    let mut records: Vec<RecordPlan> = Vec::new();
    let mut appends: Vec<(&SessionId, Vec<Message>)> = Vec::new();
    let mut inbound: Vec<&InboundId> = Vec::new();
    for ch in changes {
        match ch {
            SessionChange::Start(r) => {
                if records.iter().any(|p| p.id == r.session_id) {
                    return Err(DynamoError::RecordExists(r.session_id.to_string()).into());
                }
                records.push(RecordPlan { id: r.session_id.clone(), new: true, base: None, rec: Some(r.clone()) });
            }
            SessionChange::End { session_id, reason, at } => {
                // First end reason wins.
                if let Some(r) = plan_of(st, &mut records, session_id).await?.rec.as_mut().filter(|r| r.ended_at.is_none()) {
                    r.ended_at = Some(*at);
                    r.end_reason = Some(reason.clone());
                }
            }
            SessionChange::Reopen(id) => {
                if let Some(r) = plan_of(st, &mut records, id).await?.rec.as_mut() {
                    r.ended_at = None;
                    r.end_reason = None;
                }
            }
            SessionChange::Title { session_id, title } => {
                if let Some(r) = plan_of(st, &mut records, session_id).await?.rec.as_mut() {
                    r.title = title.clone();
                }
            }
            SessionChange::Append { session_id, messages } => match appends.iter_mut().find(|(id, _)| *id == session_id) {
                Some((_, m)) => m.extend(messages.iter().cloned()),
                None => appends.push((session_id, messages.clone())),
            },
            SessionChange::Inbound(d) => {
                // The same id twice in one write is a repeat, as in SQLite.
                if inbound.contains(&d) {
                    return Err(StoreError::DuplicateInbound);
                }
                inbound.push(d);
                plan_inbound(st, tx, d, at)?;
            }
            SessionChange::Once { key, expires_at, now } => super::ledger::plan_once(st, tx, key, *expires_at, *now)?,
            SessionChange::QueueEmpty(k) => {
                // The head item shares the entry's partition; no head, or head = tail, is empty.
                let cond = Cond::new("attribute_not_exists(#pk) OR #head = #tail");
                tx.check(&st.table, Part::QueueEmpty, key(st.keys.key_pk(k), QUEUE_SK), cond)?;
            }
        }
    }
    for p in records {
        plan_record(st, tx, p)?;
    }
    for (id, msgs) in appends {
        plan_append(st, tx, id, &msgs).await?;
    }
    Ok(())
}

/// The plan of record `id`, reading the stored record the first time.
async fn plan_of<'a>(st: &DynamoStore, records: &'a mut Vec<RecordPlan>, id: &SessionId) -> Result<&'a mut RecordPlan, StoreError> {
    let i = match records.iter().position(|p| &p.id == id) {
        Some(i) => i,
        None => {
            let base = get_session(st, id).await?;
            records.push(RecordPlan { id: id.clone(), new: false, rec: base.clone(), base });
            records.len() - 1
        }
    };
    Ok(&mut records[i])
}

fn plan_record(st: &DynamoStore, tx: &mut Tx, p: RecordPlan) -> Result<(), StoreError> {
    let Some(rec) = p.rec else { return Ok(()) };
    if p.new {
        return tx.put(&st.table, Part::NewRecord, record_item(st, &rec), Some(Cond::absent()));
    }
    if p.base.as_ref() == Some(&rec) {
        return Ok(());
    }
    // Written only if nobody ended or reopened it since we read it.
    let cond = match p.base.and_then(|b| b.ended_at) {
        Some(t) => Cond::new("#ended_at = :e").val(":e", n(ms(t))),
        None => Cond::new("attribute_exists(#pk) AND attribute_not_exists(#ended_at)"),
    };
    tx.put(&st.table, Part::Record, record_item(st, &rec), Some(cond))
}

/// `SessionStore::list_entries`.
pub(super) async fn list_entries(st: &DynamoStore, limit: usize) -> Result<Vec<SessionEntry>, StoreError> {
    let items = st.query_shards(GSI_RECENT, ENTRIES, None, true, Some(limit)).await?;
    items.iter().map(|it| doc(it, "session entry")).collect()
}

/// `SessionStore::get_session`.
pub(super) async fn get_session(st: &DynamoStore, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
    st.get(key(st.keys.session_pk(id), RECORD_SK)).await?.as_ref().map(record_of).transpose()
}

/// `SessionStore::list_sessions`.
pub(super) async fn list_sessions(st: &DynamoStore, k: Option<&SessionKey>, limit: usize) -> Result<Vec<SessionRecord>, StoreError> {
    let items = match k {
        Some(k) => st.query(Query::index(GSI_KEY, &st.keys.key_sessions_pk(k), None).newest_first().take(limit)).await?,
        None => st.query_shards(GSI_RECENT, SESSIONS, None, true, Some(limit)).await?,
    };
    items.iter().map(record_of).collect()
}
