//! Outbound URL checks: a webhook may not point the server at itself or its private network
//! (server-side request forgery) unless `[webhooks] allow_private` says so. A URL is checked
//! when the webhook is created ([`check`]), and its host's addresses again at every connection
//! ([`PublicOnly`], the delivery client's resolver), so a name re-pointed at an internal address
//! after the check (DNS rebinding) is refused too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a URL is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("'{url}' is not an absolute http or https URL")]
    Invalid { url: String },
    #[error("the host of '{url}' does not resolve: {reason}")]
    Unresolved { url: String, reason: String },
    #[error(
        "'{url}' reaches {addr}, a loopback, private or link-local address: set \
         [webhooks] allow_private = true to deliver there"
    )]
    Private { url: String, addr: IpAddr },
}

/// Checks a webhook's URL: http or https with a host whose every address is public (unless
/// `allow_private`). Returns the parsed URL.
pub(crate) async fn check(url: &str, allow_private: bool) -> Result<Url, UrlError> {
    let invalid = || UrlError::Invalid {
        url: url.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "http" | "https") || !parsed.username().is_empty() {
        return Err(invalid());
    }
    let host = parsed.host_str().ok_or_else(invalid)?.to_owned();
    let port = parsed.port_or_known_default().ok_or_else(invalid)?;
    if allow_private {
        return Ok(parsed);
    }
    // `[::1]` comes bracketed out of the URL.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|error| UrlError::Unresolved {
                url: url.to_owned(),
                reason: error.to_string(),
            })?
            .collect(),
    };
    match addrs.iter().find(|addr| !is_public(addr.ip())) {
        Some(addr) => Err(UrlError::Private {
            url: url.to_owned(),
            addr: addr.ip(),
        }),
        None => Ok(parsed),
    }
}

/// At delivery: refuses a URL whose host is a literal address that is not public (unless
/// `allow_private`); a host name is left to [`PublicOnly`], which checks what it resolves to.
pub(crate) fn check_literal(url: &str, allow_private: bool) -> Result<(), UrlError> {
    if allow_private {
        return Ok(());
    }
    let parsed = Url::parse(url).map_err(|_| UrlError::Invalid {
        url: url.to_owned(),
    })?;
    let host = parsed.host_str().unwrap_or_default();
    let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return Ok(());
    };
    match is_public(ip) {
        true => Ok(()),
        false => Err(UrlError::Private {
            url: url.to_owned(),
            addr: ip,
        }),
    }
}

/// Whether a delivery may connect to `ip`: not loopback, private (RFC 1918, unique-local),
/// link-local, shared (CGNAT), unspecified, broadcast, multicast or documentation, and
/// IPv4-mapped addresses judged as the IPv4 address they carry.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => is_public_v4(mapped),
            None => is_public_v6(ip),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        // 0.0.0.0/8 ("this network") and 100.64.0.0/10 (shared address space).
        || a == 0
        || (a == 100 && (b & 0xc0) == 64))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // fc00::/7 unique-local, fe80::/10 link-local.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80)
}

/// The delivery client's resolver: the system's, keeping only public addresses, and failing a
/// name that has none (so the connection is never made to an internal one).
#[derive(Debug)]
pub(crate) struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| is_public(addr.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no public address").into());
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_public(ip: &str, expect: bool) {
        assert_eq!(is_public(ip.parse().unwrap()), expect, "{ip}");
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            check_public(ip, false);
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            check_public(ip, true);
        }
    }

    #[tokio::test]
    async fn urls_are_checked_by_scheme_and_address() {
        assert!(matches!(
            check("ftp://example.com/", false).await,
            Err(UrlError::Invalid { .. })
        ));
        assert!(matches!(
            check("http://127.0.0.1:9/hook", false).await,
            Err(UrlError::Private { .. })
        ));
        assert!(matches!(
            check("http://[::1]:9/hook", false).await,
            Err(UrlError::Private { .. })
        ));
        assert!(matches!(
            check("http://localhost:9/hook", false).await,
            Err(UrlError::Private { .. })
        ));
        assert!(check("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check("https://1.1.1.1/hook", false).await.is_ok());
    }
}
