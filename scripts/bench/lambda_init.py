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

With `--first-event` the first `next` is answered with an API Gateway (REST) `GET /healthz`
event, and the time until its response is posted is printed too: the first invocation, which
now opens the store (creates the SQLite file) and syncs `jobs.json` before it answers.

Usage: scripts/bench/lambda_init.py [--runs N] [--dynamodb URL] [--first-event] [BINARY]
       (default BINARY: target/release/hermes-zero; build it with `cargo build --release --features aws`)
"""
import argparse, http.server, json, os, shutil, statistics, subprocess, sys, tempfile, threading, time

parser = argparse.ArgumentParser()
parser.add_argument("binary", nargs="?", default="target/release/hermes-zero")
parser.add_argument("--runs", type=int, default=10)
parser.add_argument("--dynamodb", metavar="URL", help="moto endpoint: run on DynamoDB instead of SQLite")
parser.add_argument("--first-event", action="store_true", help="also time the first invocation (GET /healthz)")
args = parser.parse_args()


class State:
    first_next = None  # perf_counter of the first `next` request of the current run
    first_response = None  # perf_counter of the first event's response (with --first-event)
    init_error = None
    arrived = threading.Event()


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/2018-06-01/runtime/invocation/next":
            if State.first_next is None:
                State.first_next = time.perf_counter()
                if args.first_event:
                    body = json.dumps(HEALTHZ).encode()
                    self.send_response(200)
                    for k, v in [("Lambda-Runtime-Aws-Request-Id", "first"),
                                 ("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 60_000)),
                                 ("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:hermes-zero"),
                                 ("Content-Type", "application/json"), ("Content-Length", str(len(body)))]:
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                    return
            State.arrived.set()
            # Hold the request like Lambda does while no event is queued; the run kills the
            # process, which closes the connection.
            time.sleep(30)
            return
        self.send_error(404)

    def do_POST(self):
        n = int(self.headers.get("content-length", 0))
        body = self.rfile.read(n)
        if self.path.endswith("/init/error") or self.path.endswith("/first/error"):
            State.init_error = body.decode(errors="replace")
            State.arrived.set()
        elif self.path.endswith("/first/response"):
            State.first_response = time.perf_counter()
        self.send_response(202)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


# An API Gateway REST (v1) proxy event: answered buffered, one POST with a content-length.
HEALTHZ = {
    "resource": "/{proxy+}", "path": "/healthz", "httpMethod": "GET",
    "headers": {"Host": "abcdefghij.execute-api.us-east-1.amazonaws.com"},
    "multiValueHeaders": {"Host": ["abcdefghij.execute-api.us-east-1.amazonaws.com"]},
    "queryStringParameters": None, "multiValueQueryStringParameters": None,
    "pathParameters": {"proxy": "healthz"}, "stageVariables": None,
    "requestContext": {
        "resourceId": "abc123", "resourcePath": "/{proxy+}", "httpMethod": "GET", "path": "/prod/healthz",
        "accountId": "123456789012", "stage": "prod", "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        "identity": {"sourceIp": "203.0.113.7", "userAgent": "bench"}, "apiId": "abcdefghij",
        "protocol": "HTTP/1.1", "domainName": "abcdefghij.execute-api.us-east-1.amazonaws.com",
    },
    "body": None, "isBase64Encoded": False,
}


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
    times, firsts = [], []
    for _ in range(args.runs):
        home = tempfile.mkdtemp(prefix="hz-lambda-")
        State.first_next, State.first_response, State.init_error = None, None, None
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
        if args.first_event:
            if State.first_response is None:
                sys.exit("the first event was not answered")
            firsts.append((State.first_response - State.first_next) * 1000)
    store = "DynamoDB (moto)" if args.dynamodb else "SQLite"
    print(f"Lambda init (exec → first GET /runtime/invocation/next), {store}, {len(times)} runs: "
          f"median {statistics.median(times):.1f} ms, min {min(times):.1f}, max {max(times):.1f}")
    if firsts:
        print(f"first invocation (GET /healthz: store opened, jobs.json synced, answered), {store}: "
              f"median {statistics.median(firsts):.1f} ms, min {min(firsts):.1f}, max {max(firsts):.1f}")
    srv.shutdown()


if __name__ == "__main__":
    main()
