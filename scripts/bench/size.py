#!/usr/bin/env python3
"""What the release binary is made of: file size, stripped size, and the code (text symbols)
summed per crate, from `nm` (binutils), stdlib only.

Needs a binary that still has its symbol table (the release profile keeps it unless `strip =
true`/"symbols"; pass an unstripped build). Rust symbols are attributed to the first path
segment of their demangled name (generic code lands in the crate that names the type, as in
`cargo bloat`); C symbols to a library by prefix (SQLite, aws-lc, ring).

Usage: scripts/bench/size.py [BINARY] [--top N]   (default target/release/hermes-zero, top 25)
"""
import collections, os, re, subprocess, sys, tempfile

args = [a for a in sys.argv[1:] if not a.startswith("--")]
top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 25
if "--top" in sys.argv:
    args = [a for a in args if a != str(top)]
binary = args[0] if args else "target/release/hermes-zero"

size = os.path.getsize(binary)
with tempfile.TemporaryDirectory() as d:
    stripped = os.path.join(d, "stripped")
    subprocess.run(["strip", "-o", stripped, binary], check=True)
    ssize = os.path.getsize(stripped)
print(f"{binary}: {size / 1e6:.2f} MB on disk, {ssize / 1e6:.2f} MB stripped of symbols")

out = subprocess.run(["nm", "-S", "--size-sort", "-C", binary], capture_output=True, text=True).stdout
C_PREFIXES = [("sqlite3", "SQLite (C)"), ("aws_lc", "aws-lc (C)"), ("ring_core", "ring (C/asm)"), ("_ring_", "ring (C/asm)")]
crates = collections.Counter()
total = 0
for line in out.splitlines():
    parts = line.split(None, 3)
    if len(parts) < 4 or parts[2] not in "tTwWrRdD":
        continue
    n = int(parts[1], 16)
    name = parts[3]
    total += n
    crate = None
    for prefix, label in C_PREFIXES:
        if name.startswith(prefix) or prefix in name[:24]:
            crate = label
            break
    if crate is None:
        # `<T as Trait>::f` → the type's crate; `core::ptr::drop_in_place<x::Y>` → x.
        m = re.match(r"^(?:<+)?(?:&(?:mut )?)?(?:dyn )?([A-Za-z_][A-Za-z0-9_]*)::", name)
        crate = m.group(1) if m else "(other)"
        if crate in ("core", "alloc", "std") and "<" in name:
            inner = re.search(r"<(?:&(?:mut )?)?(?:dyn )?([A-Za-z_][A-Za-z0-9_]*)::", name)
            if inner and inner.group(1) not in ("core", "alloc", "std"):
                crate = inner.group(1)
    crates[crate] += n
print(f"symbols with a size: {total / 1e6:.2f} MB (code and read-only data; the rest is relocations, unwind tables, strings)")
print(f"{'crate':32} {'KB':>8} {'share':>6}")
for crate, n in crates.most_common(top):
    print(f"{crate:32} {n / 1e3:8.0f} {n / total * 100:5.1f}%")
