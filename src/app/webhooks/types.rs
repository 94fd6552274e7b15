//! What the webhook room's files share: one accepted delivery ([`Accepted`]) and the
//! per-route rate windows of this process ([`Rates`]).

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// One delivery that passed its checks, ready to run.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The route's name.
    pub route: String,
    /// The delivery id (a header's, else a millisecond stamp).
    pub delivery_id: String,
    /// The event type.
    pub event: String,
    /// The rendered prompt (or, for `deliver_only`, the message).
    pub prompt: String,
    /// The route's `deliver_extra`, rendered over the payload.
    pub extra: Map<String, Value>,
}

/// Hermes' rate window: at most `limit` deliveries per route in any 60 s, counted in this
/// process (as Hermes counts them in its one process).
#[derive(Debug, Default)]
pub struct Rates(Mutex<HashMap<String, VecDeque<DateTime<Utc>>>>);

impl Rates {
    /// Records a delivery on `route` at `now` unless `limit` were recorded in the last
    /// minute; false when it is over the limit (nothing recorded).
    pub fn admit(&self, route: &str, limit: u32, now: DateTime<Utc>) -> bool {
        let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let window = map.entry(route.to_string()).or_default();
        let cutoff = now - Duration::seconds(60);
        while window.front().is_some_and(|t| *t < cutoff) {
            window.pop_front();
        }
        if window.len() >= limit as usize {
            return false;
        }
        window.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_admits_limit_per_minute_per_route() {
        let rates = Rates::default();
        // Any instant: the window only compares the instants it is given.
        let t0 = DateTime::parse_from_rfc3339("2026-03-29T00:59:30Z").unwrap().with_timezone(&Utc);
        assert!(rates.admit("a", 2, t0) && rates.admit("a", 2, t0));
        assert!(!rates.admit("a", 2, t0 + Duration::seconds(30)), "third within a minute");
        assert!(rates.admit("b", 2, t0), "another route has its own window");
        assert!(rates.admit("a", 2, t0 + Duration::seconds(61)), "the window moved");
    }
}
