//! [`ToolSpec`]: a tool as a model or a client sees it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool's name, what it does, and the JSON Schema of its arguments. The model is offered
/// tools in this shape, and clients declare their own tools (frontend tools) in it.
///
/// ```json
/// {"name": "write_file", "description": "Write a file", "parameters": {"type": "object"}}
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model to decide when to call it.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
}

impl ToolSpec {
    /// A spec with these parts.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}
