//! The rooms of `src/app/` (issue #26; docs/design/overview.md#layout): inside every folder
//! of `app`, the `use` lines between sibling modules (files or sub-folders) form no loop.
//! Calls run one way inside a room, and types that several files share live in a `types`
//! file they all import.
//!
//! The graph is read from the source text: every `crate::app::…` and `super::…` path
//! outside comments, with the names a folder's `mod.rs` re-exports (`pub use child::{A, B}`)
//! resolved to the child that defines them. Test files (`tests.rs`, `*_tests.rs`, `tests/`)
//! are consumers of a room, not part of it, and are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path (e.g. `["turn", "agent"]`, relative to `app`) and its text.
struct File {
    module: Vec<String>,
    is_mod: bool,
    text: String,
}

fn is_test_file(rel: &Path) -> bool {
    rel.components().any(|c| c.as_os_str() == "tests")
        || rel.file_stem().is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"))
}

fn read_tree(root: &Path) -> Vec<File> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<File>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("read src/app").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, root, out);
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = p.strip_prefix(root).expect("under root");
            if is_test_file(rel) {
                continue;
            }
            let mut module: Vec<String> =
                rel.parent().into_iter().flat_map(|d| d.components()).map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            let stem = rel.file_stem().expect("stem").to_string_lossy().into_owned();
            let is_mod = stem == "mod";
            if !is_mod {
                module.push(stem);
            }
            out.push(File { module, is_mod, text: std::fs::read_to_string(&p).expect("read file") });
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// The text with `//` comments removed (doc comments included) and `#[cfg(test)]` modules
/// declared inline left in (they only add edges, never hide one).
fn code_of(text: &str) -> String {
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else { return vec![path.trim().trim_end_matches("::").to_string()] };
    let head = &path[..open];
    let inner = &path[open + 1..path.rfind('}').unwrap_or(path.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty()).flat_map(|p| expand(&format!("{head}{p}"))).collect()
}

/// Every module path (relative to `app`) that `code` names, from the file at `module`.
fn referenced(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for prefix in ["crate::app::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(prefix).map(|i| i + from) {
            from = i + prefix.len();
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || (prefix == "super::" && bytes[i - 1] == b':')) {
                continue;
            }
            // The path runs until a character that cannot be in a path (braces balanced).
            let (mut depth, mut end) = (0i32, from);
            for (j, ch) in code[from..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    c if depth > 0 || c.is_alphanumeric() || c == '_' || c == ':' => {}
                    _ => break,
                }
                end = from + j + ch.len_utf8();
            }
            let mut base: Vec<String> = if prefix == "crate::app::" {
                Vec::new()
            } else {
                // `super` of `a/b.rs` (module a::b) is `a`; of `a/mod.rs` (module a) it is app itself.
                let mut m = module.to_vec();
                m.pop();
                m
            };
            let mut rest = code[from..end].to_string();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r.to_string();
            }
            for p in expand(&rest) {
                let mut full = base.clone();
                full.extend(p.split("::").filter(|s| !s.is_empty() && *s != "self").map(str::to_string));
                out.push(full);
            }
        }
    }
    out
}

/// The sibling graph of every folder: folder → (child → children it imports).
type Graphs = BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>;

fn graphs(files: &[File]) -> Graphs {
    // Children of each folder, and the names each folder's mod.rs re-exports from a child.
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        for n in 0..f.module.len() {
            children.entry(f.module[..n].to_vec()).or_default().insert(f.module[n].clone());
        }
    }
    let mut reexports: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    for f in files.iter().filter(|f| f.is_mod || f.module.is_empty()) {
        for line in code_of(&f.text).lines() {
            let Some(rest) = line.trim().strip_prefix("pub use ").or_else(|| line.trim().strip_prefix("pub(crate) use ")) else { continue };
            for p in expand(rest.trim_end_matches(';')) {
                let segs: Vec<&str> = p.split("::").collect();
                if segs.len() >= 2 && children.get(&f.module).is_some_and(|c| c.contains(segs[0])) {
                    let name = segs.last().expect("segments").split(" as ").last().expect("name").trim().to_string();
                    reexports.entry(f.module.clone()).or_default().insert(name, segs[0].to_string());
                }
            }
        }
    }
    let mut g: Graphs = BTreeMap::new();
    for f in files {
        for target in referenced(&code_of(&f.text), &f.module) {
            // For every folder that holds both the file and the target, the edge between
            // the two children of that folder they sit in.
            let common = f.module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common >= f.module.len() {
                continue; // the file names itself or something inside itself
            }
            let folder = f.module[..common].to_vec();
            let from = f.module[common].clone();
            let Some(first) = target.get(common) else { continue };
            let kids = children.get(&folder).cloned().unwrap_or_default();
            let to = if kids.contains(first) {
                first.clone()
            } else if let Some(c) = reexports.get(&folder).and_then(|r| r.get(first)) {
                c.clone()
            } else {
                continue; // defined in the folder's mod.rs, or outside app
            };
            if to != from {
                g.entry(folder).or_default().entry(from).or_default().insert(to);
            }
        }
    }
    g
}

