//! Sub-agents: agents that another agent's model calls like tools
//! ([`AgentBuilder::subagent`](crate::AgentBuilder::subagent)).
//!
//! A call of a sub-agent starts a run of the child agent's own (its id, its tools, its
//! schema) with the call's `input` as its one user message and no history: the child knows of
//! the parent's conversation what the parent's model wrote it. The child's events stream
//! inside the parent's as they come, under the child's [`Namespace`] (its run id, in front of
//! its own children's), and its answer's text is the call's result; a child that fails or
//! stops short is a `tool_error` the parent's model reads.
//!
//! Decided:
//! - **A child is part of its parent's run**, not a run its host starts: it shares the
//!   parent's session, cancellation, limits and client tools, takes no slot (its parent holds
//!   one; a child waiting in line behind its own parent could wait for ever), and its tokens
//!   count in its parent's usage. Its parent's host sees it only in the parent's stream.
//! - **What a child waits for, its parent waits for.** An approval, a client tool or a
//!   question inside a child shows in the stream as the child's `awaiting`; once nothing else
//!   of the parent's step is running, the parent reports `awaiting` too (the kind of its first
//!   waiting child), so every client that follows a run sees it must answer. The client
//!   answers the run it follows; [`RunHandle::input`](crate::RunHandle::input) hands each
//!   answer down to the run that asked, however deep. While an answered child works on, its
//!   parent is `in_progress` again.
//! - **Depth is bounded** by the agent's `max_depth` (a run that deep answers further
//!   sub-agent calls with an error), so agents that call each other cannot nest without end.
//! - **A waiting tree is written down whole**: a parent that waits on its children is
//!   checkpointed with theirs, and taken up again with them, so a restart
//!   or another node goes on where the child waited. And as a run whose host stores its events
//!   runs what a person allowed only once its going on is stored, so does a child: its parent
//!   tells it how far the parent's host has stored, in the child's own numbering.

use std::task::Poll;

use agentwire_core::part::{ToolError, ToolResult};
use agentwire_core::{
    Awaiting, Event, EventKind, Message, Namespace, Part, RunId, RunStatus, ToolCall, ToolCallId,
    ToolErrorKind, ToolSpec,
};
use agentwire_tools::{Tool, ToolContext, ToolFailure, ToolFuture};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::checkpoint::Checkpoint;
use crate::events::RunEvents;
use crate::run::RunHandle;
use crate::telemetry::ToolTrace;

/// The argument a sub-agent's call carries: what the child is asked.
pub(crate) const INPUT: &str = "input";

/// A sub-agent as the model is offered it: a tool named after the agent, described by its
/// description, with one argument, `input`. Only a spec: the orchestrator runs the call as a
/// run of the agent, never through the toolbox.
pub(crate) struct SubagentTool {
    spec: ToolSpec,
}

impl SubagentTool {
    pub(crate) fn new(agent: &Agent) -> Self {
        let description = match agent.description().trim() {
            "" => format!("Ask the agent '{}' to do a task.", agent.name()),
            description => description.to_owned(),
        };
        let parameters = json!({
            "type": "object",
            "properties": {
                INPUT: {
                    "type": "string",
                    "description": "The task for the agent, with everything it needs to know: \
                        it sees nothing else of this conversation."
                }
            },
            "required": [INPUT],
            "additionalProperties": false
        });
        Self {
            spec: ToolSpec::new(
                agent.name(),
                format!("{description} (An agent: its answer is the result.)"),
                parameters,
            ),
        }
    }
}

impl Tool for SubagentTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _args: Value, _context: ToolContext) -> ToolFuture<'_> {
        Box::pin(async {
            Err(ToolFailure::new(
                "a sub-agent answers in a run of its own, not through a toolbox",
            ))
        })
    }
}

/// Where a sub-agent's run sits: the run and tool call that started it, and how deep it is.
#[derive(Clone, Debug)]
pub(crate) struct Parent {
    pub(crate) run_id: RunId,
    pub(crate) tool_call_id: ToolCallId,
    /// The session's shared state, which the child changes as its parent does.
    pub(crate) state: agentwire_tools::SharedState,
}

