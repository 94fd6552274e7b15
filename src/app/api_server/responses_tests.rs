//! Stored responses: round trip, delete, and Hermes' retention (the most recently used).

use super::*;
use crate::core::api_server::MAX_STORED_RESPONSES;
use crate::ports::ManualClock;
use crate::test_support::TestApp;
use chrono::{Duration, Utc};
use serde_json::json;
use std::sync::Arc;

fn rec(n: usize) -> StoredResponse {
    StoredResponse { response: json!({"id": format!("r{n}")}), session_id: format!("s{n}"), instructions: None }
}

#[tokio::test]
async fn responses_round_trip_and_delete() {
    let app = TestApp::new(Utc::now()).build();
    let id = app.new_response_id();
    assert!(valid_id(&id) && id.len() == 33, "{id}");
    assert_eq!(app.response_get(&id).await.unwrap(), None);
    app.response_put(&id, &rec(1)).await.unwrap();
    assert_eq!(app.response_get(&id).await.unwrap(), Some(rec(1)));
    assert!(app.response_delete(&id).await.unwrap());
    assert!(!app.response_delete(&id).await.unwrap(), "a second delete finds nothing");
    assert_eq!(app.response_get(&id).await.unwrap(), None);
    assert_eq!(app.response_get("../x").await.unwrap(), None, "a foreign id is unknown");
}

#[tokio::test]
async fn the_least_recently_used_response_goes_past_the_retention() {
    let now = Utc::now();
    let clock = Arc::new(ManualClock::new(now));
    let app = TestApp::new(now).clock(clock.clone()).build();
    let ids: Vec<String> = (0..MAX_STORED_RESPONSES).map(|_| app.new_response_id()).collect();
    for (n, id) in ids.iter().enumerate() {
        app.response_put(id, &rec(n)).await.unwrap();
        clock.advance(Duration::milliseconds(5));
    }
    // Reading the oldest makes it the most recently used: the second oldest goes instead.
    assert!(app.response_get(&ids[0]).await.unwrap().is_some());
    clock.advance(Duration::milliseconds(5));
    let newest = app.new_response_id();
    app.response_put(&newest, &rec(999)).await.unwrap();
    assert!(app.response_get(&ids[1]).await.unwrap().is_none(), "the least recently used was dropped");
    assert!(app.response_get(&ids[0]).await.unwrap().is_some());
    assert!(app.response_get(&newest).await.unwrap().is_some());
    assert!(app.response_get(&ids[2]).await.unwrap().is_some());
}
