//! Turn time budgets. A transport that has a hard deadline (a Lambda invocation) runs its
//! work inside [`within`]; turns and job runs started in that task then stop at the deadline
//! (minus the transport's margin) instead of the default budget, and their leases expire
//! accordingly. Work without a deadline gets the default.

use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `f` with a deadline `budget` from now.
pub async fn within<F: Future>(budget: Duration, f: F) -> F::Output {
    DEADLINE.scope(Instant::now() + budget, f).await
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
}
