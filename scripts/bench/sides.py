"""The two sides of the side-by-side benches (compare.sh, compare_api.sh), and what they share:
how each gateway is started with only its HTTP API on a temp home and a free port, how a start
is timed (exec → first 200 on the health route), how a process tree's RSS is read, and a fake
OpenAI-compatible model that counts the calls it answers."""
import http.client, http.server, json, os, signal, subprocess, sys, tempfile, threading, time

BASE_ENV = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import free_port, rss_kb  # noqa: E402  (serve.py only reads its argv at import)

HERMES_KEY = "k" * 32  # Hermes refuses to start its API server with a key under 16 characters


def rss_mib(pid):
    return rss_kb(pid) / 1024


def tree_rss_mib(pid):
    """RSS of the process and its children (Hermes may start helpers)."""
    total = rss_mib(pid)
    try:
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        kids = []
    return total + sum(tree_rss_mib(int(k)) for k in kids)


def hz_side(hz, key="k"):
    """hermes-zero `serve` with the API server's key; health on /healthz."""
    def make(home, port):
        env = dict(BASE_ENV, API_SERVER_KEY=key, RUST_LOG="error")
        return [hz, "--home", home, "serve", "--listen", f"127.0.0.1:{port}"], env, "/healthz"
    return make


def hermes_side(hermes, pyc, key=HERMES_KEY):
    """`hermes gateway run` with only the API server platform; health on /health. Without
    `pyc`, no bytecode is read or written (every module compiled from source on each start)."""
    def make(home, port):
        env = dict(BASE_ENV, HOME=home, HERMES_HOME=home, API_SERVER_ENABLED="true", API_SERVER_KEY=key,
                   API_SERVER_PORT=str(port), API_SERVER_HOST="127.0.0.1")
        if not pyc:
            empty = os.path.join(home, "no-pycache")
            os.makedirs(empty, exist_ok=True)
            env.update(PYTHONPYCACHEPREFIX=empty, PYTHONDONTWRITEBYTECODE="1")
        return [hermes, "gateway", "run"], env, "/health"
    return make


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def stderr_tail(p):
    """The last 3,000 characters the side wrote on stderr (kept in a temp file, never a pipe
    that a chatty side could fill and block on)."""
    p.errlog.seek(0)
    return p.errlog.read().decode(errors="replace")[-3000:]


def start(cmd, env, port, path, timeout):
    """Starts `cmd` in its own process group and times exec → the first 200 on GET `path`.
    Returns (process, ms); exits with the tail of the side's stderr if no 200 comes in time."""
    errlog = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=errlog, start_new_session=True)
    p.errlog = errlog
    deadline = t0 + timeout
    while time.perf_counter() < deadline and p.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return p, (time.perf_counter() - t0) * 1000
        except OSError:
            time.sleep(0.0005)
    stop(p)
    sys.exit(f"{cmd[0]} gave no 200 on {path} within {timeout} s:\n{stderr_tail(p)}")


class FakeModel(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible model on 127.0.0.1 answering every POST …/chat/completions with
    `TEXT` at once: one JSON completion, or with `"stream": true` an SSE stream (a role chunk,
    the text, a finish chunk, a usage chunk, `[DONE]`). GET …/models lists model `m`.
    `calls` counts the completions answered; `others` records any other request."""
    TEXT = "pong from the fake model"
    daemon_threads = True
    request_queue_size = 128

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _FakeHandler)
        self.calls = 0
        self.others = []
        self.lock = threading.Lock()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def take(self):
        """The calls answered since the last take."""
        with self.lock:
            n, self.calls = self.calls, 0
            return n


class _FakeHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body leave in one write with TCP_NODELAY: two writes would meet the caller's
    # delayed ACK under Nagle and add ~40 ms to every answer, on both sides alike.
    disable_nagle_algorithm = True

    def _send(self, ctype, body):
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self._headers_buffer.append(b"\r\n" + body)
        self.flush_headers()

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            return self._send("application/json", json.dumps({"object": "list", "data": [
                {"id": "m", "object": "model", "created": 0, "owned_by": "fake", "context_length": 131072}]}).encode())
        with self.server.lock:
            self.server.others.append(f"GET {self.path}")
        self.send_error(404)

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            with self.server.lock:
                self.server.others.append(f"POST {self.path}")
            return self.send_error(404)
        with self.server.lock:
            self.server.calls += 1
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        head = {"id": "chatcmpl-fake", "created": int(time.time()), "model": req.get("model", "m")}
        if not req.get("stream"):
            return self._send("application/json", json.dumps(dict(head, object="chat.completion", choices=[
                {"index": 0, "message": {"role": "assistant", "content": FakeModel.TEXT}, "finish_reason": "stop"}],
                usage=usage)).encode())
        chunk = dict(head, object="chat.completion.chunk")
        events = [dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]),
                  dict(chunk, choices=[{"index": 0, "delta": {"content": FakeModel.TEXT}, "finish_reason": None}]),
                  dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
                  dict(chunk, choices=[], usage=usage)]
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self._send("text/event-stream", body)

    def log_message(self, *a):
        pass
