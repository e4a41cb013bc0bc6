//! [`StateCalls`]: a run's `update_state` calls applied to the session's shared state while
//! their arguments stream, and answered when the step's calls are.
//!
//! The orchestrator shows it every event of a model call ([`StateCalls::observe`]); a call of
//! `update_state` (the agent's own, not one needing approval) then streams into the state
//! through [`SharedState::push_stream`]: what becomes definite is applied and queued as a
//! `state_delta`, which the top run of the tree emits at its next flush. At the call's end the
//! whole call is checked (its arguments against the tool's schema, the operations against the
//! state, the state against the agent's state schema); a call that fails is rolled back (a
//! `state_snapshot` of the state before it) and answered with a `VALIDATION` error naming
//! the problem, so the model corrects itself. Its answer (a result, or that error) joins the
//! message with the step's other answers.
//!
//! Decided: one call streams at a time. A second `update_state` call that starts while one
//! streams, or one that needs approval, is run like any tool when the step's calls run
//! ([`UpdateState`] applies it whole, through the tool's context). A call cut short (the
//! model's output stopped, the run was canceled) is rolled back, and answered as not run.

use agentwire_brain::BrainEvent;
use agentwire_core::part::{ToolError, ToolResult};
use agentwire_core::patch_stream::PatchStream;
use agentwire_core::{Emitter, MessageBuilder, Part, ToolCall, ToolCallId};
use agentwire_tools::{SharedState, ToolFailure, UpdateState};
use serde_json::Value;

use crate::run::Shared;

/// A run's streaming and streamed `update_state` calls (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct StateCalls {
    /// The call streaming into the state (boxed: every run holds a `StateCalls`, few stream
    /// into the state).
    open: Option<Box<Streaming>>,
    /// The answers of calls that streamed to their end, not yet in the message.
    answers: Vec<Part>,
}

#[derive(Debug)]
struct Streaming {
    tool_call_id: String,
    stream: PatchStream,
    /// Why the call failed while it streamed (the state is already back as it was).
    failed: Option<ToolFailure>,
}

impl StateCalls {
    /// Acts on one of the model's events, before the message builder takes it: a call of
    /// `update_state` begins streaming, its argument text is applied. Returns the id of the
    /// streaming call when the event ends it: pass it to [`StateCalls::end`] once the builder
    /// has completed the call.
    pub(crate) fn observe(&mut self, shared: &Shared, event: &BrainEvent) -> Option<String> {
        match event {
            BrainEvent::ToolCallStart { id, name } => {
                let config = &shared.agent.inner;
                let streams = name == UpdateState::NAME
                    && self.open.is_none()
                    && config.toolbox.contains(UpdateState::NAME)
                    && !config.approval.contains(UpdateState::NAME);
                if streams {
                    self.open = Some(Box::new(Streaming {
                        tool_call_id: id.clone(),
                        stream: shared.shared_state.begin_stream(),
                        failed: None,
                    }));
                }
                None
            }
            BrainEvent::ToolCallDelta { id, args } => {
                if let Some(open) = self.open.as_mut().filter(|open| open.tool_call_id == *id)
                    && open.failed.is_none()
                    && let Err(error) = shared.shared_state.push_stream(&mut open.stream, args)
                {
                    open.failed = Some(UpdateState::refusal(&error));
                }
                None
            }
            BrainEvent::ToolCallEnd { id } => self
                .open
                .as_ref()
                .filter(|open| open.tool_call_id == *id)
                .map(|open| open.tool_call_id.clone()),
            _ => None,
        }
    }

    /// The streaming call `id` has ended (the builder holds it whole): checks it, keeps or
    /// rolls back what it did, and keeps its answer for [`StateCalls::answer`].
    pub(crate) fn end(&mut self, shared: &Shared, builder: &MessageBuilder, id: &str) {
        let Some(mut open) = self.open.take_if(|open| open.tool_call_id == id) else {
            return;
        };
        let call = builder
            .message()
            .parts
            .iter()
            .rev()
            .find_map(|part| match part {
                Part::ToolCall(call) if call.tool_call_id == id => Some(call),
                _ => None,
            });
        let Some(call) = call else {
            shared.shared_state.abandon_stream(&mut open.stream);
            return;
        };
        let state = &shared.shared_state;
        let outcome = match open.failed {
            Some(failure) => Err(failure),
            None => match shared.agent.inner.toolbox.check(call) {
                Err(failure) => {
                    state.abandon_stream(&mut open.stream);
                    Err(failure)
                }
                Ok(()) => state
                    .finish_stream(&mut open.stream)
                    .map(UpdateState::result)
                    .map_err(|error| UpdateState::refusal(&error)),
            },
        };
        self.answers.push(answer(call, outcome));
    }

    /// The model's output stopped: a call still streaming is rolled back (it will be answered
    /// as not run).
    pub(crate) fn abandon(&mut self, state: &SharedState) {
        if let Some(mut open) = self.open.take() {
            state.abandon_stream(&mut open.stream);
        }
    }

    /// Takes out of `calls` those that streamed to their end and adds their answers to the
    /// message: they have been applied (or refused) already and do not run again.
    pub(crate) fn answer(
        &mut self,
        calls: &mut Vec<ToolCall>,
        builder: &mut MessageBuilder,
        out: &mut Emitter,
    ) {
        if self.answers.is_empty() {
            return;
        }
        calls.retain(|call| {
            !self
                .answers
                .iter()
                .any(|part| answers(part, &call.tool_call_id))
        });
        self.answer_all(builder, out);
    }

    /// Adds the answers of every call that streamed to its end to the message (the message
    /// ends before its calls run: what the calls did to the state stays, and the model is told).
    pub(crate) fn answer_all(&mut self, builder: &mut MessageBuilder, out: &mut Emitter) {
        for part in self.answers.drain(..) {
            builder.part(out, part);
        }
    }
}

/// The part that answers `call` with `outcome`, as a toolbox would.
fn answer(call: &ToolCall, outcome: Result<Value, ToolFailure>) -> Part {
    match outcome {
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

/// Whether `part` answers the call `id`.
fn answers(part: &Part, id: &ToolCallId) -> bool {
    match part {
        Part::ToolResult(result) => result.tool_call_id == *id,
        Part::ToolError(error) => error.tool_call_id == *id,
        _ => false,
    }
}

/// The system prompt of a model call of an agent that has `update_state`: its own, then the
/// state as it is now, so the model writes paths that exist.
pub(crate) fn instructions(system: Option<&str>, state: &SharedState) -> Option<String> {
    let shown = state.read(|document| serde_json::to_string(document).unwrap_or_default());
    let section = format!(
        "The shared state (a JSON document the user sees beside this conversation; change it \
         with `{}`) is now:\n{shown}",
        UpdateState::NAME
    );
    Some(match system {
        Some(system) if !system.is_empty() => format!("{system}\n\n{section}"),
        _ => section,
    })
}
