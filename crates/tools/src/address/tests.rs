#![allow(clippy::unwrap_used)]

use super::*;

/// Every block of the IANA IPv4 and IPv6 Special-Purpose Address Registries (and the
/// deprecated and reserved IPv6 forms the registry no longer lists), by its first and last
/// address, with whether a connection there is allowed; addresses just outside a block where
/// an off-by-one would show; and public addresses.
const TABLE: &[(&str, bool)] = &[
    // IPv4
    ("0.0.0.0", false),
    ("0.255.255.255", false),
    ("10.0.0.0", false),
    ("10.255.255.255", false),
    ("100.63.255.255", true),
    ("100.64.0.0", false),
    ("100.127.255.255", false),
    ("100.128.0.0", true),
    ("127.0.0.0", false),
    ("127.255.255.255", false),
    ("169.254.0.0", false),
    ("169.254.169.254", false),
    ("169.254.255.255", false),
    ("172.15.255.255", true),
    ("172.16.0.0", false),
    ("172.31.255.255", false),
    ("172.32.0.0", true),
    ("192.0.0.0", false),
    ("192.0.0.7", false),
    ("192.0.0.8", false),
    ("192.0.0.9", true),
    ("192.0.0.10", true),
    ("192.0.0.170", false),
    ("192.0.0.171", false),
    ("192.0.0.255", false),
    ("192.0.2.0", false),
    ("192.0.2.255", false),
    ("192.31.196.0", true),
    ("192.52.193.0", true),
    ("192.88.99.0", false),
    ("192.88.99.2", false),
    ("192.88.99.255", false),
    ("192.168.0.0", false),
    ("192.168.255.255", false),
    ("192.175.48.0", true),
    ("198.17.255.255", true),
    ("198.18.0.0", false),
    ("198.19.255.255", false),
    ("198.20.0.0", true),
    ("198.51.100.0", false),
    ("198.51.100.255", false),
    ("203.0.113.0", false),
    ("203.0.113.255", false),
    ("224.0.0.0", false),
    ("239.255.255.255", false),
    ("240.0.0.0", false),
    ("255.255.255.254", false),
    ("255.255.255.255", false),
    ("1.1.1.1", true),
    ("8.8.8.8", true),
    ("93.184.216.34", true),
    ("223.255.255.255", true),
    // IPv6
    ("::", false),
    ("::1", false),
    ("::ffff:0:0", false),
    ("::ffff:127.0.0.1", false),
    ("::ffff:1.1.1.1", false),
    ("::ffff:ffff:ffff", false),
    ("::ffff:0:0:0", false),
    ("::ffff:0:7f00:1", false),
    ("::ffff:0:101:101", false),
    ("::127.0.0.1", false),
    ("::1.1.1.1", false),
    ("64:ff9b::7f00:1", false),
    ("64:ff9b::a9fe:a9fe", false),
    ("64:ff9b::a00:1", false),
    ("64:ff9b::c0a8:1", false),
    ("64:ff9b::101:101", true),
    ("64:ff9b::808:808", true),
    ("64:ff9b:1::", false),
    ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", false),
    ("100::", false),
    ("100::ffff:ffff:ffff:ffff", false),
    ("100:0:0:1::", false),
    ("2001::", false),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
    ("2001:0:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:1::", false),
    ("2001:1::1", true),
    ("2001:1::2", true),
    ("2001:1::3", true),
    ("2001:1::4", false),
    ("2001:2::", false),
    ("2001:2:0:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:3::", true),
    ("2001:3:ffff:ffff:ffff:ffff:ffff:ffff", true),
    ("2001:4:112::", true),
    ("2001:4:112:ffff:ffff:ffff:ffff:ffff", true),
    ("2001:4:113::", false),
    ("2001:10::", false),
    ("2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:20::", false),
    ("2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:30::", false),
    ("2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2001:200::", true),
    ("2001:db8::", false),
    ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2002::", false),
    ("2002:7f00:1::", false),
    ("2002:101:101::", false),
    ("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("2620:4f:8000::", true),
    ("3fff::", false),
    ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("3fff:1000::", true),
    ("4000::1", false),
    ("5f00::", false),
    ("fc00::", false),
    ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("fe80::", false),
    ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("fec0::", false),
    ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false),
    ("ff02::1", false),
    ("2606:4700::1111", true),
    ("2a00:1450:4001::1", true),
];

