//! [`OpenAiResponsesBrain`]: OpenAI's Responses API over HTTP, for OpenAI's reasoning models
//! (their reasoning carried across turns) and the servers that implement Open Responses.
//!
//! A model call is `POST {base_url}/responses` with `stream: true` and `store: false`: the
//! conversation travels whole in each request, as agentwire keeps it, and nothing is left on
//! the provider. Reasoning survives between turns because the request asks for
//! `include: ["reasoning.encrypted_content"]`: each reasoning item comes back encrypted, is kept
//! in the message as a data part ([`REASONING_ITEM`]), and is sent back as it came. A run's
//! generation settings override the configured ones: `model`, `temperature`, `top_p`, and
//! `max_tokens` as `max_output_tokens`; the API has no `stop`, `seed`, penalties or choices,
//! so those are refused.
//!
//! Three pieces, each its own concept: `request.rs` maps the conversation to `input` items
//! (pure, its docs say how each part travels), [`events`] turns the streamed events into brain
//! events (pure), and the shared HTTP transport sends, retries and reads the SSE in between,
//! with the same rules as every adapter (HTTP 408, 429 and 5xx, broken connections and streams
//! cut short are retried before any output; an error the stream reports is terminal).
//!
//! ```no_run
//! use agentwire_brain::{Brain, BrainRequest, OpenAiResponsesBrain, OpenAiResponsesConfig};
//! use agentwire_core::Message;
//!
//! let mut config = OpenAiResponsesConfig::new("o4-mini");
//! config.connection.api_key = std::env::var("OPENAI_API_KEY").ok();
//! config.reasoning_effort = Some("low".into());
//! config.reasoning_summary = Some("auto".into());
//! let brain = OpenAiResponsesBrain::new(config)?;
//! let stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! ```

pub mod events;
mod request;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value};

pub use events::{ANNOTATION, EventParser, REASONING_ITEM};

use self::request::{Settings, request_body};
use crate::connection::KeyHeader;
use crate::http::HttpTransport;
use crate::openai::DEFAULT_BASE_URL;
use crate::{
    Brain, BrainError, BrainRequest, BrainStream, Connection, GenerationSettings, InvalidField,
};

/// How to reach a Responses API server and what to ask it for.
///
/// Made with [`OpenAiResponsesConfig::new`]; every field is public to set. What the
/// [`Connection`] means here (`config.connection.…`):
///
/// - `base_url`: up to and without `/responses`. Default OpenAI's,
///   [`DEFAULT_BASE_URL`].
/// - `api_key`: sent as `Authorization: Bearer <key>`; `None` for a server that needs none.
/// - `headers`: extra headers (e.g. an `OpenAI-Organization`).
/// - `retry`: when failed calls are tried again.
///
/// The key is never shown by `Debug`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenAiResponsesConfig {
    /// Where the server is and how to call it.
    pub connection: Connection,
    /// The model, e.g. `o4-mini` or `gpt-5`.
    pub model: String,
    /// `temperature`, when set (reasoning models refuse it).
    pub temperature: Option<f64>,
    /// `max_output_tokens`, when set: the answer's limit, reasoning included.
    pub max_output_tokens: Option<u32>,
    /// `reasoning.effort` (`minimal`, `low`, `medium`, `high`), when set; for reasoning
    /// models only.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary` (`auto`, `concise`, `detailed`), when set: without it a reasoning
    /// model streams no reasoning text (its encrypted reasoning is kept either way).
    pub reasoning_summary: Option<String>,
    /// Keys merged into the request body last, for what a server offers beyond the common
    /// request (`service_tier`, `truncation`, `prompt_cache_key`, …). A `null` value removes
    /// the key (e.g. `include` for a server that refuses it).
    pub extra_body: Map<String, Value>,
}

impl OpenAiResponsesConfig {
    /// A configuration for this model on OpenAI, with no key and the defaults.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            connection: Connection::new(DEFAULT_BASE_URL),
            model: model.into(),
            temperature: None,
            max_output_tokens: None,
            reasoning_effort: None,
            reasoning_summary: None,
            extra_body: Map::new(),
        }
    }
}

/// A [`Brain`] backed by a Responses API server. Cheap to share: one connection pool serves
/// every call.
#[derive(Debug)]
pub struct OpenAiResponsesBrain {
    config: OpenAiResponsesConfig,
    transport: HttpTransport,
}

impl OpenAiResponsesBrain {
    /// A brain with this configuration, checked up front.
    ///
    /// # Errors
    /// [`BrainError::Config`] for a base URL that is not an `http`/`https` URL, a header or key
    /// that cannot be sent as a header, or when the HTTP client cannot be built.
    pub fn new(config: OpenAiResponsesConfig) -> Result<Self, BrainError> {
        let transport = config.connection.transport(
            |base| format!("{base}/responses"),
            HeaderMap::new(),
            KeyHeader::Bearer,
        )?;
        Ok(Self { config, transport })
    }
}

impl Brain for OpenAiResponsesBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let settings = Settings {
            model: &self.config.model,
            temperature: self.config.temperature,
            max_output_tokens: self.config.max_output_tokens,
            reasoning_effort: self.config.reasoning_effort.as_deref(),
            reasoning_summary: self.config.reasoning_summary.as_deref(),
            extra_body: &self.config.extra_body,
        };
        let body = request_body(settings, &request).to_string().into_bytes();
        self.transport
            .stream(body, &request.trace_context, EventParser::default)
    }

    fn describe(&self) -> String {
        format!("openai-responses:{}", self.config.model)
    }

    fn provider_name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> Option<&str> {
        Some(&self.config.model)
    }

    /// The Responses API takes `model`, `temperature`, `top_p` and `max_tokens` (as
    /// `max_output_tokens`). It has no `stop`, `seed`, penalties or choices, so those are
    /// refused rather than dropped.
    fn check_settings(&self, settings: &GenerationSettings) -> Result<(), InvalidField> {
        settings.check()?;
        let unsupported = [
            ("stop", !settings.stop.is_empty()),
            ("seed", settings.seed.is_some()),
            ("frequency_penalty", settings.frequency_penalty.is_some()),
            ("presence_penalty", settings.presence_penalty.is_some()),
        ];
        if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
            return Err(InvalidField::new(
                *field,
                "is not supported by OpenAI's Responses API (this agent's provider)",
            ));
        }
        if let Some(n) = settings.n.filter(|n| *n != 1) {
            return Err(InvalidField::new(
                "n",
                format!("must be 1: OpenAI's Responses API makes one choice, got {n}"),
            ));
        }
        Ok(())
    }
}
