//! Tavily (`plugins/web/tavily`): `POST {TAVILY_BASE_URL}/search` and `/extract` with a JSON
//! body that carries `api_key` (as Hermes sends it) and the same key as a bearer token (as
//! Tavily's SDK sends it). Search maps `results[].content` to the description; extract reads
//! `results[].raw_content`, and `failed_results`/`failed_urls` become pages with an error.

use super::{Api, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

/// The Tavily backend.
pub(super) struct Tavily(pub(super) Api);

const HINT: &str = "Get your API key at https://app.tavily.com/home";

impl Tavily {
    async fn post(&self, endpoint: &str, mut body: Value, what: &str) -> Result<Value, WebError> {
        let key = self.0.key("TAVILY_API_KEY", HINT)?;
        body["api_key"] = json!(key);
        let rq = self.0.http.post(self.0.url(&format!("/{endpoint}"))).bearer_auth(key).json(&body);
        self.0.json(rq, Duration::from_secs(60)).await.map_err(|f| WebError(format!("Tavily {what} failed: {f}")))
    }
}

#[async_trait]
impl WebBackend for Tavily {
    fn display_name(&self) -> &str {
        "Tavily"
    }

    fn extracts(&self) -> bool {
        true
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        let body = json!({"query": query, "max_results": limit.min(20), "include_raw_content": false, "include_images": false});
        let v = self.post("search", body, "search").await?;
        Ok(list(&v, "results")
            .iter()
            .map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: text(r, "content") })
            .collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        let v = self.post("extract", json!({"urls": urls, "include_images": false}), "extract").await?;
        let fallback = urls.first().cloned().unwrap_or_default();
        let mut pages: Vec<WebPage> = list(&v, "results")
            .iter()
            .map(|r| {
                let raw = Some(text(r, "raw_content")).filter(|s| !s.is_empty()).unwrap_or_else(|| text(r, "content"));
                WebPage {
                    url: r.get("url").and_then(Value::as_str).unwrap_or(&fallback).to_string(),
                    title: text(r, "title"),
                    content: raw,
                    error: None,
                }
            })
            .collect();
        for f in list(&v, "failed_results") {
            let error = Some(text(f, "error")).filter(|e| !e.is_empty()).unwrap_or_else(|| "extraction failed".into());
            pages.push(WebPage {
                url: f.get("url").and_then(Value::as_str).unwrap_or(&fallback).to_string(),
                error: Some(error),
                ..WebPage::default()
            });
        }
        for u in list(&v, "failed_urls") {
            let url = u.as_str().map_or_else(|| u.to_string(), str::to_string);
            pages.push(WebPage { url, error: Some("extraction failed".into()), ..WebPage::default() });
        }
        Ok(pages)
    }
}
