//! A proxy in front of moto that forwards one request at a time and counts them: moto's
//! transactions are not atomic against concurrent ones (DynamoDB's are), so it is made
//! linearizable the way DynamoDB is; the count says how many AWS requests a process made.

use crate::common::spawn_server;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The proxy's base URL and the requests it has forwarded so far.
pub struct MotoProxy {
    pub url: String,
    requests: Arc<AtomicUsize>,
}

impl MotoProxy {
    /// Requests forwarded so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Starts the proxy to `upstream` (moto's base URL) on 127.0.0.1:0.
pub async fn linearized(upstream: String) -> MotoProxy {
    let gate = Arc::new(tokio::sync::Mutex::new(hermes_zero::clients::client_builder().build().unwrap()));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (gate, upstream, counted) = (gate.clone(), upstream.clone(), counted.clone());
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
            let client = gate.lock().await;
            let mut r = client.request(parts.method, format!("{upstream}{path}")).body(body);
            for (k, v) in &parts.headers {
                if k != axum::http::header::HOST && k != axum::http::header::CONTENT_LENGTH {
                    r = r.header(k, v);
                }
            }
            let resp = r.send().await.unwrap();
            let mut out = axum::response::Response::builder().status(resp.status());
            for (k, v) in resp.headers() {
                if k != axum::http::header::CONTENT_LENGTH && k != axum::http::header::TRANSFER_ENCODING {
                    out = out.header(k, v);
                }
            }
            let bytes = resp.bytes().await.unwrap();
            drop(client);
            out.body(axum::body::Body::from(bytes)).unwrap()
        }
    });
    MotoProxy { url: spawn_server(app).await, requests }
}
