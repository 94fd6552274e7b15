//! `web_extract` (Hermes' `tools/web_tools.py`): up to 5 URLs, each vetted with
//! `web_fetch`'s address rules (a private or internal address is refused before anything is
//! sent), then read by the configured extract vendor (the [`WebBackend`] port) and returned
//! as Hermes' `{"results": [{url, title, content, error}]}` in the order asked. A page over
//! the char budget (`char_limit`, else `web.extract_char_limit`, 15000) is cut to Hermes'
//! head + tail window with its footer; no model summarizes anything. Not offered when no
//! backend is configured; a search-only backend (SearXNG, Brave) says so.
//!
//! Must not know: the vendors' wire formats, the turn loop.

use super::web_fetch::{parse_url, vet_url};
use super::{Tool, ToolCtx, ToolError, ToolOutput};
use crate::ports::{Resolve, WebBackend, WebPage};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// URLs read per call at most (Hermes' handler keeps the first 5).
const MAX_URLS: usize = 5;

/// The `web_extract` tool.
pub struct WebExtract {
    backend: Option<Arc<dyn WebBackend>>,
    dns: Arc<dyn Resolve>,
}

impl WebExtract {
    /// A `web_extract` on `backend` (`None`: not offered), vetting URLs with `dns`.
    pub fn new(backend: Option<Arc<dyn WebBackend>>, dns: Arc<dyn Resolve>) -> Self {
        Self { backend, dns }
    }
}

#[async_trait]
impl Tool for WebExtract {
    fn name(&self) -> &str {
        "web_extract"
    }

    /// Reads only: never an effect (docs/design/jobs.md#retry).
    fn has_effect(&self, _args: &serde_json::Value) -> bool {
        false
    }

    fn toolset(&self) -> &str {
        "web"
    }

    fn description(&self) -> &str {
        "Extract content from web page URLs. Returns clean page content in markdown/text (no LLM summarization — fast). \
Also works with PDF URLs (arxiv papers, documents) — pass the PDF link directly. Pages within the char budget (default \
15000) return whole; larger pages return a head+tail window with a footer saying how much was omitted. Private or \
internal network addresses are refused. If a URL fails or times out, use web_fetch instead."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "urls": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "List of URLs to extract content from (max 5 URLs per call)",
                    "maxItems": MAX_URLS
                },
                "char_limit": {
                    "type": "integer",
                    "description": "Optional per-page character budget sent back (default 15000). Pages larger than this are head+tail truncated. Raise it when you need more of a long page inline.",
                    "minimum": 2000
                }
            },
            "required": ["urls"]
        })
    }

    fn offered(&self, _ctx: &ToolCtx<'_>) -> bool {
        self.backend.is_some()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(150))
    }

    async fn call(&self, ctx: &ToolCtx<'_>, args: Value) -> Result<ToolOutput, ToolError> {
        let backend = self.backend.as_ref().ok_or_else(|| {
            ToolError::Failed("No web extract provider configured. Set web.extract_backend to firecrawl, tavily, exa, or parallel.".into())
        })?;
        let items: Vec<Value> = match &args["urls"] {
            Value::Array(a) => a.iter().take(MAX_URLS).cloned().collect(),
            _ => return Err(ToolError::BadArgs("web_extract needs `urls`, a list of URLs".into())),
        };
        if items.is_empty() {
            return Err(ToolError::BadArgs("web_extract needs at least one URL in `urls`".into()));
        }
        let budget = match args["char_limit"].as_i64() {
            Some(n) => crate::config::clamp_char_limit(n),
            None => ctx.app.inner.cfg.settings.web.char_limit(),
        };
        let mut slots: Vec<Option<WebPage>> = vec![None; items.len()];
        let mut safe: Vec<(usize, String)> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match self.vetted(ctx, i, item).await {
                Ok(url) => safe.push((i, url)),
                Err(page) => slots[i] = Some(page),
            }
        }
        if !safe.is_empty() {
            if !backend.extracts() {
                return Err(ToolError::Failed(format!(
                    "{} is a search-only backend and cannot extract URL content. Set web.extract_backend to firecrawl, tavily, exa, or parallel.",
                    backend.display_name()
                )));
            }
            let urls: Vec<String> = safe.iter().map(|(_, u)| u.clone()).collect();
            let pages = backend.extract(&urls).await.unwrap_or_else(|e| {
                urls.iter().map(|u| WebPage { url: u.clone(), error: Some(e.to_string()), ..WebPage::default() }).collect()
            });
            self.place(ctx, &mut slots, &safe, pages).await;
        }
        let results: Vec<Value> = slots.into_iter().flatten().map(|p| shown(p, budget)).collect();
        if results.is_empty() {
            return Err(ToolError::Failed("Content was inaccessible or not found".into()));
        }
        Ok(ToolOutput::Json(json!({ "results": results })))
    }
}

impl WebExtract {
    /// The URL of item `i` if it is a URL (or an object with a string `url`/`href`, as a
    /// forwarded search result is) that `web_fetch`'s rules allow; else its error entry.
    async fn vetted(&self, ctx: &ToolCtx<'_>, i: usize, item: &Value) -> Result<String, WebPage> {
        let text = match item {
            Value::Object(o) => o.get("url").or_else(|| o.get("href")).and_then(Value::as_str),
            other => other.as_str(),
        }
        .map(str::trim)
        .filter(|s| !s.is_empty());
        let Some(text) = text else {
            let error = format!("Invalid URL item at index {i}: expected a URL string or an object with a string 'url' or 'href' field");
            return Err(WebPage { error: Some(error), ..WebPage::default() });
        };
        let fail = |url: &str, e: ToolError| WebPage { url: url.to_string(), error: Some(e.to_string()), ..WebPage::default() };
        let url = parse_url(text).map_err(|e| fail(text, e))?;
        vet_url(ctx, self.dns.as_ref(), &url).await.map_err(|e| fail(url.as_str(), e))?;
        Ok(url.to_string())
    }

