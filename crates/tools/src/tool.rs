//! The [`Tool`] trait and what a call is given and gives back.

use std::fmt;

use agentwire_core::{
    Part, RunId, ToolCall, ToolCallId, ToolErrorKind, ToolKind, ToolSpec, TraceContext,
};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::shared_state::SharedState;

/// What a tool call yields: its result as JSON, or why it failed.
pub type ToolFuture<'a> = BoxFuture<'a, Result<Value, ToolFailure>>;

/// Something an agent's model may call.
///
/// Object-safe, so agents hold their tools as `Arc<dyn Tool>`. The arguments a tool is given
/// have already been checked against its schema.
pub trait Tool: Send + Sync {
    /// The tool's name, description and argument schema, as the model is shown them.
    fn spec(&self) -> &ToolSpec;

    /// Runs one call. A tool that can take long should watch `context.cancel`; the runtime
    /// also drops the future when the run is canceled or the call times out.
    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_>;

    /// Where the tool comes from, for protocols that show calls by origin (AgentScope's
    /// `mcp_call`, `plugin_call`, …). Default: [`ToolKind::Function`].
    fn kind(&self) -> ToolKind {
        ToolKind::Function
    }

    /// A part that shows the reader what a successful call made, added to the message right
    /// after the call's `tool_result`: the `artifact` [`save_artifact`](crate::SaveArtifact)
    /// saved, the `plan_update` [`update_plan`](crate::UpdatePlan) made. `call` is the call as
    /// the model made it (its arguments passed the schema) and `result` what it returned.
    /// `None`, the default, adds nothing.
    fn result_part(&self, call: &ToolCall, result: &Value) -> Option<Part> {
        let _ = (call, result);
        None
    }
}

/// What a call knows besides its arguments.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The call being run.
    pub tool_call_id: ToolCallId,
    /// The run it is part of, when a run makes it. With `tool_call_id` it names the call once
    /// and for all: a call is never made twice under them, so a tool with effects can take
    /// them as an idempotency key.
    pub run_id: Option<RunId>,
    /// The W3C trace context of the call's `execute_tool` span, for a tool that calls out
    /// (MCP sends it in the request's `_meta`). Empty when the run is not traced.
    pub trace_context: TraceContext,
    /// Fires when the run is canceled.
    pub cancel: CancellationToken,
    /// The shared state of the run's session, when a runtime hosts one: a tool may read it
    /// and change it ([`SharedState::patch`], [`SharedState::replace`]); readers of the run
    /// see each change. `None` outside a run.
    pub state: Option<SharedState>,
}

/// Why a tool call failed. The message is shown to the model in a `tool_error`, so it should say
/// what went wrong in words the model can act on.
///
/// Most failures are [`ToolErrorKind::Execution`] ([`ToolFailure::new`], or any
/// `std::error::Error` through `?`). A tool that finds its arguments wrong in a way the schema
/// cannot express (a path that leaves the workspace) says so with
/// [`ToolFailure::invalid_arguments`], which the model reads as a `VALIDATION` error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFailure {
    kind: ToolErrorKind,
    message: String,
}

impl ToolFailure {
    /// An execution failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            kind: ToolErrorKind::Execution,
            message: message.into(),
        }
    }

    /// The arguments were wrong; `message` names the argument and what is wrong with it, e.g.
    /// `'path' must stay inside the workspace`.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self {
            kind: ToolErrorKind::Validation,
            message: message.into(),
        }
    }

    /// Whether the arguments were wrong or the execution failed.
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Any error converts, so a tool body can use `?`.
impl<E: std::error::Error> From<E> for ToolFailure {
    fn from(error: E) -> Self {
        Self::new(error.to_string())
    }
}
