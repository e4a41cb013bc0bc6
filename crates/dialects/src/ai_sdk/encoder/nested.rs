//! Sub-agents' runs in a UI message stream. A child's progress is the preliminary output of the
//! parent's tool part for the call that started it: a `UIMessage` of the child's parts so far
//! (its own sub-agents' progress nested the same way in its tool parts), as the AI SDK's own
//! sub-agent tools stream theirs. What a waiting child needs from the client (an approval, a
//! client tool's output, an answer to its question) is a tool part of the message itself, in a
//! step of its own at the end, which the client answers as it answers the run's own.

use std::collections::{HashMap, HashSet};

use agentwire_core::accumulator::PartStatus;
use agentwire_core::ids::ApprovalId;
use agentwire_core::{
    Accumulator, Awaiting, Event, EventKind, MessageId, Part, RunId, RunStatus, ToolCallId,
};
use serde_json::{Value, json};

use super::{AiSdkEncoder, Chunk, MIN_TOOL_INPUT_DELTA, chunk};
use crate::ai_sdk::{provider_metadata, to_ui_message};

/// What the encoder keeps of the sub-agents' runs nested in the stream.
#[derive(Debug, Default)]
pub(super) struct Nested {
    /// Every nested run's events, accumulated: what a child's progress is built from.
    tree: Accumulator,
    /// The children whose progress the message shows, in the order they started.
    progress: Vec<Progress>,
    /// Sub-agents' calls the message shows as tool parts, by their stream id (`<run>:<call>`),
    /// without an outcome yet: those surfaced in this stream and those the client's message
    /// already held.
    pub(super) surfaced: HashSet<String>,
    /// The calls whose approval those parts ask, by run and approval.
    pub(super) approvals: HashMap<(RunId, ApprovalId), ToolCallId>,
    /// Surfaced calls whose denial was sent.
    denied: HashSet<String>,
    /// The message's last step is the one that shows the sub-agents' requests.
    pub(super) surfacing: bool,
    /// A message was opened for a sub-agent's event before the run's own `message_start`, which
    /// then continues it instead of starting another.
    pub(super) adopt: bool,
}

/// A child of the run whose call is a tool part of the message.
#[derive(Debug)]
struct Progress {
    run_id: RunId,
    tool_call_id: ToolCallId,
    /// Bytes of the last preliminary output written.
    sent: usize,
    /// How much changed since (delta bytes; a fixed weight for anything else).
    pending: usize,
    ended: bool,
}

/// What a change that is not a delta weighs against the progress already sent.
const CHANGE_WEIGHT: usize = 32;

impl AiSdkEncoder {
    /// An event of a sub-agent's run nested in the stream.
    pub(super) fn encode_nested(&mut self, event: &Event, out: &mut Vec<u8>) {
        // What does not fit the tree (a stream that starts after a child's own start) is not
        // part of any progress; requests and outcomes below still go out.
        let _ = self.nested.tree.push(event);
        let path = event.namespace.path();
        let (Some(top), Some(run_id)) = (path.first(), path.last()) else {
            return;
        };
        match &event.kind {
            EventKind::RunCreated {
                parent_tool_call_id: Some(call),
                ..
            } if path.len() == 1 && self.calls.contains_key(call) => {
                self.nested.progress.push(Progress {
                    run_id: run_id.clone(),
                    tool_call_id: call.clone(),
                    sent: 0,
                    pending: 0,
                    ended: false,
                });
            }
            EventKind::RunStatus { status, .. } => {
                if path.len() == 1 && status.is_terminal() {
                    // Its call's own output follows at once.
                    if let Some(progress) = self.progress_of(top) {
                        progress.ended = true;
                    }
                } else if let RunStatus::Awaiting(awaiting) = status {
                    self.surface(&event.namespace, *awaiting, out);
                }
            }
            EventKind::PartComplete { part, .. } => self.outcome(run_id, part, out),
            _ => {}
        }
        let weight = match &event.kind {
            EventKind::PartDelta { delta, .. } => delta.len(),
            _ => CHANGE_WEIGHT,
        };
        let status = matches!(event.kind, EventKind::RunStatus { .. });
        if let Some(progress) = self.progress_of(top) {
            progress.pending += weight;
            let due = progress.pending >= MIN_TOOL_INPUT_DELTA.max(progress.sent / 8);
            if (due || status) && !progress.ended {
                self.write_progress(top, out);
            }
        }
    }

