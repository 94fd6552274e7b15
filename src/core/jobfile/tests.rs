//! jobs.json parsing: the seed verbatim, Hermes' own form, refusals.

use super::*;
use proptest::prelude::*;

const SEED: &str = include_str!("../../../tests/fixtures/seed-jobs.json");

fn now() -> DateTime<Utc> {
    "2026-12-01T06:00:00Z".parse().unwrap()
}

#[test]
fn the_seed_loads_unchanged() {
    let file = parse_file(SEED, "jobs.json", now(), Tz::UTC).unwrap();
    assert!(file.skipped.is_empty());
    let jobs = file.jobs;
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids, ["daily-news-summary", "weekly-code-review", "health-check"]);
    assert_eq!(jobs[0].skills, ["ai-news-summarizer"]);
    assert_eq!(jobs[0].deliver, ["telegram:-1001234567890"]);
    assert_eq!(jobs[0].prompt, "每天早上 8 点抓取 AI 行业新闻并生成摘要");
    assert_eq!(jobs[0].schedule, Schedule::Cron { expr: "0 8 * * *".into() });
    assert_eq!(jobs[1].deliver, ["discord:123456789"]);
    assert_eq!(jobs[1].skills, ["code-review-assistant"]);
    assert_eq!(jobs[2].skills, ["server-health-checker"]);
    assert_eq!(jobs[2].deliver, ["telegram:123456789"]);
    assert!(jobs.iter().all(|j| j.enabled && j.extra.is_empty()));
}

#[test]
fn hermes_own_form_with_parsed_schedules_and_unknown_fields() {
    let text = r#"[
      {"id":"a","name":"A","prompt":"p","skills":["s1","s2"],"deliver":"telegram:-100123, origin","repeat":{"times":3,"completed":1},
       "schedule":{"kind":"cron","expr":"0 9 * * 1-5","display":"0 9 * * 1-5"},"next_run_at":"2026-12-02T09:00:00Z","custom":42},
      {"id":"b","prompt":"p","schedule":{"kind":"interval","minutes":30},"repeat":"forever"},
      {"id":"c","prompt":"p","schedule":{"kind":"once","run_at":"2026-12-24T18:00:00"},"repeat":"once","timezone":"Europe/Berlin"}
    ]"#;
    let jobs = parse_file(text, "jobs.json", now(), Tz::UTC).unwrap().jobs;
    assert_eq!(jobs[0].deliver, ["telegram:-100123", "origin"]);
    assert_eq!(jobs[0].repeat, Repeat { times: Some(3), completed: 1 });
    assert_eq!(jobs[0].extra.get("custom"), Some(&serde_json::json!(42)));
    assert!(jobs[0].extra.contains_key("next_run_at"), "Hermes' state fields are kept, not rejected");
    assert_eq!(jobs[1].schedule, Schedule::Interval { seconds: 1800 });
    assert_eq!(jobs[2].schedule, Schedule::Once { at: "2026-12-24T17:00:00Z".parse().unwrap() });
    assert_eq!(jobs[2].repeat.times, Some(1));
}

