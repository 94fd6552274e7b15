//! The SSRF rules of `web_fetch` (docs/design.md#web-fetch): which URLs may be fetched, how a
//! host name is resolved (the [`Resolve`] port, the system resolver outside tests) and which addresses
//! may be dialed. A URL is vetted into a [`Target`] whose addresses are the only ones the
//! request may connect to, so a name that resolves differently a moment later (DNS
//! rebinding) changes nothing.
//!
//! Must not know: HTTP, bodies or HTML.

use super::super::ToolError;
use crate::ports::Resolve;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use url::{Host, Url};

/// Host names of cloud metadata services: refused even with `tools.web.allow_private`.
const METADATA_HOSTS: [&str; 2] = ["metadata.google.internal", "metadata.goog"];

/// Cloud metadata / credential endpoints (AWS, GCP, Azure, ECS task credentials, Alibaba,
/// Azure's WireServer `168.63.129.16` — a public-range address — and EKS Pod Identity's
/// agent `169.254.170.23`): refused even with `tools.web.allow_private`, as in Hermes.
const METADATA_V4: [Ipv4Addr; 6] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(169, 254, 169, 253),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
    Ipv4Addr::new(169, 254, 170, 23),
];

/// AWS' IPv6 metadata endpoint `fd00:ec2::254` and EKS Pod Identity's `fd00:ec2::23`.
const METADATA_V6: [Ipv6Addr; 2] =
    [Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254), Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x23)];

/// Why an address may not be dialed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// A cloud metadata endpoint: always refused.
    Metadata,
    /// An internal class (loopback, private, link-local, …), named for the message; refused
    /// unless `tools.web.allow_private`.
    Internal(&'static str),
}

/// The class of `ip` that makes it unfit for an outbound fetch, `None` for a public address.
/// IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) addresses are
/// judged by the IPv4 address they carry; any other IPv6 address outside global unicast
/// (`2000::/3`) is refused.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    if METADATA_V4.contains(&ip) {
        return Some(Blocked::Metadata);
    }
    let [a, b, c, _] = ip.octets();
    let label = match (a, b, c) {
        (0, ..) => "unspecified",
        (127, ..) => "loopback",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "private",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared (CGNAT)",
        (192, 0, 0) => "IETF-reserved",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, ..) => "multicast",
        (240..=255, ..) => "reserved",
        _ => return None,
    };
    Some(Blocked::Internal(label))
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    if METADATA_V6.contains(&ip) {
        return Some(Blocked::Metadata);
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return classify_v4(embedded(s[1], s[2]));
    }
    let label = match s[0] {
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_loopback() => "loopback",
        x if x & 0xfe00 == 0xfc00 => "unique local",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xffc0 == 0xfec0 => "site-local",
        x if x & 0xff00 == 0xff00 => "multicast",
        0x2001 if s[1] == 0x0db8 => "documentation",
        0x2001 if s[1] < 0x0200 => "IETF-reserved",
        x if x & 0xe000 != 0x2000 => "not global unicast",
        _ => return None,
    };
    Some(Blocked::Internal(label))
}

/// Which addresses a fetch may dial.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// `tools.web.allow_private`: internal classes allowed (metadata endpoints never are).
    pub allow_private: bool,
    /// Test servers on 127.0.0.1 that stand in for public hosts (exact address and port).
    #[cfg(test)]
    pub pretend_public: Vec<SocketAddr>,
}

impl Policy {
    /// Whether `addr` may be dialed; the refusal says why, in Hermes' words.
    pub fn check(&self, host: &str, addr: SocketAddr) -> Result<(), ToolError> {
        #[cfg(test)]
        if self.pretend_public.contains(&addr) {
            return Ok(());
        }
        match classify(addr.ip()) {
            None => Ok(()),
            Some(Blocked::Internal(_)) if self.allow_private => Ok(()),
            Some(Blocked::Metadata) => {
                Err(ToolError::Failed(format!("Blocked: {host} is a cloud metadata endpoint ({}); web_fetch never fetches it", addr.ip())))
            }
            Some(Blocked::Internal(class)) => Err(ToolError::Failed(format!(
                "Blocked: URL targets a private or internal network address ({host} -> {}, {class}); \
set tools.web.allow_private: true to allow it",
                addr.ip()
            ))),
        }
    }
}

