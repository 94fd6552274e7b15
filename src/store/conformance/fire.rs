//! The [`crate::ports::FireStore`] checks: each folded fire write lands whole or not at all
//! (a duplicate claim or a lost job compare-and-set writes nothing), appends land in order
//! whatever the caller's position hint, a ledger row written with the answer guards the
//! target, absent ledger rows and claims stay absent, and the run retention holds.

use super::sample_job;
use crate::core::ids::SessionId;
use crate::core::job::{Occurrence, RunOutcome, RunRecord};
use crate::core::session::{Message, Role};
use crate::ports::{Claim, FireFinish, RunAppend, Store, StoreError};
use chrono::{DateTime, TimeZone, Utc};
use std::sync::Arc;

fn add(id: &SessionId, after: u64, texts: &[&str], at: DateTime<Utc>) -> RunAppend {
    RunAppend { session_id: id.clone(), after, messages: texts.iter().map(|t| Message::text(Role::Assistant, *t, at)).collect() }
}

fn run(job_id: &str, run_id: &str, fire_at: DateTime<Utc>, started: DateTime<Utc>) -> RunRecord {
    RunRecord {
        run_id: run_id.into(),
        job_id: job_id.into(),
        fire_at,
        trigger: "tick".into(),
        started_at: started,
        finished_at: Some(started),
        status: RunOutcome::Ok,
        output: "done".into(),
        error: None,
        deliveries: vec![],
        session_id: String::new(),
        attempt: 1,
    }
}

async fn texts(s: &Arc<dyn Store>, id: &SessionId) -> Vec<String> {
    s.recent_messages(id, 50).await.unwrap().into_iter().map(|m| m.content).collect()
}

/// Claim + prompt, ledger row + answer, and the finish, each one atomic write.
pub(crate) async fn fire_writes(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let job = s.put_job(&sample_job("f", Some(at))).await.unwrap();
    let occ = Occurrence::new("f", at);
    let sid = SessionId::named("cron_f_20260101_080000".into());
    let mut adv = job.clone();
    adv.next_run_at = Some(at + chrono::Duration::hours(1));
    // A lost job compare-and-set writes neither the claim nor the prompt.
    let mut stale = adv.clone();
    stale.version = 7;
    assert!(matches!(s.fire_claim(&occ, &stale, at, Some(&add(&sid, 0, &["prompt"], at))).await, Err(StoreError::Conflict(_))));
    assert_eq!((s.claim_status(&occ).await.unwrap(), texts(&s, &sid).await.len()), (None, 0), "nothing written");
    let Claim::Claimed(claimed) = s.fire_claim(&occ, &adv, at, Some(&add(&sid, 0, &["prompt"], at))).await.unwrap() else { panic!() };
    assert_eq!((claimed.version, s.get_job("f").await.unwrap().unwrap()), (2, *claimed.clone()));
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("claimed"));
    let again = s.fire_claim(&occ, &claimed, at, Some(&add(&sid, 1, &["again"], at))).await.unwrap();
    assert!(matches!(again, Claim::Duplicate), "a claim is never re-admitted");
    assert_eq!(texts(&s, &sid).await, ["prompt"], "a duplicate writes nothing");
    // The ledger row with the answer; a second begin of the row is refused but its append
    // still lands, after the others even with a wrong position hint.
    assert!(s.fire_deliver(&occ, "telegram:1:", at, Some(&add(&sid, 1, &["answer"], at))).await.unwrap());
    assert!(!s.ledger_begin(&occ, "telegram:1:", at).await.unwrap(), "the row guards the target");
    assert!(!s.fire_deliver(&occ, "telegram:1:", at, Some(&add(&sid, 1, &["late"], at))).await.unwrap());
    assert!(s.fire_deliver(&occ, "discord:2:", at, None).await.unwrap());
    assert_eq!(texts(&s, &sid).await, ["prompt", "answer", "late"]);
    // The finish: a lost job compare-and-set writes nothing, not even the run.
    let mut done = (*claimed).clone();
    done.running = None;
    let fin = |job| FireFinish {
        run: run("f", "r1", at, at),
        retention: 50,
        job,
        ledger: vec![("telegram:1:".into(), "sent".into()), ("absent:9:".into(), "sent".into())],
        append: Some(add(&sid, 0, &["note"], at)),
        runs_hint: Some(1),
    };
    assert!(matches!(s.fire_finish(&fin(Some(job.clone()))).await, Err(StoreError::Conflict(_))));
    assert!(s.list_runs("f", 10).await.unwrap().is_empty(), "nothing written");
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("claimed"));
    assert_eq!(texts(&s, &sid).await.len(), 3);
    let written = s.fire_finish(&fin(Some(done.clone()))).await.unwrap().unwrap();
    assert_eq!((written.version, s.get_job("f").await.unwrap().unwrap().running), (3, None));
    assert_eq!(s.claim_status(&occ).await.unwrap().as_deref(), Some("ok"));
    assert_eq!(s.list_runs("f", 10).await.unwrap().len(), 1);
    assert_eq!(texts(&s, &sid).await, ["prompt", "answer", "late", "note"]);
    assert!(s.ledger_begin(&occ, "absent:9:", at).await.unwrap(), "an absent ledger row stays absent");
    // Without a job the finish leaves the job alone.
    assert!(s.fire_finish(&FireFinish { job: None, ..fin(None) }).await.unwrap().is_none());
    assert_eq!(s.get_job("f").await.unwrap().unwrap().version, 3);
}

