//! The Schedule dashboard (`GET /`, `/ui`): one embedded page (HTML, CSS, vanilla JS; no
//! build step, no CDN), plus the API additions it needs — schedule preview, skill and script lists,
//! session reset and scheduler status. Knows the app's use cases, never the store's SQL.

use crate::app::Reset;
use crate::core::ids::SessionKey;
use crate::core::job::Job;
use crate::core::schedule;
use crate::http::HttpState;
use crate::http::error::ApiError;
use crate::http::extract::{ApiKey, JsonBody};
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::SecondsFormat;
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

const INDEX_HTML: &str = include_str!("../ui/index.html");
const APP_CSS: &str = include_str!("../ui/app.css");
const APP_JS: &str = include_str!("../ui/app.js");

/// Everything is same-origin; no inline script or style, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
                   form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// How many upcoming run times the preview lists.
const PREVIEW_RUNS: usize = 3;

/// The dashboard's routes, merged into [`crate::http::router`].
pub fn routes() -> Router<Arc<HttpState>> {
    Router::new()
        .route("/", get(index))
        .route("/ui", get(index))
        .route("/ui/app.css", get(css))
        .route("/ui/app.js", get(js))
        .route("/api/schedules/preview", post(preview))
        .route("/api/skills", get(skills))
        .route("/api/scripts", get(scripts))
        .route("/api/sessions/reset", post(reset_session))
        .route("/api/status", get(status))
        .route("/api/usage", get(usage))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // Assets are embedded in the binary: revalidate so an upgrade shows at once.
            (header::CACHE_CONTROL, "no-cache"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        body,
    )
        .into_response()
}

/// The page.
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// The stylesheet.
pub async fn css() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// The script.
pub async fn js() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// Body of `POST /api/schedules/preview`.
#[derive(Debug, Deserialize)]
pub struct PreviewReq {
    /// The schedule as the user typed it.
    pub schedule: String,
    /// Optional IANA zone for cron and naive times (default: the configured one).
    #[serde(default)]
    pub timezone: Option<String>,
}

/// Validates a schedule and lists its next runs; parser errors are a 200 with `ok: false`
/// so the form can show them while the user types.
pub async fn preview(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(req): JsonBody<PreviewReq>) -> Json<Value> {
    let tz = match req.timezone.as_deref().map(str::trim).filter(|z| !z.is_empty()) {
        None => s.app.timezone(),
        Some(z) => match z.parse::<Tz>() {
            Ok(tz) => tz,
            Err(_) => return Json(json!({"ok": false, "field": "timezone", "error": format!("`{z}` is not an IANA timezone")})),
        },
    };
    let now = s.app.now();
    let sched = match schedule::parse(&req.schedule, now, tz) {
        Ok(x) => x,
        Err(e) => return Json(json!({"ok": false, "field": "schedule", "error": e.to_string()})),
    };
    let mut next = Vec::with_capacity(PREVIEW_RUNS);
    let mut at = Job::first_run(&sched, now, tz);
    while let Some(t) = at.filter(|_| next.len() < PREVIEW_RUNS) {
        next.push(t.to_rfc3339_opts(SecondsFormat::Secs, true));
        at = sched.next_after(t, tz);
    }
    Json(json!({
        "ok": true, "display": sched.display(), "recurring": sched.is_recurring(), "timezone": tz.name(), "next": next,
    }))
}

/// The job scripts a job may name: the files of `$HERMES_HOME/scripts/`, relative, sorted.
pub async fn scripts(_: ApiKey, State(s): State<Arc<HttpState>>) -> Json<Value> {
    Json(json!({ "scripts": s.app.script_files() }))
}

/// The skills, sorted by name: the store's (written by `skill_manage`, imported) and the
/// folders `$HERMES_HOME/skills/<name>/SKILL.md` nobody edited. `name` is what a job binds;
/// `title` is the front matter's `name` when it differs. The index the agent's prompt uses.
pub async fn skills(_: ApiKey, State(s): State<Arc<HttpState>>) -> Json<Value> {
    Json(json!({ "skills": *s.app.skills_index().await }))
}

/// Body of `POST /api/sessions/reset`.
#[derive(Debug, Deserialize)]
pub struct ResetReq {
    /// The conversation place to reset.
    pub session_key: String,
}

