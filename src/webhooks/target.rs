//! Where webhooks may not go: link-local addresses (169.254.0.0/16, fe80::/10) — cloud metadata
//! services live there — and the AWS IPv6 metadata address fd00:ec2::254, unless the operator allows
//! them (`SVC_WEBHOOK_ALLOW_LINK_LOCAL=true`). Checked when a URL is saved (IP literals) and before each
//! delivery (the resolved addresses). Redirects are never followed, so a receiver cannot bounce there.

use std::net::{IpAddr, Ipv6Addr};

const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

pub fn blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6 == AWS_METADATA_V6
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_link_local())
        }
    }
}

pub const REFUSED: &str =
    "link-local and cloud metadata addresses are refused (SVC_WEBHOOK_ALLOW_LINK_LOCAL=true allows them)";

/// The URL's host when it is an IP literal.
fn literal(url: &reqwest::Url) -> Option<IpAddr> {
    url.host_str()?.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// A URL whose host is a blocked IP literal (checked when a webhook is saved).
pub fn literal_blocked(url: &str) -> bool {
    reqwest::Url::parse(url).ok().and_then(|u| literal(&u)).is_some_and(blocked)
}

/// Resolves the URL's host and refuses it when any address is blocked.
pub async fn check(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    if let Some(ip) = literal(&parsed) {
        return if blocked(ip) { Err(format!("Refused: {REFUSED}")) } else { Ok(()) };
    }
    let host = parsed.host_str().unwrap_or_default().to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addrs = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("Network error: cannot resolve {host}: {e}"))?;
    for addr in addrs {
        if blocked(addr.ip()) {
            return Err(format!("Refused: {host} resolves to {}; {REFUSED}", addr.ip()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_ranges() {
        for ip in ["169.254.169.254", "169.254.0.1", "fe80::1", "fd00:ec2::254", "::ffff:169.254.169.254"] {
            assert!(blocked(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["127.0.0.1", "10.0.0.1", "192.168.1.2", "::1", "fd00:ec2::253", "8.8.8.8"] {
            assert!(!blocked(ip.parse().unwrap()), "{ip}");
        }
        assert!(literal_blocked("http://169.254.169.254/latest/meta-data"));
        assert!(literal_blocked("http://[fd00:ec2::254]/"));
        assert!(!literal_blocked("http://localhost/x"));
    }
}
