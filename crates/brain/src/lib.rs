//! The Brain: agentwire's gateway to language models. A [`Brain`] takes the conversation so far
//! and the tools on offer, and streams what the model produces as [`BrainEvent`]s: text,
//! reasoning and refusal deltas, tool calls whose arguments arrive as raw JSON text, provider
//! data with no other place, and a finish with its reason and token usage. Nothing a provider
//! streams is dropped unseen: what no event carries is logged with `tracing`.
//!
//! This crate holds the trait, the request and event types, and the brains: the scripted one
//! (tests, demos, load), the offline demo brain of the default agent, and the provider adapters
//! over one shared HTTP transport (a [`Connection`] checked once; retries per [`RetryPolicy`]
//! before any output; SSE read incrementally into a provider's [`StreamParser`]) and one
//! provider-neutral reading of the history. It knows nothing of runs, tools' execution or the
//! event protocol: the runtime turns brain events into message parts.
//!
//! Dropping a [`BrainStream`] cancels the model call at once.
//!
//! ```
//! use agentwire_brain::{Brain, BrainEvent, BrainRequest, FinishReason, ScriptedBrain};
//! use agentwire_core::Message;
//! use futures::StreamExt;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let brain = ScriptedBrain::from_json(r#"{"turns": [[
//!     {"type": "text_delta", "text": "Hello"},
//!     {"type": "finish", "reason": "stop"}
//! ]]}"#)?;
//! let request = BrainRequest::new(vec![Message::user("Hi")]);
//! let events: Vec<_> = brain.stream(request).collect().await;
//! assert_eq!(events[0].as_ref().ok(), Some(&BrainEvent::TextDelta { text: "Hello".into() }));
//! assert!(matches!(&events[1], Ok(BrainEvent::Finish { reason: FinishReason::Stop, .. })));
//! # Ok::<(), agentwire_brain::BrainError>(())
//! # }).unwrap();
//! ```

pub mod anthropic;
mod connection;
pub mod demo;
mod error;
mod event;
mod history;
mod http;
pub mod openai;
pub mod openai_responses;
mod request;
pub mod scripted;

use std::pin::Pin;

use futures::Stream;

pub use agentwire_core::{GenerationSettings, InvalidField, ToolSpec};
pub use anthropic::{AnthropicBrain, AnthropicConfig};
pub use connection::Connection;
pub use demo::DemoBrain;
pub use error::BrainError;
pub use event::{BrainEvent, FinishReason};
pub use http::{RetryPolicy, StreamParser};
pub use openai::{OpenAiBrain, OpenAiConfig};
pub use openai_responses::{OpenAiResponsesBrain, OpenAiResponsesConfig};
pub use request::BrainRequest;
pub use scripted::ScriptedBrain;

/// What a brain streams: events, then nothing after a `finish`. An `Err` item is terminal: the
/// model call failed and nothing more follows.
pub type BrainStream = Pin<Box<dyn Stream<Item = Result<BrainEvent, BrainError>> + Send + 'static>>;

/// A language model behind a uniform streaming interface.
///
/// Object-safe, so agents hold an `Arc<dyn Brain>` chosen by configuration.
pub trait Brain: Send + Sync {
    /// Starts one model call. The call runs while the stream is polled; dropping the stream
    /// cancels it at once (for a provider, the HTTP request is aborted).
    fn stream(&self, request: BrainRequest) -> BrainStream;

    /// A short name for logs and the agent card, e.g. `openai:gpt-4o-mini`.
    fn describe(&self) -> String;

    /// The provider as the OpenTelemetry GenAI conventions name it (`gen_ai.provider.name`):
    /// `openai` and `anthropic` are their well-known values (an OpenAI-compatible server
    /// reached through the `openai` adapter is `openai`, the client's best knowledge); a brain
    /// that is no provider's model names itself (`scripted`, `demo`). The default, for brains
    /// that do not say, is `agentwire`.
    fn provider_name(&self) -> &'static str {
        "agentwire"
    }

    /// The model a call asks for when the run's settings name none (`gen_ai.request.model`);
    /// `None`, the default, for a brain that has no model.
    fn model(&self) -> Option<&str> {
        None
    }

    /// Whether this brain can honour a run's generation settings (already within
    /// [`GenerationSettings::check`]'s ranges), asked before the run starts so that a setting
    /// the provider would refuse or ignore is refused to the client, naming it, instead of
    /// being dropped. The default, for brains that are not models (scripted, demo), takes none:
    /// only `n = 1`, which every brain does anyway.
    ///
    /// # Errors
    /// [`InvalidField`] naming the first setting this brain cannot take.
    fn check_settings(&self, settings: &GenerationSettings) -> Result<(), InvalidField> {
        match settings.set_fields().first() {
            Some(field) => Err(InvalidField::new(
                *field,
                format!(
                    "cannot be set: {} takes no generation settings",
                    self.describe()
                ),
            )),
            None => Ok(()),
        }
    }
}
