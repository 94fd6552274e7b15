//! `web_fetch` against local axum servers on 127.0.0.1: HTML to text, the text cap, a 2 GB
//! body stopped at the byte cap, time-outs, redirect chains, and the SSRF rules — names and
//! redirects that lead to 127.0.0.1, DNS rebinding between hops, the request pinned to the
//! vetted address. Names resolve through a test resolver (no public DNS); a server can stand
//! in for a public host through `pretend_public` (exact address and port only).

use super::*;
use crate::app::App;
use crate::app::types::TurnKind;
use crate::core::ids::SessionId;
use crate::core::session::ToolCall;
use crate::ports::Resolve;
use crate::test_support::{CountingLlm, TestApp};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::time::Instant;

const PAGE: &str = "<!doctype html><html><head><title>Test &amp; page</title><script>var token = 'leak';</script>\
<style>body { color: red }</style></head><body><h1>Welcome</h1><p>Hello <a href=\"/x\">world</a>.</p></body></html>";

/// Counts requests and the body bytes the 2 GB route produced.
#[derive(Clone, Default)]
struct Hits {
    requests: Arc<AtomicUsize>,
    produced: Arc<AtomicUsize>,
}

async fn page(State(h): State<Hits>) -> Response {
    h.requests.fetch_add(1, Ordering::SeqCst);
    ([("content-type", "text/html; charset=utf-8")], PAGE).into_response()
}

async fn huge(State(h): State<Hits>) -> Response {
    h.requests.fetch_add(1, Ordering::SeqCst);
    let chunk = Bytes::from(vec![b'a'; 64 * 1024]);
    let produced = h.produced.clone();
    // 2 GiB, generated lazily; the counter shows how much was ever produced.
    let stream = futures_util::stream::repeat(chunk).take(32 * 1024).map(move |c| {
        produced.fetch_add(c.len(), Ordering::SeqCst);
        Ok::<_, std::convert::Infallible>(c)
    });
    ([("content-type", "text/plain")], Body::from_stream(stream)).into_response()
}

async fn redirect_to(State(h): State<Hits>, Query(q): Query<HashMap<String, String>>) -> Response {
    h.requests.fetch_add(1, Ordering::SeqCst);
    Redirect::temporary(q.get("to").map_or("/page", String::as_str)).into_response()
}

fn router(h: Hits) -> Router {
    Router::new()
        .route("/page", get(page))
        .route("/huge", get(huge))
        .route("/go", get(redirect_to))
        .route(
            "/r/{n}",
            get(|State(h): State<Hits>, axum::extract::Path(n): axum::extract::Path<u32>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                let next = if n <= 1 { "/page".to_string() } else { format!("/r/{}", n - 1) };
                Redirect::to(&next)
            }),
        )
        .route(
            "/loop",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                Redirect::to("/loop")
            }),
        )
        .route(
            "/long",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                ([("content-type", "text/markdown")], "word ".repeat(60_000))
            }),
        )
        .route(
            "/hang",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(120)).await;
                "late"
            }),
        )
        .route(
            "/png",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                ([("content-type", "image/png")], vec![0x89u8, b'P', b'N', b'G', 0, 0])
            }),
        )
        .route(
            "/untyped",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                let mut r = vec![0u8, 1, 2, 3, 0, 255].into_response();
                r.headers_mut().remove("content-type");
                r
            }),
        )
        .route(
            "/missing",
            get(|State(h): State<Hits>| async move {
                h.requests.fetch_add(1, Ordering::SeqCst);
                (StatusCode::NOT_FOUND, "no")
            }),
        )
        .with_state(h)
}

/// A local server on `ip:0` (or `ip:port`); its address and counters.
async fn serve_on(addr: SocketAddr) -> std::io::Result<(SocketAddr, Hits)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let hits = Hits::default();
    let app = router(hits.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((addr, hits))
}