#[test]
fn a_bad_job_is_skipped_with_its_reason_and_the_others_load() {
    let cases = [
        (
            r#"{"jobs": [{"id":"ok","prompt":"p","schedule":"every 1h"}, {"id":"bad","prompt":"p","schedule":"whenever"}]}"#,
            1,
            "accepted forms",
        ),
        (r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"x","schedule":"every 1h"}]"#, 1, "prompt"),
        (
            r#"[{"id":"x","prompt":"p","schedule":"every 1h","deliver":"telegram:a b"},{"id":"ok","prompt":"p","schedule":"every 1h"}]"#,
            0,
            "delivery target",
        ),
        (r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"ok","prompt":"p","schedule":"every 2h"}]"#, 1, "duplicate id"),
        (r#"[{"id":"x y","prompt":"p","schedule":"every 1h"},{"id":"ok","prompt":"p","schedule":"every 1h"}]"#, 0, "invalid id"),
        (
            r#"[{"id":"x","prompt":"p","schedule":"every 1h","timezone":"Mars/Base"},{"id":"ok","prompt":"p","schedule":"every 1h"}]"#,
            0,
            "IANA",
        ),
        (r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"x","prompt":"p","schedule":"every 1h","repeat":-1}]"#, 1, "repeat"),
        (
            r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"s","prompt":"p","schedule":"every 1h","script":7}]"#,
            1,
            "`script` must be a string",
        ),
        (
            r#"[{"id":"n","prompt":"p","schedule":"every 1h","no_agent":true},{"id":"ok","prompt":"p","schedule":"every 1h"}]"#,
            0,
            "no_agent=True requires a script",
        ),
        (
            r#"[{"id":"n","schedule":"every 1h","script":"a.sh","no_agent":"yes"},{"id":"ok","prompt":"p","schedule":"every 1h"}]"#,
            0,
            "`no_agent` must be true or false",
        ),
        (
            r#"[{"id":"ok","prompt":"p","schedule":"every 1h"},{"id":"w","prompt":"p","schedule":"every 1h","script":"a.sh","workdir":"rel"}]"#,
            1,
            "`workdir` must be an absolute path",
        ),
        (r#"[{"id":"ok","prompt":"p","schedule":"every 1h"}, 7]"#, 1, "JSON object"),
    ];
    for (text, index, needle) in cases {
        let f = parse_file(text, "/h/cron/jobs.json", now(), Tz::UTC).unwrap();
        assert_eq!(f.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["ok"], "{text}");
        assert_eq!(f.skipped.len(), 1, "{text}");
        assert_eq!(f.skipped[0].index, index, "{text}");
        assert!(f.skipped[0].reason.contains(needle), "{text}: {}", f.skipped[0]);
    }
}

#[test]
fn a_file_that_is_not_a_job_list_is_refused() {
    for (text, needle) in [(r#"{"jobs": 3}"#, "expected"), (r#"{"jobs": ["#, "not valid JSON"), ("42", "expected")] {
        let e = parse_file(text, "/h/cron/jobs.json", now(), Tz::UTC).unwrap_err();
        assert!(e.to_string().contains(needle) && e.to_string().starts_with("/h/cron/jobs.json: job #"), "{e}");
    }
}

#[test]
fn new_past_one_shots_are_skipped_stored_ones_kept() {
    let text = r#"[{"id":"old","prompt":"p","schedule":"2020-01-01T00:00:00Z"},{"id":"new","prompt":"p","schedule":"2020-01-01"}]"#;
    let mut f = parse_file(text, "jobs.json", now(), Tz::UTC).unwrap();
    assert_eq!(f.jobs.len(), 2);
    f.skip_new_past_one_shots(|id| id == "old");
    assert_eq!(f.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["old"]);
    assert_eq!(f.skipped[0].index, 1);
    assert!(f.skipped[0].reason.contains("in the past"), "{}", f.skipped[0]);
}

#[test]
fn skills_and_legacy_skill_naming_the_same_skill_count_once() {
    let j = parse_job(
        &serde_json::json!({"id":"x","prompt":"p","schedule":"every 1h","skills":["news","news","code"],"skill":"news"}),
        now(),
        Tz::UTC,
    )
    .unwrap();
    assert_eq!(j.skills, ["news", "code"]);
}

#[test]
fn past_one_shots_parse_but_are_flagged() {
    let j = parse_job(&serde_json::json!({"id":"x","prompt":"p","schedule":"2020-01-01T00:00:00Z"}), now(), Tz::UTC).unwrap();
    assert!(j.past_one_shot);
}

proptest! {
    #[test]
    fn arbitrary_json_never_panics(s in "\\PC{0,80}") {
        let _ = parse_file(&s, "f", now(), Tz::UTC);
    }

    #[test]
    fn arbitrary_job_objects_never_panic(keys in proptest::collection::vec(("(id|name|schedule|prompt|skill|skills|deliver|deliver_to|repeat|enabled|origin|timezone)", "\\PC{0,12}"), 0..8)) {
        let mut o = serde_json::Map::new();
        for (k, v) in keys { o.insert(k, serde_json::Value::String(v)); }
        let _ = parse_job(&serde_json::Value::Object(o), now(), Tz::UTC);
    }
}

#[test]
fn hermes_script_and_no_agent_jobs_load_with_their_fields() {
    let text = r#"[
      {"id":"watch","name":"watchdog","schedule":"every 5m","script":"disk.sh","no_agent":true,"prompt":"","workdir":null},
      {"id":"feed","prompt":"Summarize.","schedule":"0 8 * * *","script":"feed.py","no_agent":false,"workdir":"/srv/repo"}
    ]"#;
    let f = parse_file(text, "jobs.json", now(), Tz::UTC).unwrap();
    assert!(f.skipped.is_empty(), "{:?}", f.skipped);
    let (w, d) = (&f.jobs[0], &f.jobs[1]);
    assert_eq!((w.script.as_deref(), w.no_agent, w.workdir.as_deref(), w.prompt.as_str()), (Some("disk.sh"), true, None, ""));
    assert_eq!((d.script.as_deref(), d.no_agent, d.workdir.as_deref()), (Some("feed.py"), false, Some("/srv/repo")));
    assert!(w.extra.is_empty() && d.extra.is_empty(), "known fields are not kept as unknown ones");
    let job = crate::core::job::Job::from_spec(d, true, now(), Tz::UTC);
    let back = serde_json::to_value(&job).unwrap();
    assert_eq!((back["script"].as_str(), back["no_agent"].as_bool(), back["workdir"].as_str()), (Some("feed.py"), None, Some("/srv/repo")));
    let again: crate::core::job::Job = serde_json::from_value(back).unwrap();
    assert_eq!(again, job, "the stored job round-trips");
    // A job without a prompt still needs one unless the script is the job.
    let e = parse_job(&serde_json::json!({"id":"x","schedule":"every 1h","script":"a.sh"}), now(), Tz::UTC).unwrap_err();
    assert!(e.contains("`prompt`"), "{e}");
}

