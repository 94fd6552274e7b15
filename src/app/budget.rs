//! Turn budgets. Time: a transport that has a hard deadline (a Lambda invocation) runs its
//! work inside [`within`]; turns and job runs started in that task then stop at the deadline
//! (minus the transport's margin) instead of the default budget, and their leases expire
//! accordingly. Work without a deadline gets the default. Spend: a job run runs its turn
//! inside [`metered`]; the model loop asks [`before_call`] before each model call and
//! reports each call to [`charge`], so a run stops before the call that would pass its
//! `max_tokens` or the daily budget (`core::spend`, docs/jobs.md#budgets). Chats run
//! unmetered and are never stopped.

use crate::core::pricing::ModelPrice;
use crate::core::spend::Meter;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

tokio::task_local! {
    static DEADLINE: Instant;
    static METER: Arc<Mutex<Meter>>;
}

/// Runs `f` (a job run's turn) with `meter` counting its model calls.
pub async fn metered<F: Future>(meter: Arc<Mutex<Meter>>, f: F) -> F::Output {
    METER.scope(meter, f).await
}

/// Whether the current task may make its next model call: always outside [`metered`];
/// inside it, what the run's meter says (the reason when not).
pub fn before_call() -> Result<(), String> {
    METER.try_with(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner).before_call()).unwrap_or(Ok(()))
}

/// Counts one model call on the current task's meter. False when the task has none (a chat).
pub fn charge(price: Option<ModelPrice>, input: u64, output: u64) -> bool {
    METER.try_with(|m| m.lock().unwrap_or_else(std::sync::PoisonError::into_inner).charge(price, input, output)).is_ok()
}

/// Runs `f` with a deadline `budget` from now.
pub async fn within<F: Future>(budget: Duration, f: F) -> F::Output {
    DEADLINE.scope(Instant::now() + budget, f).await
}

/// `f` under the current task's deadline, if it has one: for work spawned from a task with a
/// deadline (a streamed answer's turn) that must end by the same deadline.
pub fn inherit<F: Future>(f: F) -> impl Future<Output = F::Output> {
    let deadline = DEADLINE.try_with(|d| *d).ok();
    async move {
        match deadline {
            Some(d) => DEADLINE.scope(d, f).await,
            None => f.await,
        }
    }
}

/// The time a turn may take now: `default`, or less when the current task has a deadline.
pub fn turn_budget(default: Duration) -> Duration {
    DEADLINE.try_with(|d| d.saturating_duration_since(Instant::now())).map_or(default, |left| left.min(default))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deadline_shortens_the_budget_only_inside_its_scope() {
        let default = Duration::from_secs(600);
        assert_eq!(turn_budget(default), default);
        let inner = within(Duration::from_secs(5), async { turn_budget(default) }).await;
        assert!(inner <= Duration::from_secs(5) && inner > Duration::from_secs(4));
    }

    #[tokio::test]
    async fn a_spawned_task_inherits_the_deadline_only_when_asked() {
        let default = Duration::from_secs(600);
        let (plain, inherited) = within(Duration::from_secs(5), async {
            let plain = tokio::spawn(async move { turn_budget(default) });
            let inherited = tokio::spawn(inherit(async move { turn_budget(default) }));
            (plain.await.unwrap(), inherited.await.unwrap())
        })
        .await;
        assert_eq!(plain, default, "tokio::spawn does not carry task-locals");
        assert!(inherited <= Duration::from_secs(5) && inherited > Duration::from_secs(4));
        assert_eq!(tokio::spawn(inherit(async move { turn_budget(default) })).await.unwrap(), default, "no deadline to inherit");
    }

    #[tokio::test]
    async fn a_meter_counts_and_stops_only_inside_its_scope() {
        use crate::core::spend::Limits;
        assert_eq!(before_call(), Ok(()));
        assert!(!charge(None, 10, 10), "no meter outside a job run");
        let meter = Arc::new(Mutex::new(Meter::new(Limits { max_tokens: Some(30), daily_budget_micros: None }, 0)));
        let stopped = metered(meter.clone(), async {
            assert_eq!(before_call(), Ok(()));
            assert!(charge(None, 20, 5));
            before_call()
        })
        .await;
        assert!(stopped.is_err());
        assert_eq!(meter.lock().unwrap().tokens, 25);
        assert_eq!(before_call(), Ok(()), "the scope ended");
    }
}
