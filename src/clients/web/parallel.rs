//! Parallel (`plugins/web/parallel`, through the wire protocol of its SDK `parallel-web`
//! 0.4.2): `POST {PARALLEL_BASE_URL}/v1beta/search` with `x-api-key` and the beta header,
//! `{objective, search_queries: [q], mode, max_results}` (the description is the excerpts
//! joined), and `POST /v1beta/extract` with `{urls, full_content: true}` (`errors[]` become
//! pages with an error). `PARALLEL_SEARCH_MODE` picks the mode.

use super::{Api, joined, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

/// The Parallel backend.
pub(super) struct Parallel {
    pub(super) api: Api,
    /// `agentic`, `fast` or `one-shot`.
    pub(super) mode: String,
}

/// The beta the search and extract endpoints need.
const BETA: &str = "search-extract-2025-10-10";

impl Parallel {
    async fn post(&self, path: &str, body: Value, what: &str) -> Result<Value, WebError> {
        let key = self.api.key("PARALLEL_API_KEY", "Get your API key at https://parallel.ai")?;
        let rq = self.api.http.post(self.api.url(path)).header("x-api-key", key).header("parallel-beta", BETA).json(&body);
        self.api.json(rq, Duration::from_secs(60)).await.map_err(|f| WebError(format!("Parallel {what} failed: {f}")))
    }
}

#[async_trait]
impl WebBackend for Parallel {
    fn display_name(&self) -> &str {
        "Parallel"
    }

    fn extracts(&self) -> bool {
        true
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        let body = json!({"objective": query, "search_queries": [query], "mode": self.mode, "max_results": limit.min(20)});
        let v = self.post("/v1beta/search", body, "search").await?;
        Ok(list(&v, "results")
            .iter()
            .map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: joined(r, "excerpts", " ") })
            .collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        let v = self.post("/v1beta/extract", json!({"urls": urls, "full_content": true}), "extract").await?;
        let mut pages: Vec<WebPage> = list(&v, "results")
            .iter()
            .map(|r| {
                let full = text(r, "full_content");
                let content = if full.is_empty() { joined(r, "excerpts", "\n\n") } else { full };
                WebPage { url: text(r, "url"), title: text(r, "title"), content, error: None }
            })
            .collect();
        for e in list(&v, "errors") {
            let why = [text(e, "content"), text(e, "error_type")]
                .into_iter()
                .find(|s| !s.is_empty())
                .unwrap_or_else(|| "extraction failed".into());
            pages.push(WebPage { url: text(e, "url"), error: Some(why), ..WebPage::default() });
        }
        Ok(pages)
    }
}
