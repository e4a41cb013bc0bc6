//! What a request must be before any route sees it: a request line and headers of sane size,
//! and, on a server without keys, addressed to this server by a page of its own.
//!
//! Without keys anyone who can reach the server may use it, so the reach must be the
//! operator's choice, not a web page's. Two checks keep pages out:
//! - `Host` must be an IP address, `localhost` (or `*.localhost`) or one of `allowed_hosts`.
//!   A page on `evil.example` whose DNS name is made to point at this machine (DNS rebinding)
//!   still sends `Host: evil.example`, and is refused. An IP address needs no check: no one
//!   can point it elsewhere, so a page that names one was served from that address.
//! - `Origin`, when a browser sends one, must be this server's own (its authority is the
//!   `Host` the request was sent to) or one of `cors_origins`. A page elsewhere that posts to
//!   the server without a preflight is refused before anything runs.
//!
//! Requests without `Origin` (curl, SDKs, servers) pass: they are not a browser acting for a
//! page. With keys neither check applies: a page has no key to send.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, RequestError};
use crate::settings::Settings;
use crate::state::AppState;

/// The longest request target answered; longer ones are 414.
pub(crate) const MAX_URI_BYTES: usize = 16 * 1024;
/// The most header bytes (names and values) answered; more is 431.
pub(crate) const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The most headers answered; more is 431.
pub(crate) const MAX_HEADERS: usize = 100;

/// The middleware: refuses what fails the checks, with the API's JSON error.
pub(crate) async fn check(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let refused = sizes(&request).and_then(|()| match state.keys.is_empty() {
        true => addressed(&state.settings, request.headers()),
        false => Ok(()),
    });
    match refused {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

fn sizes(request: &Request) -> Result<(), ApiError> {
    let uri = request.uri();
    let uri = uri
        .path_and_query()
        .map_or(0, |target| target.as_str().len())
        + uri
            .authority()
            .map_or(0, |authority| authority.as_str().len());
    if uri > MAX_URI_BYTES {
        return Err(RequestError::UriTooLong { max: MAX_URI_BYTES }.into());
    }
    let headers = request.headers();
    let bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return Err(RequestError::HeadersTooLarge {
            max_headers: MAX_HEADERS,
            max_bytes: MAX_HEADER_BYTES,
        }
        .into());
    }
    Ok(())
}

/// The `Host` and `Origin` checks of a server without keys.
fn addressed(settings: &Settings, headers: &HeaderMap) -> Result<(), ApiError> {
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    if let Some(host) = host
        && !host_allowed(settings, host)
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!(
                "this server has no keys and answers only to its IP addresses, localhost and \
                 `allowed_hosts`, not to '{host}'"
            ),
        ));
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("(not text)");
    if origin_allowed(settings, origin, host) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        format!(
            "this server has no keys and takes requests from pages of other origins only when \
             `cors_origins` lists them; '{origin}' is not listed"
        ),
    ))
}

fn host_allowed(settings: &Settings, host: &str) -> bool {
    let Ok(authority) = host.parse::<Authority>() else {
        return false;
    };
    let name = authority.host();
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || settings
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(&name))
}

fn origin_allowed(settings: &Settings, origin: &str, host: Option<&str>) -> bool {
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let same = matches!((authority, host), (Some(authority), Some(host))
        if authority.eq_ignore_ascii_case(host));
    same || settings
        .cors_origins
        .iter()
        .any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            allowed_hosts: vec!["agents.internal".into()],
            cors_origins: vec!["https://app.example".into()],
            ..Settings::default()
        }
    }

    #[test]
    fn hosts_are_addresses_localhost_or_allowed() {
        let settings = settings();
        for host in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "[::1]:8080",
            "10.1.2.3:80",
            "localhost:8080",
            "LOCALHOST",
            "app.localhost:3000",
            "agents.internal:8080",
            "Agents.Internal",
        ] {
            assert!(host_allowed(&settings, host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "agents.internal.evil.example",
            "",
            "a b",
        ] {
            assert!(!host_allowed(&settings, host), "{host}");
        }
    }

    #[test]
    fn origins_are_the_server_itself_or_listed() {
        let settings = settings();
        let host = Some("127.0.0.1:8080");
        assert!(origin_allowed(&settings, "http://127.0.0.1:8080", host));
        assert!(origin_allowed(&settings, "https://app.example", host));
        for origin in [
            "http://127.0.0.1:9090",
            "http://evil.example",
            "null",
            "https://app.example.evil",
        ] {
            assert!(!origin_allowed(&settings, origin, host), "{origin}");
        }
        assert!(!origin_allowed(&settings, "http://127.0.0.1:8080", None));
    }
}
