//! [`BrainRequest`]: what a model call is given.

use agentwire_core::Message;
use serde_json::Value;

/// One model call's input: the conversation so far (assistant turns with their tool calls and
/// results as parts, which each provider maps to its own message shapes), the system prompt, and
/// the tools the model may call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BrainRequest {
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The tools on offer.
    pub tools: Vec<ToolSpec>,
    /// Which model call of the run this is, counting from 0 (a scripted brain answers the i-th
    /// call with its i-th turn).
    pub step: u32,
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

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model to decide when to call it.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}