/// A sub-agent's run under way, as its parent's orchestrator holds it.
pub(crate) struct Child {
    pub(crate) call: ToolCall,
    pub(crate) handle: RunHandle,
    events: RunEvents,
    /// The child's own events' namespace in the parent's stream.
    namespace: Namespace,
    /// The child's `execute_tool` span, when the parent is traced.
    trace: Option<ToolTrace>,
    /// The last of the child's events the parent has streamed, while its host has not stored
    /// it: `(seq in the parent's stream, seq in the child's)`.
    unstored: Option<(u64, u64)>,
    /// For the run of an agent the conversation was handed to: how many messages of the
    /// parent's conversation it was given. Its messages stream as the parent's own (only its
    /// run's statuses are nested), see [`crate::handoff`].
    pub(crate) handoff: Option<usize>,
}

/// A waiting child written down with its parent's checkpoint: enough to take it up again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ChildCheckpoint {
    /// The parent's call the child answers.
    pub(crate) tool_call_id: ToolCallId,
    /// The child's agent, one of the parent agent's sub-agents.
    pub(crate) agent: String,
    pub(crate) run_id: RunId,
    /// What the parent's model asked it: its one input message.
    pub(crate) input: String,
    pub(crate) checkpoint: Box<Checkpoint>,
    /// For a handoff: how many messages of the parent's conversation the child was given
    /// (its history, which the parent's checkpoint and its session hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handoff_at: Option<usize>,
}

/// A child's handle as its parent's shared state keeps it: for handing answers down, and for
/// what the parent waits for.
#[derive(Clone, Debug)]
pub(crate) struct ChildHandle {
    pub(crate) tool_call_id: ToolCallId,
    pub(crate) handle: RunHandle,
    /// The child's status as the parent has streamed it: the parent reports waiting only
    /// once every waiting child's request is in its stream.
    pub(crate) reported: RunStatus,
    /// For a handoff: how many messages of the parent's conversation it was given.
    pub(crate) handoff_at: Option<usize>,
}

/// What a child's event means to its parent.
pub(crate) enum Forwarded {
    /// An event, renamed into the parent's stream, with its seq in the child's.
    Event(Namespace, EventKind, u64),
    /// The child's stream is over: the part that answers its call, and the tokens it used.
    Ended(Part, Option<agentwire_core::Usage>),
}

impl Child {
    pub(crate) fn new(
        call: ToolCall,
        handle: RunHandle,
        events: RunEvents,
        trace: Option<ToolTrace>,
    ) -> Self {
        let namespace = Namespace::child(handle.id().clone());
        Self {
            call,
            handle,
            events,
            namespace,
            trace,
            unstored: None,
            handoff: None,
        }
    }

    /// The child as the run of an agent the conversation was handed to, given `history_len`
    /// messages of it.
    pub(crate) fn handing_off(mut self, history_len: usize) -> Self {
        self.handoff = Some(history_len);
        self
    }

    /// Notes that the child's event `child_seq` is `seq` in the parent's stream, which its
    /// parent's host stores (for [`Child::stored_through`]).
    pub(crate) fn streamed_at(&mut self, seq: u64, child_seq: u64) {
        self.unstored = Some((seq, child_seq));
    }

    /// The parent's host has stored the parent's events through `seq`. Once that covers the
    /// last of the child's events the parent streamed, the child hears it in its own
    /// numbering: everything it emitted up to there is stored. (The parent's host stores what
    /// it is shown within moments, so this comes soon after a child waits on it; keeping one
    /// pair rather than one per event keeps a child's cost flat.)
    pub(crate) fn stored_through(&mut self, seq: u64) {
        if let Some((at, child_seq)) = self.unstored
            && at <= seq
        {
            self.unstored = None;
            self.handle.stored_through(child_seq);
        }
    }

    /// Whether the parent streamed events of the child its host has not stored yet.
    pub(crate) fn awaits_storing(&self) -> bool {
        self.unstored.is_some()
    }

