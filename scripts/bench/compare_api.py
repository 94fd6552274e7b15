"""The API server side by side (run through compare_api.sh, which sets up the Hermes venv):
hermes-zero `serve` and Hermes Agent's `hermes gateway run`, both answering POST
/v1/chat/completions from one fake OpenAI-compatible model (sides.FakeModel). See the header
of compare_api.sh for what is measured.

Usage: python3 scripts/bench/compare_api.py REQUESTS STREAMS HZ_BIN HERMES_BIN HERMES_VERSION"""
import http.client, json, os, shutil, statistics, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sides import FakeModel, free_port, hermes_side, hz_side, start, stderr_tail, stop, tree_rss_mib

HZ_KEY, HERMES_KEY = "k" * 32, "k" * 32


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def fail(side, p, msg):
    stop(p)
    sys.exit(f"compare_api: {side}: {msg}\n--- its stderr (tail) ---\n{stderr_tail(p)}")


def post(port, key, sid, stream):
    """One POST /v1/chat/completions on a new connection, session `sid` (a new session each
    time). Returns (status, ms to the whole answer, ms to the first body byte, ms to the
    first text, the answer's text)."""
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "ping"}]}
    if stream:
        body["stream"] = True
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {
        "Authorization": f"Bearer {key}", "Content-Type": "application/json", "X-Hermes-Session-Id": sid})
    r = c.getresponse()
    if not stream or r.status != 200:
        raw = r.read()
        ms = (time.perf_counter() - t0) * 1000
        try:
            text = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            text = raw.decode(errors="replace")[:500]
        return r.status, ms, ms, ms, text
    first_byte = first_text = None
    buf, text, done = b"", "", False
    while not done:
        chunk = r.read1(65536)
        if not chunk:
            break
        now = (time.perf_counter() - t0) * 1000
        first_byte = first_byte or now
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    continue
                for choice in json.loads(data).get("choices") or []:
                    text += (choice.get("delta") or {}).get("content") or ""
                if text and first_text is None:
                    first_text = now
    ms = (time.perf_counter() - t0) * 1000
    c.close()
    return (200 if done else 599), ms, first_byte or ms, first_text or ms, text


def hz_config(home, base_url):
    """hermes-zero's model at the fake: the `openai` provider with its base URL."""
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write(f"model:\n  provider: openai\n  base_url: {base_url}\n  name: m\n  api_key: fake\n")


def hermes_config(home, base_url):
    """Hermes' model at the fake: provider `custom` (hermes_cli/runtime_provider.py uses a
    loopback `model.base_url` of provider `custom` as is and sends `model.api_key`),
    `model.default` names the model, and `model.context_length` spares the context-length
    probes of agent/model_metadata.py."""
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write(f"model:\n  provider: custom\n  base_url: {base_url}\n  default: m\n  api_key: fake\n"
                f"  context_length: 131072\n")


def run_side(name, make, key, configure, fake, requests, streams, timeout):
    home = tempfile.mkdtemp(prefix="hz-compare-api-")
    port = free_port()
    cmd, env, path = make(home, port)
    configure(home, fake.base_url)
    fake.take()
    del fake.others[:]
    p, cold = start(cmd, env, port, path, timeout)
    time.sleep(2)
    rest = tree_rss_mib(p.pid)
    status, first, _, _, text = post(port, key, "bench-first", False)
    if status != 200 or text != FakeModel.TEXT:
        fail(name, p, f"first chat answered {status} {text!r}, not 200 with the fake's text")
    chats, sse_first, sse_text = [], [], []
    for i in range(requests):
        status, ms, _, _, text = post(port, key, f"bench-chat-{i}", False)
        if status != 200 or text != FakeModel.TEXT:
            fail(name, p, f"chat {i} answered {status} {text!r}, not 200 with the fake's text")
        chats.append(ms)
    for i in range(streams):
        status, ms, fb, ft, text = post(port, key, f"bench-sse-{i}", True)
        if status != 200 or text != FakeModel.TEXT:
            fail(name, p, f"streamed chat {i} answered {status} {text!r}, not 200 with the fake's text and [DONE]")
        sse_first.append(fb)
        sse_text.append(ft)
    time.sleep(2)
    after = tree_rss_mib(p.pid)
    calls, others = fake.take(), list(fake.others)
    stop(p)
    shutil.rmtree(home, ignore_errors=True)
    total = 1 + requests + streams
    if calls == 0:
        sys.exit(f"compare_api: {name} answered without calling the fake model (0 calls for {total} chats)")
    return dict(name=name, cold=cold, rest=rest, first=first, p50=pct(chats, .5), p99=pct(chats, .99),
                sse=statistics.median(sse_first), sse_text=statistics.median(sse_text), after=after,
                calls=calls / total, others=others)


def main():
    requests, streams, hz, hermes, version = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    fake = FakeModel()
    rows = [run_side("hermes-zero serve", hz_side(hz, HZ_KEY), HZ_KEY, hz_config, fake, requests, streams, 10),
            run_side(f"Hermes {version} gateway, bytecode", hermes_side(hermes, True, HERMES_KEY), HERMES_KEY,
                     hermes_config, fake, requests, streams, 120),
            run_side(f"Hermes {version} gateway, no bytecode", hermes_side(hermes, False, HERMES_KEY), HERMES_KEY,
                     hermes_config, fake, requests, streams, 180)]
    print(f"POST /v1/chat/completions against one fake model, a new X-Hermes-Session-Id per request; "
          f"{requests} sequential chats, {streams} streamed (ms, MiB)")
    head = ("side", "cold start", "RSS rest", "1st chat", "chat p50", "chat p99", "SSE 1st byte", "SSE 1st text",
            "RSS after", "calls/req")
    print(f"{head[0]:38}" + "".join(f"{h:>13}" for h in head[1:]))
    for r in rows:
        cells = (r["cold"], r["rest"], r["first"], r["p50"], r["p99"], r["sse"], r["sse_text"], r["after"], r["calls"])
        print(f"{r['name']:38}" + "".join(f"{c:13.1f}" if i < 8 else f"{c:13.2f}" for i, c in enumerate(cells)))
    for r in rows:
        if r["others"]:
            print(f"{r['name']}: other requests to the fake: {sorted(set(r['others']))}")


if __name__ == "__main__":
    main()
