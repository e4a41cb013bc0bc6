//! [`Event`]: the one canonical stream of a run.
//!
//! A run's stream is run status changes and, for every message, `message_start`, then for each
//! part either `part_start`, `part_delta`* and `part_complete` (text, reasoning, refusals and
//! tool calls, which stream) or `part_complete` alone (parts that are whole when produced), then
//! `message_complete`. A message that is whole when produced (an echoed user input) may arrive as
//! `message_complete` alone. Every event carries a sequence number that only grows, so a client
//! can resume after the last one it saw.
//!
//! The event's name is in the `event` key, because `type` is the part type of `part_start`:
//!
//! ```json
//! {"seq": 4, "event": "part_delta", "message_id": "msg_1", "index": 0, "delta": "Hel"}
//! ```
//!
//! A run that calls another agent as a tool streams the child run's events inside its own,
//! numbered in its own sequence and tagged with the child's [`Namespace`]; everything else about
//! them is as the child emitted them. The session's shared state changes with `state_snapshot`
//! and `state_delta` (RFC 6902 JSON Patch), whichever run of the tree makes the change.

use json_patch::Patch;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{MessageId, RunId, SessionId, ToolCallId};
use crate::input::InputOutcome;
use crate::message::{Message, Metadata, Role, Timestamp};
use crate::namespace::Namespace;
use crate::part::Part;
use crate::usage::Usage;

/// One event of a run's stream, with its sequence number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The event's place in the run's stream. It grows by one with every event except
    /// `heartbeat`, which repeats the number of the last event so that it never takes a place
    /// in a replay.
    pub seq: u64,
    /// Which run of the tree the event is of: empty for the run's own, a path of run ids for a
    /// sub-agent's run nested in it.
    #[serde(default, skip_serializing_if = "Namespace::is_root")]
    pub namespace: Namespace,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What an [`Event`] reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The run exists: `{"event": "run_created", "run_id", "session_id"?, "agent"?,
    /// "parent_run_id"?, "parent_tool_call_id"?}`. A sub-agent's run names the run whose tool
    /// call started it.
    RunCreated {
        /// The run.
        run_id: RunId,
        /// The session the run belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
        /// The agent running it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// The run that started this one as a sub-agent; `None` for a run a client started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<RunId>,
        /// The parent's tool call this run answers; set with `parent_run_id`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<ToolCallId>,
    },
    /// The run's status changed: `{"event": "run_status", "status": "awaiting", "awaiting":
    /// "approval"}`. `error` says why a run failed, was rejected or is incomplete; `usage` is the
    /// run's total so far.
    RunStatus {
        /// The new status.
        #[serde(flatten)]
        status: RunStatus,
        /// Why the run ended the way it did, when it did not complete.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorInfo>,
        /// Tokens used by the run so far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// A message begins.
    MessageStart {
        /// The message.
        message_id: MessageId,
        /// Who writes it.
        role: Role,
        /// What is known of it at the start; the final metadata comes with `message_complete`.
        #[serde(default, skip_serializing_if = "Metadata::is_empty")]
        metadata: Metadata,
        /// When it was created.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        created_at: Option<Timestamp>,
    },
    /// A streamed part begins at `index`, the next free place in its message.
    PartStart {
        /// The message the part belongs to.
        message_id: MessageId,
        /// The part's place in the message, counting from 0.
        index: u32,
        /// What kind of part streams here.
        #[serde(flatten)]
        part: StreamedPart,
    },
    /// More of a streamed part: text for text, reasoning and refusals; raw JSON text of the
    /// arguments for tool calls.
    PartDelta {
        /// The message the part belongs to.
        message_id: MessageId,
        /// The part's place in the message.
        index: u32,
        /// What to append.
        delta: String,
    },
    /// A part is complete: either the end of a streamed part (then it agrees with its deltas) or a
    /// part that arrives whole.
    PartComplete {
        /// The message the part belongs to.
        message_id: MessageId,
        /// The part's place in the message.
        index: u32,
        /// The whole part.
        part: Part,
    },
    /// A message is complete; its parts agree with the parts completed before.
    MessageComplete {
        /// The whole message.
        message: Message,
    },
    /// Nothing happened, but the stream is alive.
    Heartbeat {},
    /// Something went wrong that the client should hear of; the stream goes on, and the run's
    /// status says whether the run survived it.
    Error(ErrorInfo),
    /// What became of a message the client sent into the session while a run worked:
    /// `{"event": "input", "client_message_id", "outcome": "delivered", "step": 2}` (see
    /// [`crate::input`]).
    Input(InputOutcome),
    /// The session's shared state, whole: `{"event": "state_snapshot", "state": {"plan": []}}`.
    /// It replaces whatever the reader held.
    StateSnapshot {
        /// The state: any JSON value.
        state: Value,
    },
    /// A change of the session's shared state as RFC 6902 JSON Patch operations, applied in
    /// order to the state the stream's earlier state events built: `{"event": "state_delta",
    /// "patch": [{"op": "add", "path": "/plan/0", "value": "Read"}]}`.
    StateDelta {
        /// The operations.
        patch: Patch,
    },
}

