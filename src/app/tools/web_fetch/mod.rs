//! `web_fetch`: one http(s) page as readable text (docs/design.md#web-fetch). Each hop — the
//! URL and every redirect, followed by hand — is vetted by [`safety`] (scheme, the host
//! resolved once, every address checked) and the request connects only to the vetted
//! addresses. The body is read up to a byte cap, binary types are refused before it is read,
//! HTML becomes text in [`text`], and the text is capped at 100 kB with a note. The whole
//! fetch has one time limit, bounded by the turn's deadline.
//!
//! Must not know: the turn loop or the model.

mod safety;
#[cfg(test)]
mod tests;
mod text;

use safety::Policy;
pub use safety::{Resolve, SystemDns};

use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use async_trait::async_trait;
use reqwest::{Response, StatusCode, Url, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use text::Kind;

/// How much a fetch may read, keep and take.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of body read at most (the rest is never downloaded).
    pub max_body_bytes: usize,
    /// Bytes of text returned at most (CONTRACT: 100 kB).
    pub max_text_bytes: usize,
    /// The whole fetch, every hop included.
    pub timeout: Duration,
    /// Redirects followed at most.
    pub max_redirects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_body_bytes: 2 * 1024 * 1024, max_text_bytes: 100_000, timeout: Duration::from_secs(20), max_redirects: 5 }
    }
}

/// The `web_fetch` tool.
pub struct WebFetch {
    dns: Arc<dyn Resolve>,
    limits: Limits,
    #[cfg(test)]
    pretend_public: Vec<std::net::SocketAddr>,
}

impl Default for WebFetch {
    fn default() -> Self {
        Self::new(Arc::new(SystemDns), Limits::default())
    }
}

impl WebFetch {
    /// A `web_fetch` that resolves names with `dns` (tests map names to their own servers).
    pub fn new(dns: Arc<dyn Resolve>, limits: Limits) -> Self {
        Self {
            dns,
            limits,
            #[cfg(test)]
            pretend_public: Vec::new(),
        }
    }
}

/// The call's arguments.
#[derive(Debug, Deserialize)]
struct Args {
    url: String,
}

#[async_trait]
impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        "Fetch one web page (http or https) and return it as readable text: the page title, the final URL after \
redirects, and the text (HTML converted to text; plain text, markdown and JSON as they are), capped at 100 kB. \
Use it to read a page the user links or one you need; binary files (images, PDFs, archives) are refused, and so are \
private or internal network addresses."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
            },
            "required": ["url"]
        })
    }

    /// A backstop a little past the fetch's own limit, which answers with a clearer message.
    fn timeout(&self) -> Option<Duration> {
        Some(self.limits.timeout + Duration::from_secs(2))
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let a: Args = parse_args(args)?;
        let url = parse_url(a.url.trim())?;
        let policy = Policy {
            allow_private: ctx.app.inner.cfg.settings.tools.web.allow_private,
            #[cfg(test)]
            pretend_public: self.pretend_public.clone(),
        };
        let limit = ctx.remaining().map_or(self.limits.timeout, |left| left.min(self.limits.timeout));
        let until = tokio::time::Instant::now() + limit;
        match tokio::time::timeout_at(until, self.fetch(&policy, url.clone(), until)).await {
            Ok(page) => page.map(ToolOutput::Json),
            Err(_) => Err(ToolError::Failed(format!("Timed out after {} s fetching {url}", limit.as_secs_f32().ceil()))),
        }
    }
}

impl WebFetch {
    /// Follows the redirect chain from `url`, vetting every hop, and reads the final page.
    async fn fetch(&self, policy: &Policy, mut url: Url, until: tokio::time::Instant) -> Result<Value, ToolError> {
        for _ in 0..=self.limits.max_redirects {
            let target = safety::vet(&url, policy, self.dns.as_ref()).await?;
            let resp = pinned_client(&target)?.get(url.clone()).send().await.map_err(|e| transport(&url, e))?;
            match redirect_location(&url, &resp)? {
                Some(next) => url = next,
                None => return self.read(resp, url, until).await,
            }
        }
        Err(ToolError::Failed(format!("Too many redirects (more than {}) fetching {url}", self.limits.max_redirects)))
    }

