//! CORS: which browser origins may call the server across origins (`[server] cors_origins`).
//!
//! None configured: no CORS headers at all, so browsers keep pages of other origins out
//! (same-origin only). Listed origins, or `*` for any, may send what the clients of every
//! dialect send — `Authorization` (API keys), `Content-Type` (JSON bodies), `Accept`
//! (`text/event-stream`), `Last-Event-ID` (resuming a stream), `Cache-Control` (EventSource
//! polyfills) and `User-Agent` (the AI SDK adds its own) — and may read `x-agentwire-run-id`.
//! Credentials (cookies) are never allowed: the API authenticates with bearer keys, which also
//! keeps `*` valid.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may cache a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// The CORS layer for these origins, or `None` for same-origin only. Origins that are not
/// valid header values are left out (the configuration file checks them when it is read).
pub(crate) fn layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        let list: Vec<HeaderValue> = origins
            .iter()
            .filter_map(|origin| match HeaderValue::from_str(origin) {
                Ok(value) => Some(value),
                Err(_) => {
                    tracing::warn!(origin, "cors_origins: not a valid origin, left out");
                    None
                }
            })
            .collect();
        AllowOrigin::list(list)
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::ACCEPT,
                header::CACHE_CONTROL,
                header::USER_AGENT,
                HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([HeaderName::from_static("x-agentwire-run-id")])
            .max_age(PREFLIGHT_MAX_AGE),
    )
}