/// Starts a new session for a key and drops its queue: the same effect as `/new`.
pub async fn reset_session(_: ApiKey, State(s): State<Arc<HttpState>>, JsonBody(req): JsonBody<ResetReq>) -> Result<Json<Value>, ApiError> {
    let key = SessionKey::parse(req.session_key.trim()).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.to_string()))?;
    let Some(Reset { session_id: id, dropped }) = s.app.sessions().reset(&key).await? else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, format!("no session for {key}")));
    };
    tracing::info!(session_key = %key, session_id = %id, dropped, "session reset from the dashboard");
    Ok(Json(json!({"session_key": key, "session_id": id, "dropped": dropped})))
}

/// The scheduler's status (as `cron status --json`) plus version and timezone.
pub async fn status(_: ApiKey, State(s): State<Arc<HttpState>>) -> Result<Json<Value>, ApiError> {
    let mut v = s.app.jobs().status().await?;
    v["version"] = json!(env!("CARGO_PKG_VERSION"));
    v["timezone"] = json!(s.app.timezone().name());
    v["mcp"] = json!(s.app.mcp_status());
    Ok(Json(v))
}

/// `GET /api/usage`: turns, job runs, tokens and store requests per day for the last 14 days,
/// and the estimated monthly cost (docs/cost.md).
pub async fn usage(_: ApiKey, State(s): State<Arc<HttpState>>) -> Result<Json<Value>, ApiError> {
    Ok(Json(s.app.usage().await?))
}

#[cfg(test)]
mod tests {
    use crate::channels::Channels;
    use crate::config::Env;
    use crate::http::{HttpState, router};
    use crate::test_support::TestApp;
    use axum::body::{Body, to_bytes};
    use axum::http::{Request, StatusCode, header};
    use chrono::{DateTime, Utc};
    use secrecy::SecretString;
    use serde_json::{Value, json};
    use std::path::PathBuf;
    use std::sync::Arc;
    use tower::ServiceExt;

    const NOW: &str = "2026-01-15T10:00:00Z";

    /// A router over an in-memory store, an offline model, a manual clock at [`NOW`] and a
    /// temp home (removed on drop).
    struct Kit {
        state: Arc<HttpState>,
        home: PathBuf,
    }