async fn serve() -> (SocketAddr, Hits) {
    serve_on("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// A resolver with fixed answers per name; a name's answers are used in turn, the last one
/// repeating. Counts lookups.
#[derive(Default)]
struct MapDns {
    answers: Mutex<HashMap<String, Vec<Vec<IpAddr>>>>,
    calls: AtomicUsize,
}

impl MapDns {
    fn with(pairs: &[(&str, &[&[&str]])]) -> Arc<Self> {
        let dns = Self::default();
        for (name, answers) in pairs {
            let answers = answers.iter().map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect()).collect();
            dns.answers.lock().unwrap().insert((*name).to_string(), answers);
        }
        Arc::new(dns)
    }
}

#[async_trait]
impl Resolve for MapDns {
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut map = self.answers.lock().unwrap();
        let answers = map.get_mut(host).ok_or_else(|| std::io::Error::other("no such host"))?;
        let ips = if answers.len() > 1 { answers.remove(0) } else { answers[0].clone() };
        Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect())
    }
}

fn app(allow_private: bool) -> App {
    let yaml = format!("tools: {{web: {{allow_private: {allow_private}}}}}\n");
    TestApp::new("2025-03-01T12:00:00Z".parse().unwrap()).yaml(&yaml).llm(CountingLlm::new("ok")).build()
}

/// The tool as wired in production: the real pinned fetcher and the system resolver.
fn real() -> WebFetch {
    let ports = crate::test_support::tool_ports();
    WebFetch::new(ports.fetcher, ports.dns, Limits::default())
}

/// The real fetcher with names resolved by `dns`.
fn tool(dns: Arc<MapDns>, pretend_public: &[SocketAddr]) -> WebFetch {
    let mut t = WebFetch::new(crate::test_support::tool_ports().fetcher, dns, Limits::default());
    t.pretend_public = pretend_public.to_vec();
    t
}

async fn fetch_with(app: &App, t: &WebFetch, url: &str, deadline: Option<Instant>) -> Result<Value, String> {
    let sid = SessionId::named("s1".into());
    let ctx = ToolCtx { app, session_id: &sid, origin: None, kind: TurnKind::Job, deadline, call_id: None, turn: None };
    // Bounded: no test may hang on a fetch.
    let out = tokio::time::timeout(Duration::from_secs(30), t.call(&ctx, json!({ "url": url }))).await.expect("fetch hung");
    match out {
        Ok(ToolOutput::Json(v)) => Ok(v),
        Ok(ToolOutput::Text(t)) => Ok(Value::String(t)),
        Err(e) => Err(e.to_string()),
    }
}

async fn fetch(app: &App, t: &WebFetch, url: &str) -> Result<Value, String> {
    fetch_with(app, t, url, None).await
}

fn n(h: &Hits) -> usize {
    h.requests.load(Ordering::SeqCst)
}

#[tokio::test]
async fn an_html_page_comes_back_as_text_with_title_and_url() {
    let (addr, hits) = serve().await;
    let v = fetch(&app(true), &real(), &format!("http://{addr}/page")).await.unwrap();
    assert_eq!(v["title"], "Test & page");
    assert_eq!(v["url"], format!("http://{addr}/page"));
    let text = v["content"].as_str().unwrap();
    assert!(text.contains("Welcome") && text.contains("Hello") && text.contains("world"), "{text}");
    for bad in ["<", "token", "leak", "color"] {
        assert!(!text.contains(bad), "{bad:?} in {text}");
    }
    assert_eq!(v.get("truncated"), None);
    assert_eq!(n(&hits), 1);
}

#[tokio::test]
async fn long_text_is_capped_at_100_kb_with_a_note() {
    let (addr, _) = serve().await;
    let v = fetch(&app(true), &real(), &format!("http://{addr}/long")).await.unwrap();
    let text = v["content"].as_str().unwrap();
    let (kept, note) = text.split_once("\n\n[... truncated").expect("a truncation note");
    assert_eq!(kept.len(), 100_000);
    assert!(note.contains("300000 bytes"), "{note}");
    assert_eq!(v["truncated"], true);
}

#[tokio::test]
async fn a_2_gb_body_stops_at_the_byte_cap_quickly() {
    let (addr, hits) = serve().await;
    let started = Instant::now();
    let v = fetch(&app(true), &real(), &format!("http://{addr}/huge")).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(v["truncated"], true);
    let text = v["content"].as_str().unwrap();
    assert!(text.contains("only its first 2 MB were read"), "{}", &text[text.len() - 200..]);
    // Stopped reading: the server produced a few MB at most (socket buffers), not 2 GB.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let produced = hits.produced.load(Ordering::SeqCst);
    assert!(produced < 64 * 1024 * 1024, "server produced {produced} bytes");
}