    /// The part that answers the call now that the child's stream is over.
    fn ended(&mut self) -> Forwarded {
        let part = answer(&self.call, &self.handle);
        if let Some(trace) = self.trace.take() {
            trace.end(&part);
        }
        Forwarded::Ended(part, self.handle.usage())
    }

    fn forward(&self, event: Event) -> Forwarded {
        let own = event.namespace.is_root();
        let run_event = matches!(
            event.kind,
            EventKind::RunCreated { .. } | EventKind::RunStatus { .. }
        );
        let namespace = match (self.handoff.is_some(), own) {
            // The agent the conversation went to speaks as the run; its run is nested.
            (true, true) if !run_event => Namespace::ROOT,
            (_, true) => self.namespace.clone(),
            (_, false) => event.namespace.under(self.handle.id()),
        };
        Forwarded::Event(namespace, event.kind, event.seq)
    }
}

/// The children of a run under way, their streams read in turn.
#[derive(Default)]
pub(crate) struct Children {
    pub(crate) live: Vec<Child>,
    /// The child read first next time: each gets its turn, so a chatty one cannot hold back
    /// another's events.
    turn: usize,
}

impl Children {
    pub(crate) fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The next event of any child, with the child's index; `Ended` once a child's stream is
    /// over (the child stays in `live` until the caller removes it). Never resolves when there
    /// are none. Cancel-safe: an event is taken from a child only when it is returned.
    pub(crate) async fn next(&mut self) -> (usize, Forwarded) {
        std::future::poll_fn(|cx| {
            let n = self.live.len();
            for offset in 0..n {
                let idx = (self.turn + offset) % n;
                let child = &mut self.live[idx];
                if let Poll::Ready(next) = child.events.poll_next_unpin(cx) {
                    self.turn = idx + 1;
                    let forwarded = match next {
                        Some(event) => child.forward(event),
                        None => child.ended(),
                    };
                    return Poll::Ready((idx, forwarded));
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// What `children` wait for, if every one of them waits for the client (as the parent has
/// streamed their statuses): the kind the first waits for. `None` when one of them works (or
/// there are none).
pub(crate) fn all_waiting(children: &[ChildHandle]) -> Option<Awaiting> {
    let mut first = None;
    for child in children {
        match child.reported {
            RunStatus::Awaiting(kind) => {
                first.get_or_insert(kind);
            }
            status if status.is_terminal() => {}
            _ => return None,
        }
    }
    first
}

/// The part that answers a sub-agent's call, from how its run ended: its answer's text, or an
/// error saying why there is none.
fn answer(call: &ToolCall, handle: &RunHandle) -> Part {
    let agent = handle.agent().name();
    let failed = |message: String| refused(call, message);
    match handle.status() {
        RunStatus::Completed => Part::ToolResult(ToolResult {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: Some(call.tool_name.clone()),
            result: Value::String(final_text(&handle.output())),
            is_error: None,
        }),
        RunStatus::Canceled => failed(format!(
            "the agent '{agent}' was stopped before it answered"
        )),
        status => {
            let why = handle
                .error()
                .map(|error| format!(": {} ({})", error.message, error.code))
                .unwrap_or_default();
            failed(format!(
                "the agent '{agent}' did not answer: its run is {}{why}",
                status.name()
            ))
        }
    }
}

/// The error that answers a sub-agent's call that could not start a run.
pub(crate) fn refused(call: &ToolCall, message: String) -> Part {
    Part::ToolError(ToolError {
        tool_call_id: call.tool_call_id.clone(),
        tool_name: Some(call.tool_name.clone()),
        error_type: ToolErrorKind::Execution,
        message,
    })
}

/// The text of a run's last message: its answer.
fn final_text(output: &[Message]) -> String {
    output.last().map(Message::content).unwrap_or_default()
}

/// The `input` of a sub-agent call's arguments (checked against the spec before the call).
pub(crate) fn input_of(call: &ToolCall) -> String {
    call.args
        .as_value()
        .get(INPUT)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
