//! The adapters of the fetcher port (docs/design.md#web-fetch): [`PinnedFetcher`], a reqwest
//! client per request pinned to the vetted addresses, and [`SystemDns`], the operating
//! system's resolver. Knows nothing of the SSRF rules: the app vets, this dials what it is
//! told to.

use crate::ports::{FetchBody, FetchError, FetchResponse, Fetcher, Pin, Resolve};
use async_trait::async_trait;
use std::net::SocketAddr;
use std::time::Duration;
use url::Url;

/// GETs through a client built for each request: no redirects of its own, no proxy (a proxy
/// would resolve the name again), the name's DNS answer pinned. Built per request, unlike the
/// app's other clients: reqwest fixes DNS overrides when a client is built, and a pin that
/// belongs to one request cannot leak into another (a few ms a request).
pub struct PinnedFetcher {
    user_agent: &'static str,
}

impl PinnedFetcher {
    /// A fetcher that names itself `user_agent`.
    pub fn new(user_agent: &'static str) -> Self {
        Self { user_agent }
    }

    /// The `web_fetch` tool's fetcher.
    pub fn web_fetch() -> Self {
        Self::new(concat!("hermes-zero/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
    }

    fn client(&self, pin: Option<Pin<'_>>) -> Result<reqwest::Client, FetchError> {
        let mut b = crate::clients::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(self.user_agent);
        if let Some(pin) = pin {
            b = b.resolve_to_addrs(pin.host, pin.addrs);
        }
        b.build().map_err(|e| FetchError::Setup(e.to_string()))
    }
}

#[async_trait]
impl Fetcher for PinnedFetcher {
    async fn get(&self, url: &Url, pin: Option<Pin<'_>>) -> Result<FetchResponse, FetchError> {
        let resp = self.client(pin)?.get(url.clone()).send().await.map_err(failure)?;
        let headers = resp.headers().iter().map(|(n, v)| (n.as_str().to_string(), v.to_str().ok().map(str::to_string))).collect();
        Ok(FetchResponse { status: resp.status().as_u16(), status_text: resp.status().to_string(), headers, body: Box::new(Body(resp)) })
    }
}

/// A reqwest response's body, chunk by chunk.
struct Body(reqwest::Response);

#[async_trait]
impl FetchBody for Body {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError> {
        Ok(self.0.chunk().await.map_err(failure)?.map(Vec::from))
    }
}

/// Sorts a reqwest failure into the port's kinds (the URL is left out: the caller names it).
fn failure(e: reqwest::Error) -> FetchError {
    let (timed_out, connect) = (e.is_timeout(), e.is_connect());
    let detail = e.without_url().to_string();
    if timed_out {
        FetchError::TimedOut(detail)
    } else if connect {
        FetchError::Connect(detail)
    } else {
        FetchError::Failed(detail)
    }
}

/// The operating system's resolver (`getaddrinfo` through tokio).
pub struct SystemDns;

#[async_trait]
impl Resolve for SystemDns {
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}
