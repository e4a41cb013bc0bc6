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
//! config.connection.api_key = std::env::var("ANTHROPIC_API_KEY").ok();
//! config.thinking_budget = Some(2048);
//! let brain = AnthropicBrain::new(config)?;
//! let stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! ```
//!
//! [`BrainEvent::Data`]: crate::BrainEvent::Data

pub mod events;
mod request;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use events::{EventParser, REDACTED_THINKING, STOP_DETAILS, THINKING_SIGNATURE};

use self::request::Settings;
use crate::connection::KeyHeader;
use crate::http::HttpTransport;
use crate::{
    Brain, BrainError, BrainRequest, BrainStream, Connection, GenerationSettings, InvalidField,
};

/// Anthropic's own endpoint, the default `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The answer limit in tokens unless the configuration says otherwise (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version sent as `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";

/// How to reach the Messages API and what to ask it for.
///
/// Made with [`AnthropicConfig::new`]; every field is public to set. What the [`Connection`]
/// means here (`config.connection.…`):
///
/// - `base_url`: up to and without `/v1/messages` (a base ending in `/v1` gets `/messages`).
///   Default [`DEFAULT_BASE_URL`].
/// - `api_key`: sent as `x-api-key`; `None` for a proxy that adds it.
/// - `headers`: extra headers (e.g. `anthropic-beta`); an `anthropic-version` here replaces
///   [`API_VERSION`].
/// - `retry`: when failed calls are tried again.
///
/// The key is never shown by `Debug`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// Where the API is and how to call it.
    pub connection: Connection,
    /// The model, e.g. `claude-sonnet-4-5`.
    pub model: String,
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
            connection: Connection::new(DEFAULT_BASE_URL),
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
        }
    }
}

/// A [`Brain`] backed by Anthropic's Messages API. Cheap to share: one connection pool serves
/// every call.
#[derive(Debug)]
pub struct AnthropicBrain {
    config: AnthropicConfig,
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
        let mut defaults = HeaderMap::new();
        defaults.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let transport =
            config
                .connection
                .transport(messages_url, defaults, KeyHeader::Named("x-api-key"))?;
        Ok(Self { config, transport })
    }
}

impl Brain for AnthropicBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let run = &request.settings;
        let settings = Settings {
            model: run.model.as_deref().unwrap_or(&self.config.model),
            max_tokens: run.max_tokens.unwrap_or(self.config.max_tokens),
            thinking_budget: self.config.thinking_budget,
            temperature: run.temperature,
            top_p: run.top_p,
            stop_sequences: &run.stop,
        };
        let body = request::body(settings, &request);
        self.transport
            .stream(body, &request.trace_context, EventParser::default)
    }

    fn describe(&self) -> String {
        format!("anthropic:{}", self.config.model)
    }

    fn provider_name(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> Option<&str> {
        Some(&self.config.model)
    }

    /// The Messages API takes `model`, `max_tokens`, `temperature` (0 to 1 here), `top_p` and
    /// `stop` (as `stop_sequences`). It has no `seed`, penalties or choices, so those are
    /// refused rather than dropped; with extended thinking on it takes no `temperature` and a
    /// `top_p` of 0.95 to 1 only, and `max_tokens` must stay above the thinking budget.
    fn check_settings(&self, settings: &GenerationSettings) -> Result<(), InvalidField> {
        settings.check()?;
        let unsupported = |field: &str| {
            InvalidField::new(
                field,
                "is not supported by Anthropic's Messages API (this agent's provider)",
            )
        };
        for (field, set) in [
            ("seed", settings.seed.is_some()),
            ("frequency_penalty", settings.frequency_penalty.is_some()),
            ("presence_penalty", settings.presence_penalty.is_some()),
        ] {
            if set {
                return Err(unsupported(field));
            }
        }
        if let Some(n) = settings.n.filter(|n| *n != 1) {
            return Err(InvalidField::new(
                "n",
                format!("must be 1: Anthropic's Messages API makes one choice, got {n}"),
            ));
        }
        if let Some(temperature) = settings.temperature.filter(|t| *t > 1.0) {
            return Err(InvalidField::new(
                "temperature",
                format!("must be between 0 and 1 for Anthropic, got {temperature}"),
            ));
        }
        if let Some(budget) = self.config.thinking_budget {
            if settings.temperature.is_some() {
                return Err(InvalidField::new(
                    "temperature",
                    "cannot be set: this agent uses extended thinking, which Anthropic runs at \
                     its own temperature",
                ));
            }
            if let Some(top_p) = settings.top_p.filter(|top_p| *top_p < 0.95) {
                return Err(InvalidField::new(
                    "top_p",
                    format!("must be between 0.95 and 1 with extended thinking, got {top_p}"),
                ));
            }
            if let Some(max_tokens) = settings.max_tokens.filter(|max| *max <= budget) {
                return Err(InvalidField::new(
                    "max_tokens",
                    format!(
                        "must be more than this agent's thinking budget ({budget} tokens), got \
                         {max_tokens}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The Messages endpoint for a base URL without its trailing `/`.
fn messages_url(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}
