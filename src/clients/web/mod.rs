//! The adapters of the web backend port ([`WebBackend`], docs/tools.md#web-search-and-extract): one file per
//! vendor, each speaking that vendor's HTTP API as Hermes 0.19.0's `plugins/web/*` does
//! (endpoint, body, auth header, response shape), at the base URL its variable names
//! (`TAVILY_BASE_URL`, `FIRECRAWL_API_URL`, `SEARXNG_URL`, …; `config::web_choice`). This
//! file builds the chosen backends and owns what they share: one HTTP client, the JSON call
//! and the sorting of its failures. A vendor's answer never carries the key into a message.
//!
//! These calls go to the operator's configured vendor, not to a model-chosen address, so
//! they are not held to `web_fetch`'s address rules (a self-hosted SearXNG on localhost is
//! fine); the pages' URLs are vetted by the app before they are sent.

mod brave;
mod exa;
mod firecrawl;
mod parallel;
mod searxng;
mod tavily;

use crate::config::{Loaded, WebBackendKind, WebEndpoint};
use crate::ports::{WebBackend, WebError};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The backends of `web_search` and `web_extract` (both `None` when none is configured).
#[derive(Clone, Default)]
pub struct WebBackends {
    /// `web_search`'s vendor.
    pub search: Option<Arc<dyn WebBackend>>,
    /// `web_extract`'s vendor.
    pub extract: Option<Arc<dyn WebBackend>>,
}

/// The backends `cfg` chooses (`web.*` and the vendors' variables).
pub fn from_config(cfg: &Loaded) -> WebBackends {
    let choice = crate::config::web_choice(&cfg.settings.web, &cfg.env);
    let http = crate::clients::http_client(Duration::from_secs(60));
    WebBackends { search: choice.search.map(|e| build(e, http.clone())), extract: choice.extract.map(|e| build(e, http.clone())) }
}

fn build(e: WebEndpoint, http: reqwest::Client) -> Arc<dyn WebBackend> {
    let api = Api { http, base: e.base_url, key: e.key };
    match e.kind {
        WebBackendKind::Tavily => Arc::new(tavily::Tavily(api)),
        WebBackendKind::Exa => Arc::new(exa::Exa(api)),
        WebBackendKind::Parallel => Arc::new(parallel::Parallel { api, mode: e.search_mode }),
        WebBackendKind::Firecrawl => Arc::new(firecrawl::Firecrawl(api)),
        WebBackendKind::Searxng => Arc::new(searxng::Searxng(api)),
        WebBackendKind::BraveFree => Arc::new(brave::Brave(api)),
    }
}

/// One vendor's endpoint: the shared client, its base URL and its key.
struct Api {
    http: reqwest::Client,
    base: String,
    key: Option<SecretString>,
}

/// Why a vendor call failed, before the vendor's file words it as Hermes does.
#[derive(Debug)]
enum Failure {
    /// The vendor answered with this status (`401 Unauthorized`) and maybe a message.
    Status(String, Option<String>),
    /// No answer (connection refused, timed out).
    Transport(String),
    /// An answer that is not the JSON it should be.
    Garbage(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Status(s, Some(m)) => write!(f, "HTTP {s}: {m}"),
            Self::Status(s, None) => write!(f, "HTTP {s}"),
            Self::Transport(e) => write!(f, "{e}"),
            Self::Garbage(e) => write!(f, "the answer is not valid JSON ({e})"),
        }
    }
}

impl Api {
    /// `{base}{path}`.
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `{base}{path}?k=v&…`, the values form-encoded.
    fn url_with(&self, path: &str, params: &[(&str, &str)]) -> Result<url::Url, Failure> {
        url::Url::parse_with_params(&self.url(path), params).map_err(|e| Failure::Transport(format!("bad base URL `{}`: {e}", self.base)))
    }

    /// The key, or Hermes' "not set" error naming `var` (and where to get one).
    fn key(&self, var: &str, hint: &str) -> Result<&str, WebError> {
        self.key.as_ref().map(|k| k.expose_secret()).ok_or_else(|| WebError(format!("{var} environment variable not set. {hint}")))
    }

    /// Sends `rq` and reads a JSON object back; a failure's text never holds the key.
    async fn json(&self, rq: reqwest::RequestBuilder, timeout: Duration) -> Result<Value, Failure> {
        let resp = rq.timeout(timeout).send().await.map_err(|e| Failure::Transport(self.redact(e.without_url().to_string())))?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(|e| Failure::Transport(self.redact(e.without_url().to_string())))?;
        if !status.is_success() {
            return Err(Failure::Status(status.to_string(), vendor_message(&body).map(|m| self.redact(m))));
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(Failure::Garbage("not a JSON object".into())),
            Err(e) => Err(Failure::Garbage(e.to_string())),
        }
    }

    /// `text` with the key (if any) blanked out.
    fn redact(&self, text: String) -> String {
        match &self.key {
            Some(k) if !k.expose_secret().is_empty() => text.replace(k.expose_secret(), "***"),
            _ => text,
        }
    }
}

/// The vendor's own error message (`error`, `detail`, `message`, or `error.message`), cut
/// to 300 characters.
fn vendor_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = ["error", "detail", "message"].iter().find_map(|k| match &v[k] {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_string),
        _ => None,
    })?;
    Some(text.chars().take(300).collect())
}

/// The string at `v[key]`, or empty.
fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// The array at `v[key]`, or empty.
fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The strings of the array at `v[key]`, joined with `sep`.
fn joined(v: &Value, key: &str, sep: &str) -> String {
    list(v, key).iter().filter_map(Value::as_str).collect::<Vec<_>>().join(sep)
}
