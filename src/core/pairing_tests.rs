#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn fresh_seq(seed: u8) -> (impl FnMut(usize) -> usize, [u8; 16], [u8; 8]) {
    let mut i = seed as usize;
    let pick = move |n: usize| {
        i = i.wrapping_mul(31).wrapping_add(7);
        i % n
    };
    (pick, [seed; 16], [seed; 8])
}

fn ask(p: &mut PlatformPairing, user: &str, now: f64, seed: u8) -> Request {
    let (mut pick, salt, id) = fresh_seq(seed);
    p.request(user, "Name", now, Fresh { pick: &mut pick, salt, id })
}

fn code(r: Request) -> String {
    match r {
        Request::Code(c) => c,
        other => panic!("no code: {other:?}"),
    }
}

#[test]
fn a_code_is_approved_once_and_the_user_is_then_approved() {
    let mut p = PlatformPairing::default();
    let c = code(ask(&mut p, "111", 1000.0, 1));
    assert_eq!(c.len(), CODE_LENGTH);
    assert!(!p.is_approved("111"));
    // Stored hashed, never in plain text.
    assert!(!serde_json::to_string(&p).unwrap().contains(&c));
    assert_eq!(p.approve(&c.to_lowercase(), 1001.0), Approval::Approved { user_id: "111".into(), user_name: "Name".into() });
    assert!(p.is_approved("111"));
    assert_eq!(p.approve(&c, 1002.0), Approval::Invalid, "a code is used once");
    assert!(p.revoke("111"));
    assert!(!p.revoke("111"));
    assert!(!p.is_approved("111"));
}

#[test]
fn rate_limit_then_silence_and_pending_cap() {
    let mut p = PlatformPairing::default();
    code(ask(&mut p, "1", 0.0, 1));
    assert_eq!(ask(&mut p, "1", 599.0, 2), Request::Silent);
    code(ask(&mut p, "1", 600.0, 3));
    code(ask(&mut p, "2", 600.0, 4));
    // Three pending: the fourth user is told "too many", and is silent afterwards.
    assert_eq!(ask(&mut p, "3", 601.0, 5), Request::TooMany);
    assert_eq!(ask(&mut p, "3", 602.0, 6), Request::Silent);
    // The first code expires after an hour, which frees a slot.
    code(ask(&mut p, "4", 3601.0, 7));
}

#[test]
fn an_expired_code_is_not_accepted() {
    let mut p = PlatformPairing::default();
    let c = code(ask(&mut p, "1", 0.0, 1));
    assert_eq!(p.approve(&c, CODE_TTL_SECONDS + 1.0), Approval::Invalid);
    assert!(p.pending.is_empty());
}

#[test]
fn five_failures_lock_the_platform_even_for_a_valid_code() {
    let mut p = PlatformPairing::default();
    let c = code(ask(&mut p, "1", 0.0, 1));
    for i in 0..MAX_FAILED_ATTEMPTS {
        assert_eq!(p.approve("WRONGCOD", f64::from(i)), Approval::Invalid);
    }
    assert_eq!(p.approve(&c, 10.0), Approval::LockedOut);
    assert_eq!(ask(&mut p, "2", 10.0, 2), Request::TooMany);
    // The lockout outlives the old code (TTL = lockout); afterwards a new code works.
    let later = 4.0 + LOCKOUT_SECONDS;
    assert_eq!(p.approve(&c, later), Approval::Invalid, "expired meanwhile");
    let c2 = code(ask(&mut p, "3", later, 3));
    assert!(matches!(p.approve(&c2, later + 1.0), Approval::Approved { .. }));
}

#[test]
fn the_message_is_hermes_text() {
    let m = code_message("telegram", "ABCD2345");
    assert!(m.starts_with("Hi~ I don't recognize you yet!\n\nHere's your pairing code: `ABCD2345`"));
    assert!(m.ends_with("`hermes-zero pairing approve telegram ABCD2345`"));
}

#[test]
fn behaviour_resolution_follows_hermes_order() {
    use DmBehavior::*;
    assert_eq!(dm_behavior("telegram", Some("ignore"), Some("pair"), false), Ignore, "the platform's key wins");
    assert_eq!(dm_behavior("telegram", Some("PAIR"), Some("ignore"), true), Pair);
    assert_eq!(dm_behavior("telegram", Some("bogus"), Some("ignore"), false), Ignore, "an unknown value counts as unset");
    assert_eq!(dm_behavior("email", None, Some("pair"), false), Ignore, "email pairs only when its own key says so");
    assert_eq!(dm_behavior("email", Some("pair"), None, false), Pair);
    assert_eq!(dm_behavior("telegram", None, Some("pair"), true), Pair);
    assert_eq!(dm_behavior("telegram", None, None, false), Pair, "Hermes' default");
    assert_eq!(dm_behavior("telegram", None, None, true), Refuse, "an allow list and nothing set: the refusal stays");
}

proptest! {
    #[test]
    fn codes_use_only_the_alphabet(picks in proptest::collection::vec(any::<usize>(), CODE_LENGTH)) {
        let mut it = picks.into_iter();
        let c = make_code(|n| it.next().unwrap_or(0) % n);
        prop_assert_eq!(c.len(), CODE_LENGTH);
        prop_assert!(c.bytes().all(|b| ALPHABET.contains(&b)));
        prop_assert!(!c.contains(['0', 'O', '1', 'I']));
    }

    #[test]
    fn only_the_issued_code_approves(seed in 1u8..250, guess in "[A-Z2-9]{8}") {
        let mut p = PlatformPairing::default();
        let c = code(ask(&mut p, "u", 0.0, seed));
        let r = p.approve(&guess, 1.0);
        if guess == c {
            prop_assert!(matches!(r, Approval::Approved { .. }), "expected approval");
        } else {
            prop_assert_eq!(r, Approval::Invalid);
        }
    }
}
