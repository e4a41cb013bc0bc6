//! [`Toolbox`]: an agent's tools by name, and how one call is run: validated, executed under
//! limits, and answered with a `tool_result` or a `tool_error` part.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{
    Part, RunId, ToolCall, ToolError, ToolErrorKind, ToolResult, ToolSpec, TraceContext,
};
use indexmap::IndexMap;
use serde_json::Value;
use tokio::task::JoinError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::output::{self, TooLarge};
use crate::shared_state::SharedState;
use crate::tool::{Tool, ToolContext, ToolFailure};
use crate::validation::ArgsSchema;

/// An agent's tools: what the model is offered, and the one place calls are run.
///
/// [`Toolbox::run`] never fails and never panics: whatever goes wrong becomes a `tool_error`
/// the model reads, and the run goes on.
///
/// - `VALIDATION` (the tool did not run): an unknown tool, arguments that are not a JSON
///   object (or not JSON at all), arguments that do not match the tool's schema (each bad,
///   missing or unexpected argument is named), or a tool that rejected its arguments with
///   [`ToolFailure::invalid_arguments`].
/// - `EXECUTION`: the tool returned a [`ToolFailure`], panicked, ran past
///   [`ToolLimits::timeout`], returned more than [`ToolLimits::max_output_bytes`] (see below),
///   or the call was canceled.
///
/// Each call runs as its own Tokio task, so calls run in parallel on a multi-threaded runtime,
/// a tool that blocks holds up only itself, and a panic is caught at the task's edge. The task
/// is aborted as soon as `run`'s future is dropped, the call's token fires or the timeout
/// passes; the tool's own [`ToolContext::cancel`] fires then too, for work it started
/// elsewhere. `run` holds no lock, so any number of calls may be awaited at once (e.g. in a
/// `FuturesUnordered`). It must be called inside a Tokio runtime with time enabled.
///
/// Output over the cap: a string result is cut to fit and ends with a `…[truncated: …]`
/// marker; any other result is an `EXECUTION` error naming its size and the limit.
///
/// Tools are kept in the order they were added, so the model is offered them in a stable
/// order.
#[derive(Default)]
pub struct Toolbox {
    tools: IndexMap<String, Entry>,
    limits: ToolLimits,
}

/// Limits on each tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolLimits {
    /// How long a call may run before it is stopped with an `EXECUTION` error. Default: 2
    /// minutes.
    pub timeout: Duration,
    /// The most bytes of JSON a result may take. Default: 128 KiB (some 32,000 tokens, a
    /// large share of a small model's context).
    pub max_output_bytes: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            max_output_bytes: 128 * 1024,
        }
    }
}

/// Why a tool could not join a toolbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolboxError {
    /// Another tool already has this name.
    #[error("a tool named '{name}' is already in the toolbox")]
    DuplicateName {
        /// The name both tools have.
        name: String,
    },
    /// The name is not one providers accept: 1 to 64 ASCII letters, digits, `_` or `-`.
    #[error("tool name '{name}' must be 1 to 64 ASCII letters, digits, '_' or '-'")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// The parameters are not a valid JSON Schema with an object at the root.
    #[error("the parameters schema of tool '{name}' is invalid: {reason}")]
    InvalidSchema {
        /// The tool's name.
        name: String,
        /// What is wrong with the schema.
        reason: String,
    },
}

struct Entry {
    tool: Arc<dyn Tool>,
    schema: ArgsSchema,
}

impl Toolbox {
    /// An empty toolbox whose calls run under `limits`.
    pub fn new(limits: ToolLimits) -> Self {
        Self {
            tools: IndexMap::new(),
            limits,
        }
    }

    /// The limits calls run under.
    pub fn limits(&self) -> ToolLimits {
        self.limits
    }

