//! The `session_search` check: matching user and assistant messages of other conversations,
//! newest first, limited, case-insensitive, tool and system messages not searched, and
//! hostile query text never an error (docs/design.md#session-search).

use super::{entry, record};
use crate::core::search::SearchTerms;
use crate::core::session::{Message, Role};
use crate::ports::{SessionChange, Store};
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

/// Three conversations two days apart; the newest is the current one.
pub(crate) async fn search_messages(s: Arc<dyn Store>) {
    let day1 = Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0).unwrap();
    let mut ids = Vec::new();
    for (n, texts) in [
        (21, [(Role::User, "the blue whale sings"), (Role::Tool, "blue whale facts"), (Role::Assistant, "they are big")]),
        (22, [(Role::System, "blue whale note"), (Role::User, "I saw a Blue Whale today"), (Role::Assistant, "nice")]),
        (23, [(Role::User, "blue whale again"), (Role::Assistant, "ok"), (Role::User, "fine")]),
    ] {
        let mut e = entry(n);
        let start = day1 + Duration::days(2 * i64::from(n - 21));
        e.created_at = start;
        let mut r = record(&e);
        r.started_at = start;
        let msgs: Vec<Message> =
            texts.iter().enumerate().map(|(i, (role, t))| Message::text(*role, *t, start + Duration::minutes(i as i64))).collect();
        s.put_entry(&e, &[SessionChange::Start(r), SessionChange::Append { session_id: e.session_id.clone(), messages: msgs }])
            .await
            .unwrap();
        ids.push(e);
    }
    let q = |t: &str| SearchTerms::parse(t).unwrap();
    let current = &ids[2].session_id;
    let hits = s.search_messages(&q("BLUE whale"), Some(current), None, 10).await.unwrap();
    let found: Vec<_> = hits.iter().map(|h| (h.session_id.clone(), h.role)).collect();
    assert_eq!(found, [(ids[1].session_id.clone(), Role::User), (ids[0].session_id.clone(), Role::User)], "{hits:?}");
    assert_eq!(hits[0].at, day1 + Duration::days(2) + Duration::minutes(1));
    assert_eq!(hits[0].session_key.as_ref(), Some(&ids[1].session_key));
    assert!(hits[0].snippet.to_lowercase().contains("whale") && hits[0].snippet.contains(">>>"), "{}", hits[0].snippet);
    // The limit keeps the newest.
    let one = s.search_messages(&q("blue whale"), Some(current), None, 1).await.unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].session_id, ids[1].session_id);
    // Without an exclusion the current conversation is searched too. (Terms are whole words
    // on SQLite and substrings on DynamoDB, so no text here has "whale" inside a longer word.)
    let all = s.search_messages(&q("whale"), None, None, 10).await.unwrap();
    assert_eq!(all.first().map(|h| &h.session_id), Some(current));
    assert_eq!(all.len(), 3, "{all:?}");
    // No match, and operator garbage: empty results, never an error.
    assert!(s.search_messages(&q("narwhal"), None, None, 10).await.unwrap().is_empty());
    assert!(s.search_messages(&q(r#""foo AND ("#), None, None, 10).await.unwrap().is_empty());
    assert_eq!(s.search_messages(&q("blue OR (whale"), Some(current), None, 10).await.unwrap().len(), 2);
}
