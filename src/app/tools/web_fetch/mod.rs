//! `web_fetch`: one http(s) page as readable text (docs/design.md#web-fetch). Each hop — the
//! URL and every redirect, followed by hand — is vetted by [`safety`] (scheme, the host
//! resolved once, every address checked) and the request connects only to the vetted
//! addresses. The body is read up to a byte cap, binary types are refused before it is read,
//! HTML becomes text in [`text`], and the text is capped at 100 kB with a note. The whole
//! fetch has one time limit, bounded by the turn's deadline. The network is reached only
//! through the [`Fetcher`] and [`Resolve`] ports, chosen at wiring time.
//!
//! Must not know: the turn loop or the model, the HTTP client.

mod safety;
#[cfg(test)]
mod tests;
mod text;

use safety::Policy;

use super::{Tool, ToolCtx, ToolError, ToolOutput, parse_args};
use crate::ports::{FetchError, FetchResponse, Fetcher, Pin, Resolve};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use text::Kind;
use url::Url;

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
    fetcher: Arc<dyn Fetcher>,
    dns: Arc<dyn Resolve>,
    limits: Limits,
    #[cfg(test)]
    pretend_public: Vec<std::net::SocketAddr>,
}

impl WebFetch {
    /// A `web_fetch` that resolves names with `dns` (tests map names to their own servers)
    /// and sends its pinned requests through `fetcher`.
    pub fn new(fetcher: Arc<dyn Fetcher>, dns: Arc<dyn Resolve>, limits: Limits) -> Self {
        Self {
            fetcher,
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

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "web"
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
            let pin = target.domain.as_deref().map(|host| Pin { host, addrs: &target.addrs });
            let resp = self.fetcher.get(&url, pin).await.map_err(|e| transport(&url, e))?;
            match redirect_location(&url, &resp)? {
                Some(next) => url = next,
                None => return self.read(resp, url, until).await,
            }
        }
        Err(ToolError::Failed(format!("Too many redirects (more than {}) fetching {url}", self.limits.max_redirects)))
    }

    /// Reads a final response into the result: status checked, binary refused before the body
    /// is read, body read up to the cap, converted off the async threads, text capped.
    async fn read(&self, mut resp: FetchResponse, url: Url, until: tokio::time::Instant) -> Result<Value, ToolError> {
        if !(200..300).contains(&resp.status) {
            return Err(ToolError::Failed(format!("HTTP {} fetching {url}", resp.status_text)));
        }
        let content_type = resp.header("content-type").map(str::to_string);
        let kind = Kind::of(content_type.as_deref());
        if kind == Kind::Binary {
            return Err(binary(&url, content_type.as_deref()));
        }
        let (body, body_cut) = resp.body.read_capped(self.limits.max_body_bytes).await.map_err(|e| transport(&url, e))?;
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

/// Vets `url` with `web_fetch`'s address rules for the turn `ctx` describes (`web_extract`
/// sends only URLs that pass them to its vendor).
pub(super) async fn vet_url(ctx: &ToolCtx<'_>, dns: &dyn Resolve, url: &Url) -> Result<(), ToolError> {
    let policy = Policy {
        allow_private: ctx.app.inner.cfg.settings.tools.web.allow_private,
        #[cfg(test)]
        pretend_public: Vec::new(),
    };
    safety::vet(url, &policy, dns).await.map(|_| ())
}

/// GETs `url` with `web_fetch`'s address rules on every hop (redirects followed by hand, at
/// most 5, each vetted and pinned), for the turn `ctx` describes: `vision_analyze`'s images.
/// Returns the final URL and its answer, whatever its status.
pub(super) async fn get_vetted(
    ctx: &ToolCtx<'_>,
    fetcher: &dyn Fetcher,
    dns: &dyn Resolve,
    mut url: Url,
) -> Result<(Url, FetchResponse), ToolError> {
    let policy = Policy {
        allow_private: ctx.app.inner.cfg.settings.tools.web.allow_private,
        #[cfg(test)]
        pretend_public: Vec::new(),
    };
    let max = Limits::default().max_redirects;
    for _ in 0..=max {
        let target = safety::vet(&url, &policy, dns).await?;
        let pin = target.domain.as_deref().map(|host| Pin { host, addrs: &target.addrs });
        let resp = fetcher.get(&url, pin).await.map_err(|e| transport(&url, e))?;
        match redirect_location(&url, &resp)? {
            Some(next) => url = next,
            None => return Ok((url, resp)),
        }
    }
    Err(ToolError::Failed(format!("Too many redirects (more than {max}) fetching {url}")))
}

/// The model's URL; one without a scheme (`example.com/page`) is taken as https.
pub(super) fn parse_url(text: &str) -> Result<Url, ToolError> {
    match Url::parse(text) {
        Err(url::ParseError::RelativeUrlWithoutBase) if !text.is_empty() && !text.contains("://") => Url::parse(&format!("https://{text}")),
        parsed => parsed,
    }
    .map_err(|e| ToolError::BadArgs(format!("invalid URL `{text}`: {e}")))
}

/// The next URL when `resp` is a redirect (301, 302, 303, 307, 308 with a `Location`),
/// resolved against `url`.
fn redirect_location(url: &Url, resp: &FetchResponse) -> Result<Option<Url>, ToolError> {
    if ![301, 302, 303, 307, 308].contains(&resp.status) {
        return Ok(None);
    }
    if !resp.has_header("location") {
        return Err(ToolError::Failed(format!("HTTP {} without a Location fetching {url}", resp.status_text)));
    }
    let location = resp.header("location").ok_or_else(|| ToolError::Failed(format!("unreadable redirect Location from {url}")))?;
    url.join(location).map(Some).map_err(|e| ToolError::Failed(format!("bad redirect Location `{location}` from {url}: {e}")))
}

fn binary(url: &Url, content_type: Option<&str>) -> ToolError {
    let ct = content_type.unwrap_or("binary data");
    ToolError::Failed(format!("web_fetch reads text pages only; {url} is {ct}"))
}

/// A request or body failure as the model reads it (a client that could not be built is
/// not the page's fault and says so).
fn transport(url: &Url, e: FetchError) -> ToolError {
    match e {
        FetchError::Setup(_) => ToolError::Failed(e.to_string()),
        e => ToolError::Failed(format!("Could not fetch {url}: {e}")),
    }
}
