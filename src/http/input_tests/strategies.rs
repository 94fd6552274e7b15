//! Generators for the bad-input properties: mostly well-formed wire objects (Telegram
//! updates, Discord interactions, API messages, jobs, fire tokens) with a few fields broken,
//! plus arbitrary JSON, bytes, numbers and text.

use axum::http::HeaderValue;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Text with unicode, control characters, whitespace-only values and session commands.
pub(super) fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "\\PC{0,24}",
        1 => "[ \t\n]{0,3}",
        1 => "[\u{0}-\u{1f}\u{7f}\u{200b}\u{feff}]{1,4}\\PC{0,4}",
        1 => "/(new|reset|stop|status|help|start|queue|q|resume|nope)(@bot)?( \\PC{0,12})?",
        1 => "[a-z0-9:_-]{1,12}",
    ]
    .boxed()
}

/// Ids: mostly well-formed, sometimes any text (colons, spaces, unicode, empty).
pub(super) fn ident() -> BoxedStrategy<String> {
    prop_oneof![6 => "[A-Za-z0-9_.-]{1,16}", 1 => text()].boxed()
}

/// Numbers as JSON: mostly plausible ids, sometimes extreme, fractional, quoted, or too big
/// for any Rust integer (`__HUGE_…__` is unquoted into a bare number by [`render`]).
pub(super) fn int_like() -> BoxedStrategy<Value> {
    prop_oneof![
        24 => (1i64..10_000).prop_map(Value::from),
        4 => any::<i64>().prop_map(Value::from),
        1 => (-5i64..1).prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        1 => "-?[0-9]{19,40}".prop_map(|d| Value::String(format!("__HUGE_{d}__"))),
        1 => "-?[0-9]{1,6}".prop_map(Value::String),
    ]
    .boxed()
}

pub(super) fn arb_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool), int_like(), text().prop_map(Value::String),];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map("\\PC{0,6}", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A JSON object of well-formed fields (a `?name` is optional: absent a third of the time),
/// then (in 15 % of cases) one or two mutations: a field removed or replaced by arbitrary JSON.
pub(super) fn object<K: Into<String>>(fields: Vec<(K, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let fields: Vec<(String, BoxedStrategy<Value>)> = fields.into_iter().map(|(k, s)| (k.into(), s)).collect();
    let names: Vec<String> = fields.iter().map(|(k, _)| k.trim_start_matches('?').to_string()).collect();
    let n = names.len().max(1);
    let parts: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
        .into_iter()
        .map(|(name, s)| {
            let (name, absent) = name.strip_prefix('?').map_or((name.clone(), 0), |n| (n.to_string(), 1));
            prop_oneof![absent => Just(None), 2 => s.prop_map(Some)].prop_map(move |v| v.map(|v| (name.clone(), v))).boxed()
        })
        .collect();
    let mutation = (0..n, any::<bool>(), arb_json());
    let mutations = prop_oneof![17 => Just(Vec::new()), 2 => proptest::collection::vec(mutation.clone(), 1), 1 => proptest::collection::vec(mutation, 2)];
    (parts, mutations)
        .prop_map(move |(kv, muts)| {
            let mut o: Map<String, Value> = kv.into_iter().flatten().collect();
            for (i, remove, v) in muts {
                let Some(name) = names.get(i).cloned() else { continue };
                if remove {
                    o.remove(&name);
                } else {
                    o.insert(name, v);
                }
            }
            Value::Object(o)
        })
        .boxed()
}

pub(super) fn s(strategy: BoxedStrategy<String>) -> BoxedStrategy<Value> {
    strategy.prop_map(Value::String).boxed()
}

pub(super) fn one_of(options: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![8 => proptest::sample::select(options).prop_map(Value::from), 1 => text().prop_map(Value::String)].boxed()
}

/// Mostly one of `good`, sometimes one of `bad`, rarely any text.
pub(super) fn pick(good: &'static [&'static str], bad: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![16 => proptest::sample::select(good).prop_map(Value::from), 1 => proptest::sample::select(bad).prop_map(Value::from), 1 => text().prop_map(Value::String)].boxed()
}

/// Serialises a generated body, turning `"__HUGE_123__"` into the bare number `123`.
pub(super) fn render(v: &Value) -> String {
    let mut out = v.to_string();
    while let Some(start) = out.find("\"__HUGE_") {
        let Some(len) = out[start + 8..].find("__\"") else { break };
        let digits = out[start + 8..start + 8 + len].to_string();
        out.replace_range(start..start + 8 + len + 3, &digits);
    }
    out
}

pub(super) fn body_of(v: BoxedStrategy<Value>) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        6 => v.prop_map(|v| render(&v).into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => arb_json().prop_map(|v| render(&v).into_bytes()),
    ]
    .boxed()
}

