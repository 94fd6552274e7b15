//! The layer rules of docs/design.md#overview and STYLE.md ("The shape"), checked on the
//! source tree so a change cannot quietly break them:
//! - `src/app/**` (test files included) reaches upstreams only through ports: no `crate::clients`;
//! - `src/core/**` is pure: no `crate::config`, and no axum, lambda_http/lambda_runtime, AWS SDK,
//!   reqwest or rusqlite;
//! - `src/http/**` reaches upstreams only through ports or channels: no `crate::clients`;
//! - `src/cli/**` and `src/cli.rs` call the app's services, never a route: no `crate::http`.
//!
//! The check reads code only: comments, strings and character literals are blanked first, so a
//! doc line that names a layer is no violation. A module is caught however it is named:
//! `crate::m`, `hermes_zero::m`, inside a `crate::{…}` group, or through `super::` up to the
//! crate root. Each violation is reported with its file and line. Plain std, no build step.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a rule forbids.
#[derive(Debug, Clone, Copy)]
enum Forbid {
    /// A module of this crate (`crate::<name>`).
    Module(&'static str),
    /// An external crate, by its name in code or the start of it (`aws_sdk` for `aws_sdk_dynamodb`).
    CrateStartingWith(&'static str),
}

/// One layer rule: the files it covers and what they must not mention.
struct Rule {
    name: &'static str,
    /// Paths under `src/`: a directory (every `.rs` below it) or one file.
    roots: &'static [&'static str],
    forbid: &'static [Forbid],
}

const RULES: [Rule; 4] = [
    Rule { name: "app reaches upstreams only through ports", roots: &["app"], forbid: &[Forbid::Module("clients")] },
    Rule {
        name: "core is pure (no config, no transport, SDK or database crate)",
        roots: &["core"],
        forbid: &[
            Forbid::Module("config"),
            Forbid::CrateStartingWith("axum"),
            Forbid::CrateStartingWith("lambda_http"),
            Forbid::CrateStartingWith("lambda_runtime"),
            Forbid::CrateStartingWith("aws_sdk"),
            Forbid::CrateStartingWith("aws_config"),
            Forbid::CrateStartingWith("aws_smithy"),
            Forbid::CrateStartingWith("reqwest"),
            Forbid::CrateStartingWith("rusqlite"),
        ],
    },
    Rule { name: "http reaches upstreams only through ports or channels", roots: &["http"], forbid: &[Forbid::Module("clients")] },
    Rule { name: "the CLI calls the app's services, never a route", roots: &["cli", "cli.rs"], forbid: &[Forbid::Module("http")] },
];

#[test]
fn every_layer_rule_holds_in_the_source_tree() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut report = String::new();
    for rule in &RULES {
        let files = files_of(&src, rule.roots);
        assert!(files.len() > 1 || rule.roots.iter().any(|r| r.ends_with(".rs")), "{}: no files under {:?}", rule.name, rule.roots);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let module = module_path(&src, &file);
            for v in violations(&text, &module, rule.forbid) {
                let shown = file.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(&file).display().to_string();
                let _ = writeln!(report, "{shown}:{}: {} (mentions `{}`)", v.line, rule.name, v.what);
            }
        }
    }
    assert!(report.is_empty(), "layer rules broken (docs/design.md#overview):\n{report}");
}

