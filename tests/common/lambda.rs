//! The real binary as a Lambda function (`AWS_LAMBDA_RUNTIME_API` set), driven through a local
//! implementation of the Lambda Runtime API (`/2018-06-01/runtime/...`), and a local Function
//! URL in front of it.
//!
//! The fake Runtime API takes buffered results (one JSON body) and streamed ones (Lambda
//! response streaming: `Lambda-Runtime-Function-Response-Mode: streaming`, chunked,
//! `application/vnd.awslambda.http-integration-response`, a JSON prelude, eight NUL bytes,
//! the body, optional error trailers). It records when each streamed chunk arrived and
//! acknowledges a streamed response only after its last chunk, as Lambda does.

use crate::common::{API_KEY, bin, spawn_server};
use axum::Json;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

pub const FUNCTION_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:hermes-zero";
/// The content type of a streamed HTTP answer.
const HTTP_INTEGRATION: &str = "application/vnd.awslambda.http-integration-response";
/// What separates the prelude from the body in a streamed HTTP answer.
const DELIMITER: [u8; 8] = [0; 8];

/// One piece of an invocation's answer, for whoever watches it (the Function URL front).
enum Piece {
    Chunk(Bytes),
    End,
    /// A buffered result or an error: (kind, body).
    Whole(&'static str, Value),
}

/// The fake Runtime API: queued events, posted results, init errors.
#[derive(Default)]
pub struct Rapid {
    pub queue: Mutex<VecDeque<(String, Value)>>,
    /// ("response" | "error", body). A streamed response is its prelude's fields plus `body`
    /// (the bytes after the delimiter, as text), `"streamed": true` and any `trailers`.
    pub results: Mutex<HashMap<String, (&'static str, Value)>>,
    pub init_errors: Mutex<Vec<(String, Value)>>,
    /// `next` requests seen: the runtime asks for the next event only after it has finished
    /// with the previous one (response posted, settle phase done).
    pub polls: AtomicUsize,
    /// The chunks of each streamed response (prelude included), with the instant each came.
    pub chunks: Mutex<HashMap<String, Vec<(Instant, Bytes)>>>,
    watchers: Mutex<HashMap<String, mpsc::UnboundedSender<Piece>>>,
    front_seq: AtomicUsize,
}

impl Rapid {
    /// The chunks of `id`'s streamed response that arrived so far.
    pub fn chunks_of(&self, id: &str) -> Vec<(Instant, Bytes)> {
        self.chunks.lock().unwrap().get(id).cloned().unwrap_or_default()
    }

    fn chunk(&self, id: &str, data: Bytes) {
        self.chunks.lock().unwrap().entry(id.to_string()).or_default().push((Instant::now(), data.clone()));
        if let Some(w) = self.watchers.lock().unwrap().get(id) {
            w.send(Piece::Chunk(data)).ok();
        }
    }

