//! Bad input through the real router (SPEC §4, issue 7): arbitrary API bodies, Telegram
//! updates, validly signed Discord bodies, fire tokens, job objects and config documents.
//! Each case asserts: no panic, a documented status, a JSON `{"error": …}` body on errors,
//! and — for every refused request — an unchanged store (entries, sessions, transcripts,
//! queues, jobs, claims) and no model call.
//!
//! Every proptest builds a fresh in-memory store per case (background turns of an accepted
//! Discord interaction cannot leak into the next case) and persists no regression files.

#![allow(clippy::unwrap_used)]

use crate::app::App;
use crate::config::{ConfigError, Env, load_settings, parse_yaml};
use crate::core::job::Occurrence;
use crate::http::{HttpState, router};
use crate::ports::{ChatRequest, ChatResponse, Llm, LlmError, ManualClock};
use crate::store::sqlite::SqliteStore;
use async_trait::async_trait;
use axum::body::{Body, to_bytes};
use axum::http::{HeaderValue, Request};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use ed25519_dalek::{Signer, SigningKey};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tower::ServiceExt;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/jwt/");
const API_KEY: &str = "k1";
const TG_SECRET: &str = "s3cret";
const DISCORD_SEED: [u8; 32] = [11; 32];
/// SPEC §4 and CONTRACT §2/§3: every status the router may answer to a client.
const DOCUMENTED: &[u16] = &[200, 201, 202, 400, 401, 404, 413, 429];

fn cases(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[derive(Default)]
struct CountingLlm(AtomicUsize);

#[async_trait]
impl Llm for CountingLlm {
    fn name(&self) -> &'static str {
        "counting"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ChatResponse { content: "fine".into(), ..ChatResponse::default() })
    }
}