    /// Adds a tool, compiling its schema once. Errors if the name is taken or not one providers
    /// accept, or the schema is invalid.
    pub fn add(&mut self, tool: impl Tool + 'static) -> Result<(), ToolboxError> {
        self.add_arc(Arc::new(tool))
    }

    /// Adds a shared tool; see [`Toolbox::add`].
    pub fn add_arc(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolboxError> {
        let spec = tool.spec();
        let name = spec.name.clone();
        if !is_valid_name(&name) {
            return Err(ToolboxError::InvalidName { name });
        }
        if self.tools.contains_key(&name) {
            return Err(ToolboxError::DuplicateName { name });
        }
        let schema = ArgsSchema::compile(&spec.parameters).map_err(|reason| {
            ToolboxError::InvalidSchema {
                name: name.clone(),
                reason,
            }
        })?;
        self.tools.insert(name, Entry { tool, schema });
        Ok(())
    }

    /// The specs of the tools, in the order they were added: what the model is offered.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|entry| entry.tool.spec())
    }

    /// Whether a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|entry| &entry.tool)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one call and answers it with a `tool_result` part, or a `tool_error` part saying
    /// what went wrong (see the type's docs). `cancel` stops the call at once: the answer is
    /// then a `tool_error` `EXECUTION` saying the call was canceled.
    pub async fn run(&self, call: &ToolCall, cancel: CancellationToken) -> Part {
        let untraced = TraceContext::default();
        self.run_within(call, None, untraced, cancel, self.limits, None)
            .await
    }

    /// [`run`](Self::run) for the run `run_id` (the tool is told, [`ToolContext::run_id`]),
    /// in the trace `trace_context` ([`ToolContext::trace_context`]; empty: none), under other
    /// limits than the toolbox's own (a run whose server caps its tools' output tighter), with
    /// the run's session's shared state if it has one ([`ToolContext::state`]).
    pub async fn run_within(
        &self,
        call: &ToolCall,
        run_id: Option<&RunId>,
        trace_context: TraceContext,
        cancel: CancellationToken,
        limits: ToolLimits,
        state: Option<SharedState>,
    ) -> Part {
        match self
            .outcome(call, run_id, trace_context, cancel, limits, state)
            .await
        {
            Ok(result) => Part::ToolResult(ToolResult {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: Some(call.tool_name.clone()),
                result,
                is_error: None,
            }),
            Err(failure) => Part::ToolError(ToolError {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: Some(call.tool_name.clone()),
                error_type: failure.kind(),
                message: failure.message().to_owned(),
            }),
        }
    }

    /// The part the tool adds after a successful call ([`Tool::result_part`]): `outcome` is
    /// what [`run`](Self::run) answered `call` with. `None` for an error, an unknown tool, or a
    /// tool that adds nothing.
    pub fn result_part(&self, call: &ToolCall, outcome: &Part) -> Option<Part> {
        let Part::ToolResult(result) = outcome else {
            return None;
        };
        if result.is_error() || result.tool_call_id != call.tool_call_id {
            return None;
        }
        self.get(&call.tool_name)?.result_part(call, &result.result)
    }

    /// Checks a call without running it: the tool exists and the arguments fit its schema. The
    /// error is the `VALIDATION` failure [`run`](Self::run) would answer with. A call that needs
    /// a person's approval is checked first, so nobody is asked to approve a call that cannot
    /// run.
    ///
    /// # Errors
    /// The failure, naming each bad or missing argument, or the unknown tool.
    pub fn check(&self, call: &ToolCall) -> Result<(), ToolFailure> {
        self.checked(call).map(drop)
    }

    fn checked(&self, call: &ToolCall) -> Result<&Entry, ToolFailure> {
        let name = &call.tool_name;
        let Some(entry) = self.tools.get(name) else {
            return Err(self.unknown_tool(name));
        };
        if let Err(problems) = entry.schema.check(call.args.as_value()) {
            return Err(invalid(name, &problems.join("; ")));
        }
        Ok(entry)
    }

