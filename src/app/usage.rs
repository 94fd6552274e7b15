//! Usage per UTC day — turns, job runs, model tokens and store requests — for the dashboard's
//! 14-day chart and cost estimate (docs/design.md#usage, docs/cost.md).
//!
//! Counting never costs the hot path a store request: counts collect in memory and are added
//! to the day's counter record (`MetaStore::add_counts`, atomic across processes) at most once
//! a minute, and when the process drains or a Lambda invocation ends after a minute without
//! a flush. A process killed between flushes loses at most that minute of counts: these are
//! statistics, not records.

use super::{App, AppError};
use crate::ports::Counts;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// The counters kept per day, in chart order.
pub const COUNTERS: [&str; 8] =
    ["turns", "job_runs", "input_tokens", "output_tokens", "store_requests", "model_seconds", "job_usd_micros", "chat_usd_micros"];

/// How long counts may wait in memory before a flush writes them.
const FLUSH_EVERY: Duration = Duration::seconds(60);

/// Days the dashboard shows.
pub const DAYS: usize = 14;

/// This process's unflushed counts.
#[derive(Default)]
pub struct Usage {
    /// Counts per day not yet written (a day boundary between flushes keeps both days apart).
    pending: Mutex<Pending>,
    /// The counting store's running total, when the app is wired with one (taken and reset
    /// at each flush).
    tally: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

#[derive(Default)]
struct Pending {
    days: BTreeMap<NaiveDate, BTreeMap<&'static str, i64>>,
    last_flush: Option<DateTime<Utc>>,
}

impl Usage {
    /// Adds `deltas` to `now`'s day.
    pub(in crate::app) fn add(&self, now: DateTime<Utc>, deltas: &[(&'static str, i64)]) {
        let mut p = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let day = p.days.entry(now.date_naive()).or_default();
        for (name, delta) in deltas {
            *day.entry(name).or_insert(0) += delta;
        }
    }

    /// Takes what is due to be written: everything when `force` or a minute passed since the
    /// last flush, else nothing.
    fn take(&self, now: DateTime<Utc>, force: bool) -> Vec<(NaiveDate, BTreeMap<&'static str, i64>)> {
        let mut p = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !force && p.last_flush.is_some_and(|t| now - t < FLUSH_EVERY) {
            return Vec::new();
        }
        p.last_flush = Some(now);
        let tallied = self.tally.get().map_or(0, |t| t.swap(0, Ordering::Relaxed));
        let requests = i64::try_from(tallied).unwrap_or(i64::MAX);
        if requests > 0 {
            *p.days.entry(now.date_naive()).or_default().entry("store_requests").or_insert(0) += requests;
        }
        std::mem::take(&mut p.days).into_iter().collect()
    }

    /// Puts back counts a failed flush could not write (the next flush retries them).
    fn put_back(&self, days: Vec<(NaiveDate, BTreeMap<&'static str, i64>)>) {
        let mut p = self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (day, counts) in days {
            let slot = p.days.entry(day).or_default();
            for (name, v) in counts {
                *slot.entry(name).or_insert(0) += v;
            }
        }
    }
}

/// The record key of a day's counters.
pub(in crate::app) fn day_key(day: NaiveDate) -> String {
    format!("usage:{}", day.format("%Y-%m-%d"))
}

impl App {
    /// Counts one finished chat turn and its tokens.
    pub(in crate::app) fn count_turn(&self, input_tokens: u64, output_tokens: u64, model_seconds: f64) {
        self.count(&[
            ("turns", 1),
            ("input_tokens", to_i64(input_tokens)),
            ("output_tokens", to_i64(output_tokens)),
            ("model_seconds", model_seconds.round() as i64),
        ]);
    }

    /// Counts one job run that reached the model, and its tokens.
    pub(in crate::app) fn count_job_run(&self, input_tokens: u64, output_tokens: u64, model_seconds: f64) {
        self.count(&[
            ("job_runs", 1),
            ("input_tokens", to_i64(input_tokens)),
            ("output_tokens", to_i64(output_tokens)),
            ("model_seconds", model_seconds.round() as i64),
        ]);
    }

    fn count(&self, deltas: &[(&'static str, i64)]) {
        self.inner.usage.add(self.inner.clock.now(), deltas);
    }

    /// Counts store requests from `tally`, the running total of the counting store this app
    /// was wired with (`store::counting::CountingStore::tally`). Set once.
    pub fn count_store_requests(&self, tally: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let _ = self.inner.usage.tally.set(tally);
    }

    /// Writes the counts collected in memory if a minute passed since the last write (or at
    /// once with `force`: drain, idle exit). Failures are logged and the counts kept for the
    /// next attempt; usage never fails a request.
    pub async fn flush_usage(&self, force: bool) {
        let now = self.inner.clock.now();
        let days = self.inner.usage.take(now, force);
        let mut failed = Vec::new();
        for (day, counts) in days {
            let deltas: Vec<(&str, i64)> = counts.iter().map(|(k, v)| (*k, *v)).filter(|(_, v)| *v != 0).collect();
            if deltas.is_empty() {
                continue;
            }
            if let Err(e) = self.inner.store.add_counts(&day_key(day), &deltas).await {
                tracing::warn!(error = %e, "could not write usage counters; kept for the next flush");
                failed.push((day, counts));
            }
        }
        if !failed.is_empty() {
            self.inner.usage.put_back(failed);
        }
    }

    /// The last [`DAYS`] days of usage (oldest first, today last, this process's unflushed
    /// counts included) and this month's estimated cost (docs/cost.md).
    pub async fn usage(&self) -> Result<Value, AppError> {
        self.flush_usage(true).await;
        let today = self.inner.clock.now().date_naive();
        let days: Vec<NaiveDate> = (0..DAYS).rev().map(|i| today - Duration::days(i as i64)).collect();
        let keys: Vec<String> = days.iter().map(|d| day_key(*d)).collect();
        let counts = self.inner.store.get_counts(&keys).await?;
        let rows: Vec<Value> = days.iter().zip(&counts).map(|(d, c)| day_row(*d, c)).collect();
        let estimate = estimate(&counts, self.inner.store.kind());
        let jobs = self.inner.store.list_jobs().await?;
        let budget = self.budget_view(counts.last().unwrap_or(&Counts::new()), &jobs);
        Ok(json!({"days": rows, "counters": COUNTERS, "estimate": estimate, "budget": budget}))
    }
}

fn day_row(day: NaiveDate, c: &Counts) -> Value {
    let mut row = json!({"day": day.format("%Y-%m-%d").to_string()});
    for name in COUNTERS {
        row[name] = json!(c.get(name).copied().unwrap_or(0));
    }
    row
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Published prices (us-east-1 on-demand, read 2026-12-01; docs/cost.md §1).
mod price {
    /// $ per Lambda request.
    pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
    /// $ per GB-second, arm64.
    pub const LAMBDA_GB_S: f64 = 0.000_013_333_4;
    /// The template's `MemorySize` in GB.
    pub const LAMBDA_GB: f64 = 0.125;
    /// $ per DynamoDB request, assuming the measured mix (≈ 2 write units and ≈ 0.6 read
    /// units per request, docs/cost.md §1).
    pub const DYNAMODB_REQUEST: f64 = (2.0 * 0.625 + 0.6 * 0.125) / 1e6;
}

/// This month's cost at the last 14 days' daily average, without free tiers; the model's bill
/// as the price table (`core::pricing`) prices the calls. On SQLite the store costs nothing
/// and the machine is the user's.
fn estimate(days: &[Counts], store: &str) -> Value {
    let sum = |name: &str| days.iter().map(|c| c.get(name).copied().unwrap_or(0)).sum::<i64>() as f64;
    let n = days.len().max(1) as f64;
    let per_month = |v: f64| v / n * 30.0;
    let invocations = per_month(sum("turns") + sum("job_runs"));
    let gb_s = per_month(sum("model_seconds")) * price::LAMBDA_GB;
    let lambda = invocations * price::LAMBDA_REQUEST + gb_s * price::LAMBDA_GB_S;
    let dynamodb = if store == "dynamodb" { per_month(sum("store_requests")) * price::DYNAMODB_REQUEST } else { 0.0 };
    let model = per_month(sum("job_usd_micros") + sum("chat_usd_micros")) / 1e6;
    json!({
        "basis": "last 14 days' daily average × 30; Lambda arm64 at 128 MB + DynamoDB on-demand, us-east-1 list prices read 2026-12-01; no free tiers; model tokens at the price table's (Hermes 0.19.0's snapshot and `pricing:`)",
        "lambda_usd_per_month": round_cents(lambda),
        "store_usd_per_month": round_cents(dynamodb),
        "model_usd_per_month": round_cents(model),
        "total_usd_per_month": round_cents(lambda + dynamodb + model),
        "tokens_per_month": per_month(sum("input_tokens") + sum("output_tokens")).round(),
    })
}

fn round_cents(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn counts_wait_a_minute_unless_forced_and_keep_days_apart() {
        let u = Usage::default();
        u.add(at("2026-03-01T23:59:30Z"), &[("turns", 1)]);
        assert_eq!(u.take(at("2026-03-01T23:59:31Z"), false).len(), 1, "the first flush writes at once");
        u.add(at("2026-03-01T23:59:50Z"), &[("turns", 2)]);
        u.add(at("2026-03-02T00:00:10Z"), &[("turns", 3)]);
        let tally = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
        let _ = u.tally.set(tally);
        assert!(u.take(at("2026-03-02T00:00:20Z"), false).is_empty(), "within a minute of the last flush");
        let days = u.take(at("2026-03-02T00:00:40Z"), true);
        assert_eq!(days.len(), 2);
        assert_eq!(days[0].1["turns"], 2);
        assert_eq!(days[1].1["turns"], 3);
        assert_eq!(days[1].1["store_requests"], 1);
    }

    #[test]
    fn a_failed_flush_keeps_its_counts() {
        let u = Usage::default();
        u.add(at("2026-03-01T10:00:00Z"), &[("turns", 4)]);
        let days = u.take(at("2026-03-01T10:00:01Z"), true);
        u.put_back(days);
        let again = u.take(at("2026-03-01T10:00:02Z"), true);
        assert_eq!(again[0].1["turns"], 4);
    }

    #[test]
    fn the_estimate_scales_the_daily_average_to_a_month() {
        let mut day = Counts::new();
        day.insert("turns".into(), 100);
        day.insert("job_runs".into(), 10);
        day.insert("model_seconds".into(), 650);
        day.insert("store_requests".into(), 540);
        let v = estimate(&vec![day; 14], "dynamodb");
        // 3,300 invocations, 19,500 s × 0.125 GB, 16,200 requests.
        let lambda = 3300.0 * 0.2 / 1e6 + 19_500.0 * 0.125 * 0.000_013_333_4;
        let store = 16_200.0 * (2.0 * 0.625 + 0.6 * 0.125) / 1e6;
        assert!((v["lambda_usd_per_month"].as_f64().unwrap() - round_cents(lambda)).abs() < 1e-9, "{v}");
        assert!((v["store_usd_per_month"].as_f64().unwrap() - round_cents(store)).abs() < 1e-9, "{v}");
        assert_eq!(estimate(&[Counts::new()], "sqlite")["total_usd_per_month"], 0.0);
    }
}
