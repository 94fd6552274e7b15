//! A full disk (docs/design.md#guarantees): every write that hits SQLite's `SQLITE_FULL`
//! fails with [`StoreError::Full`] and leaves the store exactly as it was.
//!
//! How the test fills the disk: `PRAGMA max_page_count` caps the database file of the test's
//! connection a few pages above its current size, so a large write reaches the limit and
//! SQLite answers `SQLITE_FULL`, the same code a full file system gives (a size-limited
//! tmpfs would need root).

use super::SqliteStore;
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::job::Occurrence;
use crate::core::session::{Message, Role, SessionEntry, SessionRecord};
use crate::ports::{Claim, JobStore, LedgerStore, SessionChange, SessionStore, StoreError};
use chrono::{TimeZone, Utc};

struct Capped {
    dir: std::path::PathBuf,
    store: SqliteStore,
}

impl Capped {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("hz-full-{}-{:08x}", std::process::id(), rand::random::<u32>()));
        let store = SqliteStore::open(&dir.join("state.db")).unwrap();
        Self { dir, store }
    }

    /// Caps the file at its current size plus `spare` pages.
    async fn cap(&self, spare: i64) {
        self.store
            .with(move |c| {
                let n: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
                let set: i64 = c.query_row(&format!("PRAGMA max_page_count = {}", n + spare), [], |r| r.get(0)).unwrap();
                assert_eq!(set, n + spare);
                Ok(())
            })
            .await
            .unwrap();
    }
}

impl Drop for Capped {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// About 400 KB of text: far more than the few spare pages.
fn big(n: usize) -> Vec<Message> {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    (0..n).map(|i| Message::text(Role::User, format!("{i}:{}", "x".repeat(4000)), at)).collect()
}

#[tokio::test]
async fn a_full_disk_fails_the_entry_write_whole_with_a_clear_error() {
    let t = Capped::new();
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let origin = Origin::new("api", "c1", ChatType::Dm, Some("u"), None).unwrap();
    let key = SessionKey::derive(&origin, Default::default());
    let entry = SessionEntry::new(key.clone(), SessionId::generate(now, &Utc), origin, now);
    let record = SessionRecord {
        session_id: entry.session_id.clone(),
        session_key: key.clone(),
        platform: "api".into(),
        title: None,
        started_at: now,
        ended_at: None,
        end_reason: None,
    };
    t.cap(4).await;
    let changes = [SessionChange::Start(record), SessionChange::Append { session_id: entry.session_id.clone(), messages: big(100) }];
    let err = t.store.put_entry(&entry, &changes).await.unwrap_err();
    assert!(matches!(err, StoreError::Full(_)), "{err:?}");
    let shown = err.to_string();
    assert!(shown.starts_with("disk full: ") && shown.ends_with("nothing was written"), "{shown}");
    // Nothing of it landed: no entry, no record, no transcript.
    assert!(t.store.get_entry(&key).await.unwrap().is_none());
    assert!(t.store.get_session(&entry.session_id).await.unwrap().is_none());
    assert!(t.store.recent_messages(&entry.session_id, 10).await.unwrap().is_empty());
    // A plain append that does not fit fails the same way and appends nothing.
    assert!(matches!(t.store.append_messages(&entry.session_id, &big(100), None).await, Err(StoreError::Full(_))));
    assert_eq!(t.store.count_messages(&entry.session_id).await.unwrap(), 0);
    // Small writes still fit: the store keeps working once space is there.
    let small = [SessionChange::Append { session_id: entry.session_id.clone(), messages: big(1)[..1].to_vec() }];
    t.store.put_entry(&entry, &small).await.unwrap();
    assert_eq!(t.store.count_messages(&entry.session_id).await.unwrap(), 1);
}

#[tokio::test]
async fn a_full_disk_fails_the_claim_and_the_job_advance_together() {
    let t = Capped::new();
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let job = t.store.put_job(&crate::store::conformance::sample_job("j", Some(at))).await.unwrap();
    t.cap(2).await;
    // The advanced job is too large for the space left (a long prompt), so the transaction
    // that inserts the claim and writes the job hits the limit.
    let mut next = job.clone();
    next.next_run_at = Some(at + chrono::Duration::hours(1));
    next.prompt = "p".repeat(200_000);
    let occ = Occurrence::new("j", at);
    let err = t.store.claim_occurrence(&occ, &next, at).await.unwrap_err();
    assert!(matches!(err, StoreError::Full(_)), "{err:?}");
    // No claim without its job advance: the occurrence is unclaimed and the job as it was.
    assert_eq!(t.store.claim_status(&occ).await.unwrap(), None);
    let stored = t.store.get_job("j").await.unwrap().unwrap();
    assert_eq!((stored.version, stored.next_run_at, stored.prompt.as_str()), (job.version, Some(at), "p"));
    // With a job that fits, the same occurrence is claimed once.
    let mut next = job.clone();
    next.next_run_at = Some(at + chrono::Duration::hours(1));
    assert!(matches!(t.store.claim_occurrence(&occ, &next, at).await.unwrap(), Claim::Claimed(_)));
    assert!(t.store.ledger_begin(&occ, "telegram:1:", at).await.unwrap());
}

/// The store a user opens commits in WAL mode with `synchronous=FULL` (2): a commit is on
/// disk before the call returns, so a power loss cannot forget a claim (issue #17 item 5).
#[tokio::test]
async fn an_opened_store_syncs_every_commit() {
    let c = Capped::new();
    let (mode, sync) = c
        .store
        .with(|conn| {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(super::backend)?;
            let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0)).map_err(super::backend)?;
            Ok((mode, sync))
        })
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    if std::env::var_os("HZ_BENCH_SQLITE_SYNC").is_none() {
        assert_eq!(sync, 2, "PRAGMA synchronous must be FULL (2), not NORMAL (1)");
    }
}
