//! The table itself: its key schema, the four indexes, TTL, and idempotent creation
//! (`hermes-zero doctor --create-table`).

use super::items::{PK, SK, TTL};
use super::{DynamoError, DynamoStore, sdk};
use crate::ports::StoreError;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::describe_table::DescribeTableError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType, ScalarAttributeType,
    TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use std::time::Duration;

/// Entries by `updated_at`, sessions by `started_at`.
pub(super) const GSI_RECENT: &str = "gsi_recent";
/// One key's sessions by `started_at`.
pub(super) const GSI_KEY: &str = "gsi_key";
/// Due jobs by `next_run_at`.
pub(super) const GSI_DUE: &str = "gsi_due";
/// Wake candidates (keys only).
pub(super) const GSI_WAKE: &str = "gsi_wake";

/// `(index, hash attribute, range attribute, keys only)`.
const INDEXES: [(&str, &str, &str, bool); 4] = [
    (GSI_RECENT, "recent_pk", "recent_at", false),
    (GSI_KEY, "key_pk", "key_at", false),
    (GSI_DUE, "due_pk", "due_at", false),
    (GSI_WAKE, "wake_pk", "wake_at", true),
];

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn attr(name: &str, t: ScalarAttributeType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder().attribute_name(name).attribute_type(t).build().map_err(build_err)
}

fn key_elem(name: &str, t: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder().attribute_name(name).key_type(t).build().map_err(build_err)
}

fn gsi(name: &str, hash: &str, range: &str, keys_only: bool) -> Result<GlobalSecondaryIndex, StoreError> {
    let projection = if keys_only { ProjectionType::KeysOnly } else { ProjectionType::All };
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .key_schema(key_elem(hash, KeyType::Hash)?)
        .key_schema(key_elem(range, KeyType::Range)?)
        .projection(Projection::builder().projection_type(projection).build())
        .build()
        .map_err(build_err)
}

impl DynamoStore {
    /// Creates the table (on-demand billing, the four indexes, TTL on `ttl`) unless it exists.
    /// Returns whether it was created. An existing table is checked for the indexes and gets
    /// TTL enabled if it was off. Safe to run again and concurrently.
    pub async fn create_table(&self) -> Result<bool, StoreError> {
        if let Some(indexes) = self.describe().await? {
            for (name, ..) in INDEXES {
                if !indexes.iter().any(|i| i == name) {
                    let reason = format!("exists without index `{name}`; it was not created by hermes-zero (see docs/dynamodb.md)");
                    return Err(DynamoError::Table { table: self.table.clone(), reason }.into());
                }
            }
            self.ensure_ttl().await;
            return Ok(false);
        }
        let mut b = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attr(PK, ScalarAttributeType::S)?)
            .attribute_definitions(attr(SK, ScalarAttributeType::S)?)
            .key_schema(key_elem(PK, KeyType::Hash)?)
            .key_schema(key_elem(SK, KeyType::Range)?);
        for (name, hash, range, keys_only) in INDEXES {
            b = b
                .attribute_definitions(attr(hash, ScalarAttributeType::S)?)
                .attribute_definitions(attr(range, ScalarAttributeType::N)?)
                .global_secondary_indexes(gsi(name, hash, range, keys_only)?);
        }
        match b.send().await {
            Ok(_) => {}
            // Someone else created it between our describe and create.
            Err(e) if matches!(e.as_service_error(), Some(CreateTableError::ResourceInUseException(_))) => {}
            Err(e) => return Err(sdk("CreateTable")(e)),
        }
        self.wait_active().await?;
        self.ensure_ttl().await;
        Ok(true)
    }

    /// The table's index names, or `None` if the table does not exist.
    async fn describe(&self) -> Result<Option<Vec<String>>, StoreError> {
        match self.client.describe_table().table_name(&self.table).send().await {
            Ok(out) => {
                let t = out.table;
                let idx = t.iter().flat_map(|t| t.global_secondary_indexes()).filter_map(|g| g.index_name().map(str::to_string)).collect();
                Ok(Some(idx))
            }
            Err(e) if matches!(e.as_service_error(), Some(DescribeTableError::ResourceNotFoundException(_))) => Ok(None),
            Err(e) => Err(sdk("DescribeTable")(e)),
        }
    }

    /// Waits (up to 5 minutes) until the new table is `ACTIVE`.
    async fn wait_active(&self) -> Result<(), StoreError> {
        for _ in 0..600 {
            let out = self.client.describe_table().table_name(&self.table).send().await.map_err(sdk("DescribeTable"))?;
            if out.table.and_then(|t| t.table_status).is_some_and(|s| s == TableStatus::Active) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(DynamoError::Table { table: self.table.clone(), reason: "did not become ACTIVE within 5 minutes".into() }.into())
    }

    /// Enables TTL on `ttl` if it is off. Failures are logged, not fatal: without TTL, expired
    /// once keys are still ignored (their condition checks `expires_at`), only not removed.
    async fn ensure_ttl(&self) {
        let status = match self.client.describe_time_to_live().table_name(&self.table).send().await {
            Ok(out) => out.time_to_live_description.and_then(|d| d.time_to_live_status),
            Err(e) => {
                tracing::warn!(table = %self.table, error = %aws_sdk_dynamodb::error::DisplayErrorContext(&e), "cannot read the table's TTL setting");
                None
            }
        };
        if matches!(status, Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)) {
            return;
        }
        let spec = match TimeToLiveSpecification::builder().enabled(true).attribute_name(TTL).build() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot build the TTL specification");
                return;
            }
        };
        if let Err(e) = self.client.update_time_to_live().table_name(&self.table).time_to_live_specification(spec).send().await {
            tracing::warn!(table = %self.table, error = %aws_sdk_dynamodb::error::DisplayErrorContext(&e), "could not enable TTL on `ttl`; expired once keys and old claims will stay until removed by hand");
        }
    }
}
