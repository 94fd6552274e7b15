//! Compare-and-set meta records (`MetaStore::swap_meta`), which the DM pairing state of
//! each platform is written with (CONTRACT §17).

use crate::core::pairing::{Approval, Fresh, PlatformPairing, Request};
use crate::ports::Store;
use std::sync::Arc;

/// Absent → created once; a stale expected value loses and writes nothing.
pub(crate) async fn meta_swap(s: Arc<dyn Store>) {
    assert!(s.swap_meta("p", None, "v1").await.unwrap());
    assert!(!s.swap_meta("p", None, "v2").await.unwrap(), "a taken key is not created again");
    assert!(!s.swap_meta("p", Some("v0"), "v2").await.unwrap(), "a stale value loses");
    assert_eq!(s.get_meta("p").await.unwrap().as_deref(), Some("v1"));
    assert!(s.swap_meta("p", Some("v1"), "v2").await.unwrap());
    assert_eq!(s.get_meta("p").await.unwrap().as_deref(), Some("v2"));
    assert!(!s.swap_meta("other", Some("v2"), "x").await.unwrap(), "an absent key does not match a value");
    assert_eq!(s.get_meta("other").await.unwrap(), None);
}

/// Two handles (two processes) approve the same pairing code from the same read: one wins,
/// the other's write is refused, and after a reload the code is gone.
pub(crate) async fn pairing_approve_race(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let mut st = PlatformPairing::default();
    let mut pick = |n: usize| 3 % n;
    let Request::Code(code) = st.request("111", "Ann", 0.0, Fresh { pick: &mut pick, salt: [7; 16], id: [1; 8] }) else {
        panic!("no code")
    };
    let v0 = serde_json::to_string(&st).unwrap();
    assert!(a.swap_meta("pairing:telegram", None, &v0).await.unwrap());
    let (mut ra, mut rb) = (st.clone(), st);
    assert!(matches!(ra.approve(&code, 1.0), Approval::Approved { .. }));
    assert!(matches!(rb.approve(&code, 1.0), Approval::Approved { .. }));
    let (va, vb) = (serde_json::to_string(&ra).unwrap(), serde_json::to_string(&rb).unwrap());
    let (wa, wb) = tokio::join!(a.swap_meta("pairing:telegram", Some(&v0), &va), b.swap_meta("pairing:telegram", Some(&v0), &vb));
    assert!(wa.unwrap() ^ wb.unwrap(), "exactly one approval wins");
    let now: PlatformPairing = serde_json::from_str(&b.get_meta("pairing:telegram").await.unwrap().unwrap()).unwrap();
    assert!(now.is_approved("111"));
    let mut again = now.clone();
    assert_eq!(again.approve(&code, 2.0), Approval::Invalid, "the loser's retry finds the code used");
}
