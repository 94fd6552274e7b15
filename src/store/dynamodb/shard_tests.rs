//! Sharded listing indexes against moto (docs/design.md#shards): listings merge every shard
//! in the index's order and honour their limits, with 4 shards and with 1, and a table keeps
//! the shard count it was first written with.

use super::DynamoStore;
use super::tests::{endpoint, fresh};
use crate::core::ids::{ChatType, Origin, SessionId, SessionKey};
use crate::core::session::{Lease, SessionEntry, SessionRecord};
use crate::ports::{JobStore, QueueStore, QueuedItem, SessionChange, SessionStore, StoreError};
use crate::store::conformance::sample_job;
use chrono::{DateTime, Duration, TimeZone, Utc};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()
}

/// Entry `i` (updated at `t0 + i min`) with its first conversation (started likewise).
async fn put_chat(s: &DynamoStore, i: i64) -> SessionEntry {
    let origin = Origin::new("api", &format!("c{i}"), ChatType::Dm, None, None).unwrap();
    let at = t0() + Duration::minutes(i);
    let e = SessionEntry::new(SessionKey::derive(&origin, Default::default()), SessionId::generate(at, &Utc), origin, at);
    let rec = SessionRecord {
        session_id: e.session_id.clone(),
        session_key: e.session_key.clone(),
        platform: "api".into(),
        title: None,
        started_at: at,
        ended_at: None,
        end_reason: None,
    };
    s.put_entry(&e, &[SessionChange::Start(rec)]).await.unwrap()
}

async fn listings_merge_across_shards(s: DynamoStore) {
    let mut entries = Vec::new();
    for i in [7, 2, 11, 0, 5, 9, 1, 12, 3, 8, 4, 10, 6] {
        entries.push(put_chat(&s, i).await);
    }
    let names = |v: Vec<SessionEntry>| v.into_iter().map(|e| e.origin.chat_id).collect::<Vec<_>>();
    assert_eq!(names(s.list_entries(5).await.unwrap()), ["c12", "c11", "c10", "c9", "c8"], "newest first, cut to the limit");
    assert_eq!(s.list_entries(100).await.unwrap().len(), 13);
    let recs = s.list_sessions(None, 4).await.unwrap();
    let starts: Vec<i64> = recs.iter().map(|r| (r.started_at - t0()).num_minutes()).collect();
    assert_eq!(starts, [12, 11, 10, 9]);

    // Due jobs: oldest first, only those due, cut to the limit.
    for i in [5i64, 1, 9, 3, 7, 2, 8, 6, 4] {
        s.put_job(&sample_job(&format!("job{i}"), Some(t0() + Duration::minutes(i)))).await.unwrap();
    }
    let due = |v: Vec<crate::core::job::Job>| v.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(due(s.due_jobs(t0() + Duration::minutes(6), 4).await.unwrap()), ["job1", "job2", "job3", "job4"]);
    assert_eq!(due(s.due_jobs(t0() + Duration::minutes(6), 100).await.unwrap()), ["job1", "job2", "job3", "job4", "job5", "job6"]);

    // Wake candidates: expired leases and non-empty queues, from every shard, no lease not yet expired.
    let mut woken = Vec::new();
    for (n, e) in entries.iter().enumerate().take(6) {
        let mut held = e.clone();
        let expires = t0() + Duration::minutes(if n % 2 == 0 { 1 } else { 100 });
        held.lease = Some(Lease { token: "t".into(), epoch: 1, owner: "h:1".into(), started_at: t0(), expires_at: expires });
        s.put_entry(&held, &[]).await.unwrap();
        if n % 2 == 0 {
            woken.push(e.session_key.clone());
        }
    }
    for e in entries.iter().skip(10) {
        s.queue_push(&e.session_key, &QueuedItem { text: "q".into(), message_id: None, at: t0(), attachments: Vec::new() }, 5, None)
            .await
            .unwrap();
        woken.push(e.session_key.clone());
    }
    woken.sort();
    assert_eq!(s.wake_candidates(t0() + Duration::minutes(50), false).await.unwrap(), woken);
    assert_eq!(s.wake_candidates(t0(), true).await.unwrap().len(), 6 + 3, "every lease without the bound");
}

#[tokio::test]
async fn listings_merge_across_four_shards() {
    let Some(ep) = endpoint().await else { return };
    listings_merge_across_shards(fresh(&ep).await.with_shards(4).with_page_size(2)).await;
}

#[tokio::test]
async fn listings_work_with_one_shard() {
    let Some(ep) = endpoint().await else { return };
    listings_merge_across_shards(fresh(&ep).await.with_shards(1).with_page_size(2)).await;
}

/// Items go to `<base>#<k>` with several shards and to the bare name with one.
#[tokio::test]
async fn index_values_name_the_shard() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await.with_shards(4);
    let e = put_chat(&s, 1).await;
    let it = s.get(super::items::key(s.keys.key_pk(&e.session_key), super::items::ENTRY_SK)).await.unwrap().unwrap();
    let want = format!("ENTRIES#{}", crate::store::shard::shard_of(e.session_key.as_str(), 4));
    assert_eq!(super::items::get_s(&it, "recent_pk"), Some(want.as_str()));
    let one = fresh(&ep).await.with_shards(1);
    let e = put_chat(&one, 1).await;
    let it = one.get(super::items::key(one.keys.key_pk(&e.session_key), super::items::ENTRY_SK)).await.unwrap().unwrap();
    assert_eq!(super::items::get_s(&it, "recent_pk"), Some("ENTRIES"), "one shard keeps the unsharded layout");
}

/// A table written with N shards refuses a process configured with another N, naming the key.
#[tokio::test]
async fn a_table_keeps_its_shard_count() {
    let Some(ep) = endpoint().await else { return };
    let s = fresh(&ep).await.with_shards(4);
    put_chat(&s, 1).await;
    let other = super::tests::handle(&ep, s.table()).await.with_shards(8);
    match other.list_entries(10).await {
        Err(StoreError::Backend(e)) => {
            let msg = e.to_string();
            assert!(msg.contains("store.dynamodb_shards = 4") && msg.contains("says 8"), "{msg}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // An unsharded table (written with one shard, before the record existed) is refused too.
    let old = fresh(&ep).await.with_shards(1);
    put_chat(&old, 1).await;
    old.client.delete_item().table_name(old.table()).set_key(Some(super::items::key("TABLE".into(), "SHARDS"))).send().await.unwrap();
    let sharded = super::tests::handle(&ep, old.table()).await.with_shards(4);
    assert!(sharded.list_entries(10).await.is_err(), "items on the unsharded partitions are not stranded silently");
    assert_eq!(super::tests::handle(&ep, old.table()).await.with_shards(1).list_entries(10).await.unwrap().len(), 1);
}
