//! SearXNG (`plugins/web/searxng`): `GET {SEARXNG_URL}/search?q=…&format=json&pageno=1`, no
//! key; results sorted by `score` (highest first) and cut to the limit. Search only.

use super::{Api, Failure, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use serde_json::Value;
use std::time::Duration;

/// The SearXNG backend.
pub(super) struct Searxng(pub(super) Api);

#[async_trait]
impl WebBackend for Searxng {
    fn display_name(&self) -> &str {
        "SearXNG"
    }

    fn extracts(&self) -> bool {
        false
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        if self.0.base.is_empty() {
            return Err(WebError("SEARXNG_URL is not set".into()));
        }
        let url = self.0.url_with("/search", &[("q", query), ("format", "json"), ("pageno", "1")]);
        let call = async {
            let rq = self.0.http.get(url?).header("Accept", "application/json");
            self.0.json(rq, Duration::from_secs(15)).await
        };
        let v = call.await.map_err(|f| match f {
            Failure::Status(s, _) => WebError(format!("SearXNG returned HTTP {}", s.split(' ').next().unwrap_or(&s))),
            Failure::Transport(e) => WebError(format!("Could not reach SearXNG at {}: {e}", self.0.base)),
            Failure::Garbage(_) => WebError("Could not parse SearXNG response as JSON".into()),
        })?;
        let mut raw: Vec<&Value> = list(&v, "results").iter().collect();
        let score = |r: &Value| r.get("score").and_then(|s| s.as_f64().or_else(|| s.as_str().and_then(|t| t.parse().ok()))).unwrap_or(0.0);
        raw.sort_by(|a, b| score(b).total_cmp(&score(a)));
        Ok(raw
            .into_iter()
            .take(limit as usize)
            .map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: text(r, "content") })
            .collect())
    }

    async fn extract(&self, _urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        Err(WebError("SearXNG is a search-only backend and cannot extract URL content.".into()))
    }
}