/// The same addresses written as a URL's host as clients may spell them: decimal, octal,
/// hex and short IPv4, IPv4 inside IPv6 in every form.
const LITERAL_URLS: &[(&str, bool)] = &[
    ("http://2130706433/", false),
    ("http://0177.0.0.1/", false),
    ("http://0x7f.0.0.1/", false),
    ("http://0x7f000001/", false),
    ("http://127.1/", false),
    ("http://0/", false),
    ("http://017700000001/", false),
    ("http://3232235521/", false),
    ("http://0xa9.0xfe.0xa9.0xfe/", false),
    ("http://[::ffff:127.0.0.1]/", false),
    ("http://[::ffff:7f00:1]/", false),
    ("http://[::ffff:0:7f00:1]/", false),
    ("http://[64:ff9b::a9fe:a9fe]/", false),
    ("http://[64:ff9b::169.254.169.254]/", false),
    ("http://[64:ff9b::7f00:1]/", false),
    ("http://[64:ff9b:1::a9fe:a9fe]/", false),
    ("http://[2002:7f00:1::]/", false),
    ("http://[2002:a9fe:a9fe::1]/", false),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", false),
    ("http://[::127.0.0.1]/", false),
    ("http://[::7f00:1]/", false),
    ("http://[fec0::1]/", false),
    ("http://[0:0:0:0:0:0:0:1]/", false),
    ("http://198.18.0.1/", false),
    ("http://240.0.0.1/", false),
    ("http://[64:ff9b::101:101]/", true),
    ("http://16843009/", true),
    ("https://1.1.1.1/hook", true),
];

#[track_caller]
fn check(ip: &str, expect: bool) {
    let parsed: IpAddr = ip.parse().unwrap();
    assert_eq!(is_public(parsed), expect, "{ip}: {:?}", refusal(parsed));
}

#[test]
fn every_special_purpose_block_is_refused_and_global_ones_are_not() {
    for (ip, expect) in TABLE {
        check(ip, *expect);
    }
}

#[tokio::test]
async fn every_block_and_every_spelling_of_it_is_refused_as_a_url() {
    let table = TABLE.iter().map(|(ip, expect)| {
        let host = match ip.contains(':') {
            true => format!("[{ip}]"),
            false => (*ip).to_owned(),
        };
        (format!("http://{host}:8080/hook"), *expect)
    });
    let literals = LITERAL_URLS
        .iter()
        .map(|(url, expect)| ((*url).to_owned(), *expect));
    for (url, expect) in table.chain(literals) {
        let checked = check_url(&url, false).await;
        assert_eq!(checked.is_ok(), expect, "{url}: {checked:?}");
        if !expect {
            assert!(
                matches!(checked, Err(AddressError::NotPublic { .. })),
                "{url}"
            );
            // The same URL is refused before a request, and allowed with allow_private.
            let parsed = Url::parse(&url).unwrap();
            assert!(check_literal(&parsed, false).is_err(), "{url}");
            assert!(check_literal(&parsed, true).is_ok(), "{url}");
            assert!(check_url(&url, true).await.is_ok(), "{url}");
        }
    }
}

#[tokio::test]
async fn urls_are_checked_by_scheme_credentials_and_name() {
    for url in [
        "ftp://example.com/",
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "/relative",
        "http://",
    ] {
        assert!(
            matches!(
                check_url(url, false).await,
                Err(AddressError::Invalid { .. })
            ),
            "{url}"
        );
    }
    // A name is judged by what it resolves to.
    assert!(matches!(
        check_url("http://localhost:9/hook", false).await,
        Err(AddressError::NotPublic { .. })
    ));
    assert!(check_url("http://localhost:9/hook", true).await.is_ok());
}

#[tokio::test]
async fn the_resolver_keeps_no_internal_address() {
    let name = |host: &str| host.parse::<Name>().unwrap();
    let refused = PublicOnly.resolve(name("localhost")).await;
    assert!(refused.is_err());
    let error = refused.err().unwrap().to_string();
    assert!(error.contains("no public address"), "{error}");
}

#[test]
fn the_error_names_the_block() {
    let error = refuse(
        "http://[64:ff9b::7f00:1]/",
        "64:ff9b::7f00:1".parse().unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("loopback"), "{error}");
    assert_eq!(refusal("fec0::1".parse().unwrap()), Some("site-local"));
    assert_eq!(
        refusal("::7f00:1".parse().unwrap()),
        Some("IPv4-compatible")
    );
}
