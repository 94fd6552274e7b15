//! Model spend (docs/jobs.md#budgets): each model call priced by the one price table
//! (`core::pricing`, `pricing:` overrides), counted on the job run's meter (`app::budget`)
//! or, for a chat, into the usage counters; a job run's meter and, after the run, its spend
//! added to the day's `job_usd_micros` counter; the usage view's budget block.
//!
//! With `cron.daily_budget_usd` set, a run reads the day's job spend once before it starts
//! and adds its own at once when it ends (`MetaStore::add_counts`, atomic across
//! processes), so the next run anywhere sees it. Without a daily budget nothing is read and
//! the spend waits in memory for the usage flush, as every other counter does: a fire's
//! store requests stay as they were. Runs that overlap each see the day as it was when they
//! started, so together they may pass the budget by what they spend at once.

use super::App;
use crate::core::pricing::{lookup, usd};
use crate::core::spend::{Limits, Meter};
use crate::ports::Counts;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The day counter of job runs' model spend (millionths of a US dollar).
pub const JOB_SPEND: &str = "job_usd_micros";
/// The day counter of chats' model spend (millionths of a US dollar).
pub const CHAT_SPEND: &str = "chat_usd_micros";

impl App {
    /// Counts one model call: `answered_by` the model named in the answer (else `asked`, the
    /// turn's own model, else the configured one), `input` prompt and `output` completion
    /// tokens. On a job run's meter when the turn has one, else as chat spend.
    pub(in crate::app) fn charge_call(&self, answered_by: &str, asked: Option<&str>, input: u64, output: u64) {
        let model = match (answered_by, asked) {
            (m, _) if !m.is_empty() => m,
            (_, Some(m)) => m,
            _ => self.inner.cfg.model.primary.model.as_str(),
        };
        let price = lookup(model, &self.inner.cfg.settings.pricing);
        if crate::app::budget::charge(price, input, output) {
            return;
        }
        if let Some(p) = price {
            let cost = crate::core::pricing::cost_micros(&p, input, output);
            self.inner.usage.add(self.inner.clock.now(), &[(CHAT_SPEND, cost)]);
        }
    }

    fn daily_budget_micros(&self) -> Option<i64> {
        self.inner.cfg.settings.cron.daily_budget_usd.map(|b| (b * 1e6).round() as i64)
    }

    /// The meter of a job run with the job's `max_tokens`: with a daily budget, the day's
    /// job spend so far is read (one store request); a failed read counts as nothing spent
    /// and is logged.
    pub(in crate::app) async fn job_meter(&self, max_tokens: Option<u64>) -> Arc<Mutex<Meter>> {
        let limits = Limits { max_tokens, daily_budget_micros: self.daily_budget_micros() };
        let mut spent = 0;
        if limits.daily_budget_micros.is_some() {
            let key = crate::app::usage::day_key(self.inner.clock.now().date_naive());
            match self.inner.store.get_counts(&[key]).await {
                Ok(days) => spent = days.first().and_then(|c| c.get(JOB_SPEND).copied()).unwrap_or(0),
                Err(e) => tracing::warn!(error = %e, "could not read today's job spend; this run counts from zero"),
            }
        }
        Arc::new(Mutex::new(Meter::new(limits, spent)))
    }

    /// Records what a finished job run spent: at once in the day's counter when a daily
    /// budget is set (the next run must see it), else with the next usage flush.
    pub(in crate::app) async fn record_job_spend(&self, meter: &Meter) {
        if meter.cost <= 0 {
            return;
        }
        let now = self.inner.clock.now();
        if meter.limits.daily_budget_micros.is_none() {
            self.inner.usage.add(now, &[(JOB_SPEND, meter.cost)]);
            return;
        }
        let key = crate::app::usage::day_key(now.date_naive());
        if let Err(e) = self.inner.store.add_counts(&key, &[(JOB_SPEND, meter.cost)]).await {
            tracing::warn!(error = %e, "could not add this run's spend to today's; kept for the usage flush");
            self.inner.usage.add(now, &[(JOB_SPEND, meter.cost)]);
        }
    }

    /// Ends a job run's meter: records its spend ([`App::record_job_spend`]) and returns why
    /// it stopped the run, if it did.
    pub(in crate::app) async fn finish_meter(&self, meter: &Arc<Mutex<Meter>>) -> Option<String> {
        let m = meter.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        self.record_job_spend(&m).await;
        m.stopped
    }

    /// The usage view's `budget` block: today's (UTC) job and chat spend against
    /// `cron.daily_budget_usd`, the price the configured model is counted at, and each job's
    /// `max_tokens`. `today` is today's counters (flushed).
    pub(in crate::app) fn budget_view(&self, today: &Counts, jobs: &[crate::core::job::Job]) -> Value {
        let get = |k: &str| today.get(k).copied().unwrap_or(0);
        let budget = self.inner.cfg.settings.cron.daily_budget_usd;
        let spent = get(JOB_SPEND);
        let model = self.inner.cfg.model.primary.model.as_str();
        let price = lookup(model, &self.inner.cfg.settings.pricing);
        let limits: Vec<Value> =
            jobs.iter().filter_map(|j| j.options.max_tokens.map(|m| json!({"job_id": j.id, "name": j.name, "max_tokens": m}))).collect();
        json!({
            "day": self.inner.clock.now().date_naive().format("%Y-%m-%d").to_string(),
            "daily_budget_usd": budget,
            "job_spend_usd": usd(spent),
            "chat_spend_usd": usd(get(CHAT_SPEND)),
            "left_usd": budget.map(|b| ((b - usd(spent)).max(0.0) * 1e6).round() / 1e6),
            "model": model,
            "model_price": price,
            "max_tokens": limits,
        })
    }
}