struct Kit {
    state: Arc<HttpState>,
    llm: Arc<CountingLlm>,
    now: DateTime<Utc>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh app: everyone allowed (so accepted updates reach the model), Discord follow-ups
/// to a closed local port, Chronos tokens checked against the fixture RSA key (or `jwks_url`),
/// and one job `j1` due now.
async fn kit(jwks_url: Option<&str>) -> Kit {
    let key_source = jwks_url.map_or_else(|| format!("public_key_pem: {FIX}rsa_public.pem"), |u| format!("jwks_url: {u}"));
    let yaml = format!(
        "allow_all_users: true\nplatforms:\n  discord:\n    api_base: http://127.0.0.1:9\ncron:\n  chronos:\n    portal_url: https://nas.test\n    instance_id: agent-1\n    {key_source}\n"
    );
    let public = hex(&SigningKey::from_bytes(&DISCORD_SEED).verifying_key().to_bytes());
    let env = Env::from_pairs([("TELEGRAM_WEBHOOK_SECRET", TG_SECRET), ("DISCORD_PUBLIC_KEY", public.as_str())]);
    let mut loaded = load_settings(std::path::Path::new("/nonexistent"), None, &env).unwrap();
    loaded.settings = parse_yaml(&yaml, "test").unwrap().0;
    let now: DateTime<Utc> = "2026-12-01T08:00:00Z".parse().unwrap();
    let llm = Arc::new(CountingLlm::default());
    let app = App {
        delivery: Arc::new(crate::clients::delivery::PlatformDelivery::from_config(&loaded)),
        cfg: Arc::new(loaded),
        home: "/nonexistent".into(),
        store: Arc::new(SqliteStore::in_memory().unwrap()),
        llm: llm.clone(),
        clock: Arc::new(ManualClock::new(now)),
        live: Arc::default(),
        timers: Arc::new(crate::ports::PollingTimers),
    };
    let mut j = crate::store::conformance::sample_job("j1", Some(now));
    j.deliver = vec!["local".into()];
    app.store.put_job(&j).await.unwrap();
    let state = Arc::new(HttpState { app, api_key: Some(API_KEY.to_string().into()), provider: "builtin".into() });
    Kit { state, llm, now }
}

/// Everything a request could write, plus the model call count.
async fn snapshot(k: &Kit) -> Value {
    let s = &k.state.app.store;
    let entries = s.list_entries(10_000).await.unwrap();
    let sessions = s.list_sessions(None, 10_000).await.unwrap();
    let mut transcripts = Vec::new();
    for r in &sessions {
        transcripts.push(s.recent_messages(&r.session_id, 10_000).await.unwrap());
    }
    let mut queues = Vec::new();
    for e in &entries {
        queues.push(s.queue_list(&e.session_key).await.unwrap());
    }
    let jobs = s.list_jobs().await.unwrap();
    let runs = s.list_runs("j1", 100).await.unwrap();
    let claim = s.claim_status(&Occurrence::new("j1", k.now)).await.unwrap();
    let calls = k.llm.0.load(Ordering::SeqCst);
    json!({"entries": entries, "sessions": sessions, "transcripts": transcripts, "queues": queues, "jobs": jobs, "runs": runs, "claim": claim, "model_calls": calls})
}

/// Sends `req`; asserts a documented status and a JSON error body on errors; asserts the
/// store is unchanged when the request was refused. Returns the status and parsed body.
async fn send(k: &Kit, req: Request<Body>) -> (u16, Value) {
    let before = snapshot(k).await;
    let resp = router(k.state.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    assert!(DOCUMENTED.contains(&status), "undocumented status {status}: {}", String::from_utf8_lossy(&bytes));
    if status >= 400 {
        assert!(body["error"].is_string() && body.as_object().is_some_and(|o| o.len() == 1), "{status}: not a JSON error body: {body}");
        assert_eq!(snapshot(k).await, before, "a refused request ({status} {body}) changed the store");
    }
    (status, body)
}

fn post(path: &str, headers: &[(&str, HeaderValue)], body: impl Into<Body>) -> Request<Body> {
    let mut b = Request::post(path).header("content-type", "application/json");
    for (n, v) in headers {
        b = b.header(*n, v.clone());
    }
    b.body(body.into()).unwrap()
}

fn bearer() -> (&'static str, HeaderValue) {
    ("authorization", HeaderValue::from_static("Bearer k1"))
}

// ---- strategies ----

/// Text with unicode, control characters, whitespace-only values and session commands.
fn text() -> BoxedStrategy<String> {
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
fn ident() -> BoxedStrategy<String> {
    prop_oneof![6 => "[A-Za-z0-9_.-]{1,16}", 1 => text()].boxed()
}

/// Numbers as JSON: mostly plausible ids, sometimes extreme, fractional, quoted, or too big
/// for any Rust integer (`__HUGE_…__` is unquoted into a bare number by [`render`]).
fn int_like() -> BoxedStrategy<Value> {
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

fn arb_json() -> BoxedStrategy<Value> {
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
fn object<K: Into<String>>(fields: Vec<(K, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
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

fn s(strategy: BoxedStrategy<String>) -> BoxedStrategy<Value> {
    strategy.prop_map(Value::String).boxed()
}

fn one_of(options: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![8 => proptest::sample::select(options).prop_map(Value::from), 1 => text().prop_map(Value::String)].boxed()
}

/// Mostly one of `good`, sometimes one of `bad`, rarely any text.
fn pick(good: &'static [&'static str], bad: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![16 => proptest::sample::select(good).prop_map(Value::from), 1 => proptest::sample::select(bad).prop_map(Value::from), 1 => text().prop_map(Value::String)].boxed()
}

/// Serialises a generated body, turning `"__HUGE_123__"` into the bare number `123`.
fn render(v: &Value) -> String {
    let mut out = v.to_string();
    while let Some(start) = out.find("\"__HUGE_") {
        let Some(len) = out[start + 8..].find("__\"") else { break };
        let digits = out[start + 8..start + 8 + len].to_string();
        out.replace_range(start..start + 8 + len + 3, &digits);
    }
    out
}

fn body_of(v: BoxedStrategy<Value>) -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        6 => v.prop_map(|v| render(&v).into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => arb_json().prop_map(|v| render(&v).into_bytes()),
    ]
    .boxed()
}

fn message_body() -> BoxedStrategy<Value> {
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

fn tg_update() -> BoxedStrategy<Value> {
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

fn interaction() -> BoxedStrategy<Value> {
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

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Three base64url parts: a header with random `alg`/`kid`/…, claims that may look right,
/// and a signature that is never valid.
fn jwt_shaped() -> BoxedStrategy<String> {
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

fn authorization() -> BoxedStrategy<Option<HeaderValue>> {
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

fn job_object() -> BoxedStrategy<Value> {
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

// ---- router properties ----

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn path_segment(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// Any method on any JSON route (the HTML UI excluded), with ids from anywhere.
fn method_and_path() -> BoxedStrategy<(&'static str, String)> {
    let templates = &[
        "/api/messages", "/api/cron/fire", "/api/jobs", "/api/jobs/{}", "/api/jobs/{}/run", "/api/jobs/{}/pause", "/api/jobs/{}/resume",
        "/api/jobs/{}/runs", "/api/sessions", "/api/sessions/{}", "/api/sessions/reset", "/api/schedules/preview", "/api/skills",
        "/api/status", "/webhooks/telegram", "/webhooks/discord", "/healthz", "/api/{}", "/nope/{}",
    ];
    let methods = &["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
    let id = prop_oneof![3 => Just("j1".to_string()), 3 => ident(), 2 => text(), 1 => Just("20260101_000000_abcdef12".to_string())];
    (proptest::sample::select(&methods[..]), proptest::sample::select(&templates[..]), id)
        .prop_map(|(m, tpl, id)| (m, tpl.replace("{}", &path_segment(&id))))
        .boxed()
}


proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn api_messages_never_panic_and_refusals_write_nothing(body in body_of(message_body())) {
        rt().block_on(async {
            let k = kit(None).await;
            let (status, reply) = send(&k, post("/api/messages", &[bearer()], body)).await;
            prop_assert!([200, 202, 400, 429].contains(&status), "{status} {reply}");
            Ok(())
        })?;
    }

    #[test]
    fn telegram_updates_never_panic_and_ignored_ones_write_nothing(body in body_of(tg_update())) {
        rt().block_on(async {
            let k = kit(None).await;
            let before = snapshot(&k).await;
            let secret = HeaderValue::from_static(TG_SECRET);
            let (status, reply) = send(&k, post("/webhooks/telegram", &[("x-telegram-bot-api-secret-token", secret)], body)).await;
            prop_assert!([200, 400].contains(&status), "{status} {reply}");
            if reply["ignored"].is_string() {
                prop_assert_eq!(snapshot(&k).await, before, "an ignored update changed the store");
            }
            Ok(())
        })?;
    }

    #[test]
    fn signed_discord_bodies_never_panic(body in body_of(interaction())) {
        rt().block_on(async {
            let k = kit(None).await;
            let ts = k.now.timestamp().to_string();
            let sig = SigningKey::from_bytes(&DISCORD_SEED).sign(&[ts.as_bytes(), body.as_slice()].concat());
            let headers = [
                ("x-signature-ed25519", HeaderValue::from_str(&hex(&sig.to_bytes())).unwrap()),
                ("x-signature-timestamp", HeaderValue::from_str(&ts).unwrap()),
            ];
            let is_json = serde_json::from_slice::<Value>(&body).is_ok();
            let (status, reply) = send(&k, post("/webhooks/discord", &headers, body)).await;
            prop_assert!([200, 400].contains(&status), "{status} {reply}");
            prop_assert!(is_json || status == 400, "bad JSON must be 400, got {status}");
            Ok(())
        })?;
    }

    #[test]
    fn jobs_are_created_or_refused_whole(jobs in proptest::collection::vec(job_object(), 1..4)) {
        rt().block_on(async {
            let k = kit(None).await;
            for job in jobs {
                let before = k.state.app.store.list_jobs().await.unwrap().len();
                let (status, reply) = send(&k, post("/api/jobs", &[bearer()], render(&job))).await;
                prop_assert!([201, 400].contains(&status), "{status} {reply} for {job}");
                let after = k.state.app.store.list_jobs().await.unwrap();
                if status == 201 {
                    prop_assert_eq!(after.len(), before + 1);
                    prop_assert!(after.iter().any(|j| reply["job"]["id"] == j.id.as_str()), "{reply}");
                }
            }
            prop_assert_eq!(k.llm.0.load(Ordering::SeqCst), 0);
            Ok(())
        })?;
    }
}

#[test]
fn every_method_on_every_route_answers_documented_json() {
    let rt = rt();
    proptest!(cases(96), |((method, path) in method_and_path(), body in body_of(arb_json()))| {
        rt.block_on(async {
            let k = kit(None).await;
            let req = Request::builder().method(method).uri(&path).header("content-type", "application/json").header("authorization", "Bearer k1");
            let (status, reply) = send(&k, req.body(Body::from(body)).unwrap()).await;
            prop_assert!(status != 401, "{method} {path}: the key was given: {reply}");
            Ok(())
        })?;
    });
}

#[test]
fn oversized_bodies_are_413_json_on_every_post_route() {
    rt().block_on(async {
        let k = kit(None).await;
        let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(crate::http::MAX_BODY));
        for path in ["/api/messages", "/api/cron/fire", "/api/jobs", "/webhooks/telegram", "/webhooks/discord", "/api/jobs/j1/run"] {
            let (status, reply) = send(&k, post(path, &[bearer()], big.clone())).await;
            assert!([401, 413].contains(&status), "{path}: {status} {reply}");
        }
    });
}

fn fire_body() -> BoxedStrategy<Vec<u8>> {
    let valid = json!({"job_id": "j1", "fire_at": "2026-12-01T08:00:00Z"}).to_string().into_bytes();
    prop_oneof![
        4 => Just(valid),
        1 => body_of(object(vec![("job_id", one_of(&["j1", ""])), ("fire_at", one_of(&["2026-12-01T08:00:00Z", "yesterday"]))])),
    ]
    .boxed()
}

/// A JWKS with the fixture EC key as `k1`, served on the current runtime.
async fn jwks_server() -> String {
    let pem = std::fs::read_to_string(format!("{FIX}ec_public.pem")).unwrap();
    let der =
        base64::engine::general_purpose::STANDARD.decode(pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()).unwrap();
    let point = &der[der.len() - 64..];
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(&point[..32]), "y": b64(&point[32..])}]});
    let r = axum::Router::new().route("/jwks.json", axum::routing::get(move || std::future::ready(axum::Json(jwks.clone()))));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, r).await });
    url
}

#[test]
fn forged_fire_tokens_are_401_or_400_without_claim_or_model_call() {
    let rt = rt();
    let jwks = rt.block_on(jwks_server());
    proptest!(cases(96), |(auth in authorization(), body in fire_body(), use_jwks in any::<bool>())| {
        rt.block_on(async {
            let k = kit(use_jwks.then_some(jwks.as_str())).await;
            let headers: Vec<(&str, HeaderValue)> = auth.into_iter().map(|v| ("authorization", v)).collect();
            let (status, reply) = send(&k, post("/api/cron/fire", &headers, body)).await;
            prop_assert!([400, 401].contains(&status), "{status} {reply}");
            if status == 401 {
                prop_assert_eq!(reply, json!({"error": "invalid fire token"}));
            }
            prop_assert_eq!(k.llm.0.load(Ordering::SeqCst), 0);
            prop_assert!(k.state.app.store.claim_status(&Occurrence::new("j1", k.now)).await.unwrap().is_none());
            Ok(())
        })?;
    });
}

#[test]
fn deeply_nested_json_is_400_not_a_stack_overflow() {
    rt().block_on(async {
        let k = kit(None).await;
        for depth in [200, 100_000] {
            let body = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let (status, _) = send(&k, post("/api/messages", &[bearer()], body.clone())).await;
            assert_eq!(status, 400);
            let secret = HeaderValue::from_static(TG_SECRET);
            assert_eq!(send(&k, post("/webhooks/telegram", &[("x-telegram-bot-api-secret-token", secret)], body.clone())).await.0, 400);
            assert_eq!(send(&k, post("/api/jobs", &[bearer()], body)).await.0, 400);
        }
    });
}

// ---- config ----

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