/// Every `.rs` file under the roots (relative to `src`), sorted.
fn files_of(src: &Path, roots: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = roots.iter().map(|r| src.join(r)).filter(|p| p.exists()).collect();
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            for entry in std::fs::read_dir(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())) {
                todo.push(entry.unwrap_or_else(|e| panic!("{}: {e}", p.display())).path());
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The module a file is (`src/app/tools/mod.rs` → `app::tools`), as path segments.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// One forbidden mention.
#[derive(Debug, PartialEq)]
struct Violation {
    line: usize,
    what: String,
}

/// The forbidden mentions in `text`, the source of module `module`.
fn violations(text: &str, module: &[String], forbid: &[Forbid]) -> Vec<Violation> {
    let code = code_only(text);
    let tokens = tokens(&code);
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for f in forbid {
        match *f {
            Forbid::Module(m) => {
                for (at, path) in crate_paths(&tokens, module) {
                    if path == m {
                        out.push(Violation { line: line_of(at), what: format!("crate::{m}") });
                    }
                }
            }
            Forbid::CrateStartingWith(c) => {
                for t in &tokens {
                    if let Tok::Ident(name, at) = t
                        && name.starts_with(c)
                    {
                        out.push(Violation { line: line_of(*at), what: (*name).to_string() });
                    }
                }
            }
        }
    }
    out.sort_by_key(|v| v.line);
    out
}

/// A token of code: an identifier with its byte offset, `::`, or one other character.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Ident(&'a str, usize),
    Path,
    Punct(char),
}

fn tokens(code: &str) -> Vec<Tok<'_>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(&code[start..i], start));
            continue;
        }
        if c == b':' && bytes.get(i + 1) == Some(&b':') {
            out.push(Tok::Path);
            i += 2;
            continue;
        }
        if !c.is_ascii_whitespace() {
            out.push(Tok::Punct(char::from(c)));
        }
        i += 1;
    }
    out
}

