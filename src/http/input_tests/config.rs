//! `config::parse_yaml` and `load_settings` on YAML-ish text and on random values under the
//! real key tree: never a panic, and every error names a key.

use super::cases;
use super::strategies::{int_like, object, one_of, s, text};
use crate::config::{ConfigError, Env, load_settings, parse_yaml};
use proptest::prelude::*;
use serde_json::Value;

/// The dotted key of a config error must start at a real top-level key.
fn assert_names_a_key(e: &ConfigError, known: &Value) {
    let ConfigError::Invalid { key, .. } = e else { panic!("unexpected error kind: {e}") };
    let top = key.split(['.', '[']).next().unwrap_or_default();
    assert!(key == "(document)" || known.get(top).is_some(), "error does not name a config key: {e}");
    assert!(e.to_string().contains(&format!("key `{key}`")), "{e}");
}

fn yaml_line() -> BoxedStrategy<String> {
    let keys = &["timezone", "model", "store", "session_reset", "platforms", "cron", "max_queued", "telegram", "at_hour", "kind", "- x"];
    let values = &[
        "",
        "~",
        "null",
        "[",
        "{",
        "]",
        "}",
        "&a x",
        "*a",
        "*nope",
        "!!binary aGk=",
        "!!float x",
        "|",
        ">",
        "'open",
        "\"esc\\q\"",
        "0x1F",
        "1e999",
        "-.inf",
        ".nan",
        "2024-01-01",
        "18446744073709551616",
        "-1",
        "yes",
        "{a: [1, {b: c}]}",
        "[1, 2",
        "? complex",
        "%YAML 1.2",
        "--- ",
        "...",
    ];
    (
        0usize..6,
        proptest::sample::select(&keys[..]),
        prop_oneof![3 => proptest::sample::select(&values[..]).prop_map(str::to_string), 1 => "\\PC{0,12}"],
    )
        .prop_map(|(indent, k, v)| format!("{}{k}: {v}", " ".repeat(indent)))
        .boxed()
}

/// Random values under the real key tree of `Settings::default()`.
fn settings_doc(known: &Value, depth: usize) -> BoxedStrategy<Value> {
    match known {
        Value::Object(m) if depth < 4 && !m.is_empty() => {
            object(m.iter().map(|(k, v)| (format!("?{k}"), settings_doc(v, depth + 1))).collect())
        }
        Value::Object(_) => {
            let over = object(vec![
                ("mode", one_of(&["idle", "daily", "both", "none"])),
                ("idle_minutes", int_like()),
                ("at_hour", int_like()),
                ("notify", any::<bool>().prop_map(Value::Bool).boxed()),
            ]);
            proptest::collection::btree_map(
                one_of(&["telegram", "dm", "group", "thread", "room"]).prop_map(|k| k.as_str().unwrap_or_default().to_string()),
                over,
                0..3,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed()
        }
        Value::Bool(_) => prop_oneof![3 => any::<bool>().prop_map(Value::Bool), 1 => int_like()].boxed(),
        Value::Number(_) => prop_oneof![3 => int_like(), 1 => s(text())].boxed(),
        Value::Array(_) => proptest::collection::vec(prop_oneof![s(text()), int_like()], 0..3).prop_map(Value::Array).boxed(),
        _ => one_of(&[
            "Europe/Berlin",
            "Mars/Olympus",
            "openai",
            "offline",
            "sqlite",
            "dynamodb",
            "queue",
            "interrupt",
            "http://127.0.0.1:1/v1",
            "ftp://x",
            "builtin",
            "chronos",
            "async",
            "",
        ]),
    }
}

#[test]
fn config_documents_parse_or_name_the_key() {
    let known = serde_json::to_value(crate::config::Settings::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("hz-input-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.yaml");
    proptest!(cases(128), |(lines in proptest::collection::vec(yaml_line(), 0..8), raw in "\\PC{0,60}")| {
        for text in [lines.join("\n"), raw] {
            if let Err(e) = parse_yaml(&text, "config.yaml") {
                assert_names_a_key(&e, &known);
            }
        }
    });
    proptest!(cases(128), |(doc in settings_doc(&known, 0))| {
        let text = serde_norway::to_string(&doc).unwrap();
        std::fs::write(&file, &text).unwrap();
        match load_settings(&dir, Some(&file), &Env::default()) {
            Ok(_) => {}
            Err(e) => assert_names_a_key(&e, &known),
        }
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// Refuses `text` as an invalid document within `limit`.
fn refused_within(text: &str, limit: std::time::Duration) {
    let started = std::time::Instant::now();
    let e = parse_yaml(text, "config.yaml").expect_err("refused");
    assert!(matches!(&e, ConfigError::Invalid { key, .. } if key == "(document)"), "{e}");
    assert!(started.elapsed() < limit, "took {:?} to refuse {} bytes: {e}", started.elapsed(), text.len());
}

#[test]
fn alias_bombs_and_deep_block_nesting_are_refused_quickly() {
    let mut bomb = String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..9u8 {
        let (prev, cur) = ((b'a' + i - 1) as char, (b'a' + i) as char);
        bomb.push_str(&format!("{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
    }
    let block = format!("model:\n{}x\n", "- ".repeat(100_000));
    let maps: String = (0..3_000).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
    for text in [bomb, block, maps] {
        refused_within(&text, std::time::Duration::from_secs(2));
    }
}

/// The YAML parser's time grows with the square of flow nesting (a 200 KB `[[[…` took ~115 s);
/// `parse_yaml` refuses nesting past 64 levels before parsing.
#[test]
fn deep_flow_nesting_is_refused_quickly() {
    refused_within(&format!("model: {}{}", "[".repeat(30_000), "]".repeat(30_000)), std::time::Duration::from_secs(1));
}
