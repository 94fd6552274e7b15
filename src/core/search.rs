//! The words of a `session_search` query (docs/design.md#session-search): parsed once from
//! whatever the user or model typed into plain terms that every store adapter can render
//! safely (SQLite quotes each one as an FTS5 phrase, DynamoDB matches each as a lowercase
//! substring), and the snippet cut around a match for adapters without a search engine.
//!
//! Must not know any store's query syntax beyond "a term is literal text".

/// Most terms a query keeps (the rest are ignored): every term is ANDed, and a long query
/// only narrows the result while costing a filter clause each.
pub const MAX_TERMS: usize = 8;

/// How many of the newest conversations a store without a full-text index (DynamoDB)
/// searches; SQLite's FTS5 index searches all of them.
pub const RECENT_SESSIONS: usize = 20;

/// Longest term kept, in characters.
const MAX_TERM_CHARS: usize = 100;

/// Why a query has nothing to search for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// No word, number or quoted phrase in the query.
    #[error("the query has no words to search for")]
    Empty,
}

/// A parsed query: literal terms (words, or phrases the user put in double quotes), all of
/// which a message must contain. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerms(Vec<String>);

impl SearchTerms {
    /// Parses free text. Balanced double quotes keep a phrase together; an unbalanced quote
    /// is dropped. Bare `AND`/`OR`/`NOT`/`NEAR` are dropped (every term is required
    /// anyway), as is anything without a letter or digit, so no operator or stray
    /// punctuation ever reaches a store's query language.
    pub fn parse(query: &str) -> Result<Self, SearchError> {
        let mut terms = Vec::new();
        let quotes = query.matches('"').count();
        for (i, part) in query.split('"').enumerate() {
            // Piece `i` follows quote `i`; odd pieces are quoted when quote `i + 1` closes them.
            if i % 2 == 1 && i < quotes {
                push_term(&mut terms, &part.split_whitespace().collect::<Vec<_>>().join(" "));
            } else {
                for word in part.split_whitespace() {
                    if !matches!(word, "AND" | "OR" | "NOT" | "NEAR") {
                        push_term(&mut terms, word.trim_matches(|c: char| !c.is_alphanumeric()));
                    }
                }
            }
        }
        terms.truncate(MAX_TERMS);
        if terms.is_empty() { Err(SearchError::Empty) } else { Ok(Self(terms)) }
    }

    /// The terms, in query order.
    pub fn terms(&self) -> &[String] {
        &self.0
    }

    /// Whether `text` contains every term, ignoring case (substring match).
    pub fn matches(&self, text: &str) -> bool {
        let text = text.to_lowercase();
        self.0.iter().all(|t| text.contains(&t.to_lowercase()))
    }
}

fn push_term(terms: &mut Vec<String>, term: &str) {
    if term.chars().any(char::is_alphanumeric) {
        terms.push(term.chars().take(MAX_TERM_CHARS).collect());
    }
}

/// About `width` characters of `content` around the first term found (case-insensitive),
/// with `...` where text was cut, the match marked `>>>like this<<<` as FTS5's snippet in
/// the SQLite adapter marks it.
pub fn snippet(content: &str, terms: &SearchTerms, width: usize) -> String {
    let chars: Vec<char> = content.chars().collect();
    let lower: Vec<char> = chars.iter().map(|c| c.to_lowercase().next().unwrap_or(*c)).collect();
    let found = terms.terms().iter().find_map(|t| {
        let t: Vec<char> = t.chars().map(|c| c.to_lowercase().next().unwrap_or(c)).collect();
        lower.windows(t.len().max(1)).position(|w| w == t.as_slice()).map(|at| (at, t.len()))
    });
    let (at, len) = found.unwrap_or((0, 0));
    let start = at.saturating_sub(width / 2);
    let end = (at + len + width / 2).min(chars.len()).max(start);
    let text = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    }
    if len > 0 {
        out.push_str(&format!("{}>>>{}<<<{}", text(start, at), text(at, at + len), text(at + len, end)));
    } else {
        out.push_str(&text(start, end));
    }
    if end < chars.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(q: &str) -> Vec<String> {
        SearchTerms::parse(q).map(|t| t.terms().to_vec()).unwrap_or_default()
    }

    #[test]
    fn words_phrases_and_garbage() {
        assert_eq!(terms("deploy lambda"), ["deploy", "lambda"]);
        assert_eq!(terms(r#"the "blue whale" song"#), ["the", "blue whale", "song"]);
        assert_eq!(terms(r#""foo AND ("#), ["foo"]);
        assert_eq!(terms("a OR b NOT c NEAR(d)"), ["a", "b", "c", "NEAR(d"]);
        assert_eq!(terms("chat-send P2.2 (x)"), ["chat-send", "P2.2", "x"]);
        assert_eq!(terms(r#"say "hi"#), ["say", "hi"]);
        assert_eq!(SearchTerms::parse("  ( ) * ^ \"\" ").unwrap_err(), SearchError::Empty);
        assert_eq!(SearchTerms::parse("").unwrap_err(), SearchError::Empty);
        assert_eq!(terms("1 2 3 4 5 6 7 8 9 10").len(), MAX_TERMS);
    }

    #[test]
    fn matching_ignores_case() {
        let t = SearchTerms::parse("Whale BLUE").unwrap();
        assert!(t.matches("the blue whale"));
        assert!(!t.matches("the blue shark"));
    }

    #[test]
    fn snippet_marks_the_match_and_cuts() {
        let t = SearchTerms::parse("whale").unwrap();
        let long = format!("{} the Whale sang {}", "a".repeat(200), "b".repeat(200));
        let s = snippet(&long, &t, 20);
        assert!(s.starts_with("...") && s.ends_with("..."), "{s}");
        assert!(s.contains(">>>Whale<<<"), "{s}");
        assert_eq!(snippet("no match here", &t, 100), "no match here");
        assert_eq!(snippet("ünïcode whale", &t, 100), "ünïcode >>>whale<<<");
    }
}
