//! Hermes' `web:` section (docs/design/tools.md#web-search) and the choice of the web tools' backend (`web_search`,
//! `web_extract`), as Hermes 0.19.0's `tools/web_tools.py` makes it: `web.search_backend` /
//! `web.extract_backend` when set and usable, else `web.backend`, else the first backend whose
//! variable is set, in Hermes' order (Tavily, Exa, Parallel, Firecrawl, SearXNG, Brave). Each
//! backend's key and base URL come from the environment, as `plugins/web/*` reads them.
//!
//! Knows variable and key names; knows nothing of HTTP or the vendors' wire formats.

use super::Env;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// Hermes' default per-page budget of `web_extract` (characters).
pub const DEFAULT_EXTRACT_CHAR_LIMIT: usize = 15_000;

/// Hermes' `web:` block.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSettings {
    /// The backend of both tools (`tavily`, `exa`, `parallel`, `firecrawl`, `searxng`,
    /// `brave-free`); empty: the first whose variable is set.
    pub backend: String,
    /// `web_search`'s own backend (wins over `backend` when it is usable).
    pub search_backend: String,
    /// `web_extract`'s own backend (wins over `backend` when it is usable).
    pub extract_backend: String,
    /// Characters of one page `web_extract` returns whole (default 15000, clamped to
    /// 2000..=500000 as Hermes does); a longer page is cut to a head + tail window.
    pub extract_char_limit: Option<i64>,
}

impl WebSettings {
    /// `extract_char_limit` clamped as Hermes clamps it.
    pub fn char_limit(&self) -> usize {
        self.extract_char_limit.map_or(DEFAULT_EXTRACT_CHAR_LIMIT, clamp_char_limit)
    }
}

/// A char budget clamped to Hermes' range (2000..=500000).
pub fn clamp_char_limit(n: i64) -> usize {
    usize::try_from(n.clamp(2000, 500_000)).unwrap_or(DEFAULT_EXTRACT_CHAR_LIMIT)
}

/// The web backends this gateway speaks, in Hermes' auto-detect order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebBackendKind {
    /// Tavily (`TAVILY_API_KEY`, `TAVILY_BASE_URL`).
    Tavily,
    /// Exa (`EXA_API_KEY`, `EXA_BASE_URL`).
    Exa,
    /// Parallel (`PARALLEL_API_KEY`, `PARALLEL_BASE_URL`).
    Parallel,
    /// Firecrawl, cloud or self-hosted (`FIRECRAWL_API_KEY`, `FIRECRAWL_API_URL`).
    Firecrawl,
    /// A SearXNG instance (`SEARXNG_URL`), search only.
    Searxng,
    /// Brave Search (`BRAVE_SEARCH_API_KEY`, `BRAVE_SEARCH_BASE_URL`), search only.
    BraveFree,
}

impl WebBackendKind {
    /// Every backend, in Hermes' auto-detect order.
    pub const ALL: [Self; 6] = [Self::Tavily, Self::Exa, Self::Parallel, Self::Firecrawl, Self::Searxng, Self::BraveFree];

