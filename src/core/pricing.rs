//! Model prices: what a model call costs in US dollars, for the usage view's estimate and the
//! jobs' daily budget (docs/jobs.md#budgets), which use this one table. Prices are Hermes
//! 0.19.0's official-docs snapshot (`agent/usage_pricing.py`, `$ / million tokens`, input and
//! output) for the common models; `pricing.<model>` in config.yaml overrides or adds one. A
//! model with no price costs nothing here (the usage view lists it as unpriced). Pure.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One model's price in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Prompt tokens.
    pub input_cost_per_million: f64,
    /// Completion tokens.
    pub output_cost_per_million: f64,
}

/// Hermes 0.19.0's snapshot (model, input, output), `$ / 1M tokens`.
const TABLE: &[(&str, f64, f64)] = &[
    ("gpt-5.6-sol", 5.0, 30.0),
    ("gpt-5.6-terra", 2.5, 15.0),
    ("gpt-5.6-luna", 1.0, 6.0),
    ("gpt-4o", 2.5, 10.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("o3", 10.0, 40.0),
    ("o3-mini", 1.1, 4.4),
    ("claude-opus-4-8", 5.0, 25.0),
    ("claude-opus-4-7", 5.0, 25.0),
    ("claude-opus-4-6", 5.0, 25.0),
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-sonnet-5", 2.0, 10.0),
    ("claude-sonnet-4-6", 3.0, 15.0),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("claude-haiku-4-5", 1.0, 5.0),
    ("claude-opus-4-20250514", 15.0, 75.0),
    ("claude-sonnet-4-20250514", 3.0, 15.0),
    ("claude-3-5-sonnet-20241022", 3.0, 15.0),
    ("claude-3-5-haiku-20241022", 0.8, 4.0),
    ("deepseek-chat", 0.14, 0.28),
    ("deepseek-reasoner", 0.14, 0.28),
    ("gemini-2.5-pro", 1.25, 10.0),
    ("gemini-2.5-flash", 0.15, 0.6),
    ("gemini-2.0-flash", 0.1, 0.4),
];

/// The price of `model`: `overrides` by the exact name, then by the name without a
/// `provider/` prefix, then the snapshot by that name or by the longest snapshot name it
/// starts with followed by `-` (a dated variant such as `claude-sonnet-4-5-20250929`).
pub fn lookup(model: &str, overrides: &BTreeMap<String, ModelPrice>) -> Option<ModelPrice> {
    if let Some(p) = overrides.get(model) {
        return Some(*p);
    }
    let bare = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    if let Some(p) = overrides.get(&bare) {
        return Some(*p);
    }
    TABLE
        .iter()
        .filter(|(name, ..)| bare == *name || bare.strip_prefix(name).is_some_and(|rest| rest.starts_with('-')))
        .max_by_key(|(name, ..)| name.len())
        .map(|(_, i, o)| ModelPrice { input_cost_per_million: *i, output_cost_per_million: *o })
}

/// What `input` prompt and `output` completion tokens cost at `price`, in millionths of a
/// US dollar (rounded up, so a priced call never costs 0).
pub fn cost_micros(price: &ModelPrice, input: u64, output: u64) -> i64 {
    // $ per million tokens is millionths of a dollar per token.
    (input as f64 * price.input_cost_per_million + output as f64 * price.output_cost_per_million).ceil() as i64
}

/// Millionths of a dollar as dollars.
pub fn usd(micros: i64) -> f64 {
    micros as f64 / 1e6
}

/// Checks configured prices: finite and not negative.
pub fn check(prices: &BTreeMap<String, ModelPrice>) -> Result<(), String> {
    for (model, p) in prices {
        for v in [p.input_cost_per_million, p.output_cost_per_million] {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("the price of `{model}` must be a number of dollars per million tokens, 0 or more"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_prices_and_overrides() {
        let none = BTreeMap::new();
        assert_eq!(lookup("gpt-4o-mini", &none).map(|p| p.input_cost_per_million), Some(0.15));
        assert_eq!(lookup("openai/gpt-4o", &none).map(|p| p.output_cost_per_million), Some(10.0));
        let dated = lookup("claude-sonnet-4-5-20250929", &none).unwrap();
        assert_eq!((dated.input_cost_per_million, dated.output_cost_per_million), (3.0, 15.0));
        assert_eq!(lookup("gpt-4o-mini-2024", &none).map(|p| p.input_cost_per_million), Some(0.15), "longest match wins");
        assert_eq!(lookup("my-local-model", &none), None);
        let own =
            BTreeMap::from([("my-local-model".to_string(), ModelPrice { input_cost_per_million: 1.0, output_cost_per_million: 2.0 })]);
        assert_eq!(lookup("my-local-model", &own).map(|p| p.output_cost_per_million), Some(2.0));
        let cheaper = BTreeMap::from([("gpt-4o".to_string(), ModelPrice { input_cost_per_million: 0.0, output_cost_per_million: 0.0 })]);
        assert_eq!(lookup("gpt-4o", &cheaper).map(|p| p.input_cost_per_million), Some(0.0), "an override wins");
    }

    #[test]
    fn costs_in_micro_dollars() {
        let p = ModelPrice { input_cost_per_million: 2.5, output_cost_per_million: 10.0 };
        assert_eq!(cost_micros(&p, 1_000_000, 0), 2_500_000);
        assert_eq!(cost_micros(&p, 1000, 100), 3500);
        assert_eq!(cost_micros(&p, 1, 0), 3, "rounded up");
        assert_eq!(usd(3500), 0.0035);
        assert!(
            check(&BTreeMap::from([("m".to_string(), ModelPrice { input_cost_per_million: -1.0, output_cost_per_million: 0.0 })])).is_err()
        );
    }
}