    /// Writes the progress of every child that changed since its last, before the run's
    /// message ends.
    pub(super) fn flush_progress(&mut self, out: &mut Vec<u8>) {
        let due: Vec<RunId> = self
            .nested
            .progress
            .iter()
            .filter(|progress| progress.pending > 0 && !progress.ended)
            .map(|progress| progress.run_id.clone())
            .collect();
        for run_id in due {
            self.write_progress(&run_id, out);
        }
    }

    fn progress_of(&mut self, run_id: &RunId) -> Option<&mut Progress> {
        self.nested
            .progress
            .iter_mut()
            .find(|progress| progress.run_id == *run_id)
    }

    /// `tool-output-available {preliminary: true}` for the call that started the child
    /// `run_id`: the child's progress as a `UIMessage`.
    fn write_progress(&mut self, run_id: &RunId, out: &mut Vec<u8>) {
        if self.message.is_none() {
            return;
        }
        let Some(child) = self.nested.tree.descendant(std::slice::from_ref(run_id)) else {
            return;
        };
        let output = progress(child);
        let Some(progress) = self.progress_of(run_id) else {
            return;
        };
        let tool_call_id = progress.tool_call_id.clone();
        let start = out.len();
        chunk(
            out,
            &Chunk::ToolOutputAvailable {
                tool_call_id: tool_call_id.as_str(),
                output: &output,
                preliminary: Some(true),
                provider_metadata: None,
            },
        );
        if let Some(progress) = self.progress_of(run_id) {
            progress.sent = out.len() - start;
            progress.pending = 0;
        }
    }

    /// A nested run waits for the client: what it waits for becomes tool parts of the message,
    /// in the step that shows the sub-agents' requests.
    fn surface(
        &mut self,
        namespace: &agentwire_core::Namespace,
        awaiting: Awaiting,
        out: &mut Vec<u8>,
    ) {
        let Some(run) = self.nested.tree.descendant(namespace.path()) else {
            return;
        };
        let Some(run_id) = namespace.run() else {
            return;
        };
        let requests = requests(run, awaiting);
        if requests.is_empty() {
            return;
        }
        let marker = provider_metadata("runId", Value::from(run_id.as_str()));
        for request in requests {
            let id = stream_id(run_id, request.call.tool_call_id.as_str());
            if self.nested.surfaced.contains(&id) {
                continue;
            }
            self.open_for_nested(run_id, out);
            if !self.nested.surfacing {
                self.end_step(out);
                chunk(out, &Chunk::StartStep);
                self.step_open = true;
                self.nested.surfacing = true;
            }
            chunk(
                out,
                &Chunk::ToolInputAvailable {
                    tool_call_id: &id,
                    tool_name: &request.call.tool_name,
                    input: &request.call.args.0,
                    provider_metadata: Some(&marker),
                },
            );
            if let Some(approval) = &request.approval {
                self.nested.approvals.insert(
                    (run_id.clone(), approval.approval_id.clone()),
                    request.call.tool_call_id.clone(),
                );
                let approval_id = stream_id(run_id, approval.approval_id.as_str());
                chunk(
                    out,
                    &Chunk::ToolApprovalRequest {
                        approval_id: &approval_id,
                        tool_call_id: &id,
                        reason: approval.reason.as_deref(),
                        provider_metadata: Some(&marker),
                    },
                );
            }
            self.nested.surfaced.insert(id);
        }
    }

