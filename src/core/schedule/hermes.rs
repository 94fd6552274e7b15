//! A [`Schedule`] as Hermes 0.19.0 stores it in a job (`cron/jobs.py` `parse_schedule`):
//! `{"kind":"cron","expr","display"}`, `{"kind":"interval","minutes","display"}`,
//! `{"kind":"once","run_at","display"}`. The way back (jobs.json, `import`) is
//! [`super::parse_value`]; a schedule written out here reads back as the same schedule.

use super::Schedule;
use chrono::SecondsFormat;
use serde_json::{Value, json};

impl Schedule {
    /// Hermes' parsed schedule object, with Hermes' `display` text (`every 120m`, the cron
    /// expression, `once at 2026-12-01 09:00`); `run_at` is an ISO time with its `+00:00`
    /// offset, as Python's `isoformat()` writes it.
    pub fn to_hermes(&self) -> Value {
        match self {
            Schedule::Cron { expr } => json!({"kind": "cron", "expr": expr, "display": expr}),
            Schedule::Interval { seconds } if seconds % 60 == 0 => {
                let minutes = seconds / 60;
                json!({"kind": "interval", "minutes": minutes, "display": format!("every {minutes}m")})
            }
            Schedule::Interval { seconds } => {
                // Below a whole minute only from our own forms (`every 90s`): minutes as a number.
                let minutes = *seconds as f64 / 60.0;
                json!({"kind": "interval", "minutes": minutes, "display": format!("every {seconds}s")})
            }
            Schedule::Once { at } => json!({
                "kind": "once",
                "run_at": at.to_rfc3339_opts(SecondsFormat::AutoSi, false),
                "display": format!("once at {}", at.format("%Y-%m-%d %H:%M")),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Schedule, parse_value};
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    #[test]
    fn each_kind_is_hermes_object_and_reads_back_as_the_same_schedule() {
        let now = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
        let at = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap();
        let cases = [
            (Schedule::Cron { expr: "0 8 * * *".into() }, json!({"kind": "cron", "expr": "0 8 * * *", "display": "0 8 * * *"})),
            (Schedule::Interval { seconds: 7200 }, json!({"kind": "interval", "minutes": 120, "display": "every 120m"})),
            (Schedule::Interval { seconds: 90 }, json!({"kind": "interval", "minutes": 1.5, "display": "every 90s"})),
            (Schedule::Once { at }, json!({"kind": "once", "run_at": "2026-12-01T09:00:00+00:00", "display": "once at 2026-12-01 09:00"})),
        ];
        for (s, want) in cases {
            assert_eq!(s.to_hermes(), want);
            assert_eq!(parse_value(&want, now, chrono_tz::UTC).unwrap(), s, "{want}");
        }
    }
}
