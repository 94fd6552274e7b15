//! `SessionStore::search_messages` on DynamoDB (docs/design.md#session-search). DynamoDB
//! has no full-text index, so the search is bounded instead: one index query for the newest
//! [`RECENT_SESSIONS`] conversations, then one `Query` per conversation (run together) over
//! its transcript, newest first, with a `FilterExpression` of `contains(text, term)` for
//! every term, reading at most [`PAGES_PER_SESSION`] pages (1 MB each) of it. `text` is the
//! lowercased text of a user or assistant message, written with the message
//! (`transcript::plan_append`), so the match ignores case; messages stored before it existed
//! have no `text` and are not found.

use super::items::{Item, MSG_PREFIX, PK, SK, doc, s};
use super::{DynamoStore, sdk, sessions};
use crate::core::access::SearchOwners;
use crate::core::ids::{SessionId, SessionKey};
use crate::core::search::{RECENT_SESSIONS, SearchTerms, snippet};
use crate::core::session::{Message, Role, SessionRecord};
use crate::ports::{SearchHit, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

/// The attribute holding a message's lowercased searchable text.
pub(super) const TEXT: &str = "text";

/// Most pages of one transcript a search reads, newest first.
pub(super) const PAGES_PER_SESSION: usize = 3;

/// Newest conversations of the agent looked through for a non-admin caller's own ones.
const OWNER_WINDOW: usize = 200;

/// Characters of context in a snippet.
const SNIPPET_CHARS: usize = 160;

/// The searchable text of `m`, if it has one: user and assistant text, lowercased.
pub(super) fn text_of(m: &Message) -> Option<AttributeValue> {
    (matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty()).then(|| s(m.content.to_lowercase()))
}

/// `SessionStore::search_messages`.
pub(super) async fn search(
    st: &DynamoStore,
    terms: &SearchTerms,
    exclude: Option<&SessionId>,
    owners: Option<&SearchOwners>,
    limit: usize,
) -> Result<Vec<SearchHit>, StoreError> {
    let records = match owners {
        None => sessions::list_sessions(st, None, RECENT_SESSIONS + 1).await?,
        Some(o) => owned_sessions(st, o).await?,
    };
    let records: Vec<SessionRecord> = records.into_iter().filter(|r| Some(&r.session_id) != exclude).take(RECENT_SESSIONS).collect();
    let mut set = tokio::task::JoinSet::new();
    for r in records {
        let (st, terms) = (st.clone(), terms.clone());
        set.spawn(async move { matching(&st, &r, &terms, limit).await });
    }
    let mut hits = Vec::new();
    while let Some(found) = set.join_next().await {
        hits.extend(found.map_err(crate::store::backend)??);
    }
    hits.sort_by_key(|h| std::cmp::Reverse(h.at));
    hits.truncate(limit);
    Ok(hits)
}

/// The caller's newest conversations (docs/who-sees-what.md), newest first: those of the
/// exact keys through the key index, and those of the newest [`OWNER_WINDOW`] conversations
/// whose key `owners` admits. Chosen before any transcript is read, so nobody else's text
/// is ever fetched.
async fn owned_sessions(st: &DynamoStore, owners: &SearchOwners) -> Result<Vec<SessionRecord>, StoreError> {
    let mut out = Vec::new();
    for k in owners.exact.iter().filter_map(|k| SessionKey::parse(k).ok()) {
        out.extend(sessions::list_sessions(st, Some(&k), RECENT_SESSIONS + 1).await?);
    }
    let recent = sessions::list_sessions(st, None, OWNER_WINDOW).await?;
    out.extend(recent.into_iter().filter(|r| owners.admits(r.session_key.as_str())));
    out.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| a.session_id.as_str().cmp(b.session_id.as_str())));
    out.dedup_by(|a, b| a.session_id == b.session_id);
    Ok(out)
}

/// The newest `limit` matching messages of one conversation.
async fn matching(st: &DynamoStore, rec: &SessionRecord, terms: &SearchTerms, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
    let filter = (0..terms.terms().len()).map(|i| format!("contains(#text, :t{i})")).collect::<Vec<_>>().join(" AND ");
    let mut start: Option<Item> = None;
    let mut hits = Vec::new();
    for _ in 0..PAGES_PER_SESSION {
        let mut b = st
            .client
            .query()
            .table_name(&st.table)
            .key_condition_expression("#pk = :p AND begins_with(#sk, :a)")
            .filter_expression(&filter)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#text", TEXT)
            .expression_attribute_values(":p", s(st.keys.session_pk(&rec.session_id)))
            .expression_attribute_values(":a", s(MSG_PREFIX))
            .scan_index_forward(false)
            .set_limit(st.page_size)
            .set_exclusive_start_key(start.take());
        for (i, t) in terms.terms().iter().enumerate() {
            b = b.expression_attribute_values(format!(":t{i}"), s(t.to_lowercase()));
        }
        let resp = b.send().await.map_err(sdk("Query"))?;
        for it in resp.items.unwrap_or_default() {
            let m: Message = doc(&it, "message")?;
            hits.push(SearchHit {
                session_id: rec.session_id.clone(),
                session_key: Some(rec.session_key.clone()),
                role: m.role,
                snippet: snippet(&m.content, terms, SNIPPET_CHARS),
                at: m.at,
            });
        }
        match resp.last_evaluated_key {
            Some(k) if !k.is_empty() && hits.len() < limit => start = Some(k),
            _ => break,
        }
    }
    Ok(hits)
}
