//! [`OpenAiBrain`]: the OpenAI Chat Completions API over HTTP, for OpenAI and every
//! OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, DeepSeek).
//!
//! A model call is `POST {base_url}/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, so the usage arrives in a last chunk. A run's generation
//! settings override the configured ones, each under its Chat Completions name; with `n` > 1 the
//! first choice is the answer and the others come as data ([`chunk`]). Three pieces, each its
//! own concept: `request.rs` maps the conversation to the request body (pure, its docs say how
//! each part travels), [`chunk`] turns the streamed chunks into brain events (pure), and the
//! shared HTTP transport sends, retries and reads the SSE in between.
//!
//! ```no_run
//! use agentwire_brain::{Brain, BrainRequest, OpenAiBrain, OpenAiConfig};
//! use agentwire_core::Message;
//!
//! let mut config = OpenAiConfig::new("llama3.2");
//! config.connection.base_url = "http://127.0.0.1:11434/v1".into(); // Ollama: no key needed
//! let brain = OpenAiBrain::new(config)?;
//! let stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! ```

pub mod chunk;
mod request;

use reqwest::header::HeaderMap;
use serde_json::{Map, Value};

use crate::connection::KeyHeader;
use crate::http::HttpTransport;
use crate::{
    Brain, BrainError, BrainRequest, BrainStream, Connection, GenerationSettings, InvalidField,
};
pub use chunk::{ChunkParser, OTHER_CHOICE};
use request::{Settings, request_body};

/// OpenAI's own endpoint, the default `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How to reach a Chat Completions server and what to ask it for.
///
/// Made with [`OpenAiConfig::new`]; every field is public to set. What the [`Connection`]
/// means here (`config.connection.…`):
///
/// - `base_url`: up to and without `/chat/completions`. Default [`DEFAULT_BASE_URL`].
/// - `api_key`: sent as `Authorization: Bearer <key>`; `None` for local servers.
/// - `headers`: extra headers (e.g. OpenRouter's `HTTP-Referer`, an `OpenAI-Organization`).
/// - `retry`: when failed calls are tried again.
///
/// The key is never shown by `Debug`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// Where the server is and how to call it.
    pub connection: Connection,
    /// The model, e.g. `gpt-4o-mini`.
    pub model: String,
    /// `temperature`, when set.
    pub temperature: Option<f64>,
    /// `max_tokens`, when set (the spelling every compatible server reads; OpenAI's reasoning
    /// models want `max_completion_tokens`, which `extra_body` can send).
    pub max_tokens: Option<u32>,
    /// Keys merged into the request body last, for what a server offers beyond the common
    /// request (`reasoning_effort`, `top_p`, OpenRouter's `provider`, …). A `null` value removes
    /// the key (e.g. `stream_options` for a server that refuses it).
    pub extra_body: Map<String, Value>,
}

impl OpenAiConfig {
    /// A configuration for this model on OpenAI, with no key and the defaults.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            connection: Connection::new(DEFAULT_BASE_URL),
            model: model.into(),
            temperature: None,
            max_tokens: None,
            extra_body: Map::new(),
        }
    }
}

/// A [`Brain`] backed by a Chat Completions server. Cheap to share: one connection pool serves
/// every call.
#[derive(Debug)]
pub struct OpenAiBrain {
    config: OpenAiConfig,
    transport: HttpTransport,
}

impl OpenAiBrain {
    /// A brain with this configuration, checked up front.
    ///
    /// # Errors
    /// [`BrainError::Config`] for a base URL that is not an `http`/`https` URL, a header or key
    /// that cannot be sent as a header, or when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, BrainError> {
        let transport = config.connection.transport(
            |base| format!("{base}/chat/completions"),
            HeaderMap::new(),
            KeyHeader::Bearer,
        )?;
        Ok(Self { config, transport })
    }
}

impl Brain for OpenAiBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let settings = Settings {
            model: &self.config.model,
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            extra_body: &self.config.extra_body,
        };
        let body = request_body(settings, &request).to_string().into_bytes();
        self.transport
            .stream(body, &request.trace_context, ChunkParser::default)
    }

    fn describe(&self) -> String {
        format!("openai:{}", self.config.model)
    }

    fn provider_name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> Option<&str> {
        Some(&self.config.model)
    }

    /// Chat Completions takes every setting (within the ranges [`GenerationSettings::check`]
    /// allows, OpenAI's own); a compatible server that does not know one refuses or ignores it
    /// as it would any request.
    fn check_settings(&self, settings: &GenerationSettings) -> Result<(), InvalidField> {
        settings.check()
    }
}