/// A vetted URL: the only addresses its request may connect to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The host name as the URL spells it (`None` for an IP literal, dialed as is).
    pub domain: Option<String>,
    /// The addresses checked against the policy, in resolver order.
    pub addrs: Vec<SocketAddr>,
}

/// Checks `url`'s scheme, resolves its host once and checks every address it resolves to:
/// one refused address refuses the URL (a name with a public and a private address is not
/// half-allowed).
pub async fn vet(url: &Url, policy: &Policy, dns: &dyn Resolve) -> Result<Target, ToolError> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(ToolError::BadArgs(format!("web_fetch fetches only http:// and https:// URLs, not {scheme}:")));
    }
    let Some(port) = url.port_or_known_default() else {
        return Err(ToolError::BadArgs(format!("{url} has no port")));
    };
    let (domain, addrs) = match url.host() {
        None => return Err(ToolError::BadArgs(format!("{url} has no host"))),
        Some(Host::Ipv4(ip)) => (None, vec![SocketAddr::new(IpAddr::V4(ip), port)]),
        Some(Host::Ipv6(ip)) => (None, vec![SocketAddr::new(IpAddr::V6(ip), port)]),
        Some(Host::Domain(d)) => {
            if METADATA_HOSTS.contains(&d.trim_end_matches('.').to_ascii_lowercase().as_str()) {
                return Err(ToolError::Failed(format!("Blocked: {d} is a cloud metadata endpoint; web_fetch never fetches it")));
            }
            let addrs = dns.lookup(d, port).await.map_err(|e| ToolError::Failed(format!("Could not resolve {d}: {e}")))?;
            if addrs.is_empty() {
                return Err(ToolError::Failed(format!("Could not resolve {d}: no addresses")));
            }
            (Some(d.to_string()), addrs)
        }
    };
    let host = url.host_str().unwrap_or_default();
    for addr in &addrs {
        policy.check(host, *addr)?;
    }
    Ok(Target { domain, addrs })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ip: &str) -> Option<Blocked> {
        classify(ip.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(class(ip), None, "{ip}");
        }
    }

    #[test]
    fn internal_addresses_are_refused_with_their_class() {
        let cases = [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.1.1", "link-local"),
            ("100.64.0.1", "shared (CGNAT)"),
            ("100.127.255.254", "shared (CGNAT)"),
            ("192.0.0.8", "IETF-reserved"),
            ("198.18.0.1", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "reserved"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fc00::1", "unique local"),
            ("fd12:3456::1", "unique local"),
            ("fe80::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001::1", "IETF-reserved"),
            ("::127.0.0.1", "not global unicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:192.168.0.1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
            ("2002:c0a8:101::1", "private"),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip), Some(Blocked::Internal(want)), "{ip}");
        }
    }

    #[test]
    fn metadata_endpoints_are_refused_even_when_private_is_allowed() {
        for ip in ["169.254.169.254", "169.254.170.2", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200"] {
            assert_eq!(class(ip), Some(Blocked::Metadata), "{ip}");
        }
        let open = Policy { allow_private: true, ..Policy::default() };
        assert!(open.check("x", "169.254.169.254:80".parse().unwrap()).is_err());
        // Azure WireServer (in a public range) and EKS Pod Identity, in every form.
        for addr in ["168.63.129.16:80", "169.254.170.23:80", "[fd00:ec2::23]:80", "[::ffff:168.63.129.16]:80", "[64:ff9b::a83f:8110]:80"] {
            assert!(open.check("x", addr.parse().unwrap()).is_err(), "{addr} with allow_private");
            assert!(Policy::default().check("x", addr.parse().unwrap()).unwrap_err().to_string().contains("metadata"), "{addr}");
        }
        assert!(open.check("x", "127.0.0.1:80".parse().unwrap()).is_ok());
        assert!(open.check("x", "[fe80::1]:80".parse().unwrap()).is_ok());
        let closed = Policy::default();
        let err = closed.check("evil.test", "127.0.0.1:80".parse().unwrap()).unwrap_err().to_string();
        assert!(err.contains("private or internal") && err.contains("tools.web.allow_private"), "{err}");
        assert!(closed.check("x", "93.184.216.34:443".parse().unwrap()).is_ok());
    }
}