    /// The call's result, or its failure with the message the model reads.
    async fn outcome(
        &self,
        call: &ToolCall,
        run_id: Option<&RunId>,
        trace_context: TraceContext,
        cancel: CancellationToken,
        limits: ToolLimits,
        state: Option<SharedState>,
    ) -> Result<Value, ToolFailure> {
        let name = &call.tool_name;
        let entry = self.checked(call)?;
        let args = call.args.as_value();

        // The tool's token is a child of the run's, cancelled whenever this call ends, so work
        // the tool started elsewhere stops with it (on timeout too).
        let call_cancel = cancel.child_token();
        let _cancel_on_exit = call_cancel.clone().drop_guard();
        let context = ToolContext {
            tool_call_id: call.tool_call_id.clone(),
            run_id: run_id.cloned(),
            trace_context,
            cancel: call_cancel,
            state,
        };
        let tool = Arc::clone(&entry.tool);
        let args = args.clone();
        // The task follows the caller's span (a server's run span), so the tool's logs name
        // the run.
        let task = AbortOnDropHandle::new(tokio::spawn(
            async move { tool.call(args, context).await }.in_current_span(),
        ));

        let joined = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Err(ToolFailure::new(format!("The call to tool '{name}' was canceled.")));
            }
            joined = tokio::time::timeout(limits.timeout, task) => joined,
        };
        let Ok(joined) = joined else {
            return Err(ToolFailure::new(format!(
                "Tool '{name}' timed out after {} and was stopped.",
                describe_duration(limits.timeout)
            )));
        };
        let result = match joined {
            Ok(Ok(result)) => result,
            Ok(Err(failure)) => return Err(failed(name, &failure)),
            Err(join_error) => return Err(crashed(name, join_error)),
        };
        output::cap(result, limits.max_output_bytes).map_err(|TooLarge { bytes }| {
            ToolFailure::new(format!(
                "Tool '{name}' returned {bytes} bytes of output, over the limit of {} bytes; ask for less.",
                limits.max_output_bytes
            ))
        })
    }

    fn unknown_tool(&self, name: &str) -> ToolFailure {
        let available = if self.tools.is_empty() {
            "there are no tools".to_owned()
        } else {
            let names: Vec<String> = self.tools.keys().map(|name| format!("'{name}'")).collect();
            format!("the available tools are {}", names.join(", "))
        };
        invalid(name, &format!("no such tool; {available}"))
    }
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .finish()
    }
}

/// The wording a model corrects itself from: `Validation failed for tool 'write_file': …`.
fn invalid(name: &str, problems: &str) -> ToolFailure {
    let problems = problems.trim_end_matches('.');
    ToolFailure::invalid_arguments(format!("Validation failed for tool '{name}': {problems}."))
}

fn failed(name: &str, failure: &ToolFailure) -> ToolFailure {
    match failure.kind() {
        ToolErrorKind::Validation => invalid(name, failure.message()),
        ToolErrorKind::Execution => {
            ToolFailure::new(format!("Tool '{name}' failed: {}", failure.message()))
        }
    }
}

fn crashed(name: &str, join_error: JoinError) -> ToolFailure {
    if join_error.is_panic() {
        let payload = join_error.into_panic();
        ToolFailure::new(format!(
            "Tool '{name}' crashed: {}.",
            panic_message(payload.as_ref())
        ))
    } else {
        // Only a runtime shutting down aborts the task while this call still awaits it.
        ToolFailure::new(format!("Tool '{name}' was stopped before it finished."))
    }
}

/// The message a panic was raised with, when it has one (`panic!` with a literal or a format).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        format!("it panicked with '{message}'")
    } else if let Some(message) = payload.downcast_ref::<String>() {
        format!("it panicked with '{message}'")
    } else {
        "it panicked".to_owned()
    }
}

fn describe_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// What OpenAI and Anthropic both accept as a function name.
fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