    /// What became of a surfaced call, in the run that asked: its result or error, or its
    /// denial (after which the run's words to its model about it are not sent: for the client
    /// the denial ends the call, as for the run's own calls).
    fn outcome(&mut self, run_id: &RunId, part: &Part, out: &mut Vec<u8>) {
        let marker = provider_metadata("runId", Value::from(run_id.as_str()));
        match part {
            Part::ToolResult(result) => {
                let id = stream_id(run_id, result.tool_call_id.as_str());
                if self.nested.surfaced.remove(&id) {
                    self.open_for_nested(run_id, out);
                    chunk(
                        out,
                        &Chunk::ToolOutputAvailable {
                            tool_call_id: &id,
                            output: &result.result,
                            preliminary: None,
                            provider_metadata: Some(&marker),
                        },
                    );
                }
            }
            Part::ToolError(error) => {
                let id = stream_id(run_id, error.tool_call_id.as_str());
                if self.nested.denied.remove(&id) {
                    return;
                }
                if self.nested.surfaced.remove(&id) {
                    self.open_for_nested(run_id, out);
                    chunk(
                        out,
                        &Chunk::ToolOutputError {
                            tool_call_id: &id,
                            error_text: &error.message,
                            provider_metadata: Some(&marker),
                        },
                    );
                }
            }
            Part::ApprovalResponse(response) if !response.approved => {
                let approval = (run_id.clone(), response.approval_id.clone());
                let Some(call) = self.nested.approvals.get(&approval) else {
                    return;
                };
                let id = stream_id(run_id, call.as_str());
                if self.nested.surfaced.remove(&id) {
                    self.open_for_nested(run_id, out);
                    chunk(
                        out,
                        &Chunk::ToolOutputDenied {
                            tool_call_id: &id,
                            provider_metadata: Some(&marker),
                        },
                    );
                    self.nested.denied.insert(id);
                }
            }
            _ => {}
        }
    }

    /// Opens the message for a sub-agent's output when the run's own has not started yet (a
    /// continuation, whose children go on before the run does): the run's `message_start` then
    /// continues it.
    fn open_for_nested(&mut self, run_id: &RunId, out: &mut Vec<u8>) {
        if self.message.is_some() {
            return;
        }
        let id = self
            .continued
            .clone()
            .unwrap_or_else(|| MessageId::from(run_id.as_str()));
        self.start(&id, serde_json::Map::new(), out);
        self.nested.adopt = true;
    }
}

/// A call a waiting run asks the client about, and its approval request when that is the ask.
struct Request {
    call: agentwire_core::ToolCall,
    approval: Option<agentwire_core::part::ApprovalRequest>,
}

/// What a run waiting for `awaiting` asks: its unanswered approval requests, or its calls
/// without an outcome (a client tool's, or its question to the user), except those that
/// started its own sub-agents.
fn requests(run: &Accumulator, awaiting: Awaiting) -> Vec<Request> {
    let parts: Vec<&Part> = run.messages().iter().flat_map(|m| &m.parts).collect();
    let answered = |id: &ToolCallId| {
        parts.iter().any(|part| match part {
            Part::ToolResult(result) => result.tool_call_id == *id,
            Part::ToolError(error) => error.tool_call_id == *id,
            _ => false,
        })
    };
    let call = |id: &ToolCallId| {
        parts.iter().find_map(|part| match part {
            Part::ToolCall(call) if call.tool_call_id == *id => Some(call),
            _ => None,
        })
    };
    match awaiting {
        Awaiting::Approval => parts
            .iter()
            .filter_map(|part| match part {
                Part::ApprovalRequest(request) => Some(request),
                _ => None,
            })
            .filter(|request| {
                !parts.iter().any(|part| {
                    matches!(part, Part::ApprovalResponse(response) if response.approval_id == request.approval_id)
                })
            })
            .filter_map(|request| {
                call(&request.tool_call_id).map(|call| Request {
                    call: call.clone(),
                    approval: Some((*request).clone()),
                })
            })
            .collect(),
        Awaiting::FunctionOutput | Awaiting::Input => {
            let children: Vec<&ToolCallId> = run
                .children()
                .filter_map(Accumulator::parent_tool_call_id)
                .collect();
            let approvals: Vec<&ToolCallId> = parts
                .iter()
                .filter_map(|part| match part {
                    Part::ApprovalRequest(request) => Some(&request.tool_call_id),
                    _ => None,
                })
                .collect();
            parts
                .iter()
                .filter_map(|part| match part {
                    Part::ToolCall(call) => Some(call),
                    _ => None,
                })
                .filter(|call| {
                    !answered(&call.tool_call_id)
                        && !children.contains(&&call.tool_call_id)
                        && !approvals.contains(&&call.tool_call_id)
                })
                .map(|call| Request {
                    call: (*call).clone(),
                    approval: None,
                })
                .collect()
        }
    }
}

