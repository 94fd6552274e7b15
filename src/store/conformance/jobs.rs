//! The [`JobStore`] and [`LedgerStore`] checks: job compare-and-set and the due index,
//! claims that are never re-admitted, run retention, the delivery ledger, once keys, and the
//! two-handle claim race.

use super::sample_job;
use crate::core::job::{JobState, Occurrence, RunOutcome, RunRecord};
use crate::ports::{Claim, Store, StoreError};
use chrono::{TimeZone, Utc};
use std::sync::Arc;

/// Job compare-and-set, and the due index skips paused and disabled jobs.
pub(crate) async fn jobs_cas_and_due_index(s: Arc<dyn Store>) {
    let t = |h| Utc.with_ymd_and_hms(2026, 1, 1, h, 0, 0).unwrap();
    let a = s.put_job(&sample_job("a", Some(t(1)))).await.unwrap();
    assert_eq!(a.version, 1);
    assert!(matches!(s.put_job(&sample_job("a", None)).await, Err(StoreError::Conflict(_))));
    s.put_job(&sample_job("b", Some(t(3)))).await.unwrap();
    let mut paused = sample_job("c", Some(t(0)));
    paused.state = JobState::Paused;
    s.put_job(&paused).await.unwrap();
    let mut disabled = sample_job("d", Some(t(0)));
    disabled.enabled = false;
    s.put_job(&disabled).await.unwrap();
    let due: Vec<String> = s.due_jobs(t(2), 10).await.unwrap().into_iter().map(|j| j.id).collect();
    assert_eq!(due, ["a"]);
    assert_eq!(s.list_jobs().await.unwrap().len(), 4);
    let mut upd = a.clone();
    upd.next_run_at = Some(t(5));
    let a2 = s.put_job(&upd).await.unwrap();
    assert!(matches!(s.put_job(&a).await, Err(StoreError::Conflict(_))), "stale version");
    assert_eq!(s.get_job("a").await.unwrap().unwrap(), a2);
    assert!(s.delete_job("a").await.unwrap());
    assert!(!s.delete_job("a").await.unwrap());
}

/// A claimed occurrence stays claimed, whatever its run did; a lost job CAS leaves no claim.
pub(crate) async fn claims_are_never_readmitted(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let j = s.put_job(&sample_job("j", Some(at))).await.unwrap();
    let occ = Occurrence::new("j", at);
    let mut adv = j.clone();
    adv.next_run_at = Some(at + chrono::Duration::hours(1));
    let Claim::Claimed(written) = s.claim_occurrence(&occ, &adv, at).await.unwrap() else { panic!("first claim") };
    assert_eq!(written.version, 2);
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("claimed"));
    // Retried with the new version, after a failure, or from a stale copy: still duplicate.
    assert!(matches!(s.claim_occurrence(&occ, &written, at).await.unwrap(), Claim::Duplicate));
    let run = RunRecord {
        run_id: "r1".into(),
        job_id: "j".into(),
        fire_at: at,
        trigger: "ticker".into(),
        started_at: at,
        finished_at: Some(at),
        status: RunOutcome::Error,
        output: String::new(),
        error: Some("boom".into()),
        deliveries: vec![],
        session_id: String::new(),
        attempt: 1,
    };
    s.finish_run(&run, 50).await.unwrap();
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("error"));
    assert!(matches!(s.claim_occurrence(&occ, &written, at).await.unwrap(), Claim::Duplicate));
    // A lost job CAS leaves no claim behind.
    let occ2 = Occurrence::new("j", at + chrono::Duration::hours(1));
    assert!(matches!(s.claim_occurrence(&occ2, &adv, at).await, Err(StoreError::Conflict(_))));
    assert_eq!(s.claim_status(&occ2).await.unwrap(), None);
}

/// Run retention, the delivery ledger, and once keys judged by the caller's clock.
pub(crate) async fn runs_ledger_and_once(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    for i in 0..5 {
        let run = RunRecord {
            run_id: format!("r{i}"),
            job_id: "k".into(),
            fire_at: at,
            trigger: "t".into(),
            started_at: at + chrono::Duration::minutes(i),
            finished_at: None,
            // Every outcome a run can end with is stored as it is (a script job's `silent` too).
            status: if i == 4 { RunOutcome::Silent } else { RunOutcome::Ok },
            output: format!("out {i}"),
            error: None,
            deliveries: vec![],
            session_id: String::new(),
            attempt: 1,
        };
        s.finish_run(&run, 3).await.unwrap();
    }
    let runs = s.list_runs("k", 10).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["r4", "r3", "r2"]);
    assert_eq!(runs[0].status, RunOutcome::Silent);
    let occ = Occurrence::new("k", at);
    assert!(s.ledger_begin(&occ, "telegram:1", at).await.unwrap());
    assert!(!s.ledger_begin(&occ, "telegram:1", at).await.unwrap());
    assert!(s.ledger_begin(&occ, "discord:2", at).await.unwrap());
    s.ledger_finish(&occ, "telegram:1", "sent", at).await.unwrap();
    // Expiry is judged by the caller's clock only: the same key is refused until then,
    // whatever the wall clock says, and accepted again once `now` has passed it.
    let until = at + chrono::Duration::minutes(2);
    assert!(s.use_once("jti-1", until, at).await.unwrap());
    assert!(!s.use_once("jti-1", until, at).await.unwrap());
    assert!(!s.use_once("jti-1", until, until).await.unwrap(), "still live at its expiry instant");
    let later = until + chrono::Duration::seconds(1);
    assert!(s.use_once("jti-1", later + chrono::Duration::minutes(2), later).await.unwrap(), "expired keys are free again");
}

/// Many concurrent claimers (through two handles) of one occurrence: exactly one wins.
pub(crate) async fn claim_race(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let j = a.put_job(&sample_job("race", Some(at))).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        let mut adv = j.clone();
        adv.next_run_at = Some(at + chrono::Duration::hours(1));
        tasks.push(tokio::spawn(async move {
            match s.claim_occurrence(&Occurrence::new("race", at), &adv, at).await {
                Ok(Claim::Claimed(_)) => 1,
                Ok(Claim::Duplicate) | Err(StoreError::Conflict(_)) => 0,
                Err(e) => panic!("{e}"),
            }
        }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += t.await.unwrap();
    }
    assert_eq!(wins, 1);
}