/// A finish without a claim records the run and leaves no claim; retention holds for runs
/// that are not scheduled ones (no hint) at once.
pub(crate) async fn fire_finish_retention(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    for i in 0..4 {
        let r = run("k", &format!("r{i}"), at, at + chrono::Duration::minutes(i));
        s.fire_finish(&FireFinish { run: r, retention: 2, job: None, ledger: vec![], append: None, runs_hint: None }).await.unwrap();
    }
    let runs = s.list_runs("k", 10).await.unwrap();
    assert_eq!(runs.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["r3", "r2"]);
    assert_eq!(s.claim_status(&Occurrence::new("k", at)).await.unwrap(), None, "an absent claim stays absent");
}

/// An occurrence skipped by overlap (docs/design.md#overlap): its claim advances the job and
/// keeps the running run's mark, its finish records `skipped` on the claim and in the runs
/// and leaves the job alone; the job's overlap and spread fields round-trip.
pub(crate) async fn skipped_occurrences(s: Arc<dyn Store>) {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 8, 0, 0).unwrap();
    let mut job = sample_job("o", Some(at));
    job.overlap = crate::core::job::Overlap::Allow;
    job.spread = Some(600);
    job.spread_offset = 17;
    job.state = crate::core::job::JobState::Running;
    job.running = Some(crate::core::job::RunningMark { owner: "h:1".into(), fire_at: at, started_at: at, attempt: 1 });
    let job = s.put_job(&job).await.unwrap();
    assert_eq!(s.get_job("o").await.unwrap().unwrap(), job, "overlap, spread and spread_offset are stored");
    let next = at + chrono::Duration::hours(1);
    let mut adv = job.clone();
    adv.next_run_at = Some(next + chrono::Duration::hours(1));
    let Claim::Claimed(claimed) = s.fire_claim(&Occurrence::new("o", next), &adv, next, None).await.unwrap() else { panic!() };
    let mut skipped = run("o", "skip-1", next, next);
    skipped.status = RunOutcome::Skipped;
    let fin = FireFinish { run: skipped.clone(), retention: 50, job: None, ledger: vec![], append: None, runs_hint: None };
    assert_eq!(s.fire_finish(&fin).await.unwrap(), None);
    assert_eq!(s.claim_status(&Occurrence::new("o", next)).await.unwrap().as_deref(), Some("skipped"));
    assert_eq!(s.list_runs("o", 10).await.unwrap(), [skipped]);
    assert_eq!(s.get_job("o").await.unwrap().unwrap(), *claimed, "the job is left to the running run");
    assert!(claimed.running.is_some());
}
