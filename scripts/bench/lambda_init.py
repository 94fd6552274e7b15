#!/usr/bin/env python3
"""Lambda-style init of the real binary against a local Lambda Runtime API, stdlib only.

Starts a fake Runtime API (Python http.server speaking the real wire protocol: it answers
`GET /2018-06-01/runtime/invocation/next` by holding the request, and accepts init errors),
then starts the release `--features aws` binary with `AWS_LAMBDA_RUNTIME_API` pointing at it
and times process start (just before exec) → the first `next` request arriving. That is
Lambda's "Init duration": config, clients, the runtime loop. The store is not opened then
(no SQLite file is created, no DynamoDB request is made): the first invocation opens it,
syncs `jobs.json` and, after its answer, runs the recovery sweep (docs/design.md#lazy-start),
so none of that is in this figure. The process is then killed; each run uses a fresh temp
`HERMES_HOME`.

Store: SQLite in the temp home by default (what the binary does without `HERMES_STORE`).
With `--dynamodb URL` (a moto server, e.g. `moto_server -p 5xxxx`) it runs on DynamoDB as on
Lambda: `HERMES_STORE=dynamodb` and a table created once before the runs (`doctor
--create-table`); the init builds the DynamoDB client and makes no request to moto.

Usage: scripts/bench/lambda_init.py [--runs N] [--dynamodb URL] [BINARY]
       (default BINARY: target/release/hermes-zero; build it with `cargo build --release --features aws`)
"""
import argparse, http.server, os, shutil, statistics, subprocess, sys, tempfile, threading, time

parser = argparse.ArgumentParser()
parser.add_argument("binary", nargs="?", default="target/release/hermes-zero")
parser.add_argument("--runs", type=int, default=10)
parser.add_argument("--dynamodb", metavar="URL", help="moto endpoint: run on DynamoDB instead of SQLite")
args = parser.parse_args()


class State:
    first_next = None  # perf_counter of the first `next` request of the current run
    init_error = None
    arrived = threading.Event()


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/2018-06-01/runtime/invocation/next":
            if State.first_next is None:
                State.first_next = time.perf_counter()
            State.arrived.set()
            # Hold the request like Lambda does while no event is queued; the run kills the
            # process, which closes the connection.
            time.sleep(30)
            return
        self.send_error(404)

    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        body = self.rfile.read(n)
        if self.path.endswith("/init/error"):
            State.init_error = body.decode(errors="replace")
            State.arrived.set()
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


def env_for(home, api):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": api,
        "AWS_LAMBDA_FUNCTION_NAME": "hermes-zero",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "2026/12/01/[$LATEST]0123456789abcdef",
        "AWS_REGION": "us-east-1",
        "HERMES_HOME": home,
        "API_SERVER_KEY": "k",
        "RUST_LOG": "error",
    }
    if args.dynamodb:
        env.update({
            "HERMES_STORE": "dynamodb",
            "HERMES_DYNAMODB_TABLE": "hz-bench-init",
            "AWS_ENDPOINT_URL_DYNAMODB": args.dynamodb,
            "AWS_ENDPOINT_URL_SCHEDULER": args.dynamodb,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        })
    return env


def main():
    srv = Server(("127.0.0.1", 0), RuntimeApi)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    api = f"127.0.0.1:{srv.server_address[1]}"
    if args.dynamodb:
        home = tempfile.mkdtemp(prefix="hz-lambda-")
        e = env_for(home, api)
        del e["AWS_LAMBDA_RUNTIME_API"]
        subprocess.run([args.binary, "--home", home, "doctor", "--create-table"], env=e, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)
    times = []
    for _ in range(args.runs):
        home = tempfile.mkdtemp(prefix="hz-lambda-")
        State.first_next, State.init_error = None, None
        State.arrived.clear()
        t0 = time.perf_counter()
        p = subprocess.Popen([args.binary], env=env_for(home, api), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ok = State.arrived.wait(10)
        p.kill()
        _, err = p.communicate()
        shutil.rmtree(home, ignore_errors=True)
        if State.init_error or not ok:
            sys.exit(f"init failed: {State.init_error or 'no next request within 10 s'}\n{err.decode(errors='replace')[-2000:]}")
        times.append((State.first_next - t0) * 1000)
    store = "DynamoDB (moto)" if args.dynamodb else "SQLite"
    print(f"Lambda init (exec → first GET /runtime/invocation/next), {store}, {len(times)} runs: "
          f"median {statistics.median(times):.1f} ms, min {min(times):.1f}, max {max(times):.1f}")
    srv.shutdown()


if __name__ == "__main__":
    main()
