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
//! use agentwire_brain::{Brain, BrainRequest, anthropic::AnthropicBrain};
//! use agentwire_core::Message;
//! use futures::StreamExt;
//!
//! # async fn run() -> Result<(), agentwire_brain::BrainError> {
//! let key = std::env::var("ANTHROPIC_API_KEY").unwrap_or_default();
//! let brain = AnthropicBrain::new("claude-sonnet-4-5", &key)?.with_max_tokens(1024);
//! let mut stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! while let Some(event) = stream.next().await {
//!     println!("{:?}", event?);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! [`BrainEvent::Data`]: crate::BrainEvent::Data

pub mod events;
mod request;

use std::sync::Arc;

use futures::stream;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use events::{EventParser, REDACTED_THINKING, THINKING_SIGNATURE};

use self::request::Settings;
use crate::http::{HttpTransport, ProviderRequest, SseParser};
use crate::{Brain, BrainError, BrainEvent, BrainRequest, BrainStream, RetryPolicy};

/// A brain backed by Anthropic's Messages API.
///
/// Defaults: base URL [`AnthropicBrain::DEFAULT_BASE_URL`], `max_tokens`
/// [`AnthropicBrain::DEFAULT_MAX_TOKENS`], extended thinking off, the transport's default
/// [`RetryPolicy`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AnthropicBrain {
    transport: HttpTransport,
    url: String,
    headers: HeaderMap,
    settings: Arc<Settings>,
}

impl AnthropicBrain {
    /// Where the API is unless [`with_base_url`](Self::with_base_url) says otherwise.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    /// The longest answer, in tokens, unless [`with_max_tokens`](Self::with_max_tokens) says
    /// otherwise (the API requires a limit).
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;
    /// The API version sent in `anthropic-version`.
    pub const API_VERSION: &'static str = "2023-06-01";

    /// A brain for `model` (e.g. `claude-sonnet-4-5`) with this API key.
    ///
    /// # Errors
    /// [`BrainError::Config`] when the key cannot be an HTTP header value, or the HTTP client
    /// cannot be built.
    pub fn new(model: impl Into<String>, api_key: &str) -> Result<Self, BrainError> {
        let mut key = HeaderValue::from_str(api_key).map_err(|_| BrainError::Config {
            message: "the Anthropic API key holds characters a header cannot carry".into(),
        })?;
        key.set_sensitive(true);
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(Self::API_VERSION),
        );
        Ok(Self {
            transport: HttpTransport::new(RetryPolicy::default())?,
            url: messages_url(Self::DEFAULT_BASE_URL),
            headers,
            settings: Arc::new(Settings {
                model: model.into(),
                max_tokens: Self::DEFAULT_MAX_TOKENS,
                thinking_budget: None,
            }),
        })
    }

    /// Sends requests to this server instead (a proxy, a compatible server, a test's fake):
    /// `<base_url>/v1/messages`; a base URL that already ends in `/v1` gets `/messages`.
    pub fn with_base_url(mut self, base_url: &str) -> Self {
        self.url = messages_url(base_url);
        self
    }

    /// Limits answers to this many tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        Arc::make_mut(&mut self.settings).max_tokens = max_tokens;
        self
    }

    /// Turns extended thinking on with this budget in tokens (the API wants at least 1024, and
    /// less than the `max_tokens`). The model's thinking streams as reasoning.
    pub fn with_thinking(mut self, budget_tokens: u32) -> Self {
        Arc::make_mut(&mut self.settings).thinking_budget = Some(budget_tokens);
        self
    }

    /// Retries failed requests (HTTP 429, 5xx, broken connections; only before any output) by
    /// this policy.
    ///
    /// # Errors
    /// [`BrainError::Config`] when the HTTP client cannot be built.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Result<Self, BrainError> {
        self.transport = HttpTransport::new(retry)?;
        Ok(self)
    }
}

impl Brain for AnthropicBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        if let Some(budget) = self.settings.thinking_budget
            && budget >= self.settings.max_tokens
        {
            return failed(BrainError::Config {
                message: format!(
                    "the thinking budget ({budget} tokens) must be less than max_tokens ({})",
                    self.settings.max_tokens
                ),
            });
        }
        let body = match request::body(&self.settings, &request) {
            Ok(body) => body,
            Err(error) => return failed(error),
        };
        let request = ProviderRequest {
            url: self.url.clone(),
            headers: self.headers.clone(),
            body,
        };
        self.transport.stream(request, EventParser::default)
    }

    fn describe(&self) -> String {
        format!("anthropic:{}", self.settings.model)
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

fn failed(error: BrainError) -> BrainStream {
    Box::pin(stream::once(async move { Err(error) }))
}
