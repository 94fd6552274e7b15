//! Exa (`plugins/web/exa`, through the wire protocol of its SDK `exa-py`): `POST
//! {EXA_BASE_URL}/search` with `x-api-key`, `{query, numResults, contents: {highlights: true}}`
//! (the description is the highlights joined), and `POST /contents` with `{urls, text: true}`.
//! `EXA_BASE_URL` is this gateway's (the SDK takes `base_url` as an argument).

use super::{Api, joined, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;

/// The Exa backend.
pub(super) struct Exa(pub(super) Api);

impl Exa {
    async fn post(&self, path: &str, body: Value, what: &str) -> Result<Value, WebError> {
        let key = self.0.key("EXA_API_KEY", "Get your API key at https://exa.ai")?;
        let rq = self.0.http.post(self.0.url(path)).header("x-api-key", key).header("x-exa-integration", "hermes-agent").json(&body);
        self.0.json(rq, Duration::from_secs(60)).await.map_err(|f| WebError(format!("Exa {what} failed: {f}")))
    }
}

#[async_trait]
impl WebBackend for Exa {
    fn display_name(&self) -> &str {
        "Exa"
    }

    fn extracts(&self) -> bool {
        true
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        let v = self.post("/search", json!({"query": query, "numResults": limit, "contents": {"highlights": true}}), "search").await?;
        Ok(list(&v, "results")
            .iter()
            .map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: joined(r, "highlights", " ") })
            .collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        let v = self.post("/contents", json!({"urls": urls, "text": true}), "extract").await?;
        Ok(list(&v, "results")
            .iter()
            .map(|r| WebPage { url: text(r, "url"), title: text(r, "title"), content: text(r, "text"), error: None })
            .collect())
    }
}
