//! The stored responses of `/v1/responses` (Hermes' `ResponseStore`): each response and
//! the session it continues, for `GET`/`DELETE /v1/responses/{id}` and
//! `previous_response_id`, kept as meta records so every store adapter (SQLite, DynamoDB)
//! holds them. Retention as Hermes: the [`MAX_STORED_RESPONSES`] most recently used; an
//! index record, updated by compare-and-set, orders them by last use and names the ones
//! to drop.

use crate::app::{App, AppError};
use crate::core::api_server::MAX_STORED_RESPONSES;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The meta record listing the stored responses with their last use (ms since the epoch).
const INDEX_KEY: &str = "api_responses:index";
/// How often a contended index update is tried.
const INDEX_TRIES: usize = 8;

/// One stored response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    /// The response object as it was returned.
    pub response: Value,
    /// The Hermes session id its turn ran in (the next turn of the chain continues it).
    pub session_id: String,
    /// The request's `instructions`, carried forward as Hermes does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

fn record_key(id: &str) -> String {
    format!("api_response:{id}")
}

/// Whether `id` has the shape of a response id this gateway hands out (`resp_` and at most
/// 64 ASCII letters, digits or `_`): anything else is unknown without a store read.
pub fn valid_id(id: &str) -> bool {
    id.len() <= 69 && id.strip_prefix("resp_").is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

type Index = Vec<(String, i64)>;

impl App {
    /// A new response id (`resp_` and 28 hex digits, as Hermes).
    pub(in crate::app) fn new_response_id(&self) -> String {
        format!("resp_{:032x}", rand::random::<u128>())[..33].to_string()
    }

    /// The stored response `id`, marked as just used; `None` when unknown (or unreadable:
    /// then it is dropped, as Hermes drops a corrupt row).
    pub(in crate::app) async fn response_get(&self, id: &str) -> Result<Option<StoredResponse>, AppError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let Some(raw) = self.inner.store.get_meta(&record_key(id)).await? else { return Ok(None) };
        let Ok(rec) = serde_json::from_str::<StoredResponse>(&raw) else {
            tracing::warn!(response_id = id, "unreadable stored response; dropped");
            self.response_delete(id).await?;
            return Ok(None);
        };
        let now = self.inner.clock.now().timestamp_millis();
        let id_owned = id.to_string();
        self.update_index(move |ix| {
            if let Some(e) = ix.iter_mut().find(|(i, _)| *i == id_owned) {
                e.1 = now;
            }
        })
        .await?;
        Ok(Some(rec))
    }

    /// Stores response `id`, dropping the least recently used beyond the retention.
    pub(in crate::app) async fn response_put(&self, id: &str, rec: &StoredResponse) -> Result<(), AppError> {
        let text = serde_json::to_string(rec).map_err(|e| AppError::BadRequest(format!("unstorable response: {e}")))?;
        self.inner.store.put_meta(&record_key(id), &text).await?;
        let now = self.inner.clock.now().timestamp_millis();
        let id_owned = id.to_string();
        let dropped = self
            .update_index(move |ix| {
                ix.retain(|(i, _)| *i != id_owned);
                ix.push((id_owned.clone(), now));
            })
            .await?;
        for old in dropped {
            self.inner.store.delete_meta(&record_key(&old)).await?;
        }
        Ok(())
    }

    /// Deletes response `id`; false when it was not stored.
    pub(in crate::app) async fn response_delete(&self, id: &str) -> Result<bool, AppError> {
        if !valid_id(id) {
            return Ok(false);
        }
        let existed = self.inner.store.get_meta(&record_key(id)).await?.is_some();
        self.inner.store.delete_meta(&record_key(id)).await?;
        let id_owned = id.to_string();
        self.update_index(move |ix| ix.retain(|(i, _)| *i != id_owned)).await?;
        Ok(existed)
    }

    /// Applies `change` to the index by compare-and-set, then keeps the most recently used
    /// [`MAX_STORED_RESPONSES`]; returns the ids it dropped.
    async fn update_index(&self, change: impl Fn(&mut Index)) -> Result<Vec<String>, AppError> {
        for _ in 0..INDEX_TRIES {
            let cur = self.inner.store.get_meta(INDEX_KEY).await?;
            let mut ix: Index = cur.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
            change(&mut ix);
            ix.sort_by_key(|(_, t)| std::cmp::Reverse(*t));
            let dropped: Vec<String> = ix.split_off(ix.len().min(MAX_STORED_RESPONSES)).into_iter().map(|(i, _)| i).collect();
            let new = serde_json::to_string(&ix).unwrap_or_else(|_| "[]".into());
            if cur.as_deref() == Some(new.as_str()) || self.inner.store.swap_meta(INDEX_KEY, cur.as_deref(), &new).await? {
                return Ok(dropped);
            }
        }
        Err(AppError::Contended)
    }
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