#[test]
fn hermes_run_options_load_and_a_wrong_type_skips_only_that_job() {
    // As Hermes 0.19.0's `create_job` writes them (null when unset).
    let text = r#"{"jobs": [
      {"id":"a1b2c3d4e5f6","name":"digest","prompt":"p","schedule":{"kind":"cron","expr":"0 8 * * *"},"model":"m2",
       "provider":"custom","base_url":"http://127.0.0.1:9/v1/","context_from":["0123456789ab"],"enabled_toolsets":["web"],
       "attach_to_session":true,"script":null,"no_agent":false,"workdir":null},
      {"id":"b","prompt":"p","schedule":"every 1h","provider":null,"base_url":null,"context_from":null,"enabled_toolsets":null},
      {"id":"c","prompt":"p","schedule":"every 1h","attach_to_session":"yes"}
    ]}"#;
    let file = parse_file(text, "jobs.json", now(), Tz::UTC).unwrap();
    assert_eq!(file.jobs.len(), 2);
    let a = &file.jobs[0];
    assert_eq!(a.options.context_from, ["0123456789ab"]);
    assert_eq!(a.options.enabled_toolsets, ["web"]);
    assert_eq!((a.options.provider.as_deref(), a.options.base_url.as_deref()), (Some("custom"), Some("http://127.0.0.1:9/v1")));
    assert_eq!((a.options.attach_to_session, a.model.as_deref()), (Some(true), Some("m2")));
    assert!(!a.extra.contains_key("provider") && !a.extra.contains_key("context_from"), "{:?}", a.extra);
    assert_eq!(file.jobs[1].options, crate::core::job_options::JobOptions::default());
    assert_eq!(file.skipped.len(), 1);
    assert_eq!(file.skipped[0].id.as_deref(), Some("c"));
    assert!(file.skipped[0].reason.contains("`attach_to_session`"), "{}", file.skipped[0].reason);
    // Stored flat under Hermes' names, and read back.
    let job = crate::core::job::Job::from_spec(a, true, now(), Tz::UTC);
    let doc = serde_json::to_value(&job).unwrap();
    assert_eq!(doc["provider"], "custom");
    assert_eq!(doc["context_from"], serde_json::json!(["0123456789ab"]));
    let back: crate::core::job::Job = serde_json::from_value(doc).unwrap();
    assert_eq!(back, job);
}
