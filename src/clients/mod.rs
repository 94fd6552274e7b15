//! Outbound clients (adapters of the `Llm` and `Timers` ports; chat platforms are `channels`). Each is built once at
//! startup, has timeouts, and classifies failures once (retryable / permanent /
//! unauthorized / rate-limited with retry-after).

#[cfg(feature = "aws")]
pub mod eventbridge;
pub mod fetch;
pub mod jwks;
pub mod llm;
pub mod mcp;
pub mod nas;
pub mod script;
pub mod speech;
pub mod stt;
pub mod web;

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
/// (docs/design.md#tls-roots). The root store itself is built at the first certificate to
/// verify, not when the clients are built at start: parsing a system bundle named by
/// `SSL_CERT_FILE` (220 KB on Debian) was two thirds of `serve`'s start-up instructions.
pub fn tls_config() -> rustls::ClientConfig {
    static CONFIG: OnceLock<rustls::ClientConfig> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            install_crypto_provider();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let verifier = Arc::new(LazyRoots { provider: provider.clone(), verifier: OnceLock::new() });
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
                .unwrap_or_else(|_| {
                    rustls::ClientConfig::builder().with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
                })
        })
        .clone()
}

/// The trusted roots of [`tls_config`]: webpki-roots plus `SSL_CERT_FILE`.
fn trusted_roots() -> rustls::RootCertStore {
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
    roots
}

/// rustls' own WebPKI verifier over [`trusted_roots`], built when the first server
/// certificate is verified. Every check is the WebPKI verifier's: the certificate chain and
/// name through it, the handshake signatures with the same provider's algorithms (they need
/// no roots). If the verifier cannot be built, every certificate is refused.
#[derive(Debug)]
struct LazyRoots {
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: OnceLock<Result<Arc<rustls::client::WebPkiServerVerifier>, String>>,
}

impl LazyRoots {
    fn verifier(&self) -> Result<&Arc<rustls::client::WebPkiServerVerifier>, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(trusted_roots()), self.provider.clone())
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| rustls::Error::General(format!("no TLS roots: {e}")))
    }
}

impl rustls::client::danger::ServerCertVerifier for LazyRoots {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
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

#[cfg(test)]
mod tls_tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;

    fn lazy() -> LazyRoots {
        LazyRoots { provider: Arc::new(rustls::crypto::ring::default_provider()), verifier: OnceLock::new() }
    }

    /// Building the configuration and offering the signature schemes (every ClientHello)
    /// reads no roots; the first certificate to verify builds them once.
    #[test]
    fn roots_are_built_at_the_first_verification_only() {
        let v = lazy();
        assert!(!v.supported_verify_schemes().is_empty());
        assert!(v.verifier.get().is_none(), "roots were built before any certificate was verified");
        let name = rustls::pki_types::ServerName::try_from("example.com").unwrap();
        let junk = rustls::pki_types::CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let r = v.verify_server_cert(&junk, &[], &name, &[], rustls::pki_types::UnixTime::now());
        assert!(r.is_err(), "a certificate that is not one must be refused");
        assert!(matches!(v.verifier.get(), Some(Ok(_))), "the first verification builds the WebPKI verifier");
    }

    /// The shared configuration verifies with that lazy verifier and the ring provider.
    #[test]
    fn the_shared_configuration_offers_the_providers_schemes() {
        let cfg = tls_config();
        let ring = rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes();
        assert_eq!(cfg.crypto_provider().signature_verification_algorithms.supported_schemes(), ring);
    }
}
