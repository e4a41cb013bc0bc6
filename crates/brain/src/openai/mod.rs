//! [`OpenAiBrain`]: the OpenAI Chat Completions API over HTTP, for OpenAI and every
//! OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, DeepSeek).
//!
//! A model call is `POST {base_url}/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, so the usage arrives in a last chunk. Three pieces, each its
//! own concept: `request.rs` maps the conversation to the request body (pure, its docs say how
//! each part travels), [`chunk`] turns the streamed chunks into brain events (pure), and the
//! shared HTTP transport sends, retries and reads the SSE in between.
//!
//! ```no_run
//! use agentwire_brain::{Brain, BrainRequest, OpenAiBrain, OpenAiConfig};
//! use agentwire_core::Message;
//!
//! let mut config = OpenAiConfig::new("llama3.2");
//! config.base_url = "http://127.0.0.1:11434/v1".into(); // Ollama: no key needed
//! let brain = OpenAiBrain::new(config)?;
//! let stream = brain.stream(BrainRequest::new(vec![Message::user("Hi")]));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! ```

pub mod chunk;
mod request;

use std::fmt;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::http::{HttpTransport, ProviderRequest};
use crate::{Brain, BrainError, BrainRequest, BrainStream, RetryPolicy};
pub use chunk::ChunkParser;
use request::{Settings, request_body};

/// OpenAI's own endpoint, the default `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How to reach a Chat Completions server and what to ask it for.
///
/// Made with [`OpenAiConfig::new`]; every field is public to set. The key is never shown by
/// `Debug`.
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API's base URL, up to and without `/chat/completions`. Default [`DEFAULT_BASE_URL`].
    pub base_url: String,
    /// The model, e.g. `gpt-4o-mini`.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>`. `None` (or empty) sends no `Authorization`:
    /// local servers need none.
    pub api_key: Option<String>,
    /// Extra headers sent with every request (e.g. OpenRouter's `HTTP-Referer`, an
    /// `OpenAI-Organization`).
    pub headers: Vec<(String, String)>,
    /// When failed calls are tried again. Default [`RetryPolicy::default`].
    pub retry: RetryPolicy,
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
            base_url: DEFAULT_BASE_URL.into(),
            model: model.into(),
            api_key: None,
            headers: Vec::new(),
            retry: RetryPolicy::default(),
            temperature: None,
            max_tokens: None,
            extra_body: Map::new(),
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers)
            .field("retry", &self.retry)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

/// A [`Brain`] backed by a Chat Completions server. Cheap to share: one connection pool serves
/// every call.
#[derive(Debug)]
pub struct OpenAiBrain {
    config: OpenAiConfig,
    url: String,
    headers: HeaderMap,
    transport: HttpTransport,
}

impl OpenAiBrain {
    /// A brain with this configuration, checked up front.
    ///
    /// # Errors
    /// [`BrainError::Config`] for a base URL that is not an `http`/`https` URL, a header or key
    /// that cannot be sent as a header, or when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, BrainError> {
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let parsed = reqwest::Url::parse(&url).map_err(|error| BrainError::Config {
            message: format!("the base URL {:?} is not a URL: {error}", config.base_url),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BrainError::Config {
                message: format!("the base URL {:?} is not http or https", config.base_url),
            });
        }
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let header = HeaderName::try_from(name.as_str())
                .ok()
                .zip(HeaderValue::try_from(value.as_str()).ok());
            let Some((name, value)) = header else {
                return Err(BrainError::Config {
                    message: format!("the header {name:?} cannot be sent as given"),
                });
            };
            headers.append(name, value);
        }
        if let Some(key) = config.api_key.as_deref().filter(|key| !key.is_empty()) {
            let mut value =
                HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| BrainError::Config {
                    message: "the API key holds characters a header cannot carry".into(),
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
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

impl Brain for OpenAiBrain {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        let settings = Settings {
            model: &self.config.model,
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            extra_body: &self.config.extra_body,
        };
        let body = request_body(settings, &request).to_string().into_bytes();
        let request = ProviderRequest {
            url: self.url.clone(),
            headers: self.headers.clone(),
            body,
        };
        self.transport.stream(request, ChunkParser::default)
    }

    fn describe(&self) -> String {
        format!("openai:{}", self.config.model)
    }
}
