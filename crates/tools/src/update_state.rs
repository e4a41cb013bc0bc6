//! [`UpdateState`]: the built-in `update_state` tool, with which a model changes the session's
//! shared state (what a client shows beside the conversation) by JSON Patch.

use agentwire_core::ToolSpec;
use futures::FutureExt;
use json_patch::Patch;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::shared_state::StateError;
use crate::tool::{Tool, ToolContext, ToolFailure, ToolFuture};

/// `update_state {ops: [{op, path, from?, value?}]}`: RFC 6902 operations on the session's
/// shared state, applied in order, all or nothing. It answers `{"applied": n}`.
///
/// The shape is RFC 6902's own, under one key (providers want an object for arguments), so a
/// model writes what it knows from JSON Patch: `{"ops": [{"op": "add", "path": "/todo/-",
/// "value": {"title": "Write docs"}}]}`. Paths are JSON Pointers (RFC 6901) into the state.
///
/// A runtime that hosts the state applies a call **while its arguments stream**: an operation
/// whose `op` and `path` come before its `value` shows in the state as the value is written
/// (the runtime's orchestrator does this; see `agentwire_core::patch_stream`). Called
/// through a toolbox it applies the operations at once, through [`ToolContext::state`]. Either
/// way a call that does not apply, or leaves a state the agent's state schema refuses, changes
/// nothing and is a `VALIDATION` error naming the operation or the problem, so the model can
/// correct it.
#[derive(Debug)]
pub struct UpdateState {
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateStateArgs {
    ops: Patch,
}

impl UpdateState {
    /// The tool's name.
    pub const NAME: &'static str = "update_state";

    /// The tool.
    pub fn new() -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "ops": {
                    "type": "array",
                    "description": "JSON Patch (RFC 6902) operations, applied in order, all or \
                        nothing. Write each operation's \"op\" and \"path\" before its \"value\".",
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": {
                                "type": "string",
                                "enum": ["add", "remove", "replace", "move", "copy", "test"]
                            },
                            "path": {
                                "type": "string",
                                "description": "A JSON Pointer (RFC 6901) into the state, e.g. \
                                    \"/todo/0/done\"; \"/todo/-\" adds at the end of an array."
                            },
                            "from": {
                                "type": "string",
                                "description": "The pointer to take the value from (move, copy)."
                            },
                            "value": {
                                "description": "The value (add, replace, test): any JSON."
                            }
                        },
                        "required": ["op", "path"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["ops"],
            "additionalProperties": false
        });
        Self {
            spec: ToolSpec::new(
                Self::NAME,
                "Change the shared state that the user sees beside the conversation (a JSON \
                 document; your instructions show it as it is now) with JSON Patch operations. \
                 The user sees each change as you write it.",
                parameters,
            ),
        }
    }

    /// The `VALIDATION` failure a refused call is answered with, as a toolbox words it (a
    /// runtime that applies calls as they stream answers with the same words).
    pub fn refusal(error: &StateError) -> ToolFailure {
        let problem = error.to_string();
        ToolFailure::invalid_arguments(format!(
            "Validation failed for tool '{}': {}.",
            Self::NAME,
            problem.trim_end_matches('.')
        ))
    }

    /// The result of a call that made `applied` operations.
    pub fn result(applied: usize) -> Value {
        json!({ "applied": applied })
    }
}

impl Default for UpdateState {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for UpdateState {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_> {
        let outcome = (|| {
            let Some(state) = &context.state else {
                return Err(ToolFailure::new(
                    "this run has no shared state to update (it is not hosted in a session)",
                ));
            };
            let args = UpdateStateArgs::deserialize(args).map_err(|error| {
                ToolFailure::invalid_arguments(format!(
                    "'ops' must be a list of JSON Patch operations: {error}"
                ))
            })?;
            state
                .patch(&args.ops)
                .map_err(|error| ToolFailure::invalid_arguments(error.to_string()))?;
            Ok(Self::result(args.ops.len()))
        })();
        futures::future::ready(outcome).boxed()
    }
}
