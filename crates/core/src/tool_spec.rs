//! [`ToolSpec`]: a tool as a model or a client sees it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::settings::InvalidField;

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

/// Where a tool comes from, as protocols that tell tool calls apart by origin show its calls
/// (AgentScope's `function_call`, `plugin_call`, `component_call` and `mcp_call` messages).
/// The model is offered every kind alike; only how a call is shown differs.
///
/// ```json
/// {"type": "mcp", "server": "weather"}
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolKind {
    /// A function of the agent's own, or a client's (the default).
    #[default]
    Function,
    /// A tool declared as a plugin.
    Plugin,
    /// A tool declared as a component.
    Component,
    /// A tool of an MCP server.
    Mcp {
        /// The server's name (AgentScope's `server_label`).
        server: String,
    },
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl ToolSpec {
    /// A tool a client declares in its request, in either shape clients send: OpenAI's function
    /// format `{"type": "function", "function": {name, description, parameters}}` (AgentScope's
    /// `AgentRequest.tools`; `type` may be left out) or the function itself
    /// `{name, description, parameters}` (the native body, AG-UI). `at` is the field's path for
    /// errors, e.g. `tools[0]`.
    ///
    /// The name must be what every provider accepts (1 to 64 of `A-Z a-z 0-9 _ -`), and the
    /// parameters, when given, an object schema; no parameters means none (`{"type": "object",
    /// "properties": {}}`).
    ///
    /// ```
    /// use agentwire_core::ToolSpec;
    /// use serde_json::json;
    ///
    /// let declared = json!({"type": "function", "function": {
    ///     "name": "get_location", "description": "Where the user is",
    ///     "parameters": {"type": "object", "properties": {}}}});
    /// let tool = ToolSpec::from_declaration(&declared, "tools[0]")?;
    /// assert_eq!(tool.name, "get_location");
    ///
    /// let error = ToolSpec::from_declaration(&json!({"function": {"name": "a b"}}), "tools[1]");
    /// assert!(error.unwrap_err().to_string().starts_with("`tools[1].function.name` must be"));
    /// # Ok::<(), agentwire_core::InvalidField>(())
    /// ```
    ///
    /// # Errors
    /// [`InvalidField`] naming the field (`tools[0].function.name`, …) and what is wrong.
    pub fn from_declaration(value: &Value, at: &str) -> Result<Self, InvalidField> {
        let Some(object) = value.as_object() else {
            return Err(InvalidField::new(
                at,
                "must be an object declaring a function",
            ));
        };
        let (function, at) = match (object.get("type"), object.get("function")) {
            (Some(kind), _) if kind.as_str() != Some("function") && !kind.is_null() => {
                return Err(InvalidField::new(
                    format!("{at}.type"),
                    format!("must be \"function\" (the only kind of tool), got {kind}"),
                ));
            }
            (_, Some(Value::Object(function))) => (function, format!("{at}.function")),
            (_, Some(_)) => {
                return Err(InvalidField::new(
                    format!("{at}.function"),
                    "must be an object with `name`, `description` and `parameters`",
                ));
            }
            (_, None) => (object, at.to_owned()),
        };
        let name = match function.get("name") {
            Some(Value::String(name)) if valid_name(name) => name.clone(),
            Some(Value::String(name)) => {
                return Err(InvalidField::new(
                    format!("{at}.name"),
                    format!("must be 1 to 64 letters, digits, `_` or `-`, got {name:?}"),
                ));
            }
            _ => {
                return Err(InvalidField::new(
                    format!("{at}.name"),
                    "is required: the name the model calls the tool by",
                ));
            }
        };
        let description = match function.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(description)) => description.clone(),
            Some(_) => {
                return Err(InvalidField::new(
                    format!("{at}.description"),
                    "must be a string",
                ));
            }
        };
        let parameters = match function.get("parameters") {
            None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
            Some(Value::Object(schema))
                if schema.get("type").is_none_or(|kind| kind == "object") =>
            {
                Value::Object(schema.clone())
            }
            Some(_) => {
                return Err(InvalidField::new(
                    format!("{at}.parameters"),
                    "must be a JSON Schema of type \"object\"",
                ));
            }
        };
        Ok(Self::new(name, description, parameters))
    }

    /// Every tool of a request's `tools` list (`field` is the list's name), each by
    /// [`from_declaration`](Self::from_declaration); a name declared twice is refused.
    ///
    /// # Errors
    /// [`InvalidField`] naming the first bad entry.
    pub fn from_declarations(values: &[Value], field: &str) -> Result<Vec<Self>, InvalidField> {
        let mut tools: Vec<Self> = Vec::with_capacity(values.len());
        for (index, value) in values.iter().enumerate() {
            let at = format!("{field}[{index}]");
            let tool = Self::from_declaration(value, &at)?;
            if tools.iter().any(|earlier| earlier.name == tool.name) {
                return Err(InvalidField::new(
                    at,
                    format!("declares tool '{}' a second time", tool.name),
                ));
            }
            tools.push(tool);
        }
        Ok(tools)
    }
}

/// A tool name OpenAI and Anthropic both accept.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(value: Value) -> String {
        ToolSpec::from_declarations(&[value], "tools")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn both_shapes_give_the_same_tool() {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let openai = json!({"type": "function", "function": {"name": "find", "description": "d", "parameters": schema}});
        let untyped =
            json!({"function": {"name": "find", "description": "d", "parameters": schema}});
        let bare = json!({"name": "find", "description": "d", "parameters": schema});
        let expected = ToolSpec::new("find", "d", schema.clone());
        for value in [openai, untyped, bare] {
            assert_eq!(ToolSpec::from_declaration(&value, "t").unwrap(), expected);
        }
        let minimal = ToolSpec::from_declaration(&json!({"name": "now"}), "t").unwrap();
        assert_eq!(
            minimal.parameters,
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(
            error(json!({"type": "retrieval"})),
            "`tools[0].type` must be \"function\" (the only kind of tool), got \"retrieval\""
        );
        assert_eq!(
            error(json!({"type": "function"})),
            "`tools[0].name` is required: the name the model calls the tool by"
        );
        assert_eq!(
            error(json!({"function": {"name": "x", "parameters": {"type": "string"}}})),
            "`tools[0].function.parameters` must be a JSON Schema of type \"object\""
        );
        assert_eq!(
            error(json!({"function": "x"})),
            "`tools[0].function` must be an object with `name`, `description` and `parameters`"
        );
        assert_eq!(
            error(json!({"name": "x".repeat(65)})),
            format!(
                "`tools[0].name` must be 1 to 64 letters, digits, `_` or `-`, got {:?}",
                "x".repeat(65)
            )
        );
        assert_eq!(
            error(json!(3)),
            "`tools[0]` must be an object declaring a function"
        );
        let twice =
            ToolSpec::from_declarations(&[json!({"name": "a"}), json!({"name": "a"})], "tools");
        assert_eq!(
            twice.unwrap_err().to_string(),
            "`tools[1]` declares tool 'a' a second time"
        );
    }
}