/// The kind of part a `part_start` opens. Only these parts stream; every other part arrives
/// whole in a `part_complete`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamedPart {
    /// Text; deltas are text.
    Text,
    /// Reasoning; deltas are text.
    Reasoning,
    /// A refusal; deltas are text.
    Refusal,
    /// A tool call; deltas are the raw JSON text of its arguments.
    ToolCall {
        /// The call's id.
        tool_call_id: ToolCallId,
        /// The tool called.
        tool_name: String,
    },
}

impl StreamedPart {
    /// The part type as native JSON spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            StreamedPart::Text => "text",
            StreamedPart::Reasoning => "reasoning",
            StreamedPart::Refusal => "refusal",
            StreamedPart::ToolCall { .. } => "tool_call",
        }
    }
}

/// Where a run is in its life (AgentScope's statuses, with the communication schema's waiting
/// made explicit).
///
/// On the wire it is two keys, `{"status": "awaiting", "awaiting": "approval"}`, the second only
/// for `awaiting`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "RunStatusWire", try_from = "RunStatusWire")]
pub enum RunStatus {
    /// The run exists and has not been scheduled.
    Created,
    /// The run waits for a worker.
    Queued,
    /// The agent is working.
    InProgress,
    /// The agent waits for the client.
    Awaiting(Awaiting),
    /// The run finished normally. Terminal.
    Completed,
    /// The run failed; the event's `error` says why. Terminal.
    Failed,
    /// The client canceled the run; what was complete is kept. Terminal.
    Canceled,
    /// The run was refused before it started. Terminal.
    Rejected,
    /// The run stopped before it finished (a step limit, a server restart); what was complete
    /// is kept. Terminal.
    Incomplete,
}

/// What an awaiting run waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Awaiting {
    /// A person's approval of a tool call.
    Approval,
    /// The output of a tool the client executes.
    FunctionOutput,
    /// The next user message.
    Input,
}

impl RunStatus {
    /// True when the run can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Completed
                | RunStatus::Failed
                | RunStatus::Canceled
                | RunStatus::Rejected
                | RunStatus::Incomplete
        )
    }

    /// The status as the `status` key spells it.
    pub fn name(self) -> &'static str {
        self.wire_name().name()
    }

    fn wire_name(self) -> StatusName {
        match self {
            RunStatus::Created => StatusName::Created,
            RunStatus::Queued => StatusName::Queued,
            RunStatus::InProgress => StatusName::InProgress,
            RunStatus::Awaiting(_) => StatusName::Awaiting,
            RunStatus::Completed => StatusName::Completed,
            RunStatus::Failed => StatusName::Failed,
            RunStatus::Canceled => StatusName::Canceled,
            RunStatus::Rejected => StatusName::Rejected,
            RunStatus::Incomplete => StatusName::Incomplete,
        }
    }
}

/// An error as clients see it: a stable code to branch on and a message to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// A stable, snake_case code, e.g. `provider_error` or `max_steps`.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
}

impl ErrorInfo {
    /// An error with the given code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl Event {
    /// Every event name, as the `event` key spells it: what a decoder knows. An event with
    /// another name comes from a newer peer and is skipped, not refused.
    pub const NAMES: &[&str] = &[
        "run_created",
        "run_status",
        "message_start",
        "part_start",
        "part_delta",
        "part_complete",
        "message_complete",
        "heartbeat",
        "error",
        "input",
        "state_snapshot",
        "state_delta",
    ];

    /// A heartbeat that repeats `last_seq`, the number of the last event sent.
    pub fn heartbeat(last_seq: u64) -> Self {
        Self::new(last_seq, EventKind::Heartbeat {})
    }

    /// The run's own event number `seq`.
    pub fn new(seq: u64, kind: EventKind) -> Self {
        Self {
            seq,
            namespace: Namespace::ROOT,
            kind,
        }
    }

    /// Whether the event is the run's own, not a sub-agent's nested in it.
    pub fn is_own(&self) -> bool {
        self.namespace.is_root()
    }

