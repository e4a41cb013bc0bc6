//! The outbound address policy: where the server may be made to connect by something it did
//! not choose itself — a webhook's or an A2A push config's URL (a client's), a remote agent's
//! card and the endpoint the card names. One policy for all of them, so that no route is
//! looser than another (server-side request forgery).
//!
//! An address is public when it is in no block of the IANA IPv4 and IPv6 Special-Purpose
//! Address Registries whose "Globally Reachable" column is false, is unicast, and is not one
//! of the forms that carry an IPv4 address inside an IPv6 one (which a dual-stack socket,
//! a tunnel or a translator would take to the IPv4 address). IPv6 outside the global unicast
//! space `2000::/3` is refused whole (that also covers the deprecated site-local `fec0::/10`,
//! IPv4-compatible `::/96`, IPv4-translated `::ffff:0:0:0/96` and IPv4-mapped
//! `::ffff:0:0/96`), except the NAT64 prefix `64:ff9b::/96`, judged as the IPv4 address it
//! embeds: on an IPv6-only network DNS64 answers public IPv4 hosts with it.
//!
//! A URL is checked when it is given ([`check_url`]: every address its host resolves to), and
//! again at every connection: [`PublicOnly`] is the HTTP client's resolver, so a name
//! re-pointed at an internal address after the check (DNS rebinding) is refused too, and
//! [`check_literal`] refuses a literal address (which no resolver sees) before a request.
//! `allow_private` turns all of it off, for receivers on the same host or network.
//!
//! Left out: what a URL may look like beyond its scheme and host (its length is the caller's
//! rule).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The most redirects [`redirect_policy`] follows.
const MAX_REDIRECTS: usize = 10;

/// Why a URL may not be connected to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// Not an absolute http or https URL without credentials.
    #[error("'{url}' is not an absolute http or https URL")]
    Invalid {
        /// The URL as given.
        url: String,
    },
    /// Its host name does not resolve.
    #[error("the host of '{url}' does not resolve: {reason}")]
    Unresolved {
        /// The URL as given.
        url: String,
        /// The resolver's error.
        reason: String,
    },
    /// Its host is, or resolves to, an address that is not public.
    #[error("'{url}' reaches {addr}, which is not a public address ({block})")]
    NotPublic {
        /// The URL as given.
        url: String,
        /// The address refused.
        addr: IpAddr,
        /// The block it is in, as the IANA registry names it.
        block: &'static str,
    },
    /// At a connection: the host resolved to no public address ([`PublicOnly`]).
    #[error("{host} has no public address")]
    NoPublicAddress {
        /// The host name.
        host: String,
    },
}

impl AddressError {
    /// The policy's refusal in `error`'s chain of causes (an HTTP client's error whose
    /// connection [`PublicOnly`] or [`redirect_policy`] refused), if there is one.
    pub fn in_chain<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Self> {
        let mut cause = Some(error);
        while let Some(error) = cause {
            if let Some(refused) = error.downcast_ref::<Self>() {
                return Some(refused);
            }
            cause = error.source();
        }
        None
    }
}

/// The name of the block that makes `ip` not public (see the module docs), or `None` when it
/// is public.
///
/// ```
/// use agentwire_tools::address::refusal;
///
/// assert_eq!(refusal("64:ff9b::a9fe:a9fe".parse().unwrap()), Some("link-local"));
/// assert_eq!(refusal("1.1.1.1".parse().unwrap()), None);
/// ```
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => refusal_v4(ip),
        IpAddr::V6(ip) => refusal_v6(ip),
    }
}

/// Whether a connection to `ip` is allowed: [`refusal`] finds nothing.
pub fn is_public(ip: IpAddr) -> bool {
    refusal(ip).is_none()
}

/// Checks a URL given to the server: http or https, no credentials, and (unless
/// `allow_private`) a host whose every address is public. Returns the parsed URL, whose host
/// the WHATWG parser has normalised (`http://2130706433/`, `0x7f.1` and `0177.0.0.1` are all
/// `127.0.0.1`).
pub async fn check_url(url: &str, allow_private: bool) -> Result<Url, AddressError> {
    let invalid = || AddressError::Invalid {
        url: url.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "http" | "https")
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(invalid());
    }
    let port = parsed.port_or_known_default().ok_or_else(invalid)?;
    if allow_private {
        return Ok(parsed);
    }
    let host = parsed.host_str().ok_or_else(invalid)?;
    let addrs: Vec<SocketAddr> = match literal(host) {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::net::lookup_host((host, port))
            .await
            .map_err(|error| AddressError::Unresolved {
                url: url.to_owned(),
                reason: error.to_string(),
            })?
            .collect(),
    };
    for addr in addrs {
        refuse(url, addr.ip())?;
    }
    Ok(parsed)
}

/// Before a request: refuses a URL whose host is a literal address that is not public
/// (unless `allow_private`). A host name is left to [`PublicOnly`], which checks what it
/// resolves to.
pub fn check_literal(url: &Url, allow_private: bool) -> Result<(), AddressError> {
    match url.host_str().and_then(literal) {
        Some(ip) if !allow_private => refuse(url.as_str(), ip),
        _ => Ok(()),
    }
}

/// Follows up to ten redirects, each to a URL [`check_literal`] allows (a host name's
/// addresses are [`PublicOnly`]'s). reqwest drops `Authorization` on a redirect to another
/// host or port, so a key never follows one there.
pub fn redirect_policy(allow_private: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error("too many redirects");
        }
        match check_literal(attempt.url(), allow_private) {
            Ok(()) => attempt.follow(),
            Err(error) => attempt.error(error),
        }
    })
}

