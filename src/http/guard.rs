//! Request guards that run before routing decisions: client IP, security headers, host allowlist, CSRF.

use std::net::IpAddr;

use salvo::http::{HeaderValue, Method, header};
use salvo::prelude::*;

use super::{CLIENT_IP, app};
use crate::config::{Config, Mode};
use crate::error::{AppError, ErrorBody, write_error};

/// Resolves the client IP: the socket peer, or — when the peer is a trusted proxy — the right-most
/// `X-Forwarded-For` entry that is not a trusted proxy, else `X-Real-IP`, else the peer.
pub fn resolve_client_ip(peer: IpAddr, xff: Option<&str>, real_ip: Option<&str>, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    if let Some(ip) = xff.and_then(|xff| {
        xff.rsplit(',').filter_map(|s| s.trim().parse::<IpAddr>().ok()).find(|ip| !trusted.contains(ip))
    }) {
        return ip;
    }
    real_ip.and_then(|s| s.trim().parse().ok()).unwrap_or(peer)
}

#[handler]
pub async fn client_ip_hoop(req: &mut Request, depot: &mut Depot) {
    let peer = req.remote_addr().ip().unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let trusted = app(depot).map(|s| s.config.trusted_proxies.clone()).unwrap_or_default();
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let ip = resolve_client_ip(peer, header("x-forwarded-for"), header("x-real-ip"), &trusted);
    depot.insert(CLIENT_IP, ip);
}

#[handler]
pub async fn security_headers(res: &mut Response) {
    let headers = res.headers_mut();
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("strict-origin-when-cross-origin"));
}

/// The host part of a `Host` header value (port and IPv6 brackets removed), lower-cased.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_string();
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name.to_string(),
        _ => host,
    }
}

/// Exact names, `*.domain` (subdomains only, not the bare domain) and prefix wildcards such as `100.*`.
pub fn host_allowed(host: &str, patterns: &[String]) -> bool {
    let host = host_name(host);
    patterns.iter().any(|p| {
        if let Some(domain) = p.strip_prefix("*.") {
            host.len() > domain.len() + 1 && host.ends_with(domain) && host[..host.len() - domain.len()].ends_with('.')
        } else if let Some(prefix) = p.strip_suffix('*') {
            host.starts_with(prefix)
        } else {
            host == *p
        }
    })
}

fn host_check_applies(config: &Config) -> bool {
    config.mode == Mode::Production && !config.allow_any_host
}

#[handler]
pub async fn host_allowlist(req: &mut Request, depot: &mut Depot, res: &mut Response, ctrl: &mut FlowCtrl) {
    let Ok(state) = app(depot) else { return };
    if !host_check_applies(&state.config) {
        return;
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().host().map(str::to_string))
        .unwrap_or_default();
    if !host_allowed(&host, &state.config.allowed_hosts) {
        let body = ErrorBody {
            error: "Host not allowed".into(),
            details: Some(vec![format!(
                "add '{}' to SVC_ALLOWED_HOSTS, or set SVC_ALLOW_ANY_HOST=true",
                host_name(&host)
            )]),
        };
        write_error(res, StatusCode::FORBIDDEN, &body);
        ctrl.skip_rest();
    }
}

/// The `host[:port]` of an Origin header value such as `https://example.com:8443`.
fn origin_authority(origin: &str) -> Option<String> {
    let rest = origin.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    (!authority.is_empty()).then(|| authority.to_ascii_lowercase())
}

/// A write that carries an `Origin` whose host:port differs from `Host` is refused, unless it carries
/// the API key. Runs after authentication so it knows how the request authenticated.
pub fn check_csrf(req: &Request, via_api_key: bool) -> Result<(), AppError> {
    let is_write = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if !is_write || via_api_key {
        return Ok(());
    }
    let Some(origin) = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return Ok(());
    };
    let host = req.headers().get(header::HOST).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase);
    match (origin_authority(origin), host) {
        (Some(o), Some(h)) if o == h => Ok(()),
        _ => Err(AppError::Forbidden("CSRF origin mismatch".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pats(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn host_patterns() {
        let p = pats(&["localhost", "127.0.0.1", "*.example.com", "100.*"]);
        assert!(host_allowed("localhost:3005", &p));
        assert!(host_allowed("LOCALHOST", &p));
        assert!(host_allowed("127.0.0.1:80", &p));
        assert!(host_allowed("a.example.com", &p));
        assert!(host_allowed("a.b.example.com:443", &p));
        assert!(!host_allowed("example.com", &p), "the bare domain is not a subdomain");
        assert!(!host_allowed("badexample.com", &p));
        assert!(host_allowed("100.64.1.2:3005", &p));
        assert!(!host_allowed("10.0.0.1", &p));
        assert!(!host_allowed("", &p));
        assert!(host_allowed("[::1]:3005", &pats(&["::1"])));
    }

    #[test]
    fn client_ip_honours_only_trusted_proxies() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let peer: IpAddr = "192.0.2.9".parse().unwrap();
        let t = [proxy];
        assert_eq!(resolve_client_ip(peer, Some("1.2.3.4"), None, &t), peer, "untrusted peer: headers ignored");
        assert_eq!(
            resolve_client_ip(proxy, Some("6.6.6.6, 1.2.3.4, 10.0.0.1"), None, &t),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(resolve_client_ip(proxy, None, Some("5.5.5.5"), &t), "5.5.5.5".parse::<IpAddr>().unwrap());
        assert_eq!(resolve_client_ip(proxy, Some("garbage"), None, &t), proxy);
    }

    #[test]
    fn origin_authority_parsing() {
        assert_eq!(origin_authority("http://localhost:3005").as_deref(), Some("localhost:3005"));
        assert_eq!(origin_authority("https://Example.com/path").as_deref(), Some("example.com"));
        assert_eq!(origin_authority("null"), None);
    }
}
