//! Brave Search, free tier (`plugins/web/brave_free`): `GET
//! {BRAVE_SEARCH_BASE_URL}/res/v1/web/search?q=…&count=…` with `X-Subscription-Token`;
//! `web.results[]`, cut to the limit. Search only. `BRAVE_SEARCH_BASE_URL` (default
//! `https://api.search.brave.com`) is this gateway's: Hermes' endpoint is fixed.

use super::{Api, Failure, list, text};
use crate::ports::{WebBackend, WebError, WebHit, WebPage};
use async_trait::async_trait;
use std::time::Duration;

/// The Brave Search backend.
pub(super) struct Brave(pub(super) Api);

#[async_trait]
impl WebBackend for Brave {
    fn display_name(&self) -> &str {
        "Brave Search (Free)"
    }

    fn extracts(&self) -> bool {
        false
    }

    async fn search(&self, query: &str, limit: u32) -> Result<Vec<WebHit>, WebError> {
        let Ok(key) = self.0.key("BRAVE_SEARCH_API_KEY", "") else {
            return Err(WebError("BRAVE_SEARCH_API_KEY is not set".into()));
        };
        let count = limit.clamp(1, 20).to_string();
        let url = self.0.url_with("/res/v1/web/search", &[("q", query), ("count", count.as_str())]);
        let call = async {
            let rq = self.0.http.get(url?).header("X-Subscription-Token", key).header("Accept", "application/json");
            self.0.json(rq, Duration::from_secs(15)).await
        };
        let v = call.await.map_err(|f| match f {
            Failure::Status(s, _) => WebError(format!("Brave Search returned HTTP {}", s.split(' ').next().unwrap_or(&s))),
            Failure::Transport(e) => WebError(format!("Could not reach Brave Search: {e}")),
            Failure::Garbage(_) => WebError("Could not parse Brave Search response as JSON".into()),
        })?;
        let web = v.get("web").cloned().unwrap_or_default();
        Ok(list(&web, "results")
            .iter()
            .take(limit as usize)
            .map(|r| WebHit { title: text(r, "title"), url: text(r, "url"), description: text(r, "description") })
            .collect())
    }

    async fn extract(&self, _urls: &[String]) -> Result<Vec<WebPage>, WebError> {
        Err(WebError("Brave Search (Free) is a search-only backend and cannot extract URL content.".into()))
    }
}
