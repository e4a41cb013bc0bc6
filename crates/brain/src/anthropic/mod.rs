//! [`AnthropicBrain`]: Claude through the Anthropic Messages API, streaming (`POST
//! /v1/messages` with `"stream": true`).
//!
//! Two sans-IO halves and the shared HTTP transport:
//! - `request.rs` writes the conversation as the API's body: each step of an assistant turn
//!   becomes an assistant message followed by a user message of `tool_result`s, tool errors are
//!   results with `is_error` that name the error, same-role messages merge; see its docs for
//!   every part.
//! - [`events`] reads the stream: text, thinking (its signature kept as a [`BrainEvent::Data`]
//!   part, because Anthropic wants it back), tool use with `input_json_delta`, stop reason and
//!   usage.
//! - The transport (`http.rs`) retries HTTP 429 and 5xx (Anthropic's 529 "overloaded" too)
//!   before any output, and aborts the request when the stream is dropped.
//!
//! ```no_run
//! use agentwire_brain::{AnthropicBrain, AnthropicConfig, Brain, BrainRequest};
//! use agentwire_core::Message;
//!
//! let mut config = AnthropicConfig::new("claude-sonnet-4-5");
//! config.api_key = std::env::var("ANTHROPIC_API_KEY").ok();
//! config.thinking_budget = Some(2048);
//! let brain = AnthropicBrain::new(config)?;
//! let stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! ```
//!
//! [`BrainEvent::Data`]: crate::BrainEvent::Data

pub mod events;
mod request;

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use events::{EventParser, REDACTED_THINKING, THINKING_SIGNATURE};

use self::request::Settings;
use crate::http::{HttpTransport, ProviderRequest, SseParser};
use crate::{Brain, BrainError, BrainEvent, BrainRequest, BrainStream, RetryPolicy};

/// Anthropic's own endpoint, the default `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The answer limit in tokens unless the configuration says otherwise (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version sent as `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// How to reach the Messages API and what to ask it for.
///
/// Made with [`AnthropicConfig::new`]; every field is public to set. The key is never shown by
/// `Debug`.
#[derive(Clone)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The API's base URL, up to and without `/v1/messages` (a base ending in `/v1` gets
    /// `/messages`). Default [`DEFAULT_BASE_URL`].
    pub base_url: String,
    /// The model, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// Sent as `x-api-key`. `None` (or empty) sends none, for a proxy that adds it.
    pub api_key: Option<String>,
    /// Extra headers sent with every request (e.g. `anthropic-beta`); an `anthropic-version`
    /// here replaces [`API_VERSION`].
    pub headers: Vec<(String, String)>,
    /// When failed calls are tried again. Default [`RetryPolicy::default`].
    pub retry: RetryPolicy,
    /// `max_tokens`, the longest answer. Default [`DEFAULT_MAX_TOKENS`].
    pub max_tokens: u32,
    /// Extended thinking's budget in tokens (the API wants at least 1024, and less than
    /// `max_tokens`); the thinking streams as reasoning. `None`, the default, leaves it off.
    pub thinking_budget: Option<u32>,
}

impl AnthropicConfig {
    /// A configuration for this model on Anthropic's API, with no key and the defaults.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
        }
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers)
            .field("retry", &self.retry)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .finish()
    }
}

/// A [`Brain`] backed by Anthropic's Messages API. Cheap to share: one connection pool serves
/// every call.
#[derive(Debug)]
pub struct AnthropicBrain {
    config: AnthropicConfig,
    url: String,
    headers: HeaderMap,
    transport: HttpTransport,
}

impl AnthropicBrain {
    /// A brain with this configuration, checked up front.
    ///
    /// # Errors
    /// [`BrainError::Config`] for a base URL that is not an `http`/`https` URL, a header or key
    /// that cannot be sent as a header, a thinking budget not below `max_tokens`, or when the
    /// HTTP client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self, BrainError> {
        let url = messages_url(&config.base_url);
        let parsed = reqwest::Url::parse(&url).map_err(|error| BrainError::Config {
            message: format!("the base URL {:?} is not a URL: {error}", config.base_url),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BrainError::Config {
                message: format!("the base URL {:?} is not http or https", config.base_url),
            });
        }
        if let Some(budget) = config.thinking_budget
            && budget >= config.max_tokens
        {
            return Err(BrainError::Config {
                message: format!(
                    "the thinking budget ({budget} tokens) must be less than max_tokens ({})",
                    config.max_tokens
                ),
            });
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        for (name, value) in &config.headers {
            let header = HeaderName::try_from(name.as_str())
                .ok()
                .zip(HeaderValue::try_from(value.as_str()).ok());
            let Some((name, value)) = header else {
                return Err(BrainError::Config {
                    message: format!("the header {name:?} cannot be sent as given"),
                });
            };
            headers.insert(name, value);
        }
        if let Some(key) = config.api_key.as_deref().filter(|key| !key.is_empty()) {
            let mut value = HeaderValue::try_from(key).map_err(|_| BrainError::Config {
                message: "the API key holds characters a header cannot carry".into(),
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let transport = HttpTransport::new(config.retry.clone())?;
        Ok(Self {
            config,
            url,
            headers,
            transport,
        })
    }
}

impl Brain for AnthropicBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let settings = Settings {
            model: &self.config.model,
            max_tokens: self.config.max_tokens,
            thinking_budget: self.config.thinking_budget,
        };
        let body = request::body(settings, &request);
        let request = ProviderRequest {
            url: self.url.clone(),
            headers: self.headers.clone(),
            body,
        };
        self.transport.stream(request, EventParser::default)
    }

    fn describe(&self) -> String {
        format!("anthropic:{}", self.config.model)
    }
}

impl SseParser for EventParser {
    /// The `event:` name is not read: each payload names its event in `"type"`.
    fn event(
        &mut self,
        _name: Option<&str>,
        data: &str,
        out: &mut Vec<BrainEvent>,
    ) -> Result<(), BrainError> {
        self.push(data, out)
    }

    fn end(&mut self, out: &mut Vec<BrainEvent>) -> Result<(), BrainError> {
        self.finish(out)
    }
}

fn messages_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}
