#!/usr/bin/env python3
"""Checks the repository's relative links (scripts/test.sh runs it; python3 stdlib only).

(a) Every relative Markdown link in README.md and docs/**/*.md (inline `[text](target)`,
    images, and reference definitions `[id]: target`; code blocks and code spans are not
    links) must name an existing file or directory, relative to the file that holds it. With
    a `#fragment` on a Markdown target, that file must have the anchor: an `<a id="…">` (or
    `name="…"`) or the GitHub slug of one of its headings.
(b) Every citation `docs/<path>.md[#anchor]` in src/**/*.rs, tests/**/*.rs, scripts/** and
    benches/** (and in plain text of README.md and docs/**/*.md), read from the repository
    root, must resolve the same way. This keeps the code's `docs/design.md#<anchor>` comments
    pointing at a section that exists.

Prints each broken link as `file:line: …` and exits 1 if there is one; otherwise prints
`links: N checked, 0 broken` and exits 0. Run from anywhere: paths are taken from the
repository root (the parent of this script's directory).
"""

import os
import re
import sys
from functools import lru_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
HTML_ANCHOR = re.compile(r"""<a\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
INLINE_LINK = re.compile(r"\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
CITATION = re.compile(r"(?<![A-Za-z0-9_/.-])(docs/[A-Za-z0-9_/.-]+\.md)(#[a-z0-9-]+)?")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def rel(path):
    return os.path.relpath(path, ROOT)


def markdown_lines(path):
    """(line number, text, in_code) for each line; fenced code blocks are marked."""
    out = []
    fence = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)
                out.append((n, line, True))
                continue
            if fence is not None:
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                    fence = None
                out.append((n, line, True))
                continue
            out.append((n, line, False))
    return out


def strip_code_spans(line):
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def slug(text):
    """GitHub's heading anchor: the rendered text, lowercased, punctuation dropped, spaces to '-'."""
    text = CODE_SPAN.sub(lambda m: m.group(2), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: their text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path):
    found = set()
    seen = {}
    for _, line, code in markdown_lines(path):
        if code:
            continue
        for a in HTML_ANCHOR.findall(line):
            found.add(a)
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else f"{s}-{k}")
    return frozenset(found)


def check_target(base_dir, target, this_file):
    """None if the target resolves, else the reason it does not."""
    if "#" in target:
        path_part, frag = target.split("#", 1)
    else:
        path_part, frag = target, None
    path_part = path_part.split("?", 1)[0]
    if path_part:
        if path_part.startswith("/"):
            full = os.path.join(ROOT, path_part.lstrip("/"))
        else:
            full = os.path.normpath(os.path.join(base_dir, path_part))
        if not os.path.exists(full):
            return f"no such file: {rel(full)}"
    else:
        full = this_file
    if frag and full.endswith(".md") and os.path.isfile(full):
        if frag not in anchors(full):
            return f"{rel(full)} has no anchor #{frag}"
    return None


def markdown_files():
    files = [os.path.join(ROOT, "README.md")]
    for d, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(d, n) for n in names if n.endswith(".md")]
    return sorted(f for f in files if os.path.isfile(f))


def code_files():
    out = []
    for top, pattern in (("src", ".rs"), ("tests", ".rs"), ("scripts", ""), ("benches", "")):
        for d, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            out += [os.path.join(d, n) for n in names if n.endswith(pattern)]
    return sorted(out)


def main():
    checked = 0
    broken = []

    for md in markdown_files():
        base = os.path.dirname(md)
        for n, line, code in markdown_lines(md):
            if code:
                continue
            plain = strip_code_spans(line)
            targets = [m.group(1) for m in INLINE_LINK.finditer(plain)]
            m = REF_DEF.match(plain)
            if m:
                targets.append(m.group(1))
            for t in targets:
                t = t[1:-1] if t.startswith("<") and t.endswith(">") else t
                if SCHEME.match(t) or t.startswith("//"):
                    continue
                checked += 1
                why = check_target(base, t, md)
                if why:
                    broken.append(f"{rel(md)}:{n}: broken link ({t}): {why}")
            # citations in the text; link targets were checked above (relative to the file)
            text = INLINE_LINK.sub("]()", line)
            text = REF_DEF.sub("", text)
            for m in CITATION.finditer(text):
                checked += 1
                why = check_target(ROOT, m.group(0), md)
                if why:
                    broken.append(f"{rel(md)}:{n}: broken citation {m.group(0)}: {why}")

    for f in code_files():
        with open(f, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                for m in CITATION.finditer(line):
                    checked += 1
                    why = check_target(ROOT, m.group(0), f)
                    if why:
                        broken.append(f"{rel(f)}:{n}: broken citation {m.group(0)}: {why}")

    for b in broken:
        print(b)
    print(f"links: {checked} checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