/// The first loop found in each folder's graph, as `a → b → a`.
fn loops(g: &Graphs) -> Vec<String> {
    fn dfs<'a>(
        n: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| *s == n) {
            let mut cyc: Vec<String> = stack[i..].iter().map(|s| s.to_string()).collect();
            cyc.push(n.to_string());
            return Some(cyc);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n);
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = dfs(m, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n);
        None
    }
    let mut out = Vec::new();
    for (folder, edges) in g {
        let mut done = BTreeSet::new();
        for n in edges.keys() {
            if let Some(c) = dfs(n, edges, &mut Vec::new(), &mut done) {
                out.push(format!("src/app/{}: {}", folder.join("/"), c.join(" → ")));
                break;
            }
        }
    }
    out
}

#[test]
fn no_import_loop_between_sibling_modules_of_app() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let files = read_tree(&root);
    assert!(files.len() > 40, "read {} files under {}", files.len(), root.display());
    let g = graphs(&files);
    // The top-level rooms exist and are wired one way.
    let top = g.get(&Vec::new()).expect("app's own graph");
    assert!(top.get("jobs").is_some_and(|e| e.contains("turn")), "jobs should reach the agent loop through turn: {top:?}");
    let found = loops(&g);
    assert!(found.is_empty(), "import loops between sibling modules:\n{}", found.join("\n"));
}

#[test]
fn every_room_of_app_opens_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let mut missing = Vec::new();
    for f in read_tree(&root).iter().filter(|f| f.is_mod) {
        if !f.text.trim_start().starts_with("//!") {
            missing.push(format!("src/app/{}/mod.rs", f.module.join("/")));
        }
    }
    assert!(missing.is_empty(), "rooms without a //! doc: {missing:?}");
}

/// The scanner itself: a loop through a re-export and `super::` paths is found, and a
/// one-way graph is not reported.
#[test]
fn the_scanner_finds_a_loop_and_only_a_loop() {
    let file =
        |m: &[&str], is_mod: bool, text: &str| File { module: m.iter().map(|s| s.to_string()).collect(), is_mod, text: text.to_string() };
    let one_way = vec![
        file(&[], true, "pub use b::Thing;\nmod a; mod b;"),
        file(&["a"], false, "use crate::app::Thing;\n// use crate::app::a::x; in a comment\n"),
        file(&["b"], false, "use crate::app::{App, c::{self, D}};\n"),
        file(&["c"], false, "pub struct D;"),
    ];
    let g = graphs(&one_way);
    assert_eq!(g[&Vec::new()]["a"], BTreeSet::from(["b".to_string()]));
    assert_eq!(g[&Vec::new()]["b"], BTreeSet::from(["c".to_string()]));
    assert!(loops(&g).is_empty(), "{:?}", loops(&g));

    let mut looped = one_way;
    looped.push(file(&["c", "inner"], false, "use super::super::a::x;"));
    let found = loops(&graphs(&looped));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a → b → c → a") || found[0].contains("b → c → a → b") || found[0].contains("c → a → b → c"), "{found:?}");

    // Inside a sub-folder: `turn/x.rs` importing `super::y` and back.
    let nested = vec![
        file(&["turn"], true, "mod x; mod y;"),
        file(&["turn", "x"], false, "use super::y::f;"),
        file(&["turn", "y"], false, "use crate::app::turn::x::g;"),
    ];
    let found = loops(&graphs(&nested));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/app/turn:"), "{found:?}");
}