    /// Hermes' name (`web.backend` value).
    pub fn name(self) -> &'static str {
        match self {
            Self::Tavily => "tavily",
            Self::Exa => "exa",
            Self::Parallel => "parallel",
            Self::Firecrawl => "firecrawl",
            Self::Searxng => "searxng",
            Self::BraveFree => "brave-free",
        }
    }

    /// Hermes' display name.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Tavily => "Tavily",
            Self::Exa => "Exa",
            Self::Parallel => "Parallel",
            Self::Firecrawl => "Firecrawl",
            Self::Searxng => "SearXNG",
            Self::BraveFree => "Brave Search (Free)",
        }
    }

    /// The backend called `name` (any case, blanks trimmed).
    pub fn parse(name: &str) -> Option<Self> {
        let n = name.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.name() == n)
    }

    /// Whether it can extract pages (SearXNG and Brave search only).
    pub fn extracts(self) -> bool {
        !matches!(self, Self::Searxng | Self::BraveFree)
    }

    /// The variables that make it usable (any one of them).
    pub fn key_vars(self) -> &'static [&'static str] {
        match self {
            Self::Tavily => &["TAVILY_API_KEY"],
            Self::Exa => &["EXA_API_KEY"],
            Self::Parallel => &["PARALLEL_API_KEY"],
            Self::Firecrawl => &["FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"],
            Self::Searxng => &["SEARXNG_URL"],
            Self::BraveFree => &["BRAVE_SEARCH_API_KEY"],
        }
    }

    fn available(self, env: &Env) -> bool {
        self.key_vars().iter().any(|v| env.get(v).is_some())
    }

    /// The variable holding the base URL, and the vendor's default.
    fn base_var(self) -> (&'static str, &'static str) {
        match self {
            Self::Tavily => ("TAVILY_BASE_URL", "https://api.tavily.com"),
            Self::Exa => ("EXA_BASE_URL", "https://api.exa.ai"),
            Self::Parallel => ("PARALLEL_BASE_URL", "https://api.parallel.ai"),
            Self::Firecrawl => ("FIRECRAWL_API_URL", "https://api.firecrawl.dev"),
            Self::Searxng => ("SEARXNG_URL", ""),
            Self::BraveFree => ("BRAVE_SEARCH_BASE_URL", "https://api.search.brave.com"),
        }
    }

    /// The variable holding the key (`None`: SearXNG has none).
    fn key_var(self) -> Option<&'static str> {
        match self {
            Self::Searxng => None,
            Self::BraveFree => Some("BRAVE_SEARCH_API_KEY"),
            other => other.key_vars().first().copied(),
        }
    }
}

/// One backend as the adapter needs it.
#[derive(Debug, Clone)]
pub struct WebEndpoint {
    /// Which vendor.
    pub kind: WebBackendKind,
    /// Its key (`None` when unset: a call then fails with Hermes' "not set" message).
    pub key: Option<SecretString>,
    /// Its base URL, without a trailing `/`.
    pub base_url: String,
    /// Parallel's `PARALLEL_SEARCH_MODE` (`agentic`, `fast`, `one-shot`; default `agentic`).
    pub search_mode: String,
}

impl WebEndpoint {
    /// `kind` with its key and base URL from `env`.
    pub fn from_env(kind: WebBackendKind, env: &Env) -> Self {
        let (var, default) = kind.base_var();
        let base_url = env.get(var).unwrap_or(default).trim().trim_end_matches('/').to_string();
        let mode = env.get("PARALLEL_SEARCH_MODE").unwrap_or("agentic").trim().to_ascii_lowercase();
        let search_mode = if ["fast", "one-shot", "agentic"].contains(&mode.as_str()) { mode } else { "agentic".into() };
        Self { kind, key: kind.key_var().and_then(|v| env.secret(v)), base_url, search_mode }
    }
}

/// The backends of the two tools; both `None` when no backend is configured (the tools are
/// then not offered, as Hermes' `check_web_api_key` hides them).
#[derive(Debug, Clone, Default)]
pub struct WebChoice {
    /// `web_search`'s backend.
    pub search: Option<WebEndpoint>,
    /// `web_extract`'s backend (may be search-only: the call then says so, as Hermes).
    pub extract: Option<WebEndpoint>,
    /// Why there is none, or what in `web:` was not used (for `doctor`).
    pub notes: Vec<String>,
}