    /// Puts the vendor's pages in the order asked: matched by URL where the vendor kept it,
    /// else by position. A page whose final URL (after the vendor's redirects) breaks the
    /// address rules is refused, as Hermes re-checks Firecrawl's.
    async fn place(&self, ctx: &ToolCtx<'_>, slots: &mut [Option<WebPage>], safe: &[(usize, String)], pages: Vec<WebPage>) {
        let mut rest = Vec::new();
        for mut page in pages {
            if !safe.iter().any(|(_, u)| *u == page.url)
                && let Ok(url) = parse_url(&page.url)
                && let Err(e) = vet_url(ctx, self.dns.as_ref(), &url).await
            {
                page = WebPage { url: page.url, title: page.title, content: String::new(), error: Some(e.to_string()) };
            }
            match safe.iter().find(|(i, u)| *u == page.url && slots[*i].is_none()) {
                Some((i, _)) => slots[*i] = Some(page),
                None => rest.push(page),
            }
        }
        let mut rest = rest.into_iter();
        for (i, url) in safe {
            if slots[*i].is_none() {
                slots[*i] = Some(rest.next().unwrap_or_else(|| WebPage {
                    url: url.clone(),
                    error: Some("Extract backend returned no result for this URL".into()),
                    ..WebPage::default()
                }));
            }
        }
    }
}

/// One result as the model sees it: `{url, title, content, error}`, the content cut to
/// `budget` characters with Hermes' footer.
fn shown(p: WebPage, budget: usize) -> Value {
    let content = if p.error.is_some() { p.content } else { truncate_with_footer(&p.content, budget) };
    json!({"url": p.url, "title": p.title, "content": content, "error": p.error})
}

/// Hermes' `_truncate_with_footer` (0.19.0), characters counted as Python counts them: a
/// text within `limit` is whole; a longer one keeps ~75% from the head (cut back to a line
/// end when one is in its second half) and ~25% from the tail (cut forward to a line start
/// when one is in its first half), then a footer saying how much is shown. Hermes stores the
/// full text on disk; nothing is stored here, so the footer is Hermes' "could not be
/// stored" one.
pub fn truncate_with_footer(content: &str, limit: usize) -> String {
    let chars: Vec<char> = content.chars().collect();
    let total = chars.len();
    if total <= limit {
        return content.to_string();
    }
    let head_budget = limit * 3 / 4;
    let tail_budget = limit - head_budget;
    let mut head = &chars[..head_budget];
    let mut tail = &chars[total - tail_budget..];
    if let Some(nl) = head.iter().rposition(|c| *c == '\n')
        && nl * 2 > head_budget
    {
        head = &head[..nl];
    }
    if let Some(nl) = tail.iter().position(|c| *c == '\n')
        && nl * 2 < tail_budget
    {
        tail = &tail[nl + 1..];
    }
    let (head_text, tail_text): (String, String) = (head.iter().collect(), tail.iter().collect());
    let rule = "─".repeat(8);
    let footer = [
        String::new(),
        format!("{rule} [TRUNCATED] {rule}"),
        format!(
            "Showing {} chars (head) + {} chars (tail) of {} total clean characters.",
            thousands(head.len()),
            thousands(tail.len()),
            thousands(total)
        ),
        "Full text could not be stored; re-run web_extract on a more specific URL or use browser_navigate for the complete page.".into(),
        "─".repeat(29),
    ];
    format!("{head_text}\n\n[... middle omitted — see footer ...]\n\n{tail_text}\n{}", footer.join("\n"))
}

/// `12345` as `12,345` (Python's `{:,}`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_within_the_budget_is_whole() {
        assert_eq!(truncate_with_footer("short page", 2000), "short page");
        let exact = "é".repeat(2000);
        assert_eq!(truncate_with_footer(&exact, 2000), exact, "characters, not bytes");
    }

    #[test]
    fn a_long_page_keeps_hermes_head_and_tail_window_and_footer() {
        // 100 lines of 99 chars + newline = 10,000 chars; budget 4000: head 3000, tail 1000.
        let page: String = (0..100).map(|i| format!("{:0>99}\n", i)).collect();
        let out = truncate_with_footer(&page, 4000);
        let (head, rest) = out.split_once("\n\n[... middle omitted — see footer ...]\n\n").unwrap();
        assert_eq!(head.len(), 2999, "cut back to the last line end in the head: 30 lines less the newline");
        assert!(head.starts_with(&"0".repeat(99)) && head.ends_with(&format!("{:0>99}", 29)));
        let (tail, footer) = rest.split_once("\n\n──────── [TRUNCATED] ────────\n").unwrap();
        assert_eq!(tail.len(), 900, "as in Hermes, the tail drops its first (here whole) line: the last 9 lines");
        assert!(tail.starts_with(&format!("{:0>99}", 91)));
        assert_eq!(
            footer,
            "Showing 2,999 chars (head) + 900 chars (tail) of 10,000 total clean characters.\nFull text could not be stored; \
re-run web_extract on a more specific URL or use browser_navigate for the complete page.\n─────────────────────────────"
        );
    }

    #[test]
    fn thousands_are_grouped_as_python_groups_them() {
        assert_eq!([thousands(7), thousands(999), thousands(1000), thousands(1_234_567)], ["7", "999", "1,000", "1,234,567"]);
    }
}
