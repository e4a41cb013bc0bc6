//! [`StateSchema`]: the JSON Schema a session's shared state must match, compiled once per
//! agent, with problems named by where they are in the state.

use std::fmt;

use serde_json::Value;

/// An agent's schema for its sessions' shared state (`state_schema` in `agentwire.toml`).
///
/// Every state a run or a client sets is checked against it: an `update_state` call once all
/// its operations are applied, a tool's patch, a client's `PUT` or `PATCH`. A `null` state
/// (none set, or cleared) is not checked: it is the absence of a state.
///
/// ```
/// use agentwire_tools::StateSchema;
/// use serde_json::json;
///
/// let schema = StateSchema::compile(&json!({
///     "type": "object",
///     "properties": {"count": {"type": "integer"}},
///     "required": ["count"]
/// }))?;
/// assert!(schema.check(&json!({"count": 2})).is_ok());
/// assert_eq!(
///     schema.check(&json!({"count": "two"})),
///     Err(vec!["at '/count': \"two\" is not of type \"integer\"".to_owned()])
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StateSchema {
    validator: jsonschema::Validator,
    schema: Value,
}

/// A state schema that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("the state schema is not a valid JSON Schema: {reason}")]
pub struct InvalidStateSchema {
    /// What is wrong with it, as the validator says.
    pub reason: String,
}

impl StateSchema {
    /// Compiles `schema` (any JSON Schema draft the validator knows; 2020-12 by default).
    pub fn compile(schema: &Value) -> Result<Self, InvalidStateSchema> {
        let validator = jsonschema::validator_for(schema).map_err(|error| InvalidStateSchema {
            reason: error.to_string(),
        })?;
        Ok(Self {
            validator,
            schema: schema.clone(),
        })
    }

    /// The schema as it was given.
    pub fn as_value(&self) -> &Value {
        &self.schema
    }

    /// Checks `document`; on failure, each problem with where it is, as a JSON Pointer into
    /// the state (`at '/items/2/done': "yes" is not of type "boolean"`). `null` always passes.
    pub fn check(&self, document: &Value) -> Result<(), Vec<String>> {
        if document.is_null() {
            return Ok(());
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(document)
            .map(|error| {
                let at = error.instance_path().to_string();
                match at.as_str() {
                    "" => format!("at the root: {error}"),
                    at => format!("at '{at}': {error}"),
                }
            })
            .collect();
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems),
        }
    }
}

impl fmt::Debug for StateSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateSchema")
            .field("schema", &self.schema)
            .finish()
    }
}
