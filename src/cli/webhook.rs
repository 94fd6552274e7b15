//! `hermes-zero webhook list|test <route>` (docs/cli.md#webhook-routes): each configured webhook
//! route's URL, and a signed sample delivery sent to a running server — signed with Hermes'
//! generic V2 scheme (`X-Webhook-Signature-V2` over `"<timestamp>.<body>"`, a fresh
//! `X-Request-ID`), so it passes the same checks as a real sender's.

use crate::config::Loaded;
use crate::core::webhook::sign_generic_v2;
use clap::Subcommand;
use secrecy::ExposeSecret;
use std::process::ExitCode;

/// `webhook` sub-commands.
#[derive(Debug, Subcommand)]
pub enum WebhookCmd {
    /// Each route with its URL, events and target.
    List {
        /// The server's public base URL.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
    },
    /// Sends a signed sample delivery to a running server; prints its answer.
    Test {
        /// The route's name.
        route: String,
        /// The server's base URL.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// The sample's JSON payload.
        #[arg(long, default_value = r#"{"event_type":"test","message":"Hello from hermes-zero webhook test"}"#)]
        payload: String,
    },
}

/// The URL of route `name` under `base` (with the profile's `/p/<name>` prefix unless main).
fn route_url(cfg: &Loaded, base: &str, name: &str) -> String {
    let base = base.trim_end_matches('/');
    if cfg.profile.is_main() { format!("{base}/webhooks/{name}") } else { format!("{base}/p/{}/webhooks/{name}", cfg.profile) }
}

/// Runs one `webhook` sub-command: 0 done, 1 the server refused or could not be reached,
/// 2 an unknown route or a payload that is not JSON.
pub async fn run(cfg: &Loaded, cmd: WebhookCmd) -> anyhow::Result<ExitCode> {
    match cmd {
        WebhookCmd::List { url } => {
            if cfg.webhooks.routes.is_empty() {
                println!("no webhook routes (platforms.webhook.extra.routes in config.yaml)");
            }
            for (name, r) in &cfg.webhooks.routes {
                let events = if r.events.is_empty() { "all events".to_string() } else { r.events.join(",") };
                let mode = if r.deliver_only { " (deliver_only)" } else { "" };
                println!("{name}\t{}\t{events}\tdeliver: {}{mode}", route_url(cfg, &url, name), r.deliver);
            }
            Ok(ExitCode::SUCCESS)
        }
        WebhookCmd::Test { route, url, payload } => {
            let Some(r) = cfg.webhooks.routes.get(&route) else {
                eprintln!("hermes-zero: no webhook route `{route}` (see `hermes-zero webhook list`)");
                return Ok(ExitCode::from(2));
            };
            if serde_json::from_str::<serde_json::Value>(&payload).is_err() {
                eprintln!("hermes-zero: --payload is not JSON");
                return Ok(ExitCode::from(2));
            }
            // The server's clock (a test shift included), so the timestamp is inside its window.
            let now = crate::runtime::clock(cfg).now();
            let ts = now.timestamp().to_string();
            let sig = sign_generic_v2(r.secret.expose_secret(), &ts, payload.as_bytes());
            let id = format!("hz-test-{}", now.timestamp_millis());
            let resp = crate::clients::client_builder()
                .timeout(std::time::Duration::from_secs(30))
                .build()?
                .post(route_url(cfg, &url, &route))
                .header("content-type", "application/json")
                .header("X-Webhook-Timestamp", &ts)
                .header("X-Webhook-Signature-V2", sig)
                .header("X-Request-ID", &id)
                .body(payload)
                .send()
                .await;
            match resp {
                Ok(resp) => {
                    let status = resp.status();
                    println!("{} {}", status.as_u16(), resp.text().await.unwrap_or_default());
                    Ok(if status.is_success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
                }
                Err(e) => {
                    eprintln!("hermes-zero: cannot reach {url}: {e}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}
