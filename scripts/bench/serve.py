#!/usr/bin/env python3
"""Black-box benchmarks of the real `serve` binary (release build), stdlib only.

Measures: cold start (exec to first 200 on /healthz, median of 20 runs on a temp home whose
SQLite store exists, i.e. a restart; plus 5 first starts on fresh homes), idle RSS, per-message latency through
POST /api/messages with an instant fake OpenAI-compatible model (200 sequential requests,
then 100 chats concurrently), and RSS after 1,000, 3,000 and 30,000 turns (the leak check:
flat from 3,000 to 30,000). `--quick` stops after 3,000 turns. `--first-turn` also measures
exec to the first answered POST /api/messages (20 restarts: the start-up recovery and the
first turn, through the fake model); `--cold` stops after the start-up figures. `--detail`
adds, to every RSS line, its split from /proc/PID/smaps_rollup (anonymous / file-backed) and
the thread count. `--curve=FILE` measures only the concurrency curve: 1, 10, 100 and 500
chats at once (200, 20, 5 and 2 turns each), p50 / p99 and turns/s
(docs/design.md#group-commit), and writes it to FILE as JSON for scripts/bench/plot_curve.py.

Usage: scripts/bench/serve.py [--quick] [--first-turn] [--cold] [--detail] [--curve=FILE] [path/to/hermes-zero]   (default: target/release/hermes-zero)
"""
import http.client, http.server, json, os, shutil, socket, statistics, subprocess, sys, tempfile, threading, time

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
QUICK = "--quick" in sys.argv[1:]
FIRST_TURN = "--first-turn" in sys.argv[1:]
COLD_ONLY = "--cold" in sys.argv[1:]
DETAIL = "--detail" in sys.argv[1:]
CURVE = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--curve=")), None)
BIN = ARGS[0] if ARGS else "target/release/hermes-zero"
COLD_RUNS = 20


class FakeLLM(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        self.rfile.read(n)
        self.answer_json()

    def answer_json(self):
        """The fixed chat-completions answer, as JSON."""
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class FakeServer(http.server.ThreadingHTTPServer):
    # The default backlog (5) drops connections under 100 concurrent chats and the TCP SYN
    # retry (1 s, 2 s) would be measured as gateway latency.
    request_queue_size = 1024
    daemon_threads = True


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def mem(pid):
    """RSS in MiB, with `--detail` its anonymous / file-backed split and the thread count."""
    line = f"{rss_kb(pid) / 1024:.1f} MiB"
    if DETAIL:
        kb = {}
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for row in f:
                parts = row.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    kb[parts[0].rstrip(":")] = int(parts[1])
        anon = kb.get("Anonymous", 0)
        line += f" (anonymous {anon / 1024:.1f}, file-backed {(kb.get('Rss', 0) - anon) / 1024:.1f}; {len(os.listdir(f'/proc/{pid}/task'))} threads)"
    return line


def start(home, port, env, chat=None):
    """Starts `serve` and times exec → the first 200: on GET /healthz, or with `chat` on a
    POST /api/messages to that chat (the first turn; retried while the port refuses)."""
    t0 = time.perf_counter()
    p = subprocess.Popen([BIN, "--home", home, "serve", "--listen", f"127.0.0.1:{port}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = t0 + 10
    while time.perf_counter() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5 if chat else 1)
            if chat:
                c.request("POST", "/api/messages", body=json.dumps({"chat_id": chat, "user_id": "u", "text": "hi"}), headers={"authorization": "Bearer k", "content-type": "application/json"})
            else:
                c.request("GET", "/healthz")
            r = c.getresponse()
            r.read()
            if r.status == 200:
                return p, (time.perf_counter() - t0) * 1000
            if chat:
                raise SystemExit(f"first turn: HTTP {r.status}")
        except OSError:
            time.sleep(0.0005)
    p.kill()
    raise SystemExit("serve did not answer the first turn" if chat else "serve did not start")


def post(conn, body):
    t = time.perf_counter()
    conn.request("POST", "/api/messages", body=json.dumps(body), headers={"authorization": "Bearer k", "content-type": "application/json"})
    r = conn.getresponse()
    r.read()
    assert r.status == 200, r.status
    return (time.perf_counter() - t) * 1000


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, round((len(v) - 1) * p))]


def concurrent(port, chats, turns, tag):
    """`chats` chats at once, `turns` messages each: (latencies in ms, wall seconds)."""
    results, lock = [], threading.Lock()

    def chat(c):
        cn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine = [post(cn, {"chat_id": f"{tag}{c}", "user_id": "u", "text": f"m{i}"}) for i in range(turns)]
        with lock:
            results.extend(mine)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=chat, args=(c,)) for c in range(chats)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    return results, time.perf_counter() - t0


