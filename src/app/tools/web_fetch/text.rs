//! What `web_fetch` makes of a body: the kind of content (HTML, other text, binary) from its
//! `Content-Type` or, without one, from its first bytes; HTML to readable text (with the
//! `html2text` crate, scripts and styles dropped) and the page title; the 100 kB cap on the
//! text with its note.
//!
//! Must not know: HTTP or addresses.

use html2text::{Handle, RcDom};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::{ParseOpts, tree_builder::TreeBuilderOpts};
use std::time::Instant;

/// Width the text is wrapped to (wide enough that prose is rarely broken mid-sentence).
const WRAP: usize = 120;

/// Bytes of HTML handed to the parser between two looks at the clock.
const PARSE_SLICE: usize = 8 * 1024;

/// What a body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// HTML (or XHTML): converted to text.
    Html,
    /// Text (plain, markdown, JSON, XML, CSV, …): passed through.
    Text,
    /// No `Content-Type`: decided from the first bytes.
    Unknown,
    /// Anything else (images, PDF, archives, …): refused.
    Binary,
}

impl Kind {
    /// The kind a `Content-Type` value names (parameters such as `charset` ignored).
    pub fn of(content_type: Option<&str>) -> Self {
        let Some(ct) = content_type else { return Self::Unknown };
        let mime = ct.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        let textual = [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/ecmascript",
            "application/x-yaml",
            "application/yaml",
            "application/toml",
            "application/x-ndjson",
        ];
        match mime.as_str() {
            "" => Self::Unknown,
            "text/html" | "application/xhtml+xml" => Self::Html,
            m if m.starts_with("text/") || textual.contains(&m) || m.ends_with("+json") || m.ends_with("+xml") => Self::Text,
            _ => Self::Binary,
        }
    }

    /// An [`Kind::Unknown`] body judged by its first bytes: HTML if it opens like a page,
    /// binary if it holds NUL bytes or is not UTF-8, else text.
    pub fn sniff(body: &[u8]) -> Self {
        let head = &body[..body.len().min(1024)];
        let start = String::from_utf8_lossy(head).trim_start().chars().take(15).collect::<String>().to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Self::Html
        } else if head.contains(&0) || std::str::from_utf8(head).map_err(|e| e.error_len().is_some()).err() == Some(true) {
            Self::Binary
        } else {
            Self::Text
        }
    }
}

/// A body as text, with the HTML page's title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// `<title>`, whitespace collapsed (`None`: no title or not HTML).
    pub title: Option<String>,
    /// The readable text.
    pub text: String,
}

/// Turns a body of kind `kind` (not binary) into text; gives up once `until` passes. Not
/// valid UTF-8 is replaced, not refused (charsets other than UTF-8 are not decoded).
pub fn render(kind: Kind, body: &[u8], until: Instant) -> Result<Rendered, String> {
    let text = String::from_utf8_lossy(body);
    if kind != Kind::Html {
        return Ok(Rendered { title: None, text: text.into_owned() });
    }
    let dom = parse(&text, until)?;
    let title = find_title(&dom.document);
    let config = html2text::config::plain().allow_width_overflow();
    let tree = config.dom_to_render_tree(&dom).map_err(|e| format!("could not read the page: {e}"))?;
    let text = config.render_to_string(tree, WRAP).map_err(|e| format!("could not render the page: {e}"))?;
    Ok(Rendered { title, text: text.trim().to_string() })
}

/// Parses HTML into html2text's DOM, fed in slices with the clock checked between them: the
/// HTML tree-building rules cost time quadratic in nesting depth, and a hostile page of
/// nothing but `<div>`s must not keep a thread busy past the fetch's time limit.
fn parse(html: &str, until: Instant) -> Result<RcDom, String> {
    let opts = ParseOpts { tree_builder: TreeBuilderOpts { scripting_enabled: false, ..Default::default() }, ..Default::default() };
    let mut parser = html5ever::parse_document(RcDom::default(), opts);
    let mut rest = html;
    while !rest.is_empty() {
        if Instant::now() >= until {
            return Err("the page is too complex to convert to text in time".into());
        }
        let mut end = rest.len().min(PARSE_SLICE);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
    }
    Ok(parser.finish())
}