/// A run's progress as a `UIMessage`: `{id: its run id, role: "assistant", metadata: {runId,
/// agentName?, status}, parts}`, the parts of all its messages so far in order, and in the tool
/// part of each call that started a sub-agent of its own and has no outcome yet, that child's
/// progress as a preliminary output.
pub(super) fn progress(run: &Accumulator) -> Value {
    let mut parts: Vec<Value> = Vec::new();
    for message in run.messages() {
        let Value::Object(mut ui) = to_ui_message(message) else {
            continue;
        };
        let Some(Value::Array(mut more)) = ui.remove("parts") else {
            continue;
        };
        mark_streaming(run, message, &mut more);
        parts.extend(more);
    }
    for child in run.children() {
        let Some(call) = child.parent_tool_call_id() else {
            continue;
        };
        let waiting = parts
            .iter_mut()
            .find(|part| part["toolCallId"] == call.as_str() && part["state"] == "input-available");
        if let Some(part) = waiting {
            part["state"] = "output-available".into();
            part["output"] = progress(child);
            part["preliminary"] = true.into();
        }
    }
    let run_id = run.run_id().map(RunId::as_str).unwrap_or_default();
    let mut metadata = json!({ "runId": run_id });
    if let Some(agent) = run.agent() {
        metadata["agentName"] = agent.into();
    }
    if let Some(status) = run.status() {
        metadata["status"] = status.name().into();
    }
    json!({ "id": run_id, "role": "assistant", "metadata": metadata, "parts": parts })
}

/// Marks the `UIMessage` parts of `message` whose canonical part still streams, as the client
/// marks its own: text and reasoning `streaming`, a tool call `input-streaming`. A canonical
/// part makes one `UIMessage` part, except outcomes and approvals, which change their call's.
fn mark_streaming(run: &Accumulator, message: &agentwire_core::Message, parts: &mut [Value]) {
    let Some(message_id) = &message.id else {
        return;
    };
    let mut at = 0;
    for (index, part) in message.parts.iter().enumerate() {
        if matches!(
            part,
            Part::ToolResult(_)
                | Part::ToolError(_)
                | Part::ApprovalRequest(_)
                | Part::ApprovalResponse(_)
        ) {
            continue;
        }
        let streaming = run.part_status(message_id.as_str(), index) == Some(PartStatus::Streaming);
        if let Some(ui) = parts.get_mut(at).filter(|_| streaming) {
            ui["state"] = match part {
                Part::ToolCall(_) => "input-streaming",
                _ => "streaming",
            }
            .into();
        }
        at += 1;
    }
}

/// An id of a sub-agent's run in the message's one namespace of tool calls and approvals:
/// `<run>:<id>`.
pub(super) fn stream_id(run_id: &RunId, id: &str) -> String {
    format!("{run_id}:{id}")
}
