#!/usr/bin/env python3
"""The OpenAI-compatible API server's overhead (issue #32), black-box against the real
`serve` binary (release build) and an instant fake model, stdlib only. Prints a table:

- time to the first SSE byte of `POST /v1/chat/completions` with `stream: true` (the
  role chunk) and to its `data: [DONE]`;
- the total time of a non-streaming `POST /v1/chat/completions` turn;
- the total time of the same turn through `POST /api/messages`.

Each figure is over RUNS sequential requests, each the next turn of one session (the session
exists, as in the store budget tests), after WARM warm-up turns.

Usage (the lead runs it on a quiet machine; results go to BENCHMARKS.md by hand):
  cargo build --release && scripts/bench/api_first_byte.py [--runs N] [path/to/hermes-zero]
"""
import http.client, json, os, shutil, statistics, sys, tempfile, threading, time

RUNS = 200
if "--runs" in sys.argv:
    i = sys.argv.index("--runs")
    RUNS = int(sys.argv[i + 1])
    del sys.argv[i:i + 2]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve  # noqa: E402  (FakeServer, free_port, start, pct; serve.py reads the binary path from argv)

WARM = 5
AUTH = {"authorization": "Bearer k", "content-type": "application/json"}


class FakeLLM(serve.FakeLLM):
    """The instant model of serve.py, answering OpenAI's SSE when asked `stream: true`."""

    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        req = json.loads(self.rfile.read(n) or b"{}")
        if not req.get("stream"):
            return self.answer_json()
        chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "o"}}]},
                  {"choices": [{"index": 0, "delta": {"content": "k"}, "finish_reason": "stop"}]},
                  {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}]
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        data = body.encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def timed(conn, path, body, headers, stream=False):
    """(ms to the first body byte, ms to the end) of one POST."""
    t = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    assert r.status == 200, (r.status, r.read())
    first = None
    if stream:
        r.read1(1)
        first = (time.perf_counter() - t) * 1000
        rest = r.read()
        assert rest.endswith(b"data: [DONE]\n\n"), rest[-200:]
    else:
        r.read()
    return first, (time.perf_counter() - t) * 1000


def series(conn, path, make, headers, stream=False):
    for i in range(WARM):
        timed(conn, path, make(f"warm{i}"), headers, stream)
    return [timed(conn, path, make(f"m{i}"), headers, stream) for i in range(RUNS)]


def row(name, values):
    print(f"| {name:<52} | {statistics.median(values):8.2f} | {serve.pct(values, .9):8.2f} | {serve.pct(values, .99):8.2f} | {max(values):8.2f} |")


def main():
    llm = serve.FakeServer(("127.0.0.1", 0), FakeLLM)
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    home = tempfile.mkdtemp(prefix="hz-bench-api-")
    with open(os.path.join(home, "config.yaml"), "w") as f:
        f.write(f"model:\n  provider: openai\n  base_url: http://127.0.0.1:{llm.server_address[1]}/v1\n  name: m\n")
    env = dict(os.environ, API_SERVER_KEY="k", RUST_LOG="error")
    port = serve.free_port()
    p, _ = serve.start(home, port, env)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        sse = series(conn, "/v1/chat/completions", lambda t: {"messages": [{"role": "user", "content": t}], "stream": True},
                     dict(AUTH, **{"X-Hermes-Session-Id": "bench-sse"}), stream=True)
        chat = series(conn, "/v1/chat/completions", lambda t: {"messages": [{"role": "user", "content": t}]},
                      dict(AUTH, **{"X-Hermes-Session-Id": "bench-chat"}))
        msgs = series(conn, "/api/messages", lambda t: {"chat_id": "bench-msgs", "user_id": "u", "text": t}, AUTH)
        print(f"{RUNS} sequential turns each (after {WARM} warm-up), instant fake model, binary {serve.BIN}; ms")
        print(f"| {'':<52} | {'p50':>8} | {'p90':>8} | {'p99':>8} | {'max':>8} |")
        print(f"|{'-' * 54}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 10}|")
        row("/v1/chat/completions stream: first SSE byte", [f for f, _ in sse])
        row("/v1/chat/completions stream: to data: [DONE]", [t for _, t in sse])
        row("/v1/chat/completions (JSON): total", [t for _, t in chat])
        row("/api/messages: total", [t for _, t in msgs])
        d = statistics.median([t for _, t in chat]) - statistics.median([t for _, t in msgs])
        print(f"chat completion overhead vs /api/messages (p50): {d:+.2f} ms")
    finally:
        p.terminate()
        p.wait()
        llm.shutdown()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