    /// Reads a final response into the result: status checked, binary refused before the body
    /// is read, body read up to the cap, converted off the async threads, text capped.
    async fn read(&self, mut resp: Response, url: Url, until: tokio::time::Instant) -> Result<Value, ToolError> {
        let status = resp.status();
        if !status.is_success() {
            return Err(ToolError::Failed(format!("HTTP {status} fetching {url}")));
        }
        let content_type = resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_string);
        let kind = Kind::of(content_type.as_deref());
        if kind == Kind::Binary {
            return Err(binary(&url, content_type.as_deref()));
        }
        let (body, body_cut) = read_capped(&mut resp, self.limits.max_body_bytes).await.map_err(|e| transport(&url, e))?;
        drop(resp);
        let kind = if kind == Kind::Unknown { Kind::sniff(&body) } else { kind };
        if kind == Kind::Binary {
            return Err(binary(&url, content_type.as_deref()));
        }
        let rendered = tokio::task::spawn_blocking(move || text::render(kind, &body, until.into_std()))
            .await
            .map_err(|e| ToolError::Failed(format!("could not convert {url}: {e}")))?
            .map_err(|e| ToolError::Failed(format!("{e} ({url})")))?;
        let (mut content, text_cut) = text::cap(rendered.text, self.limits.max_text_bytes);
        if body_cut {
            let mb = self.limits.max_body_bytes as f64 / (1024.0 * 1024.0);
            content.push_str(&format!("\n\n[... the page is larger than {mb} MB; only its first {mb} MB were read ...]"));
        }
        let mut out = json!({"url": url.as_str(), "content": content});
        if let Some(title) = rendered.title {
            out["title"] = json!(title);
        }
        if body_cut || text_cut {
            out["truncated"] = json!(true);
        }
        Ok(out)
    }
}

/// The model's URL; one without a scheme (`example.com/page`) is taken as https.
fn parse_url(text: &str) -> Result<Url, ToolError> {
    match Url::parse(text) {
        Err(url::ParseError::RelativeUrlWithoutBase) if !text.is_empty() && !text.contains("://") => Url::parse(&format!("https://{text}")),
        parsed => parsed,
    }
    .map_err(|e| ToolError::BadArgs(format!("invalid URL `{text}`: {e}")))
}

/// A client that connects only to `target`'s vetted addresses: no redirects of its own, no
/// proxy (a proxy would resolve the name again), the name's DNS answer pinned. Built per hop,
/// unlike the app's other clients: reqwest fixes DNS overrides when a client is built, and a
/// pin that belongs to one request cannot leak into another (a few ms a hop).
fn pinned_client(target: &safety::Target) -> Result<reqwest::Client, ToolError> {
    let mut b = crate::clients::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("hermes-zero/", env!("CARGO_PKG_VERSION"), " (web_fetch)"));
    if let Some(domain) = &target.domain {
        b = b.resolve_to_addrs(domain, &target.addrs);
    }
    b.build().map_err(|e| ToolError::Failed(format!("could not set up the HTTP client: {e}")))
}

/// The next URL when `resp` is a redirect (301, 302, 303, 307, 308 with a `Location`),
/// resolved against `url`.
fn redirect_location(url: &Url, resp: &Response) -> Result<Option<Url>, ToolError> {
    let redirect = [
        StatusCode::MOVED_PERMANENTLY,
        StatusCode::FOUND,
        StatusCode::SEE_OTHER,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ];
    if !redirect.contains(&resp.status()) {
        return Ok(None);
    }
    let Some(location) = resp.headers().get(header::LOCATION) else {
        return Err(ToolError::Failed(format!("HTTP {} without a Location fetching {url}", resp.status())));
    };
    let location = location.to_str().map_err(|_| ToolError::Failed(format!("unreadable redirect Location from {url}")))?;
    url.join(location).map(Some).map_err(|e| ToolError::Failed(format!("bad redirect Location `{location}` from {url}: {e}")))
}

/// Reads the body up to `max` bytes; whether more was left unread.
async fn read_capped(resp: &mut Response, max: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn binary(url: &Url, content_type: Option<&str>) -> ToolError {
    let ct = content_type.unwrap_or("binary data");
    ToolError::Failed(format!("web_fetch reads text pages only; {url} is {ct}"))
}

fn transport(url: &Url, e: reqwest::Error) -> ToolError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "failed"
    };
    ToolError::Failed(format!("Could not fetch {url}: {what} ({})", e.without_url()))
}