/// The first `<title>` outside inline SVG, decoded and trimmed (walked without recursion:
/// a hostile page may nest deeply).
fn find_title(root: &Handle) -> Option<String> {
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        match node.element_name().as_deref() {
            Some("title") => return title_text(&node),
            Some("svg" | "math" | "body") => continue,
            _ => stack.extend(node.children.borrow().iter().rev().cloned()),
        }
    }
    None
}

/// A title element's text: its children serialized (entities escaped) and decoded again by
/// the same HTML reader, whitespace collapsed.
fn title_text(node: &Handle) -> Option<String> {
    let mut escaped = Vec::new();
    for child in node.children.borrow().iter() {
        child.serialize(&mut escaped).ok()?;
    }
    let text = html2text::config::plain().allow_width_overflow().string_from_read(escaped.as_slice(), 10_000).ok()?;
    let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

/// `text` cut to at most `max` bytes (on a character boundary) with a note saying how much
/// there was; whether it was cut.
pub fn cap(text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let total = text.len();
    let mut out = text;
    out.truncate(end);
    out.push_str(&format!("\n\n[... truncated: the page's text is {total} bytes; the first {end} are shown ...]"));
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_sorted_into_html_text_and_binary() {
        assert_eq!(Kind::of(Some("text/html; charset=utf-8")), Kind::Html);
        assert_eq!(Kind::of(Some("application/xhtml+xml")), Kind::Html);
        for t in ["text/plain", "text/markdown", "application/json", "application/ld+json", "text/csv", "image/svg+xml"] {
            assert_eq!(Kind::of(Some(t)), Kind::Text, "{t}");
        }
        for t in ["image/png", "application/pdf", "application/octet-stream", "video/mp4", "application/zip"] {
            assert_eq!(Kind::of(Some(t)), Kind::Binary, "{t}");
        }
        assert_eq!(Kind::of(None), Kind::Unknown);
        assert_eq!(Kind::sniff(b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(Kind::sniff(b"hello\n"), Kind::Text);
        assert_eq!(Kind::sniff(b"\x89PNG\r\n\x1a\n\0\0"), Kind::Binary);
    }

    #[test]
    fn html_becomes_text_without_tags_scripts_or_styles() {
        let page = b"<html><head><title> A &amp; B\n page </title><style>p{color:red}</style></head>\
<body><script>var secret = 1;</script><h1>Heading</h1><p>Hello <b>world</b> &lt;3</p>\
<svg><title>icon</title></svg></body></html>";
        let r = render(Kind::Html, page, later()).unwrap();
        assert_eq!(r.title.as_deref(), Some("A & B page"));
        assert!(r.text.contains("Heading") && r.text.contains("Hello **world** <3"), "{}", r.text);
        for bad in ["<p>", "<b>", "secret", "color:red", "<h1>"] {
            assert!(!r.text.contains(bad), "{bad} in {}", r.text);
        }
        let plain = render(Kind::Text, b"{\"a\": \"<b>\"}", later()).unwrap();
        assert_eq!((plain.title, plain.text.as_str()), (None, "{\"a\": \"<b>\"}"));
    }

    fn later() -> Instant {
        Instant::now() + std::time::Duration::from_secs(60)
    }

    #[test]
    fn deep_nesting_neither_overflows_the_stack_nor_outlives_the_time_limit() {
        let page = format!("<title>t</title>{}x{}", "<div>".repeat(1_000), "</div>".repeat(1_000));
        assert_eq!(render(Kind::Html, page.as_bytes(), later()).unwrap().title.as_deref(), Some("t"));
        // Tree building is quadratic in depth: 400k open <div>s would take hours.
        let hostile = "<div>".repeat(400_000);
        let started = Instant::now();
        let err = render(Kind::Html, hostile.as_bytes(), Instant::now() + std::time::Duration::from_millis(300)).unwrap_err();
        assert!(err.contains("too complex"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn cap_cuts_on_a_char_boundary_and_says_so() {
        assert_eq!(cap("short".into(), 10), ("short".to_string(), false));
        let (out, cut) = cap("é".repeat(10), 5);
        assert!(cut);
        assert!(out.starts_with("éé\n\n[... truncated: the page's text is 20 bytes; the first 4 are shown"), "{out}");
    }
}