    /// The run's own new status, if the event reports one. A sub-agent's status nested in the
    /// stream is not the run's: a child that ends or waits leaves its parent working.
    pub fn own_status(&self) -> Option<RunStatus> {
        match &self.kind {
            EventKind::RunStatus { status, .. } if self.is_own() => Some(*status),
            _ => None,
        }
    }

    /// Appends the event's JSON to `out`, as `serde_json` writes it. A delta, most of any
    /// stream, is written field by field: the derived form goes through a map serializer for
    /// the flattened, tagged kind, several times slower for an event that is mostly its text.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        // Writing to a Vec cannot fail, nor can serializing an event: its keys are strings and
        // its numbers finite.
        if let EventKind::PartDelta {
            message_id,
            index,
            delta,
        } = &self.kind
        {
            out.extend_from_slice(b"{\"seq\":");
            let _ = serde_json::to_writer(&mut *out, &self.seq);
            if !self.namespace.is_root() {
                out.extend_from_slice(b",\"namespace\":");
                let _ = serde_json::to_writer(&mut *out, &self.namespace);
            }
            out.extend_from_slice(b",\"event\":\"part_delta\",\"message_id\":");
            let _ = serde_json::to_writer(&mut *out, message_id);
            out.extend_from_slice(b",\"index\":");
            let _ = serde_json::to_writer(&mut *out, index);
            out.extend_from_slice(b",\"delta\":");
            let _ = serde_json::to_writer(&mut *out, delta);
            out.push(b'}');
        } else {
            let _ = serde_json::to_writer(&mut *out, self);
        }
    }

    /// The event's name as the `event` key spells it, e.g. `"part_delta"`; also the SSE event
    /// name.
    pub fn name(&self) -> &'static str {
        match self.kind {
            EventKind::RunCreated { .. } => "run_created",
            EventKind::RunStatus { .. } => "run_status",
            EventKind::MessageStart { .. } => "message_start",
            EventKind::PartStart { .. } => "part_start",
            EventKind::PartDelta { .. } => "part_delta",
            EventKind::PartComplete { .. } => "part_complete",
            EventKind::MessageComplete { .. } => "message_complete",
            EventKind::Heartbeat {} => "heartbeat",
            EventKind::Error(_) => "error",
            EventKind::Input(_) => "input",
            EventKind::StateSnapshot { .. } => "state_snapshot",
            EventKind::StateDelta { .. } => "state_delta",
        }
    }
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StatusName {
    Created,
    Queued,
    InProgress,
    Awaiting,
    Completed,
    Failed,
    Canceled,
    Rejected,
    Incomplete,
}

impl StatusName {
    fn name(self) -> &'static str {
        match self {
            StatusName::Created => "created",
            StatusName::Queued => "queued",
            StatusName::InProgress => "in_progress",
            StatusName::Awaiting => "awaiting",
            StatusName::Completed => "completed",
            StatusName::Failed => "failed",
            StatusName::Canceled => "canceled",
            StatusName::Rejected => "rejected",
            StatusName::Incomplete => "incomplete",
        }
    }
}

#[derive(Serialize, Deserialize)]
struct RunStatusWire {
    status: StatusName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    awaiting: Option<Awaiting>,
}

impl From<RunStatus> for RunStatusWire {
    fn from(status: RunStatus) -> Self {
        let awaiting = match status {
            RunStatus::Awaiting(awaiting) => Some(awaiting),
            _ => None,
        };
        RunStatusWire {
            status: status.wire_name(),
            awaiting,
        }
    }
}

impl TryFrom<RunStatusWire> for RunStatus {
    type Error = String;

    fn try_from(wire: RunStatusWire) -> Result<Self, String> {
        Ok(match (wire.status, wire.awaiting) {
            (StatusName::Awaiting, Some(awaiting)) => RunStatus::Awaiting(awaiting),
            (StatusName::Awaiting, None) => {
                return Err(
                    "status `awaiting` needs `awaiting`: approval, function_output or input".into(),
                );
            }
            (other, Some(_)) => {
                return Err(format!(
                    "`awaiting` goes only with status `awaiting`, not `{}`",
                    other.name()
                ));
            }
            (StatusName::Created, None) => RunStatus::Created,
            (StatusName::Queued, None) => RunStatus::Queued,
            (StatusName::InProgress, None) => RunStatus::InProgress,
            (StatusName::Completed, None) => RunStatus::Completed,
            (StatusName::Failed, None) => RunStatus::Failed,
            (StatusName::Canceled, None) => RunStatus::Canceled,
            (StatusName::Rejected, None) => RunStatus::Rejected,
            (StatusName::Incomplete, None) => RunStatus::Incomplete,
        })
    }
}
