//! Outbound clients (adapters of the `Llm` and `Timers` ports; chat platforms are `channels`). Each is built once at
//! startup, has timeouts, and classifies failures once (retryable / permanent /
//! unauthorized / rate-limited with retry-after).

#[cfg(feature = "aws")]
pub mod eventbridge;
pub mod jwks;
pub mod llm;
pub mod mcp;
pub mod nas;
pub mod stt;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Makes ring the process's rustls crypto provider (docs/design.md#tls-roots). The binary
/// calls it first thing; [`tls_config`] names ring explicitly anyway, so this only matters
/// for a client built without it (a fallback `reqwest::Client::new()`, a library's own
/// client), which would otherwise panic: reqwest is built without a provider of its own.
/// Calling it again is harmless.
pub fn install_crypto_provider() {
    let _already = rustls::crypto::ring::default_provider().install_default();
}

/// The AWS SDK's loader with its HTTPS client on rustls + ring, the crypto every other client
/// uses, instead of the SDK default's aws-lc (one crypto library in the Lambda build;
/// docs/design.md#tls-roots). The SDK's own client reads the system roots, as its default does.
#[cfg(feature = "aws")]
pub fn aws_sdk_loader() -> aws_config::ConfigLoader {
    aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(aws_sdk_http_client())
}

/// The AWS SDK's HTTPS client on rustls + ring ([`aws_sdk_loader`]), for a client configured
/// by hand (tests against a local server).
#[cfg(feature = "aws")]
pub fn aws_sdk_http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https()
}

/// The process's one TLS client configuration, built on first use: the Mozilla root
/// certificates compiled into the binary (`webpki-roots`, what Hermes gets from certifi),
/// plus the PEM certificates of `SSL_CERT_FILE` when that is set (a private CA, a corporate
/// proxy). Nothing is read from the system store, which cost ~50 ms per client at start
/// (docs/design.md#tls-roots).
pub fn tls_config() -> rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            if let Some(file) = std::env::var_os("SSL_CERT_FILE") {
                use rustls::pki_types::{CertificateDer, pem::PemObject};
                match CertificateDer::pem_file_iter(&file) {
                    Ok(certs) => {
                        let (added, skipped) = roots.add_parsable_certificates(certs.flatten());
                        tracing::debug!(added, skipped, "SSL_CERT_FILE certificates trusted");
                    }
                    Err(e) => tracing::warn!(error = %e, "SSL_CERT_FILE could not be read; using the built-in roots only"),
                }
            }
            install_crypto_provider();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth())
                .unwrap_or_else(|_| {
                    rustls::ClientConfig::builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
                })
        })
        .clone()
}

/// A client builder on the shared TLS configuration ([`tls_config`]).
pub fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(tls_config())
}

/// A shared HTTP client with a total-request timeout. rustls only.
pub fn http_client(timeout: Duration) -> reqwest::Client {
    client_builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("hermes-zero/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Seconds from a `Retry-After` header (delta-seconds form), capped at `cap`.
pub fn retry_after(headers: &reqwest::header::HeaderMap, cap: u64) -> Option<u64> {
    headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<f64>().ok().map(|s| (s.ceil().max(0.0) as u64).min(cap))
}

/// Classifies a platform call that got no HTTP answer (docs/design.md#delivery). A connection
/// that was never made is `Retryable`: nothing reached the platform. Anything else (a timeout
/// after the request went out, a connection cut before the answer) is `Unknown`: the platform
/// may have taken the message, so it is never sent again.
pub fn send_failure(e: reqwest::Error) -> crate::ports::DeliveryError {
    use crate::ports::DeliveryError;
    if e.is_connect() { DeliveryError::Retryable(describe(e)) } else { DeliveryError::Unknown(describe(e)) }
}

/// Describes a transport error without its URL (URLs can carry tokens, e.g. Telegram's).
pub fn describe(e: reqwest::Error) -> String {
    let timeout = e.is_timeout();
    let e = e.without_url();
    if timeout { format!("timed out ({e})") } else { e.to_string() }
}
