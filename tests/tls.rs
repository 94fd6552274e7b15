//! Outbound TLS (docs/design.md#tls-roots): every client shares one rustls configuration with
//! the compiled-in Mozilla roots plus `SSL_CERT_FILE`. Against a local HTTPS model (a private
//! CA made with the `openssl` CLI, a stdlib Python server), the gateway answers when
//! `SSL_CERT_FILE` names that CA, and refuses the unknown certificate without it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A private CA and a server certificate for 127.0.0.1 signed by it.
fn make_certs(dir: &Path) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "3",
        "-subj",
        "/CN=hz test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    run(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1"]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

const SERVER: &str = r#"
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok over tls"}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("srv.pem", "srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn https_model(dir: &Path, port: u16) -> Server {
    use std::io::BufRead;
    let mut child = Command::new("python3")
        .args(["-c", SERVER, &port.to_string()])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    Server(child)
}

#[tokio::test]
async fn the_model_is_reached_over_tls_with_ssl_cert_file_and_refused_without() {
    let home = TempHome::new("tls");
    let certs = home.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    make_certs(&certs);
    let port = free_port();
    let _server = https_model(&certs, port);
    home.write(
        "config.yaml",
        &format!("model:\n  provider: openai\n  base_url: https://127.0.0.1:{port}/v1\n  name: m\n  timeout_seconds: 10\nagent:\n  api_max_retries: 0\n"),
    );
    let ca = certs.join("ca.pem");
    let trusted = Gateway::start(home.path(), &[("SSL_CERT_FILE", ca.to_str().unwrap())]);
    let (s, v) = trusted.post_message(json!({"chat_id": "c1", "user_id": "u1", "text": "hello"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["reply"], "ok over tls", "{v}");
    drop(trusted);

    // The same server without its CA: the built-in roots do not know it, so no answer.
    let untrusted = Gateway::start(home.path(), &[]);
    let (s, v) = tokio::time::timeout(
        Duration::from_secs(60),
        untrusted.post_message(json!({"chat_id": "c2", "user_id": "u1", "text": "hello", "message_id": "m2"})),
    )
    .await
    .expect("bounded");
    assert_ne!(v["reply"], "ok over tls", "{s} {v}");
    assert!(s >= 500 || v["reply"].as_str().is_some_and(|r| r.contains("couldn't reach the model")), "{s} {v}");
}