/// Chooses the backends as Hermes 0.19.0 does.
pub fn web_choice(web: &WebSettings, env: &Env) -> WebChoice {
    let mut notes = Vec::new();
    for (key, value) in
        [("web.backend", &web.backend), ("web.search_backend", &web.search_backend), ("web.extract_backend", &web.extract_backend)]
    {
        if !value.trim().is_empty() && WebBackendKind::parse(value).is_none() {
            notes.push(format!(
                "{key} `{}` is not a backend hermes-zero speaks (tavily, exa, parallel, firecrawl, searxng, brave-free); ignored",
                value.trim()
            ));
        }
    }
    if !WebBackendKind::ALL.iter().any(|k| k.available(env)) {
        notes.push(
            "web_search and web_extract are not offered: no web backend is configured (set TAVILY_API_KEY, EXA_API_KEY, \
PARALLEL_API_KEY, FIRECRAWL_API_KEY or FIRECRAWL_API_URL, SEARXNG_URL, or BRAVE_SEARCH_API_KEY)"
                .into(),
        );
        return WebChoice { search: None, extract: None, notes };
    }
    let shared = WebBackendKind::parse(&web.backend).or_else(|| WebBackendKind::ALL.into_iter().find(|k| k.available(env)));
    let pick = |specific: &str| WebBackendKind::parse(specific).filter(|k| k.available(env)).or(shared);
    let (search, extract) = (pick(&web.search_backend), pick(&web.extract_backend));
    for kind in [search, extract].into_iter().flatten() {
        if !kind.available(env) {
            notes.push(format!("web.backend is `{}` but {} is not set: its calls will fail", kind.name(), kind.key_vars().join(" or ")));
        }
    }
    if let Some(k) = extract.filter(|k| !k.extracts()) {
        notes.push(format!(
            "web_extract's backend `{}` is search-only: set web.extract_backend to firecrawl, tavily, exa, or parallel",
            k.name()
        ));
    }
    notes.dedup();
    WebChoice { search: search.map(|k| WebEndpoint::from_env(k, env)), extract: extract.map(|k| WebEndpoint::from_env(k, env)), notes }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(web: &str, env: &[(&str, &str)]) -> (Option<&'static str>, Option<&'static str>) {
        let w: WebSettings = serde_norway::from_str(if web.is_empty() { "{}" } else { web }).unwrap();
        let c = web_choice(&w, &Env::from_pairs(env.iter().copied()));
        (c.search.map(|e| e.kind.name()), c.extract.map(|e| e.kind.name()))
    }

    #[test]
    fn the_first_backend_with_its_variable_set_wins_in_hermes_order() {
        assert_eq!(choose("", &[]), (None, None));
        assert_eq!(choose("", &[("BRAVE_SEARCH_API_KEY", "b"), ("SEARXNG_URL", "http://s")]), (Some("searxng"), Some("searxng")));
        assert_eq!(choose("", &[("FIRECRAWL_API_URL", "http://f"), ("PARALLEL_API_KEY", "p")]), (Some("parallel"), Some("parallel")));
        assert_eq!(choose("", &[("EXA_API_KEY", "e"), ("TAVILY_API_KEY", "t")]), (Some("tavily"), Some("tavily")));
        assert_eq!(choose("", &[("TAVILY_API_KEY", " ")]), (None, None), "a blank value is unset");
    }

    #[test]
    fn web_backend_picks_and_per_capability_keys_win_when_usable() {
        let env = [("TAVILY_API_KEY", "t"), ("SEARXNG_URL", "http://s")];
        assert_eq!(choose("backend: searxng", &env), (Some("searxng"), Some("searxng")));
        assert_eq!(choose("{backend: searxng, extract_backend: tavily}", &env), (Some("searxng"), Some("tavily")));
        assert_eq!(choose("{search_backend: exa}", &env), (Some("tavily"), Some("tavily")), "exa has no key: not used");
        assert_eq!(choose("backend: ddgs", &env), (Some("tavily"), Some("tavily")), "an unknown name falls back");
        assert_eq!(choose("backend: Brave-Free", &env), (Some("brave-free"), Some("brave-free")), "named without a key: used, fails");
    }

    #[test]
    fn base_urls_and_keys_come_from_each_providers_variables() {
        let env = Env::from_pairs([("TAVILY_API_KEY", "t"), ("TAVILY_BASE_URL", "http://fake/"), ("PARALLEL_SEARCH_MODE", "bogus")]);
        let e = WebEndpoint::from_env(WebBackendKind::Tavily, &env);
        assert_eq!(e.base_url, "http://fake");
        assert!(e.key.is_some());
        assert_eq!(WebEndpoint::from_env(WebBackendKind::Exa, &env).base_url, "https://api.exa.ai");
        assert_eq!(WebEndpoint::from_env(WebBackendKind::Parallel, &env).search_mode, "agentic");
        assert!(WebEndpoint::from_env(WebBackendKind::Searxng, &env).key.is_none());
    }

    #[test]
    fn the_char_limit_is_clamped_as_hermes_clamps_it() {
        assert_eq!(WebSettings::default().char_limit(), 15_000);
        let w = |n| WebSettings { extract_char_limit: Some(n), ..WebSettings::default() }.char_limit();
        assert_eq!((w(10), w(40_000), w(9_000_000)), (2000, 40_000, 500_000));
    }
}