/// An HTTP client's resolver: the system's, keeping only public addresses, and failing a name
/// that has none (so no connection is made to an internal one).
#[derive(Clone, Copy, Debug, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| is_public(addr.ip()))
                .collect();
            if addrs.is_empty() {
                return Err(Box::new(AddressError::NoPublicAddress { host }) as _);
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// `builder` held to the policy (unless `allow_private`): [`PublicOnly`] resolves, no proxy
/// hides the address. Redirects are the caller's choice ([`redirect_policy`], or none).
pub fn guarded(builder: reqwest::ClientBuilder, allow_private: bool) -> reqwest::ClientBuilder {
    match allow_private {
        true => builder,
        false => builder.no_proxy().dns_resolver(PublicOnly),
    }
}

/// The IPv4 special-purpose blocks that are not globally reachable, plus multicast
/// (`224.0.0.0/4`, not unicast), most specific first where they nest.
const V4_BLOCKS: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\""),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private-use"),
    (Ipv4Addr::new(100, 64, 0, 0), 10, "shared address space"),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private-use"),
    (Ipv4Addr::new(192, 0, 0, 0), 24, "IETF protocol assignments"),
    (
        Ipv4Addr::new(192, 0, 2, 0),
        24,
        "documentation (TEST-NET-1)",
    ),
    (Ipv4Addr::new(192, 88, 99, 0), 24, "6to4 relay anycast"),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private-use"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking"),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "documentation (TEST-NET-2)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "documentation (TEST-NET-3)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast"),
    // Reserved, the limited broadcast 255.255.255.255 included.
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved"),
];

/// The registry's globally reachable addresses inside a block of [`V4_BLOCKS`]: Port Control
/// Protocol and TURN anycast.
const V4_GLOBAL: &[Ipv4Addr] = &[Ipv4Addr::new(192, 0, 0, 9), Ipv4Addr::new(192, 0, 0, 10)];

/// The IPv6 special-purpose blocks inside `2000::/3` that are not globally reachable, or are
/// IPv4 tunnels or identifiers rather than addresses to connect to.
const V6_BLOCKS: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "Teredo"),
    (
        Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0),
        48,
        "benchmarking",
    ),
    // ORCHIDv2 and DETs are cryptographic identifiers (RFC 7343, RFC 9374), never routed to.
    (
        Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0),
        28,
        "ORCHIDv2",
    ),
    (
        Ipv6Addr::new(0x2001, 0x30, 0, 0, 0, 0, 0, 0),
        28,
        "drone entity tags",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "IETF protocol assignments",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation",
    ),
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4"),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation",
    ),
];

/// The registry's globally reachable blocks inside `2001::/23`: PCP, TURN and DNS-SD SRP
/// anycast, AMT, AS112-v6.
const V6_GLOBAL: &[(Ipv6Addr, u8)] = &[
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 1), 128),
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 2), 128),
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 3), 128),
    (Ipv6Addr::new(0x2001, 3, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48),
];

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if V4_GLOBAL.contains(&ip) {
        return None;
    }
    let bits = u32::from(ip);
    V4_BLOCKS
        .iter()
        .find(|(network, len, _)| bits >> (32 - len) == u32::from(*network) >> (32 - len))
        .map(|(_, _, name)| *name)
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    let within =
        |network: Ipv6Addr, len: u8| bits >> (128 - len) == u128::from(network) >> (128 - len);
    if within(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96) {
        // NAT64: the IPv4 address it is translated to decides.
        let [.., a, b, c, d] = ip.octets();
        return refusal_v4(Ipv4Addr::new(a, b, c, d));
    }
    if !within(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return Some(outside_global_unicast(ip));
    }
    if V6_GLOBAL
        .iter()
        .any(|(network, len)| within(*network, *len))
    {
        return None;
    }
    V6_BLOCKS
        .iter()
        .find(|(network, len, _)| within(*network, *len))
        .map(|(_, _, name)| *name)
}

/// The name of a block outside `2000::/3`, for the error message.
fn outside_global_unicast(ip: Ipv6Addr) -> &'static str {
    let segments = ip.segments();
    match segments {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        [0, 0, 0, 0, 0, 0xffff, ..] => "IPv4-mapped",
        [0, 0, 0, 0, 0xffff, 0, ..] => "IPv4-translated",
        [0, 0, 0, 0, 0, 0, ..] => "IPv4-compatible",
        [0x64, 0xff9b, 1, ..] => "IPv4-IPv6 translation (local use)",
        [0x100, 0, 0, 0, ..] => "discard-only",
        [first, ..] if first & 0xfe00 == 0xfc00 => "unique-local",
        [first, ..] if first & 0xffc0 == 0xfe80 => "link-local",
        [first, ..] if first & 0xffc0 == 0xfec0 => "site-local",
        [first, ..] if first & 0xff00 == 0xff00 => "multicast",
        _ => "outside global unicast 2000::/3",
    }
}

/// `host` (as a URL gives it: IPv6 bracketed) as an address, if it is one.
fn literal(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

fn refuse(url: &str, ip: IpAddr) -> Result<(), AddressError> {
    match refusal(ip) {
        None => Ok(()),
        Some(block) => Err(AddressError::NotPublic {
            url: url.to_owned(),
            addr: ip,
            block,
        }),
    }
}

#[cfg(test)]
mod tests;
