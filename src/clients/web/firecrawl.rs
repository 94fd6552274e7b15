//! Firecrawl, cloud or self-hosted (`plugins/web/firecrawl`, through the v2 wire protocol of
//! its SDK `firecrawl-py`): `POST {FIRECRAWL_API_URL}/v2/search` `{query, limit}` answering
//! `{success, data: {web: [...]}}`, and one `POST /v2/scrape` `{url, formats: ["markdown"]}`
//! per page answering `{success, data: {markdown, metadata: {title, sourceURL}}}`. The key is
//! a bearer token; a self-hosted instance (`FIRECRAWL_API_URL` alone) gets none. A page that
//! fails is a page with an error, as in Hermes' per-URL loop.

use super::{Api, Failure, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use std::time::Duration;

/// The Firecrawl backend.
pub(super) struct Firecrawl(pub(super) Api);

impl Firecrawl {
    async fn post(&self, path: &str, body: Value) -> Result<Value, Failure> {
        let mut rq = self.0.http.post(self.0.url(path)).json(&body);
        if let Some(k) = &self.0.key {
            rq = rq.bearer_auth(k.expose_secret());
        }
        let v = self.0.json(rq, Duration::from_secs(60)).await?;
        if v.get("success").and_then(Value::as_bool) != Some(true) {
            let why = Some(text(&v, "error")).filter(|e| !e.is_empty()).unwrap_or_else(|| "Unknown error occurred".into());
            return Err(Failure::Garbage(self.0.redact(why)));
        }
        Ok(v)
    }
}

#[async_trait]
impl WebBackend for Firecrawl {
    fn display_name(&self) -> &str {
        "Firecrawl"
    }

    fn extracts(&self) -> bool {
        true
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        let v = self
            .post("/v2/search", json!({"query": query, "limit": limit}))
            .await
            .map_err(|f| WebError(format!("Firecrawl search failed: {f}")))?;
        let data = &v["data"];
        let items = if data.is_array() { data.as_array().map_or(&[][..], Vec::as_slice) } else { list(data, "web") };
        Ok(items.iter().map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: text(r, "description") }).collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        let mut pages = Vec::with_capacity(urls.len());
        for url in urls {
            pages.push(match self.post("/v2/scrape", json!({"url": url, "formats": ["markdown"]})).await {
                Ok(v) => {
                    let meta = &v["data"]["metadata"];
                    let final_url = Some(text(meta, "sourceURL")).filter(|u| !u.is_empty()).unwrap_or_else(|| url.clone());
                    WebPage { url: final_url, title: text(meta, "title"), content: text(&v["data"], "markdown"), error: None }
                }
                Err(f) => WebPage { url: url.clone(), error: Some(f.to_string()), ..WebPage::default() },
            });
        }
        Ok(pages)
    }
}
