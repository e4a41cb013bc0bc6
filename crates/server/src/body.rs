//! [`JsonBody`]: a request body that says it is JSON, read within the size and time limits.
//!
//! The content type is checked because a web page of any other origin may send a "simple"
//! request — `text/plain`, a form, or no type at all — without asking the server first (no
//! CORS preflight), so a JSON endpoint that read such bodies could be driven by any page a
//! user of an unauthenticated server opens. A JSON body must say `application/json` (or a
//! `+json` type), which a page cannot send across origins unless CORS allows it. An empty body
//! has no type to check (`POST /v1/runs/{id}/cancel`).

use std::time::Duration;

use axum::body::Bytes;
use axum::body::HttpBody as _;
use axum::extract::{FromRef, FromRequest, Request};
use axum::http::{HeaderMap, header};

use crate::error::{ApiError, RequestError};

/// How much of a body is read, and for how long.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    pub(crate) max_bytes: usize,
    pub(crate) timeout: Duration,
}

/// The bytes of a JSON request body.
#[derive(Debug)]
pub(crate) struct JsonBody(pub(crate) Bytes);

/// Whether the request declares a JSON body: `application/json` or `application/<x>+json`,
/// any parameters (`; charset=utf-8`) aside.
fn declares_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let subtype = subtype.to_ascii_lowercase();
    kind.eq_ignore_ascii_case("application") && (subtype == "json" || subtype.ends_with("+json"))
}

impl<S> FromRequest<S> for JsonBody
where
    BodyLimits: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let limits = BodyLimits::from_ref(state);
        let (parts, body) = request.into_parts();
        if body.size_hint().exact() == Some(0) {
            return Ok(Self(Bytes::new()));
        }
        if !declares_json(&parts.headers) {
            return Err(RequestError::NotJson.into());
        }
        let max = limits.max_bytes;
        // A body that says it is too large is refused before a byte of it is read; the rest
        // is read and dropped after the answer (`linger`), so the client sees the answer.
        if body.size_hint().lower() > max as u64 {
            return Err(RequestError::PayloadTooLarge { max }.into());
        }
        let read = axum::body::to_bytes(body, max);
        match tokio::time::timeout(limits.timeout, read).await {
            Ok(Ok(bytes)) => Ok(Self(bytes)),
            Ok(Err(_)) => Err(RequestError::PayloadTooLarge { max }.into()),
            Err(_) => Err(RequestError::BodyTimeout {
                timeout: limits.timeout,
            }
            .into()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn with_type(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
        headers
    }

    #[test]
    fn json_types_are_declared_json() {
        for value in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/vnd.api+json",
        ] {
            assert!(declares_json(&with_type(value)), "{value}");
        }
        for value in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "json",
        ] {
            assert!(!declares_json(&with_type(value)), "{value}");
        }
        assert!(!declares_json(&HeaderMap::new()));
    }
}
