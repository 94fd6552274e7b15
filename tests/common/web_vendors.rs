//! Fake search vendors speaking the wire protocols Hermes 0.19.0's `plugins/web/*` and the
//! vendors' SDKs use (Tavily, Exa, Parallel, Firecrawl v2, SearXNG, Brave): each checks its
//! auth the vendor's way (401 without it), records what it was asked, and answers with two
//! results per search and one page per URL. A switch makes it answer 401, 429 or garbage.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::spawn_server;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// The vendors' test keys, written as `("NAME", "value")` pairs so that
/// scripts/check-test-logs.sh finds them and fails the suite if any reaches a log line.
pub const KEYS: [(&str, &str); 5] = [
    ("TAVILY_API_KEY", "tvly-fake-secret-7c1e"),
    ("EXA_API_KEY", "exa-fake-secret-93ab"),
    ("PARALLEL_API_KEY", "par-fake-secret-51d0"),
    ("FIRECRAWL_API_KEY", "fc-fake-secret-2f88"),
    ("BRAVE_SEARCH_API_KEY", "brave-fake-secret-6e4d"),
];

/// Which vendor a fake speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Tavily,
    Exa,
    Parallel,
    Firecrawl,
    Searxng,
    Brave,
}

impl Vendor {
    pub const ALL: [Vendor; 6] = [Vendor::Tavily, Vendor::Exa, Vendor::Parallel, Vendor::Firecrawl, Vendor::Searxng, Vendor::Brave];

    /// Hermes' `web.backend` name.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Tavily => "tavily",
            Vendor::Exa => "exa",
            Vendor::Parallel => "parallel",
            Vendor::Firecrawl => "firecrawl",
            Vendor::Searxng => "searxng",
            Vendor::Brave => "brave-free",
        }
    }

    /// The test key of this vendor (from [`KEYS`], which scripts/check-test-logs.sh reads).
    pub fn key(self) -> &'static str {
        let var = match self {
            Vendor::Tavily => "TAVILY_API_KEY",
            Vendor::Exa => "EXA_API_KEY",
            Vendor::Parallel => "PARALLEL_API_KEY",
            Vendor::Firecrawl => "FIRECRAWL_API_KEY",
            Vendor::Searxng => return "",
            Vendor::Brave => "BRAVE_SEARCH_API_KEY",
        };
        KEYS.iter().find(|(k, _)| *k == var).map(|(_, v)| *v).unwrap()
    }
}

/// How the fake answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Ok,
    Status(u16),
    Garbage,
}

/// One request the fake saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Value,
}

struct Inner {
    vendor: Vendor,
    mode: Mutex<Mode>,
    seen: Mutex<Vec<Seen>>,
    /// Characters of each extracted page.
    page_chars: Mutex<usize>,
}

/// A running fake vendor.
#[derive(Clone)]
pub struct FakeVendor {
    pub url: String,
    pub vendor: Vendor,
    inner: Arc<Inner>,
}

impl FakeVendor {
    pub async fn start(vendor: Vendor) -> Self {
        let inner = Arc::new(Inner { vendor, mode: Mutex::new(Mode::Ok), seen: Mutex::new(Vec::new()), page_chars: Mutex::new(0) });
        let url = spawn_server(axum::Router::new().fallback(handle).with_state(inner.clone())).await;
        Self { url, vendor, inner }
    }
    pub fn set_mode(&self, m: Mode) {
        *self.inner.mode.lock().unwrap() = m;
    }
    /// Makes each extracted page `n` characters long (0: a short page).
    pub fn set_page_chars(&self, n: usize) {
        *self.inner.page_chars.lock().unwrap() = n;
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.inner.seen.lock().unwrap().clone()
    }
    /// The environment that points the gateway at this fake, with its key.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let key = self.vendor.key().to_string();
        match self.vendor {
            Vendor::Tavily => vec![("TAVILY_API_KEY", key), ("TAVILY_BASE_URL", self.url.clone())],
            Vendor::Exa => vec![("EXA_API_KEY", key), ("EXA_BASE_URL", self.url.clone())],
            Vendor::Parallel => vec![("PARALLEL_API_KEY", key), ("PARALLEL_BASE_URL", self.url.clone())],
            Vendor::Firecrawl => vec![("FIRECRAWL_API_KEY", key), ("FIRECRAWL_API_URL", self.url.clone())],
            Vendor::Searxng => vec![("SEARXNG_URL", self.url.clone())],
            Vendor::Brave => vec![("BRAVE_SEARCH_API_KEY", key), ("BRAVE_SEARCH_BASE_URL", self.url.clone())],
        }
    }
}

/// The two search results every fake returns: (title, url, snippet).
pub fn hits(v: Vendor) -> [(String, String, String); 2] {
    let n = v.name();
    [1, 2].map(|i| (format!("{n} headline {i}"), format!("https://news.example/{n}/{i}"), format!("{n} snippet {i}")))
}

/// The page text the fakes return for `url`.
pub fn page_text(url: &str, chars: usize) -> String {
    let base = format!("# Page {url}\nThe body of {url}.\n");
    if chars <= base.len() {
        return base;
    }
    let mut s = base;
    let mut i = 0;
    while s.len() < chars {
        s.push_str(&format!("line {i:05} {}\n", "x".repeat(60)));
        i += 1;
    }
    s.truncate(chars);
    s
}

