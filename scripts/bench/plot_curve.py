#!/usr/bin/env python3
"""Plots concurrency curves written by `scripts/bench/serve.py --curve=FILE` as one SVG (stdlib
only): p50 latency (left) and turns/s (right) against chats at once (log scale), one line per
input file.

Usage: scripts/bench/plot_curve.py OUT.svg LABEL=FILE [LABEL=FILE ...]
"""
import json, math, sys

W, H, PAD = 360, 260, 48
COLOURS = ["#888888", "#1f77b4", "#d62728", "#2ca02c"]


def panel(x0, title, series, key):
    top = max(max(r[key] for r in rows) for _, rows in series) * 1.1 or 1
    xs = sorted({r["chats"] for _, rows in series for r in rows})
    lo, hi = math.log10(xs[0]), math.log10(xs[-1]) or 1

    def px(n):
        return x0 + PAD + (math.log10(n) - lo) / ((hi - lo) or 1) * (W - 2 * PAD)

    def py(v):
        return H - PAD - v / top * (H - 2 * PAD)

    out = [f'<text x="{x0 + W / 2}" y="20" text-anchor="middle" font-size="13">{title}</text>']
    out.append(f'<line x1="{x0 + PAD}" y1="{H - PAD}" x2="{x0 + W - PAD}" y2="{H - PAD}" stroke="black"/>')
    out.append(f'<line x1="{x0 + PAD}" y1="{PAD}" x2="{x0 + PAD}" y2="{H - PAD}" stroke="black"/>')
    for n in xs:
        out.append(f'<text x="{px(n)}" y="{H - PAD + 16}" text-anchor="middle" font-size="11">{n}</text>')
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="{x0 + PAD - 4}" y="{py(v) + 4}" text-anchor="end" font-size="10">{v:.0f}</text>')
    out.append(f'<text x="{x0 + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">chats at once</text>')
    for i, (label, rows) in enumerate(series):
        pts = " ".join(f"{px(r['chats']):.1f},{py(r[key]):.1f}" for r in rows)
        out.append(f'<polyline fill="none" stroke="{COLOURS[i % 4]}" stroke-width="2" points="{pts}"/>')
        out.extend(f'<circle cx="{px(r["chats"]):.1f}" cy="{py(r[key]):.1f}" r="3" fill="{COLOURS[i % 4]}"/>' for r in rows)
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    series = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        with open(path) as f:
            series.append((label, json.load(f)["rows"]))
    body = panel(0, "p50 latency (ms)", series, "p50_ms") + panel(W, "throughput (turns/s)", series, "turns_per_s")
    for i, (label, _) in enumerate(series):
        body.append(f'<rect x="{PAD + i * 150}" y="{H + 6}" width="12" height="12" fill="{COLOURS[i % 4]}"/>')
        body.append(f'<text x="{PAD + i * 150 + 18}" y="{H + 16}" font-size="12">{label}</text>')
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H + 28}" font-family="sans-serif">\n' + "\n".join(body) + "\n</svg>\n"
    with open(sys.argv[1], "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main()