pub(super) fn message_body() -> BoxedStrategy<Value> {
    object(vec![
        ("chat_id", s(ident())),
        ("user_id", s(ident())),
        ("text", s(text())),
        ("?chat_type", pick(&["dm", "group", "channel", "thread"], &["room", ""])),
        ("?thread_id", s(ident())),
        ("?message_id", s(ident())),
        ("?user_name", s(text())),
    ])
}

pub(super) fn tg_update() -> BoxedStrategy<Value> {
    let user = object(vec![
        ("id", int_like()),
        ("?is_bot", any::<bool>().prop_map(Value::Bool).boxed()),
        ("?first_name", s(text())),
        ("?username", s(text())),
    ]);
    let chat = object(vec![
        ("id", int_like()),
        ("type", pick(&["private", "group", "supergroup", "channel"], &["", "PRIVATE"])),
        ("?title", s(text())),
    ]);
    let message = object(vec![
        ("message_id", int_like()),
        ("?message_thread_id", int_like()),
        ("?from", user),
        ("chat", chat),
        ("?text", s(text())),
        ("?caption", s(text())),
        ("?date", int_like()),
    ]);
    object(vec![("update_id", int_like()), ("message", message), ("?edited_message", arb_json())])
}

pub(super) fn interaction() -> BoxedStrategy<Value> {
    let user = || object(vec![("id", s(ident())), ("?username", s(text())), ("?global_name", s(text()))]);
    let option = object(vec![("name", one_of(&["text", "prompt", "title", "session_id"])), ("type", int_like()), ("value", s(text()))]);
    let data = object(vec![
        ("name", one_of(&["ask", "new", "queue", "resume", "reset", "stop", "status", "help", "dance"])),
        ("?options", proptest::collection::vec(option, 0..3).prop_map(Value::Array).boxed()),
    ]);
    object(vec![
        ("id", s(ident())),
        ("type", prop_oneof![3 => (1u64..3).prop_map(Value::from), 1 => (0u64..6).prop_map(Value::from), 1 => int_like()].boxed()),
        ("application_id", s(ident())),
        ("token", s(ident())),
        ("data", data),
        ("?guild_id", s(ident())),
        ("?channel_id", s(ident())),
        ("?channel", object(vec![("id", s(ident())), ("name", s(text()))])),
        ("?member", object(vec![("user", user()), ("?nick", s(text()))])),
        ("user", user()),
    ])
}

pub(super) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Three base64url parts: a header with random `alg`/`kid`/…, claims that may look right,
/// and a signature that is never valid.
pub(super) fn jwt_shaped() -> BoxedStrategy<String> {
    let algs = &["none", "None", "HS256", "HS512", "RS256", "RS512", "PS256", "ES256", "ES384", "EdDSA", ""];
    let header = object(vec![
        ("alg", one_of(algs)),
        ("?kid", prop_oneof![one_of(&["k1", "", "../../etc/passwd"]), int_like()].boxed()),
        ("?typ", one_of(&["JWT", "at+jwt"])),
        ("?jku", one_of(&["http://127.0.0.1:9/jwks.json"])),
        ("?jwk", arb_json()),
        ("?crit", arb_json()),
    ]);
    let claims = object(vec![
        ("iss", one_of(&["https://nas.test", "https://evil.test"])),
        ("aud", one_of(&["agent:agent-1", "agent:other"])),
        ("iat", int_like()),
        ("?nbf", int_like()),
        ("exp", int_like()),
        ("purpose", one_of(&["cron_fire", "login"])),
        ("job_id", one_of(&["j1", "j2"])),
        ("?jti", s(text())),
    ]);
    let part =
        |v: BoxedStrategy<Value>| prop_oneof![5 => v.prop_map(|v| b64(render(&v).as_bytes())), 1 => "[A-Za-z0-9_=+/-]{0,40}"].boxed();
    let sig = prop_oneof![3 => proptest::collection::vec(any::<u8>(), 0..300).prop_map(|b| b64(&b)), 1 => "[ -~]{0,20}"];
    (part(header), part(claims), sig).prop_map(|(h, c, s)| format!("{h}.{c}.{s}")).boxed()
}

pub(super) fn authorization() -> BoxedStrategy<Option<HeaderValue>> {
    let value = prop_oneof![
        3 => jwt_shaped().prop_map(|t| format!("Bearer {t}")),
        1 => jwt_shaped(),
        1 => "(Bearer|bearer|Basic|Bearer  )?[ -~]{0,80}",
        1 => "Bearer [A-Za-z0-9_-]{0,30}\\.[A-Za-z0-9_-]{0,30}\\.[A-Za-z0-9_-]{0,30}(\\.[A-Za-z0-9_-]{0,5})?",
    ];
    let raw = proptest::collection::vec(any::<u8>(), 0..60).prop_filter_map("header bytes", |b| HeaderValue::from_bytes(&b).ok());
    prop_oneof![
        1 => Just(None),
        6 => value.prop_filter_map("header text", |v| HeaderValue::from_str(&v).ok()).prop_map(Some),
        1 => raw.prop_map(Some),
    ]
    .boxed()
}