def curve(port, out):
    """The concurrency curve: p50, p99 and turns/s at 1, 10, 100 and 500 chats at once."""
    rows = []
    for n in (1, 10, 100, 500):
        lat, wall = concurrent(port, n, {1: 200, 10: 20, 100: 5, 500: 2}[n], f"curve{n}-")
        row = {"chats": n, "turns": len(lat), "p50_ms": round(pct(lat, .5), 2), "p99_ms": round(pct(lat, .99), 2), "turns_per_s": round(len(lat) / wall)}
        rows.append(row)
        print(f"{n:>4} chats at once ({len(lat)} turns): p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, {row['turns_per_s']} turns/s")
    with open(out, "w") as f:
        json.dump({"binary": BIN, "rows": rows}, f, indent=1)


def main():
    llm = FakeServer(("127.0.0.1", 0), FakeLLM)
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    home = tempfile.mkdtemp(prefix="hz-bench-")
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write(f"model:\n  provider: openai\n  base_url: http://127.0.0.1:{llm.server_address[1]}/v1\n  name: m\n")
    env = dict(os.environ, API_SERVER_KEY="k", RUST_LOG="error")
    if CURVE:
        p, _ = start(home, port := free_port(), env)
        post(http.client.HTTPConnection("127.0.0.1", port, timeout=30), {"chat_id": "warm", "user_id": "u", "text": "hi"})
        curve(port, CURVE)
        p.terminate()
        p.wait()
        llm.shutdown()
        return
    # The first start creates the store; a scale-to-zero restart finds it: that is the cold
    # start measured (20 runs on one home), then the first start on a fresh home (5 runs).
    p, _ = start(home, free_port(), env)
    p.terminate()
    p.wait()
    starts = []
    for _ in range(COLD_RUNS):
        p, ms = start(home, free_port(), env)
        starts.append(ms)
        p.terminate()
        p.wait()
    print(f"cold start (exec → first 200 /healthz, store exists), {COLD_RUNS} runs: median {statistics.median(starts):.1f} ms, min {min(starts):.1f}, max {max(starts):.1f}")
    firsts = []
    for _ in range(5):
        fresh = tempfile.mkdtemp(prefix="hz-bench-first-")
        shutil.copy(os.path.join(home, "config.yaml"), fresh)
        p, ms = start(fresh, free_port(), env)
        firsts.append(ms)
        p.terminate()
        p.wait()
        shutil.rmtree(fresh, ignore_errors=True)
    print(f"first start (fresh home: creates the SQLite store), 5 runs: median {statistics.median(firsts):.1f} ms, min {min(firsts):.1f}, max {max(firsts):.1f}")
    if FIRST_TURN:
        turns = []
        for i in range(COLD_RUNS):
            p, ms = start(home, free_port(), env, f"first{i}")
            turns.append(ms)
            p.terminate()
            p.wait()
        print(f"first turn (exec → first 200 on POST /api/messages, store exists), {COLD_RUNS} runs: median {statistics.median(turns):.1f} ms, min {min(turns):.1f}, max {max(turns):.1f}")
    if COLD_ONLY:
        llm.shutdown()
        return
    port = free_port()
    p, _ = start(home, port, env)
    time.sleep(1)
    print(f"idle RSS after start: {mem(p.pid)}")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    post(conn, {"chat_id": "warm", "user_id": "u", "text": "hi"})
    lat = [post(conn, {"chat_id": "seq", "user_id": "u", "text": f"m{i}"}) for i in range(200)]
    print(f"message round trip, one chat, 200 sequential: p50 {pct(lat, .5):.2f} ms, p99 {pct(lat, .99):.2f} ms, max {max(lat):.2f} ms")
    results, wall = concurrent(port, 100, 5, "c")
    print(f"message round trip, 100 chats concurrently (500 turns): p50 {pct(results, .5):.2f} ms, p99 {pct(results, .99):.2f} ms, max {max(results):.2f} ms, {len(results) / wall:.0f} turns/s")
    if DETAIL:
        print(f"RSS after the 100 concurrent chats: {mem(p.pid)}")
    for i in range(1000 - 200 - 500 - 1):
        post(conn, {"chat_id": f"leak{i % 10}", "user_id": "u", "text": "x"})
    print(f"RSS after 1,000 turns: {mem(p.pid)}")
    for i in range(2000):
        post(conn, {"chat_id": f"leak{i % 10}", "user_id": "u", "text": "x"})
    print(f"RSS after 3,000 turns: {mem(p.pid)}")
    if not QUICK:
        for i in range(27000):
            post(conn, {"chat_id": f"leak{i % 10}", "user_id": "u", "text": "x"})
        print(f"RSS after 30,000 turns: {mem(p.pid)} (leak check: flat from 3,000)")
    p.terminate()
    p.wait()
    llm.shutdown()


if __name__ == "__main__":
    main()
