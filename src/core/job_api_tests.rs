//! Tests of Hermes' `/api/jobs` rules: the create checks in Hermes' order and words, the PATCH
//! whitelist, the path id rule and the job object's keys.

use super::*;
use crate::core::jobfile::parse_job;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn job(v: Value) -> Job {
    let now = at("2026-11-01T00:00:00Z");
    Job::from_spec(&parse_job(&v, now, Tz::UTC).unwrap(), false, now, Tz::UTC)
}

#[test]
fn create_checks_run_in_hermes_order_with_hermes_words() {
    let long = "x".repeat(201);
    let cases = [
        (json!({"schedule": "every 1h", "prompt": "p"}), "Name is required"),
        (json!({"name": "  ", "schedule": "every 1h"}), "Name is required"),
        (json!({"name": long, "schedule": "every 1h"}), "Name must be ≤ 200 characters"),
        (json!({"name": "n"}), "Schedule is required"),
        (json!({"name": "n", "schedule": " "}), "Schedule is required"),
        (json!({"name": "n", "schedule": "every 1h", "prompt": "x".repeat(5001)}), "Prompt must be ≤ 5000 characters"),
        (json!({"name": "n", "schedule": "every 1h", "repeat": 0}), "Repeat must be a positive integer"),
        (json!({"name": "n", "schedule": "every 1h", "repeat": -2}), "Repeat must be a positive integer"),
        (json!({"name": "n", "schedule": "every 1h", "repeat": "once"}), "Repeat must be a positive integer"),
        (json!({"name": "n", "schedule": "every 1h", "repeat": 1.5}), "Repeat must be a positive integer"),
        (json!([1]), "the body must be a JSON object"),
    ];
    for (body, want) in cases {
        assert_eq!(create_body(&body).unwrap_err(), want, "{body}");
    }
}

#[test]
fn create_trims_defaults_deliver_to_local_and_keeps_our_fields() {
    let out = create_body(&json!({"name": " n ", "schedule": " 0 8 * * * ", "prompt": "p", "repeat": 3, "script": "a.sh"})).unwrap();
    assert_eq!(out, json!({"name": "n", "schedule": "0 8 * * *", "prompt": "p", "repeat": 3, "script": "a.sh", "deliver": "local"}));
    // Our `id` stands in for a missing name; Hermes' parsed schedule object is taken.
    let out = create_body(&json!({"id": "daily", "schedule": {"kind": "interval", "minutes": 5}, "deliver": "telegram:1"})).unwrap();
    assert_eq!(out, json!({"id": "daily", "schedule": {"kind": "interval", "minutes": 5}, "deliver": "telegram:1"}));
    let prompt = "é".repeat(5000);
    assert!(create_body(&json!({"name": "n", "schedule": "every 1h", "prompt": prompt})).is_ok(), "characters, not bytes");
}

#[test]
fn update_keeps_hermes_fields_and_our_extensions_and_drops_the_rest() {
    let out = update_fields(&json!({"name": "x", "evil_field": 1, "__proto__": "h", "script": "a.sh", "id": "other"})).unwrap();
    assert_eq!(out, json!({"name": "x", "script": "a.sh"}));
    assert_eq!(update_fields(&json!({"evil_field": 1})).unwrap_err(), NO_VALID_FIELDS);
    assert_eq!(update_fields(&json!({})).unwrap_err(), NO_VALID_FIELDS);
    assert_eq!(update_fields(&json!({"prompt": "x".repeat(5001)})).unwrap_err(), "Prompt must be ≤ 5000 characters");
}

#[test]
fn path_ids_are_hermes_ids_and_ours() {
    for ok in ["aabbccddeeff", "daily-news-summary", "agent_0042", "standup"] {
        assert!(valid_path_id(ok), "{ok}");
    }
    for bad in ["not-a-valid-hex!", "a b", "", "../x", &"a".repeat(65)] {
        assert!(!valid_path_id(bad), "{bad}");
    }
}

#[test]
fn the_job_object_has_hermes_keys_filled_from_ours() {
    let mut j = job(json!({"id": "aabbccddeeff", "name": "brief", "schedule": "every 2h", "prompt": "p", "skills": ["news", "wx"],
        "deliver": ["telegram:1", "discord:2"], "repeat": 3, "context_from": "other", "provider": "custom"}));
    let v = hermes_job(&j);
    let keys = super::HERMES_JOB_KEYS;
    for k in keys {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    assert_eq!(v["schedule"], json!({"kind": "interval", "minutes": 120, "display": "every 120m"}));
    assert_eq!((v["schedule_text"].as_str(), v["schedule_display"].as_str()), (Some("every 2h"), Some("every 2 hours")));
    assert_eq!((v["skill"].as_str(), v["deliver"].as_str()), (Some("news"), Some("telegram:1,discord:2")));
    assert_eq!(v["repeat"], json!({"times": 3, "completed": 0}));
    assert_eq!((v["context_from"].clone(), v["enabled_toolsets"].clone()), (json!(["other"]), Value::Null));
    assert_eq!((v["enabled"].as_bool(), v["state"].as_str()), (Some(true), Some("scheduled")));
    // Paused is disabled in Hermes' sense; a failed delivery is the delivery error.
    j.state = JobState::Paused;
    j.last_status = Some(RunStatus::DeliveryFailed);
    j.last_error = Some("telegram: 403".into());
    let v = hermes_job(&j);
    assert_eq!((v["enabled"].as_bool(), v["state"].as_str()), (Some(false), Some("paused")));
    assert_eq!(v["last_delivery_error"], "telegram: 403");
    // No target: `origin` when the job has one, else `local`.
    let v = hermes_job(&job(json!({"id": "l", "schedule": "0 8 * * *", "prompt": "p"})));
    assert_eq!((v["deliver"].as_str(), v["skill"].clone()), (Some("local"), Value::Null));
}