pub(super) fn job_object() -> BoxedStrategy<Value> {
    let good = &["every 1h", "in 10m", "0 8 * * *", "@daily", "every weekday at 9am", "2099-12-31T23:59:59", "every 90 minutes"];
    let bad = &[
        "every 0m",
        "every 99999999999999 minutes",
        "in 9223372036854775807 seconds",
        "*/0 * * * *",
        "61 25 * * *",
        "@reboot",
        "2020-01-01T00:00:00Z",
        "+262143-12-31T23:59:59Z",
        "at 25:99",
    ];
    let schedule_obj = object(vec![
        ("kind", pick(&["cron", "interval", "once"], &["Cron", ""])),
        ("expr", pick(&["0 9 * * 1-5"], &["* * * * * * *", "0 0 31 2 *"])),
        ("minutes", int_like()),
        ("?seconds", int_like()),
        ("run_at", pick(&["2026-12-24T18:00:00", "2027-01-01T00:00:00Z"], &["2026-13-45T99:00:00", "9999-12-31T23:59:59Z"])),
        ("?display", s(text())),
    ]);
    object(vec![
        ("?id", pick(&["a", "b", "j1", "daily-news"], &["x y", "", "-", "a/b"])),
        ("?name", pick(&["Daily news", "b"], &["!!!", ""])),
        ("schedule", prop_oneof![3 => pick(good, bad), 2 => schedule_obj].boxed()),
        ("prompt", s(text())),
        ("?description", s(text())),
        (
            "?skills",
            prop_oneof![
                pick(&["ai-news"], &["bad skill"]),
                proptest::collection::vec(pick(&["ai-news", "x"], &["a b"]), 0..3).prop_map(Value::Array)
            ]
            .boxed(),
        ),
        ("?skill", pick(&["ai-news"], &["../etc"])),
        (
            "?deliver",
            pick(
                &["local", "origin", "telegram", "telegram:42", "discord:1:2", "local, origin"],
                &["telegram:a b", "discord:1:2:3", "TG:1"],
            ),
        ),
        ("?deliver_to", object(vec![("platform", pick(&["telegram"], &["Discord"])), ("chat_id", int_like()), ("?thread_id", int_like())])),
        ("?enabled", any::<bool>().prop_map(Value::Bool).boxed()),
        ("?repeat", prop_oneof![pick(&["forever", "once", "3"], &["0", "-1"]), int_like()].boxed()),
        ("?model", s(text())),
        ("?timezone", pick(&["UTC", "Europe/Berlin"], &["Mars/Base"])),
        ("?origin", object(vec![("platform", pick(&["telegram", "api"], &[""])), ("chat_id", s(ident())), ("?thread_id", s(ident()))])),
    ])
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(super) fn path_segment(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// Any method on any JSON route (the HTML UI excluded), with ids from anywhere.
pub(super) fn method_and_path() -> BoxedStrategy<(&'static str, String)> {
    let templates = &[
        "/api/messages",
        "/api/cron/fire",
        "/api/jobs",
        "/api/jobs/{}",
        "/api/jobs/{}/run",
        "/api/jobs/{}/pause",
        "/api/jobs/{}/resume",
        "/api/jobs/{}/runs",
        "/api/sessions",
        "/api/sessions/{}",
        "/api/sessions/reset",
        "/api/schedules/preview",
        "/api/skills",
        "/api/scripts",
        "/api/status",
        "/webhooks/telegram",
        "/webhooks/discord",
        "/healthz",
        "/api/{}",
        "/nope/{}",
    ];
    let methods = &["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    let id = prop_oneof![3 => Just("j1".to_string()), 3 => ident(), 2 => text(), 1 => Just("20260101_000000_abcdef12".to_string())];
    (proptest::sample::select(&methods[..]), proptest::sample::select(&templates[..]), id)
        .prop_map(|(m, tpl, id)| (m, tpl.replace("{}", &path_segment(&id))))
        .boxed()
}

pub(super) fn fire_body() -> BoxedStrategy<Vec<u8>> {
    let valid = json!({"job_id": "j1", "fire_at": "2026-12-01T08:00:00Z"}).to_string().into_bytes();
    prop_oneof![
        4 => Just(valid),
        1 => body_of(object(vec![("job_id", one_of(&["j1", ""])), ("fire_at", one_of(&["2026-12-01T08:00:00Z", "yesterday"]))])),
    ]
    .boxed()
}
