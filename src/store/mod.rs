//! Store adapters behind [`crate::ports::Store`]: the embedded SQLite store (always built)
//! and, with feature `aws`, DynamoDB. `conformance` holds the one test suite every adapter
//! must pass.

pub mod counting;
pub mod hermes_state;
pub mod scope;
pub mod shard;
pub mod sqlite;

#[cfg(feature = "aws")]
pub mod dynamodb;

#[cfg(test)]
pub(crate) mod conformance;

use crate::ports::StoreError;

/// Wraps any backend error. SQLite's `SQLITE_FULL` (disk or size limit reached) becomes
/// [`StoreError::Full`], so the caller can say so plainly (docs/design.md#guarantees).
pub(crate) fn backend<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    if let Some(rusqlite::Error::SqliteFailure(f, _)) = (&e as &dyn std::any::Any).downcast_ref::<rusqlite::Error>()
        && f.code == rusqlite::ErrorCode::DiskFull
    {
        return StoreError::Full(e.to_string());
    }
    StoreError::Backend(Box::new(e))
}

/// Decodes a JSON document stored by an adapter.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(what: &str, doc: &str) -> Result<T, StoreError> {
    serde_json::from_str(doc).map_err(|e| StoreError::Corrupt { what: what.to_string(), reason: e.to_string() })
}

/// Encodes a JSON document for an adapter.
pub(crate) fn encode<T: serde::Serialize>(what: &str, v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt { what: what.to_string(), reason: e.to_string() })
}
