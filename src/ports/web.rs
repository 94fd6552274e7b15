//! The web backend port: what `web_search` and `web_extract` need from a search vendor
//! (Tavily, Exa, Parallel, Firecrawl, SearXNG, Brave — docs/tools.md#web-search-and-extract). One
//! [`WebBackend`] per configured vendor, chosen at wiring time; the adapters
//! (`clients::web`, one file per vendor) own the vendor's endpoint, auth and response shape.
//! Knows no HTTP library and no vendor.

use async_trait::async_trait;

/// One search result, as Hermes normalizes every vendor's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebHit {
    /// The page title.
    pub title: String,
    /// The page URL.
    pub url: String,
    /// The vendor's snippet (Tavily's `content`, Exa's highlights, …).
    pub description: String,
}

/// One page a vendor extracted (or failed to).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebPage {
    /// The page URL (after the vendor's redirects, when it says).
    pub url: String,
    /// Its title (may be empty).
    pub title: String,
    /// Its clean text or markdown (empty on failure).
    pub content: String,
    /// Why this page failed, when it did.
    pub error: Option<String>,
}

/// A vendor call that failed as a whole; the text is what the model reads, in Hermes'
/// words (`Tavily search failed: HTTP 401 Unauthorized`, `SearXNG returned HTTP 429`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WebError(pub String);

/// A search vendor.
#[async_trait]
pub trait WebBackend: Send + Sync {
    /// Hermes' display name (`Tavily`, `SearXNG`, `Brave Search (Free)`).
    fn display_name(&self) -> &str;

    /// Whether it can extract pages (SearXNG and Brave cannot).
    fn extracts(&self) -> bool;

    /// Up to `limit` results for `query`.
    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError>;

    /// The pages at `urls` (vetted by the caller), one entry per page the vendor answered for.
    async fn extract(&self, urls: &[String]) -> Result<Vec<WebPage>, WebError>;
}
