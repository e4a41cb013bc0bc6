//! [`Connection`]: how to reach a provider's API (base URL, API key, extra headers, retry
//! policy), the part every provider configuration shares, checked once into the HTTP transport.

use std::fmt;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use crate::http::HttpTransport;
use crate::{BrainError, RetryPolicy};

/// How to reach a provider's API. Each provider configuration holds one as its `connection`
/// (`config.connection.base_url`, `config.connection.api_key`, …).
///
/// Made with [`Connection::new`]; every field is public to set. The key is never shown by
/// `Debug`.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Connection {
    /// The API's base URL; each provider says what it appends.
    pub base_url: String,
    /// The API key, sent in the provider's header. `None` (or empty) sends none: local servers
    /// need none, and a proxy may add it.
    pub api_key: Option<String>,
    /// Extra headers sent with every request (e.g. OpenRouter's `HTTP-Referer`, Anthropic's
    /// `anthropic-beta`). One named like a header the provider sends by default (e.g.
    /// `anthropic-version`) replaces it; several of one name are all sent.
    pub headers: Vec<(String, String)>,
    /// When failed calls are tried again. Default [`RetryPolicy::default`].
    pub retry: RetryPolicy,
}

impl Connection {
    /// A connection to this base URL, with no key, no extra header and the default retries.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
        }
    }

    /// The transport for this connection, checked: `endpoint` makes the URL to POST to from the
    /// base URL (without its trailing `/`), `defaults` are the provider's own headers, and the
    /// key goes in `key_header`.
    ///
    /// # Errors
    /// [`BrainError::Config`] for a base URL that is not an `http`/`https` URL, a header or key
    /// that cannot be sent as a header, or when the HTTP client cannot be built.
    pub(crate) fn transport(
        &self,
        endpoint: impl FnOnce(&str) -> String,
        defaults: HeaderMap,
        key_header: KeyHeader,
    ) -> Result<HttpTransport, BrainError> {
        let url = endpoint(self.base_url.trim_end_matches('/'));
        let parsed = reqwest::Url::parse(&url).map_err(|error| BrainError::Config {
            message: format!("the base URL {:?} is not a URL: {error}", self.base_url),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BrainError::Config {
                message: format!("the base URL {:?} is not http or https", self.base_url),
            });
        }
        let mut extra = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = HeaderName::try_from(name.as_str())
                .ok()
                .zip(HeaderValue::try_from(value.as_str()).ok());
            let Some((name, value)) = header else {
                return Err(BrainError::Config {
                    message: format!("the header {name:?} cannot be sent as given"),
                });
            };
            extra.append(name, value);
        }
        let mut headers = defaults;
        for name in extra.keys() {
            headers.remove(name);
        }
        for (name, value) in &extra {
            headers.append(name, value.clone());
        }
        if let Some(key) = self.api_key.as_deref().filter(|key| !key.is_empty()) {
            let (name, value) = key_header.header(key);
            let mut value = HeaderValue::try_from(value).map_err(|_| BrainError::Config {
                message: "the API key holds characters a header cannot carry".into(),
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        HttpTransport::new(url, headers, self.retry.clone())
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Where a provider wants its API key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI and the compatible servers).
    Bearer,
    /// The key as it is, in this header (Anthropic's `x-api-key`).
    Named(&'static str),
}

impl KeyHeader {
    fn header(self, key: &str) -> (HeaderName, String) {
        match self {
            KeyHeader::Bearer => (AUTHORIZATION, format!("Bearer {key}")),
            KeyHeader::Named(name) => (HeaderName::from_static(name), key.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn refused(connection: &Connection) -> String {
        match connection.transport(str::to_owned, HeaderMap::new(), KeyHeader::Bearer) {
            Err(BrainError::Config { message }) => message,
            other => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn unusable_connections_are_refused_with_the_reason() {
        let bad = |change: fn(&mut Connection)| {
            let mut connection = Connection::new("https://api.test/v1");
            change(&mut connection);
            refused(&connection)
        };
        assert!(bad(|c| c.base_url = "not a url".into()).contains("\"not a url\" is not a URL"));
        assert!(bad(|c| c.base_url = "ftp://x.test".into()).contains("not http or https"));
        let header = bad(|c| c.headers = vec![("bad header".into(), "v".into())]);
        assert!(header.contains("the header \"bad header\""), "{header}");
        let key = bad(|c| c.api_key = Some("line\nbreak".into()));
        assert!(key.contains("API key"), "{key}");
    }

    #[test]
    fn extra_headers_replace_the_provider_s_and_the_key_goes_last() {
        let mut connection = Connection::new("https://api.test/");
        connection.api_key = Some("secret".into());
        connection.headers = vec![
            ("x-version".into(), "mine".into()),
            ("x-tag".into(), "a".into()),
            ("x-tag".into(), "b".into()),
            ("x-key".into(), "from the headers".into()),
        ];
        let mut defaults = HeaderMap::new();
        defaults.insert("x-version", HeaderValue::from_static("default"));
        defaults.insert("x-kept", HeaderValue::from_static("yes"));
        let transport = connection
            .transport(
                |base| format!("{base}/call"),
                defaults,
                KeyHeader::Named("x-key"),
            )
            .unwrap();
        let (url, headers) = transport.target();
        assert_eq!(url, "https://api.test/call");
        let values = |name: &str| -> Vec<&str> {
            headers
                .get_all(name)
                .iter()
                .map(|value| value.to_str().unwrap())
                .collect()
        };
        assert_eq!(values("x-version"), ["mine"]);
        assert_eq!(values("x-kept"), ["yes"]);
        assert_eq!(values("x-tag"), ["a", "b"]);
        assert_eq!(values("x-key"), ["secret"]);
        assert!(headers["x-key"].is_sensitive());

        let bearer = connection
            .transport(str::to_owned, HeaderMap::new(), KeyHeader::Bearer)
            .unwrap();
        assert_eq!(bearer.target().1[AUTHORIZATION], "Bearer secret");
    }

    #[test]
    fn the_key_is_never_shown() {
        let mut connection = Connection::new("https://api.test");
        connection.api_key = Some("sk-secret".into());
        let shown = format!("{connection:?}");
        assert!(
            shown.contains("<redacted>") && !shown.contains("sk-secret"),
            "{shown}"
        );
    }
}