/// The first segment below the crate root of every path that starts at the crate root
/// (`crate::x`, `hermes_zero::x`, `super::…::x` reaching the root, each item of a
/// `crate::{x, y::z}` group), with the offset where that segment is written. A path that
/// `super` resolves inside the file's own layer gives that layer's name.
fn crate_paths(tokens: &[Tok<'_>], module: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let after_path = i > 0 && tokens[i - 1] == Tok::Path;
        let (base_len, mut j) = match tokens[i] {
            Tok::Ident("crate" | "hermes_zero", _) if !after_path => (Some(0), i + 1),
            Tok::Ident("super", _) if !after_path => {
                let mut ups = 0;
                let mut j = i;
                while let (Some(Tok::Ident("super", _)), Some(Tok::Path)) = (tokens.get(j), tokens.get(j + 1)) {
                    ups += 1;
                    j += 2;
                }
                (Some(module.len().saturating_sub(ups)), j.saturating_sub(1))
            }
            _ => (None, i + 1),
        };
        let Some(base_len) = base_len else {
            i += 1;
            continue;
        };
        if tokens.get(j) != Some(&Tok::Path) {
            i = j.max(i + 1);
            continue;
        }
        j += 1;
        let named = |name: &str, at: usize| if base_len == 0 { (at, name.to_string()) } else { (at, module[0].clone()) };
        match tokens.get(j) {
            Some(Tok::Ident(name, at)) => out.push(named(name, *at)),
            Some(Tok::Punct('{')) => {
                let (mut depth, mut item_start) = (0usize, true);
                for t in &tokens[j..] {
                    match t {
                        Tok::Punct('{') => {
                            depth += 1;
                            item_start = depth == 1;
                        }
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Punct(',') if depth == 1 => item_start = true,
                        Tok::Ident(name, at) if item_start => {
                            out.push(named(name, *at));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        i = j;
    }
    out
}

/// `src` with comments, string literals and character literals replaced by spaces (newlines
/// kept, so line numbers stay). Handles nested block comments, escapes, raw strings
/// (`r"…"`, `r#"…"#`) and tells lifetimes (`'a`) from characters (`'a'`, `'"'`, `'\n'`).
fn code_only(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let prev_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && !prev_ident && matches!(next, Some('"' | '#')) && raw_start(&chars, i + 1).is_some() {
            let hashes = raw_start(&chars, i + 1).unwrap_or(0);
            let end = raw_end(&chars, i + 2 + hashes, hashes);
            for &ch in &chars[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    blank(&mut out, ch);
                }
                i += 1;
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal: `'\…'` or `'x'` (a lifetime has no closing quote there).
            let mut j = i + 1;
            if next == Some('\\') {
                j += 2;
            }
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            for &ch in &chars[i..end] {
                blank(&mut out, ch);
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At `chars[at]` after an `r`: the number of `#` before the opening `"` of a raw string.
fn raw_start(chars: &[char], at: usize) -> Option<usize> {
    let hashes = chars[at..].iter().take_while(|c| **c == '#').count();
    (chars.get(at + hashes) == Some(&'"')).then_some(hashes)
}

/// The index just past the raw string whose body starts at `from` and ends at `"` + `hashes` `#`.
fn raw_end(chars: &[char], from: usize, hashes: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '"' && chars[i + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes {
            return (i + 1 + hashes).min(chars.len());
        }
        i += 1;
    }
    chars.len()
}

mod scanner {
    //! The checker itself on samples: it must find what the rules forbid, where it is, and
    //! only there (a checker that finds nothing would pass any tree).
    use super::*;

    fn lines(text: &str, module: &str, forbid: &[Forbid]) -> Vec<usize> {
        let module: Vec<String> = module.split("::").map(str::to_string).collect();
        violations(text, &module, forbid).into_iter().map(|v| v.line).collect()
    }

    const CLIENTS: &[Forbid] = &[Forbid::Module("clients")];

    #[test]
    fn plain_grouped_and_multi_line_paths_are_found_on_their_line() {
        let text =
            "use crate::ports::Store;\nuse crate::clients::mcp::McpConnection;\nfn f() {\n    let c = crate::clients::http_client(d);\n}\n";
        assert_eq!(lines(text, "app::tools::mcp", CLIENTS), [2, 4]);
        let text = "use crate::{\n    core::ids,\n    clients::{nas, stt},\n};\nuse hermes_zero::clients;\n";
        assert_eq!(lines(text, "app::x", CLIENTS), [3, 5]);
        // Inside a group only the first segment of each item counts.
        assert!(lines("use crate::{ports::clients, core::{clients}};", "app::x", CLIENTS).is_empty());
        assert!(lines("use crate::clientside::X; use other::clients; let x = y::crate::clients;", "app::x", CLIENTS).is_empty());
    }

    #[test]
    fn super_paths_are_resolved_from_the_files_module() {
        assert_eq!(lines("use super::super::clients::nas;", "app::budget_tests", CLIENTS), [1]);
        assert_eq!(lines("use super::super::super::clients::nas;", "app::tools::mcp", CLIENTS), [1]);
        assert!(lines("use super::super::clients::nas;", "app::tools::mcp", CLIENTS).is_empty(), "that is app::clients");
        assert!(lines("use super::*;\nuse super::super::ToolError;", "app::tools::web_fetch::safety", CLIENTS).is_empty());
    }

    #[test]
    fn comments_strings_and_characters_are_not_code() {
        let text = r####"//! Must not know `crate::clients`.
/* a block /* nested crate::clients */ still comment crate::clients */
let a = "crate::clients::x";
let b = r#"crate::clients "quoted" "#;
let c = '"'; let d = '\''; let e = b"crate::clients";
fn f<'a>(x: &'a str) -> &'a str { x }
let real = crate::clients::x; // and a comment crate::clients
"####;
        assert_eq!(lines(text, "app::x", CLIENTS), [7]);
    }

    #[test]
    fn the_core_rule_catches_config_and_forbidden_crates() {
        let core = RULES[1].forbid;
        let text = "use axum::Router;\n// reqwest in a comment\nuse crate::config::Settings;\nfn f(c: aws_sdk_dynamodb::Client) {}\nuse crate::core::ids;\nlet x = rusqlite::Connection::open(p);\n";
        assert_eq!(lines(text, "core::x", core), [1, 3, 4, 6]);
        assert!(lines("use crate::configuration::X; let axe = 1;", "core::x", core).is_empty());
    }

    #[test]
    fn files_map_to_their_modules() {
        let src = Path::new("/r/src");
        assert_eq!(module_path(src, Path::new("/r/src/app/tools/mod.rs")), ["app", "tools"]);
        assert_eq!(module_path(src, Path::new("/r/src/app/tools/mcp/tests.rs")), ["app", "tools", "mcp", "tests"]);
        assert_eq!(module_path(src, Path::new("/r/src/cli.rs")), ["cli"]);
    }
}