    fn finish(&self, id: &str, kind: &'static str, body: Value) {
        if let Some(w) = self.watchers.lock().unwrap().remove(id) {
            w.send(if body["streamed"] == true { Piece::End } else { Piece::Whole(kind, body.clone()) }).ok();
        }
        self.results.lock().unwrap().insert(id.to_string(), (kind, body));
    }
}

async fn next(State(r): State<Arc<Rapid>>) -> Response {
    r.polls.fetch_add(1, Ordering::SeqCst);
    loop {
        if let Some((id, ev)) = r.queue.lock().unwrap().pop_front() {
            let deadline = chrono::Utc::now().timestamp_millis() + 60_000;
            let headers = [
                ("Lambda-Runtime-Aws-Request-Id", id),
                ("Lambda-Runtime-Deadline-Ms", deadline.to_string()),
                ("Lambda-Runtime-Invoked-Function-Arn", FUNCTION_ARN.to_string()),
                ("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000".to_string()),
            ];
            return (headers, Json(ev)).into_response();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn parse(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into()))
}

async fn response(State(r): State<Arc<Rapid>>, Path(id): Path<String>, headers: HeaderMap, mut body: Body) -> StatusCode {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    if header("lambda-runtime-function-response-mode") != "streaming" {
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        r.finish(&id, "response", parse(&bytes));
        return StatusCode::ACCEPTED;
    }
    if header("content-type") != HTTP_INTEGRATION || header("transfer-encoding") != "chunked" {
        let why = format!("fake Runtime API: a streamed response sent as {headers:?}");
        r.finish(&id, "error", json!({"errorType": "Fake.BadStream", "errorMessage": why}));
        return StatusCode::BAD_REQUEST;
    }
    let (mut all, mut trailers) = (Vec::new(), serde_json::Map::new());
    while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame else { break };
        match frame.into_data() {
            Ok(data) => {
                all.extend_from_slice(&data);
                r.chunk(&id, data);
            }
            Err(frame) => {
                for (k, v) in frame.into_trailers().iter().flatten() {
                    trailers.insert(k.to_string(), json!(v.to_str().unwrap_or("")));
                }
            }
        }
    }
    r.finish(&id, "response", split_streamed(&all, trailers));
    StatusCode::ACCEPTED
}

/// A streamed HTTP answer as one value: the prelude's fields, `body`, `streamed`, `trailers`.
fn split_streamed(all: &[u8], trailers: serde_json::Map<String, Value>) -> Value {
    let Some(at) = all.windows(DELIMITER.len()).position(|w| w == DELIMITER) else {
        return json!({"streamed": true, "fake": "no prelude delimiter", "raw": String::from_utf8_lossy(all)});
    };
    let mut v = serde_json::from_slice::<Value>(&all[..at]).unwrap_or_else(|e| json!({"fake": format!("the prelude is not JSON: {e}")}));
    v["body"] = json!(String::from_utf8_lossy(&all[at + DELIMITER.len()..]));
    v["isBase64Encoded"] = json!(false);
    v["streamed"] = json!(true);
    if !trailers.is_empty() {
        v["trailers"] = Value::Object(trailers);
    }
    v
}

async fn error(State(r): State<Arc<Rapid>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    r.finish(&id, "error", parse(&body));
    StatusCode::ACCEPTED
}

async fn init_error(State(r): State<Arc<Rapid>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let kind = headers.get("Lambda-Runtime-Function-Error-Type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    r.init_errors.lock().unwrap().push((kind, parse(&body)));
    StatusCode::ACCEPTED
}

/// The Runtime API on 127.0.0.1:0; returns its `host:port` and state.
pub async fn start_rapid() -> (String, Arc<Rapid>) {
    let r = Arc::new(Rapid::default());
    let app = axum::Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route("/2018-06-01/runtime/invocation/{id}/response", post(response))
        .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(r.clone());
    let base = spawn_server(app).await;
    (base.trim_start_matches("http://").to_string(), r)
}

/// The binary running as a Lambda function; killed on drop.
pub struct Function {
    pub child: Child,
    pub rapid: Arc<Rapid>,
    pub seq: usize,
}

impl Function {
    pub fn start(api: &str, rapid: Arc<Rapid>, home: &std::path::Path, envs: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new(bin());
        // The command line is ignored on Lambda: prove it.
        cmd.args(["this", "is", "ignored"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", api)
            .env("AWS_LAMBDA_FUNCTION_NAME", "hermes-zero")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "2026/12/01/[$LATEST]0123456789abcdef")
            .env("AWS_REGION", "us-east-1")
            .env("HERMES_HOME", home)
            .env("API_SERVER_KEY", API_KEY)
            .env("RUST_LOG", std::env::var("HZ_TEST_LOG").unwrap_or_else(|_| "warn".into()))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // A shifted-clock run (scripts/test.sh, faketime) keeps the function on the same clock
        // as the test and the fake Runtime API.
        for (k, v) in std::env::vars().filter(|(k, _)| k == "LD_PRELOAD" || k.starts_with("FAKETIME")) {
            cmd.env(k, v);
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        Self { child: cmd.spawn().expect("spawn hermes-zero"), rapid, seq: 0 }
    }

    /// Queues one event and waits (≤ 60 s) for its result: ("response" | "error", body).
    pub async fn invoke(&mut self, event: Value) -> (&'static str, Value) {
        let id = self.queue(event);
        self.result(&id).await
    }

    /// Queues one event; returns its request id.
    pub fn queue(&mut self, event: Value) -> String {
        self.seq += 1;
        let id = format!("req-{}", self.seq);
        self.rapid.queue.lock().unwrap().push_back((id.clone(), event));
        id
    }

    /// Waits (≤ 60 s) for the result of `id`.
    pub async fn result(&mut self, id: &str) -> (&'static str, Value) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(r) = self.rapid.results.lock().unwrap().remove(id) {
                return r;
            }
            assert!(Instant::now() < deadline, "no result for {id}");
            assert!(self.child.try_wait().unwrap().is_none(), "the function exited");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (≤ 30 s) until the function has finished with the last event (it asks for the next).
    pub async fn settled(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.rapid.polls.load(Ordering::SeqCst) <= self.seq {
            assert!(Instant::now() < deadline, "the function did not ask for the next event");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded) for the process to exit by itself.
    pub fn wait_exit(&mut self, secs: u64) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A Function URL (payload format 2.0) event.
pub fn function_url(method: &str, path: &str, headers: Value, body: Option<String>, base64: bool) -> Value {
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abcdefghij",
            "domainName": "abcdefghij.lambda-url.us-east-1.on.aws",
            "domainPrefix": "abcdefghij",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "tests"},
            "requestId": "11111111-2222-3333-4444-555555555555",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Dec/2026:08:00:00 +0000",
            "timeEpoch": 1_796_112_000_000_i64
        },
        "body": body,
        "isBase64Encoded": base64
    })
}

/// A local Function URL (`InvokeMode: RESPONSE_STREAM`) in front of `rapid`: each HTTP
/// request becomes a Function URL event queued on it, and the function's streamed answer goes
/// back to the client as its chunks arrive, with the prelude's status, headers and cookies.
/// Returns the base URL.
pub async fn function_url_front(rapid: Arc<Rapid>) -> String {
    spawn_server(axum::Router::new().fallback(front).with_state(rapid)).await
}

async fn front(State(r): State<Arc<Rapid>>, req: axum::extract::Request) -> Response {
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 6 << 20).await else { return StatusCode::PAYLOAD_TOO_LARGE.into_response() };
    let id = format!("url-{}", r.front_seq.fetch_add(1, Ordering::SeqCst) + 1);
    let (tx, mut rx) = mpsc::unbounded_channel();
    r.watchers.lock().unwrap().insert(id.clone(), tx);
    r.queue.lock().unwrap().push_back((id, url_event(&parts, &body)));
    let mut head = Vec::new();
    let at = loop {
        match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            Ok(Some(Piece::Chunk(b))) => head.extend_from_slice(&b),
            Ok(Some(Piece::Whole(kind, v))) => return (StatusCode::BAD_GATEWAY, format!("not streamed ({kind}): {v}")).into_response(),
            _ => return (StatusCode::BAD_GATEWAY, "no streamed answer").into_response(),
        }
        if let Some(at) = head.windows(DELIMITER.len()).position(|w| w == DELIMITER) {
            break at;
        }
    };
    let prelude: Value = serde_json::from_slice(&head[..at]).unwrap_or_default();
    let mut resp = Response::builder().status(prelude["statusCode"].as_u64().and_then(|s| u16::try_from(s).ok()).unwrap_or(500));
    for (k, v) in prelude["headers"].as_object().into_iter().flatten() {
        if !matches!(k.as_str(), "content-length" | "transfer-encoding" | "connection") {
            for v in v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]) {
                resp = resp.header(k, v.as_str().unwrap_or(""));
            }
        }
    }
    for c in prelude["cookies"].as_array().into_iter().flatten() {
        resp = resp.header("set-cookie", c.as_str().unwrap_or(""));
    }
    let first = Bytes::copy_from_slice(&head[at + DELIMITER.len()..]);
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Some(Piece::Chunk(b)) => Some((Ok::<_, Infallible>(b), rx)),
            _ => None,
        }
    });
    resp.body(Body::from_stream(futures_util::stream::once(async move { Ok(first) }).chain(rest))).unwrap()
}