    impl Drop for Kit {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.home).ok();
        }
    }

    impl Kit {
        fn new(tz: &str) -> Self {
            let home = std::env::temp_dir().join(format!("hz-ui-{}-{:08x}", std::process::id(), rand::random::<u32>()));
            std::fs::create_dir_all(&home).unwrap();
            let t = TestApp::new(NOW.parse().unwrap()).home(&home).env(Env::from_pairs([("HERMES_TIMEZONE", tz)]));
            let channels = Arc::new(Channels::from_config(&t.loaded()));
            let app = t.delivery(channels.clone()).build();
            let state =
                Arc::new(HttpState { app, channels, api_key: Some(SecretString::from("k1".to_string())), provider: "builtin".into() });
            Self { state, home }
        }

        async fn send(&self, req: Request<Body>) -> (StatusCode, Value) {
            let resp = router(self.state.clone()).oneshot(req).await.unwrap();
            let status = resp.status();
            let bytes = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
            (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
        }

        async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
            let req = Request::post(path).header("content-type", "application/json").header("authorization", "Bearer k1");
            self.send(req.body(Body::from(body.to_string())).unwrap()).await
        }

        async fn get(&self, path: &str) -> (StatusCode, Value) {
            self.send(Request::get(path).header("authorization", "Bearer k1").body(Body::empty()).unwrap()).await
        }
    }

    #[tokio::test]
    async fn page_and_assets_are_served_with_types_and_a_strict_policy() {
        let kit = Kit::new("UTC");
        let mut total = 0;
        for (path, ty) in [("/", "text/html"), ("/ui", "text/html"), ("/ui/app.css", "text/css"), ("/ui/app.js", "text/javascript")] {
            let resp = router(kit.state.clone()).oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK, "{path}");
            let h = resp.headers();
            assert!(h[header::CONTENT_TYPE].to_str().unwrap().starts_with(ty), "{path}");
            assert!(h[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script-src 'self'"));
            let body = to_bytes(resp.into_body(), usize::MAX).await.unwrap();
            if path != "/ui" {
                total += body.len();
            }
            if ty == "text/html" {
                let html = String::from_utf8(body.to_vec()).unwrap();
                assert!(html.contains("<html lang=\"en\">") && html.contains("ui/app.js") && !html.contains("http"), "no CDN");
            }
        }
        assert!(total < 100 * 1024, "page is {total} bytes");
    }

    #[tokio::test]
    async fn preview_lists_the_next_three_runs() {
        let kit = Kit::new("Europe/Berlin");
        let (s, v) = kit.post("/api/schedules/preview", json!({"schedule": "every 2h"})).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(v["ok"], true, "{v}");
        assert_eq!(v["display"], "every 2 hours");
        assert_eq!(v["next"], json!(["2026-01-15T12:00:00Z", "2026-01-15T14:00:00Z", "2026-01-15T16:00:00Z"]));
        // Cron in the configured zone (Berlin is UTC+1 in January), then in an explicit one.
        let (_, v) = kit.post("/api/schedules/preview", json!({"schedule": "0 8 * * *"})).await;
        assert_eq!(v["next"][0], "2026-01-16T07:00:00Z", "{v}");
        assert_eq!(v["timezone"], "Europe/Berlin");
        let (_, v) = kit.post("/api/schedules/preview", json!({"schedule": "0 8 * * *", "timezone": "UTC"})).await;
        assert_eq!(v["next"], json!(["2026-01-16T08:00:00Z", "2026-01-17T08:00:00Z", "2026-01-18T08:00:00Z"]));
        // A one-shot has one run.
        let (_, v) = kit.post("/api/schedules/preview", json!({"schedule": "in 30m"})).await;
        assert_eq!((v["recurring"].clone(), v["next"].clone()), (json!(false), json!(["2026-01-15T10:30:00Z"])));
    }

    #[tokio::test]
    async fn preview_errors_are_200_with_the_accepted_forms() {
        let kit = Kit::new("UTC");
        for (body, field) in [
            (json!({"schedule": "whenever you like"}), "schedule"),
            (json!({"schedule": ""}), "schedule"),
            (json!({"schedule": "2020-01-01T00:00:00Z"}), "schedule"),
            (json!({"schedule": "every 2h", "timezone": "Mars/Base"}), "timezone"),
        ] {
            let (s, v) = kit.post("/api/schedules/preview", body.clone()).await;
            assert_eq!(s, StatusCode::OK, "{body}");
            assert_eq!((v["ok"].clone(), v["field"].clone()), (json!(false), json!(field)), "{v}");
            if field == "schedule" {
                assert!(v["error"].as_str().unwrap().contains("accepted forms"), "{v}");
            }
        }
        for body in [json!([]), json!({"schedule": 5}), json!({})] {
            let (s, v) = kit.post("/api/schedules/preview", body).await;
            assert_eq!(s, StatusCode::BAD_REQUEST);
            assert!(v["error"].is_string());
        }
        let req = Request::post("/api/schedules/preview").header("content-type", "application/json");
        let (s, _) = kit.send(req.body(Body::from(r#"{"schedule":"every 2h"}"#)).unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn scripts_list_the_files_inside_the_scripts_folder() {
        let kit = Kit::new("UTC");
        assert_eq!(kit.get("/api/scripts").await.1, json!({"scripts": []}), "no scripts dir");
        let dir = kit.home.join("scripts");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in ["b.sh", "sub/a.py", ".hidden.sh"] {
            std::fs::write(dir.join(f), "true\n").unwrap();
        }
        std::fs::write(kit.home.join("outside.sh"), "true\n").unwrap();
        std::os::unix::fs::symlink(kit.home.join("outside.sh"), dir.join("escape.sh")).unwrap();
        assert_eq!(kit.get("/api/scripts").await.1, json!({"scripts": ["b.sh", "sub/a.py"]}));
    }

    #[tokio::test]
    async fn skills_come_from_front_matter() {
        let kit = Kit::new("UTC");
        let write = |rel: &str, text: &str| {
            let p = kit.home.join("skills").join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let (_, v) = kit.get("/api/skills").await;
        assert_eq!(v, json!({"skills": []}), "no skills dir");
        write("news/SKILL.md", "---\nname: news\ndescription: \"Summarise: the news\"\noutput_format: md\n---\n# News\n");
        write("alpha/SKILL.md", "---\nname: Alpha Skill\ndescription: First one\n---\nbody\n");
        write("plain/SKILL.md", "# No front matter\n");
        write("broken/SKILL.md", "---\nname: [unclosed\n---\n");
        write("empty-dir/README.md", "not a skill");
        let (s, v) = kit.get("/api/skills").await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(
            v["skills"],
            json!([
                {"name": "alpha", "description": "First one", "title": "Alpha Skill"},
                {"name": "broken", "description": "", "title": null},
                {"name": "news", "description": "Summarise: the news", "title": null},
                {"name": "plain", "description": "", "title": null},
            ])
        );
    }

    #[tokio::test]
    async fn reset_starts_a_new_session_like_new() {
        let kit = Kit::new("UTC");
        let (s, v) = kit.post("/api/sessions/reset", json!({"session_key": "agent:main:api:dm:nobody"})).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
        let (s, _) = kit.post("/api/sessions/reset", json!({"session_key": "not a key"})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        let (s, _) = kit.post("/api/sessions/reset", json!({})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);

        let (s, turn) = kit.post("/api/messages", json!({"chat_id": "c1", "user_id": "u1", "text": "hello"})).await;
        assert_eq!(s, StatusCode::OK, "{turn}");
        let key = turn["session_key"].as_str().unwrap();
        let (s, v) = kit.post("/api/sessions/reset", json!({"session_key": key})).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_ne!(v["session_id"], turn["session_id"]);
        assert_eq!(v["dropped"], 0);
        let (_, list) = kit.get("/api/sessions").await;
        assert_eq!(list["sessions"][0]["session_id"], v["session_id"]);
        let (_, old) = kit.get(&format!("/api/sessions/{}", turn["session_id"].as_str().unwrap())).await;
        assert_eq!(old["session"]["end_reason"], "session_reset");
        let (_, new) = kit.get(&format!("/api/sessions/{}", v["session_id"].as_str().unwrap())).await;
        assert_eq!(new["messages"], json!([]), "history cleared");
    }

    #[tokio::test]
    async fn usage_counts_turns_per_day_for_fourteen_days() {
        let kit = Kit::new("UTC");
        let (s, v) = kit.get("/api/usage").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let days = v["days"].as_array().unwrap();
        assert_eq!(days.len(), 14);
        assert_eq!(days[0]["day"], "2026-01-02");
        assert_eq!(days[13]["day"], "2026-01-15");
        assert_eq!(days[13]["turns"], 0);
        for text in ["hello", "again"] {
            let (s, v) = kit.post("/api/messages", json!({"chat_id": "c1", "user_id": "u1", "text": text})).await;
            assert_eq!(s, StatusCode::OK, "{v}");
        }
        let (_, v) = kit.get("/api/usage").await;
        let today = &v["days"][13];
        assert_eq!(today["turns"], 2, "{v}");
        assert_eq!(v["days"][12]["turns"], 0);
        assert_eq!(v["estimate"]["store_usd_per_month"], 0.0, "SQLite costs nothing per request: {v}");
        assert!(v["estimate"]["basis"].as_str().unwrap().contains("2026-12-01"));
        let (s, _) = kit.send(Request::get("/api/usage").body(Body::empty()).unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn status_reports_provider_store_version_and_armed_timers() {
        let kit = Kit::new("Europe/Berlin");
        let (s, _) = kit.post("/api/jobs", json!({"name": "tick", "schedule": "every 2h", "prompt": "p"})).await;
        assert_eq!(s, StatusCode::OK);
        let (s, v) = kit.get("/api/status").await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(v["store"], "sqlite");
        assert_eq!(v["timezone"], "Europe/Berlin");
        assert!(v["provider"].is_string() && v["why"].is_string(), "{v}");
        let at: DateTime<Utc> = v["armed"][0]["fire_at"].as_str().unwrap().parse().unwrap();
        assert_eq!(at, "2026-01-15T12:00:00Z".parse::<DateTime<Utc>>().unwrap());
        let (s, _) = kit.send(Request::get("/api/status").body(Body::empty()).unwrap()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
    }
}