#[tokio::test]
async fn a_hanging_server_times_out_within_the_limit_and_the_turn_deadline() {
    let (addr, _) = serve().await;
    let limits = Limits { timeout: Duration::from_millis(400), ..Limits::default() };
    let ports = crate::test_support::tool_ports();
    let t = WebFetch::new(ports.fetcher, ports.dns, limits);
    let started = Instant::now();
    let err = fetch(&app(true), &t, &format!("http://{addr}/hang")).await.unwrap_err();
    assert!(err.contains("Timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The turn's deadline is shorter than the tool's own 20 s: it wins.
    let started = Instant::now();
    let deadline = Some(Instant::now() + Duration::from_millis(300));
    let err = fetch_with(&app(true), &real(), &format!("http://{addr}/hang"), deadline).await.unwrap_err();
    assert!(err.contains("Timed out"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn redirect_chains_are_followed_up_to_five_hops() {
    let (addr, hits) = serve().await;
    let v = fetch(&app(true), &real(), &format!("http://{addr}/r/5")).await.unwrap();
    assert_eq!(v["url"], format!("http://{addr}/page"));
    assert_eq!(v["title"], "Test & page");
    assert_eq!(n(&hits), 6);
    let err = fetch(&app(true), &real(), &format!("http://{addr}/r/6")).await.unwrap_err();
    assert!(err.contains("Too many redirects"), "{err}");
    let err = fetch(&app(true), &real(), &format!("http://{addr}/loop")).await.unwrap_err();
    assert!(err.contains("Too many redirects"), "{err}");
}

#[tokio::test]
async fn names_and_literals_that_reach_internal_addresses_are_refused_before_connecting() {
    let (addr, hits) = serve().await;
    let p = addr.port();
    let dns = MapDns::with(&[("evil.test", &[&["127.0.0.1"]]), ("mixed.test", &[&["93.184.216.34", "127.0.0.1"]])]);
    let t = tool(dns, &[]);
    let app = app(false);
    for url in [
        format!("http://evil.test:{p}/page"),
        format!("http://mixed.test:{p}/page"),
        format!("http://127.0.0.1:{p}/page"),
        format!("http://[::ffff:127.0.0.1]:{p}/page"),
        format!("http://0x7f000001:{p}/page"),
        format!("http://[::1]:{p}/page"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.10.10/".to_string(),
    ] {
        let err = fetch(&app, &t, &url).await.unwrap_err();
        assert!(err.contains("private or internal network address") && err.contains("tools.web.allow_private"), "{url}: {err}");
    }
    assert_eq!(n(&hits), 0, "nothing reached the server");
    // Metadata endpoints stay refused with allow_private on.
    for url in ["http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/computeMetadata/v1/"] {
        let err = fetch(&self::app(true), &real(), url).await.unwrap_err();
        assert!(err.contains("cloud metadata"), "{url}: {err}");
    }
}

#[tokio::test]
async fn a_redirect_to_127_0_0_1_is_refused() {
    let (public, public_hits) = serve().await;
    let (internal, internal_hits) = serve().await;
    let dns = MapDns::with(&[("public.test", &[&["127.0.0.1"]]), ("evil.test", &[&["127.0.0.1"]])]);
    let t = tool(dns, &[public]);
    let app = app(false);
    let base = format!("http://public.test:{}", public.port());
    // The public stand-in itself is fetched fine.
    assert_eq!(fetch(&app, &t, &format!("{base}/page")).await.unwrap()["title"], "Test & page");
    let ip = internal.port();
    for to in [format!("http://127.0.0.1:{ip}/page"), format!("http://evil.test:{ip}/page"), format!("http://[::1]:{ip}/page")] {
        let err = fetch(&app, &t, &format!("{base}/go?to={to}")).await.unwrap_err();
        assert!(err.contains("private or internal network address"), "{to}: {err}");
    }
    for to in ["file:///etc/passwd", "ftp://public.test/x"] {
        let err = fetch(&app, &t, &format!("{base}/go?to={to}")).await.unwrap_err();
        assert!(err.contains("only http:// and https://"), "{to}: {err}");
    }
    assert_eq!(n(&internal_hits), 0, "the internal server was never contacted");
    assert_eq!(n(&public_hits), 6);
}

#[tokio::test]
async fn dns_rebinding_between_hops_is_refused() {
    let (addr, hits) = serve().await;
    // First answer: the public stand-in; every later one: an internal address.
    let dns = MapDns::with(&[("rebind.test", &[&["127.0.0.1"], &["10.0.0.7"]])]);
    let t = tool(dns.clone(), &[addr]);
    let url = format!("http://rebind.test:{}/go?to=/page", addr.port());
    let err = fetch(&app(false), &t, &url).await.unwrap_err();
    assert!(err.contains("rebind.test -> 10.0.0.7"), "{err}");
    assert_eq!(dns.calls.load(Ordering::SeqCst), 2, "each hop resolved once");
    assert_eq!(n(&hits), 1, "only the first, vetted hop was contacted");
}

#[tokio::test]
async fn the_request_connects_to_the_vetted_address_only() {
    let (a, a_hits) = serve().await;
    // A second server on another loopback address, same port: where a fresh lookup would go.
    let b = serve_on(SocketAddr::new("127.0.0.2".parse().unwrap(), a.port())).await.ok();
    let dns = MapDns::with(&[("pin.test", &[&["127.0.0.1"], &["127.0.0.2"]])]);
    let t = tool(dns.clone(), &[]);
    let v = fetch(&app(true), &t, &format!("http://pin.test:{}/page", a.port())).await.unwrap();
    assert_eq!(v["title"], "Test & page");
    assert_eq!(dns.calls.load(Ordering::SeqCst), 1, "resolved once, by the tool (pin.test is in no real DNS)");
    assert_eq!(n(&a_hits), 1);
    if let Some((_, b_hits)) = b {
        assert_eq!(n(&b_hits), 0);
    }
}

#[tokio::test]
async fn bad_urls_schemes_and_bodies_are_tool_errors() {
    let (addr, _) = serve().await;
    let app = app(true);
    let t = real();
    for (url, want) in [
        ("file:///etc/passwd", "only http:// and https://"),
        ("ftp://example.com/x", "only http:// and https://"),
        ("javascript:alert(1)", "only http:// and https://"),
        ("not a url", "invalid URL"),
        ("", "invalid URL"),
        ("http://", "invalid URL"),
    ] {
        let err = fetch(&app, &t, url).await.unwrap_err();
        assert!(err.contains(want), "{url}: {err}");
    }
    for (path, want) in [("/png", "text pages only"), ("/untyped", "text pages only"), ("/missing", "HTTP 404")] {
        let err = fetch(&app, &t, &format!("http://{addr}{path}")).await.unwrap_err();
        assert!(err.contains(want), "{path}: {err}");
    }
    let t = tool(MapDns::with(&[]), &[]);
    let err = fetch(&app, &t, "http://no-such-host.test/").await.unwrap_err();
    assert!(err.contains("Could not resolve no-such-host.test"), "{err}");
    // No scheme: taken as https (the lookup shows the name was read as a host).
    let err = fetch(&app, &t, "no-such-host.test/page").await.unwrap_err();
    assert!(err.contains("Could not resolve no-such-host.test"), "{err}");
}

#[tokio::test]
async fn through_the_registry_errors_reach_the_model_as_results() {
    let app = app(false);
    let sid = SessionId::named("s1".into());
    let ctx = ToolCtx { app: &app, session_id: &sid, origin: None, kind: TurnKind::Job, deadline: None, call_id: None, turn: None };
    let set = app.inner.tools.toolset(&ctx);
    for args in [r#"{"url": "file:///etc/passwd"}"#, r#"{"url": 5}"#, r#"{}"#, r#"{"url": "http://127.0.0.1:1/"}"#] {
        let call = ToolCall { id: "c".into(), name: "web_fetch".into(), arguments: args.into() };
        let r = set.execute(&ctx, &call).await;
        assert!(r.is_error, "{args}: {}", r.content);
        assert!(serde_json::from_str::<Value>(&r.content).unwrap()["error"].is_string());
    }
}