fn authorized(inner: &Inner, headers: &HeaderMap, body: &Value) -> bool {
    let key = inner.vendor.key();
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    match inner.vendor {
        Vendor::Tavily => h("authorization") == format!("Bearer {key}") || body["api_key"] == key,
        Vendor::Exa | Vendor::Parallel => h("x-api-key") == key,
        Vendor::Firecrawl => h("authorization") == format!("Bearer {key}"),
        Vendor::Searxng => true,
        Vendor::Brave => h("x-subscription-token") == key,
    }
}

async fn handle(State(inner): State<Arc<Inner>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        headers: headers.clone(),
        body: json_body.clone(),
    };
    inner.seen.lock().unwrap().push(seen.clone());
    let mode = *inner.mode.lock().unwrap();
    if !authorized(&inner, &headers, &json_body) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "Unauthorized: invalid API key"}))).into_response();
    }
    match mode {
        Mode::Status(s) => return (StatusCode::from_u16(s).unwrap(), axum::Json(json!({"error": "rate limited"}))).into_response(),
        Mode::Garbage => return (StatusCode::OK, [("content-type", "application/json")], "<html>oops</html>").into_response(),
        Mode::Ok => {}
    }
    let chars = *inner.page_chars.lock().unwrap();
    match answer(inner.vendor, &seen, chars) {
        Some(v) => axum::Json(v).into_response(),
        None => (StatusCode::NOT_FOUND, axum::Json(json!({"error": format!("no route {} {}", seen.method, seen.path)}))).into_response(),
    }
}

fn query_param(q: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

fn urls_of(body: &Value) -> Vec<String> {
    body["urls"].as_array().map(|a| a.iter().filter_map(|u| u.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

/// The vendor's documented answer to `seen`, or `None` for a route it does not have.
fn answer(v: Vendor, seen: &Seen, chars: usize) -> Option<Value> {
    let h = hits(v);
    let b = &seen.body;
    Some(match (v, seen.method.as_str(), seen.path.as_str()) {
        (Vendor::Tavily, "POST", "/search") => {
            json!({"query": b["query"], "response_time": 0.4, "images": [], "results": h.iter().map(|(t, u, s)| json!({"title": t, "url": u, "content": s, "score": 0.9, "raw_content": null})).collect::<Vec<_>>()})
        }
        (Vendor::Tavily, "POST", "/extract") => {
            json!({"results": urls_of(b).iter().map(|u| json!({"url": u, "raw_content": page_text(u, chars), "images": []})).collect::<Vec<_>>(), "failed_results": [], "response_time": 0.2})
        }
        (Vendor::Exa, "POST", "/search") => {
            json!({"requestId": "r1", "resolvedSearchType": "neural", "results": h.iter().map(|(t, u, s)| json!({"id": u, "title": t, "url": u, "highlights": [s, "more"], "highlightScores": [0.5, 0.4]})).collect::<Vec<_>>()})
        }
        (Vendor::Exa, "POST", "/contents") => {
            json!({"requestId": "r2", "results": urls_of(b).iter().map(|u| json!({"id": u, "url": u, "title": format!("Title of {u}"), "text": page_text(u, chars)})).collect::<Vec<_>>(), "statuses": []})
        }
        (Vendor::Parallel, "POST", "/v1beta/search") => {
            json!({"search_id": "search_1", "results": h.iter().map(|(t, u, s)| json!({"url": u, "title": t, "excerpts": [s, "more"]})).collect::<Vec<_>>()})
        }
        (Vendor::Parallel, "POST", "/v1beta/extract") => {
            json!({"extract_id": "extract_1", "results": urls_of(b).iter().map(|u| json!({"url": u, "title": format!("Title of {u}"), "full_content": page_text(u, chars), "excerpts": []})).collect::<Vec<_>>(), "errors": []})
        }
        (Vendor::Firecrawl, "POST", "/v2/search") => {
            json!({"success": true, "data": {"web": h.iter().enumerate().map(|(i, (t, u, s))| json!({"title": t, "url": u, "description": s, "position": i + 1})).collect::<Vec<_>>()}})
        }
        (Vendor::Firecrawl, "POST", "/v2/scrape") => {
            let u = b["url"].as_str().unwrap_or_default();
            json!({"success": true, "data": {"markdown": page_text(u, chars), "metadata": {"title": format!("Title of {u}"), "sourceURL": u, "statusCode": 200}}})
        }
        (Vendor::Searxng, "GET", "/search") if query_param(&seen.query, "format").as_deref() == Some("json") => {
            // Scores in reverse order: the client sorts them.
            json!({"query": query_param(&seen.query, "q"), "number_of_results": 2, "results": h.iter().enumerate().map(|(i, (t, u, s))| json!({"title": t, "url": u, "content": s, "engine": "duckduckgo", "score": (2 - i) as f64})).rev().collect::<Vec<_>>()})
        }
        (Vendor::Brave, "GET", "/res/v1/web/search") => {
            json!({"type": "search", "query": {"original": query_param(&seen.query, "q")}, "web": {"type": "search", "results": h.iter().map(|(t, u, s)| json!({"title": t, "url": u, "description": s, "type": "search_result"})).collect::<Vec<_>>()}})
        }
        _ => return None,
    })
}
