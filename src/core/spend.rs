//! A job run's spend against its limits (docs/jobs.md#budgets): the job's `max_tokens` (prompt
//! plus completion over every model call of the run) and `cron.daily_budget_usd` (the jobs'
//! spend of the UTC day, priced by `core::pricing`). Before each model call the run asks
//! [`Meter::before_call`]; a call that would pass a limit is not made. "Would pass" counts
//! the next call at least as big as the last one's prompt (the transcript only grows within
//! a run), so a run stops one call early rather than one call late. Pure.

use crate::core::pricing::{ModelPrice, cost_micros, usd};

/// The limits of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// The job's `max_tokens`.
    pub max_tokens: Option<u64>,
    /// `cron.daily_budget_usd`, in millionths of a dollar.
    pub daily_budget_micros: Option<i64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_tokens.is_some() || self.daily_budget_micros.is_some()
    }
}

/// What one run spent so far, and whether it was stopped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meter {
    /// The limits.
    pub limits: Limits,
    /// The jobs' spend of the day before this run started (millionths of a dollar).
    pub spent_before: i64,
    /// Prompt plus completion tokens of this run's calls.
    pub tokens: u64,
    /// This run's cost (millionths of a dollar).
    pub cost: i64,
    /// Model calls made.
    pub calls: u32,
    /// The last call's prompt tokens and price (the next call is at least that big).
    last_input: u64,
    last_price: Option<ModelPrice>,
    /// Why the run was stopped before a call.
    pub stopped: Option<String>,
}

impl Meter {
    /// A meter for a run under `limits`, the day's job spend so far being `spent_before`.
    pub fn new(limits: Limits, spent_before: i64) -> Self {
        Self { limits, spent_before, ..Self::default() }
    }

    /// Counts one model call's tokens at `price` (None: unpriced, costs nothing).
    pub fn charge(&mut self, price: Option<ModelPrice>, input: u64, output: u64) {
        self.calls += 1;
        self.tokens = self.tokens.saturating_add(input).saturating_add(output);
        if let Some(p) = &price {
            self.cost = self.cost.saturating_add(cost_micros(p, input, output));
        }
        self.last_input = input;
        self.last_price = price;
    }

    /// Whether the next model call may be made; when not, why (also kept in `stopped`).
    pub fn before_call(&mut self) -> Result<(), String> {
        if let Some(why) = self.over() {
            self.stopped = Some(why.clone());
            return Err(why);
        }
        Ok(())
    }

    fn over(&self) -> Option<String> {
        let next_tokens = self.last_input.max(1);
        if let Some(max) = self.limits.max_tokens
            && self.tokens.saturating_add(next_tokens) > max
        {
            return Some(format!(
                "over budget: this run used {} tokens and its next model call (at least {next_tokens} more) would pass max_tokens {max}",
                self.tokens
            ));
        }
        if let Some(budget) = self.limits.daily_budget_micros {
            let spent = self.spent_before.saturating_add(self.cost);
            let next = self.last_price.as_ref().map_or(0, |p| cost_micros(p, self.last_input, 0));
            if spent >= budget || spent.saturating_add(next) > budget {
                return Some(format!(
                    "over budget: the jobs spent ${:.4} today and the next model call would pass cron.daily_budget_usd ${:.4}",
                    usd(spent),
                    usd(budget)
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: ModelPrice = ModelPrice { input_cost_per_million: 1.0, output_cost_per_million: 2.0 };

    #[test]
    fn max_tokens_stops_before_the_call_that_would_pass_it() {
        let mut m = Meter::new(Limits { max_tokens: Some(250), daily_budget_micros: None }, 0);
        assert!(m.before_call().is_ok(), "the first call");
        m.charge(Some(P), 100, 20);
        // 120 used, the next call sends at least 100 more: 220 ≤ 250.
        assert!(m.before_call().is_ok());
        m.charge(Some(P), 110, 20);
        // 250 used: any call passes it.
        let why = m.before_call().unwrap_err();
        assert!(why.contains("max_tokens 250") && why.contains("used 250 tokens"), "{why}");
        assert_eq!(m.stopped.as_deref(), Some(why.as_str()));
        assert_eq!((m.calls, m.cost), (2, 100 + 40 + 110 + 40));
    }

    #[test]
    fn the_daily_budget_counts_the_day_before_the_run() {
        let limits = Limits { max_tokens: None, daily_budget_micros: Some(1000) };
        let mut m = Meter::new(limits, 1000);
        assert!(m.before_call().unwrap_err().contains("cron.daily_budget_usd $0.0010"), "spent already");
        let mut m = Meter::new(limits, 500);
        assert!(m.before_call().is_ok());
        m.charge(Some(P), 200, 50);
        // 500 + 300 spent, the next call's prompt alone costs ≥ 200: 1000, not past it.
        assert!(m.before_call().is_ok());
        m.charge(Some(P), 210, 0);
        assert!(m.before_call().is_err());
        // Unpriced calls cost nothing.
        let mut m = Meter::new(limits, 0);
        m.charge(None, 1_000_000, 1_000_000);
        assert!(m.before_call().is_ok());
        assert!(!Limits::default().any());
    }
}
