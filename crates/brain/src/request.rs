//! [`BrainRequest`]: what a model call is given.

use std::sync::Arc;

use agentwire_core::{GenerationSettings, Message, ToolSpec, TraceContext};

/// One model call's input: the conversation so far (assistant turns with their tool calls and
/// results as parts, which each provider maps to its own message shapes), the system prompt, the
/// tools the model may call, and the run's generation settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BrainRequest {
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools on offer.
    /// Shared: an agent offers the same tools on every call.
    pub tools: Arc<[ToolSpec]>,
    /// Which model call of the run this is, counting from 0 (a scripted brain answers the i-th
    /// call with its i-th turn).
    pub step: u32,
    /// The run's generation settings: each one set overrides the brain's configured default
    /// for this call (checked beforehand by [`Brain::check_settings`](crate::Brain)).
    pub settings: GenerationSettings,
    /// The W3C trace context headers the provider request carries (the `chat` span it
    /// continues). Empty, the default, when the run is not traced: nothing is added.
    pub trace_context: TraceContext,
}

impl BrainRequest {
    /// A request with these messages and nothing else.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}