/// The Function URL event of an HTTP request: lower-case headers (repeats joined with `,`),
/// cookies in their own field, the query both raw and parsed, a non-UTF-8 body in base64.
fn url_event(parts: &axum::http::request::Parts, body: &[u8]) -> Value {
    let (mut headers, mut cookies) = (serde_json::Map::new(), Vec::new());
    for (k, v) in &parts.headers {
        let v = v.to_str().unwrap_or("");
        if k == "cookie" {
            cookies.extend(v.split("; ").map(str::to_string));
        } else if let Some(Value::String(prev)) = headers.get_mut(k.as_str()) {
            *prev = format!("{prev},{v}");
        } else {
            headers.insert(k.to_string(), json!(v));
        }
    }
    let (text, b64) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (None, false),
        Ok(t) => (Some(t.to_string()), false),
        Err(_) => (Some(base64::engine::general_purpose::STANDARD.encode(body)), true),
    };
    let mut ev = function_url(parts.method.as_str(), parts.uri.path(), Value::Object(headers), text, b64);
    if let Some(q) = parts.uri.query() {
        ev["rawQueryString"] = json!(q);
        let params: serde_json::Map<String, Value> =
            url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), json!(v))).collect();
        ev["queryStringParameters"] = Value::Object(params);
    }
    if !cookies.is_empty() {
        ev["cookies"] = json!(cookies);
    }
    ev
}
