//! The fetcher port: what the web tools (`web_fetch`, later `web_search`/`web_extract`) need
//! from the network (docs/design.md#web-fetch). [`Resolve`] turns a host name into its
//! addresses once; [`Fetcher`] sends one GET that connects only to the addresses it is given
//! (the SSRF rules pin them), follows no redirect and uses no proxy, and hands back the status,
//! the headers and the body as a stream of chunks, so the caller can stop at a byte cap.
//!
//! The SSRF rules themselves (which addresses may be dialed) are the app's, pure; the adapters
//! (`clients::fetch`) own the HTTP client and the system resolver. Knows no HTTP library.

use async_trait::async_trait;
use std::net::SocketAddr;
use url::Url;

/// Resolves host names. The system resolver in production; tests map names to the addresses
/// they choose (and may change them between calls).
#[async_trait]
pub trait Resolve: Send + Sync {
    /// Every address `host` resolves to, with `port` set.
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>>;
}

/// The addresses a request's host name is pinned to: the request connects to these and
/// never resolves `host` itself (an IP literal needs no pin).
#[derive(Debug, Clone, Copy)]
pub struct Pin<'a> {
    /// The host name as the URL spells it.
    pub host: &'a str,
    /// The only addresses the connection may go to.
    pub addrs: &'a [SocketAddr],
}

/// One GET at a time, to pinned addresses.
#[async_trait]
pub trait Fetcher: Send + Sync {
    /// Sends `GET url`: with `pin`, the connection goes only to its addresses; no redirect is
    /// followed (a 3xx comes back as it is) and no proxy is used (a proxy would resolve the
    /// name again). Returns once the status and headers are in; the body is read from the
    /// answer.
    async fn get(&self, url: &Url, pin: Option<Pin<'_>>) -> Result<FetchResponse, FetchError>;
}

/// An answer whose body has not been read yet.
pub struct FetchResponse {
    /// The status code (`404`).
    pub status: u16,
    /// The status as people read it: the code and its canonical reason (`404 Not Found`).
    pub status_text: String,
    /// The headers in order, names lowercase; a value that is not visible ASCII text is `None`.
    pub headers: Vec<(String, Option<String>)>,
    /// The body, read on demand; dropping it closes the connection.
    pub body: Box<dyn FetchBody>,
}

impl FetchResponse {
    /// The first value of header `name` (any case), if it is there and readable as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).and_then(|(_, v)| v.as_deref())
    }

    /// Whether header `name` (any case) is present, readable or not.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// A response body, read chunk by chunk as it arrives.
#[async_trait]
pub trait FetchBody: Send {
    /// The next chunk, `None` at the end.
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError>;

    /// Reads the body up to `max` bytes and stops there (the rest is never downloaded);
    /// whether more was left unread.
    async fn read_capped(&mut self, max: usize) -> Result<(Vec<u8>, bool), FetchError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            let room = max - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                return Ok((body, true));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, false))
    }
}

/// Why a request or the reading of its body failed; the text after the kind is the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The HTTP client for this request could not be built (nothing was sent).
    #[error("could not set up the HTTP client: {0}")]
    Setup(String),
    /// The server did not answer in time.
    #[error("timed out ({0})")]
    TimedOut(String),
    /// No connection could be made.
    #[error("could not connect ({0})")]
    Connect(String),
    /// Anything else on the way (a reset connection, a bad answer).
    #[error("failed ({0})")]
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body served from fixed chunks.
    struct Chunks(Vec<Vec<u8>>);

    #[async_trait]
    impl FetchBody for Chunks {
        async fn chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError> {
            Ok(if self.0.is_empty() { None } else { Some(self.0.remove(0)) })
        }
    }

    #[tokio::test]
    async fn read_capped_stops_at_the_cap_and_says_so() {
        let mut b = Chunks(vec![b"abc".to_vec(), b"defg".to_vec(), b"h".to_vec()]);
        assert_eq!(b.read_capped(5).await.unwrap(), (b"abcde".to_vec(), true));
        assert_eq!(b.0, [b"h".to_vec()], "the chunk after the cap is never read");
        let mut b = Chunks(vec![b"abc".to_vec(), b"de".to_vec()]);
        assert_eq!(b.read_capped(5).await.unwrap(), (b"abcde".to_vec(), false));
    }

    #[test]
    fn headers_are_found_in_any_case_and_unreadable_values_are_present_but_not_text() {
        let r = FetchResponse {
            status: 302,
            status_text: "302 Found".into(),
            headers: vec![("location".into(), None), ("content-type".into(), Some("text/html".into()))],
            body: Box::new(Chunks(Vec::new())),
        };
        assert_eq!(r.header("Content-Type"), Some("text/html"));
        assert!(r.has_header("LOCATION") && r.header("location").is_none());
        assert!(!r.has_header("etag"));
    }
}
