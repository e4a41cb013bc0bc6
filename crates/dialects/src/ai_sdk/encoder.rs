//! [`AiSdkEncoder`]: canonical events → UI message stream chunks.

use std::collections::{HashMap, HashSet};
use std::fmt;

use agentwire_core::ids::ApprovalId;
use agentwire_core::part::FilePart;
use agentwire_core::{
    Awaiting, Event, EventKind, InputOutcome, Message, MessageId, Part, Role, RunStatus,
    StreamedPart, ToolCallId, ToolErrorKind,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{SubagentCall, file_url, metadata_json, part_as_data, provider_metadata, usage_json};
use crate::Encoder;

mod nested;

use nested::{Nested, stream_id};

/// The headers a server sends with a UI message stream (the SDK's `UI_MESSAGE_STREAM_HEADERS`).
/// The client checks none of them, but proxies and other ports do.
pub const RESPONSE_HEADERS: [(&str, &str); 5] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("connection", "keep-alive"),
    ("x-vercel-ai-ui-message-stream", "v1"),
    ("x-accel-buffering", "no"),
];

/// The smallest `tool-input-delta` the encoder writes before a call's input is complete; see
/// the module docs for the coalescing rule.
pub const MIN_TOOL_INPUT_DELTA: usize = 64;

/// Encodes events as UI message stream chunks. One encoder serves one response, in order.
///
/// It keeps the parts that are open, each open call's unsent argument text, and the calls and
/// approval requests seen (a validation error carries its call's input; a denial names its
/// call).
#[derive(Debug, Default)]
pub struct AiSdkEncoder {
    /// The id the first message takes instead of its own: the message being continued.
    continued: Option<MessageId>,
    /// The (canonical) id of the message being encoded, until `finish` or `abort`.
    message: Option<MessageId>,
    open: Vec<OpenPart>,
    step_open: bool,
    /// The metadata the client has, as sent.
    metadata: Map<String, Value>,
    calls: HashMap<ToolCallId, KnownCall>,
    approvals: HashMap<ApprovalId, ToolCallId>,
    /// Calls the client was told were denied: the tool error that tells the model so is not
    /// sent, since for the client the denial is the call's end (`output-denied`).
    denied: HashSet<ToolCallId>,
    last_error: Option<String>,
    /// The client is `ai` 7 or later, which knows the `steering-message` chunk.
    steering: bool,
    /// The sub-agents' runs nested in the stream: their progress, and their requests the
    /// message shows.
    nested: Nested,
    /// The session's shared state as the stream has made it (`None` before any state event).
    state: Option<Value>,
    /// The state changed since the client was last sent it whole.
    state_unsent: bool,
}

#[derive(Debug)]
struct OpenPart {
    index: u32,
    kind: OpenKind,
}

#[derive(Debug)]
enum OpenKind {
    Text,
    Reasoning,
    Call {
        tool_call_id: ToolCallId,
        unsent: String,
        sent: usize,
    },
}

#[derive(Debug)]
struct KnownCall {
    tool_name: String,
    args: Value,
}

impl AiSdkEncoder {
    /// An encoder whose first message continues the client's message `message_id` (the
    /// request's `messageId`: an approval answer or a client tool output), so that the client
    /// appends to it instead of starting another.
    pub fn continuing(message_id: impl Into<MessageId>) -> Self {
        Self {
            continued: Some(message_id.into()),
            ..Self::default()
        }
    }

    /// An encoder for a client of `ai` 7 or later: a user message the run took while it
    /// worked (a steer) is sent as the v7 `steering-message` chunk. Without it the steer is not
    /// sent (its outcome still is): older clients reject the whole response at a chunk type
    /// they do not know.
    #[must_use]
    pub fn with_steering(mut self, steering: bool) -> Self {
        self.steering = steering;
        self
    }

    /// Learns the tool calls and approval requests of messages the client already has (the
    /// history of the request), so that a validation error or a denial in this stream can name
    /// them.
    pub fn knowing(mut self, history: &[agentwire_core::Message]) -> Self {
        for part in history.iter().flat_map(|message| &message.parts) {
            self.remember(part);
        }
        self
    }

    /// Learns the sub-agents' calls the client's message shows as tool parts (the request's
    /// [`subagent_calls`](super::ChatRequest::subagent_calls)), so that their outcomes in this
    /// stream (a result, an error, a denial) reach those parts.
    pub fn knowing_subagent_calls(mut self, calls: &[SubagentCall]) -> Self {
        for call in calls {
            let id = stream_id(&call.run_id, call.tool_call_id.as_str());
            self.nested.surfaced.insert(id);
            if let Some(approval_id) = &call.approval_id {
                self.nested.approvals.insert(
                    (call.run_id.clone(), approval_id.clone()),
                    call.tool_call_id.clone(),
                );
            }
        }
        self
    }

    /// The encoder for the response to `request`: continuing its assistant message when it
    /// continues one, and knowing its history.
    pub fn for_request(request: &super::ChatRequest) -> Self {
        let encoder = match request.continues() {
            Some(message_id) => Self::continuing(message_id.clone()),
            None => Self::default(),
        };
        encoder
            .knowing(&request.messages)
            .knowing_subagent_calls(&request.subagent_calls)
            .with_steering(request.sdk_major >= 7)
    }

    fn remember(&mut self, part: &Part) {
        match part {
            Part::ToolCall(call) => {
                self.calls.insert(
                    call.tool_call_id.clone(),
                    KnownCall {
                        tool_name: call.tool_name.clone(),
                        args: call.args.0.clone(),
                    },
                );
            }
            Part::ApprovalRequest(request) => {
                self.approvals
                    .insert(request.approval_id.clone(), request.tool_call_id.clone());
            }
            _ => {}
        }
    }

    fn open_position(&self, index: u32) -> Option<usize> {
        self.open.iter().position(|part| part.index == index)
    }

    fn start(&mut self, message_id: &MessageId, metadata: Map<String, Value>, out: &mut Vec<u8>) {
        self.end_step(out);
        let sent_id = self.continued.take();
        let message_metadata = (!metadata.is_empty()).then(|| Value::Object(metadata.clone()));
        chunk(
            out,
            &Chunk::Start {
                message_id: sent_id.as_ref().unwrap_or(message_id).as_str(),
                message_metadata: message_metadata.as_ref(),
            },
        );
        self.message = Some(message_id.clone());
        self.metadata = metadata;
        self.open.clear();
        // Each message of a run that has a state carries it (the client keeps it per message).
        self.state_unsent |= self.state.is_some();
        self.send_state(out);
    }

    /// A change of the shared state: kept, and sent as the transient `data-agentwire-state-
    /// delta` (for `onData`) while a message is open; the state itself follows at the next
    /// settle point ([`AiSdkEncoder::send_state`]).
    fn state_event(&mut self, kind: &EventKind, out: &mut Vec<u8>) {
        match kind {
            EventKind::StateSnapshot { state } => self.state = Some(state.clone()),
            EventKind::StateDelta { patch } => {
                let state = self.state.get_or_insert(Value::Null);
                // The run applied this patch to this state: it applies here too.
                let _ = json_patch::patch(state, patch);
                if self.message.is_some() {
                    write_data_part(
                        out,
                        STATE_DELTA_DATA,
                        None,
                        &serde_json::json!({ "patch": patch }),
                        true,
                    );
                }
            }
            _ => return,
        }
        self.state_unsent = true;
    }

    /// Sends the state whole, as the data part `data-agentwire-state` with the id
    /// [`STATE_PART_ID`], if it changed since it was last sent and a message is open: the
    /// client replaces the part in place.
    fn send_state(&mut self, out: &mut Vec<u8>) {
        if !self.state_unsent || self.message.is_none() {
            return;
        }
        if let Some(state) = &self.state {
            write_data_part(out, STATE_DATA, Some(STATE_PART_ID), state, false);
        }
        self.state_unsent = false;
    }

    fn end_step(&mut self, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.step_open) {
            chunk(out, &Chunk::FinishStep);
        }
    }

    /// Sends the metadata keys that differ from what the client has.
    fn update_metadata(&mut self, metadata: Map<String, Value>, out: &mut Vec<u8>) {
        let changed: Map<String, Value> = metadata
            .into_iter()
            .filter(|(key, value)| self.metadata.get(key) != Some(value))
            .collect();
        if changed.is_empty() {
            return;
        }
        let patch = Value::Object(changed);
        chunk(
            out,
            &Chunk::MessageMetadata {
                message_metadata: &patch,
            },
        );
        if let Value::Object(changed) = patch {
            self.metadata.extend(changed);
        }
    }

    fn part_start(&mut self, index: u32, part: &StreamedPart, out: &mut Vec<u8>) {
        let kind = match part {
            StreamedPart::Text => {
                text_start(out, index, None);
                OpenKind::Text
            }
            StreamedPart::Refusal => {
                text_start(out, index, Some(&refusal_marker()));
                OpenKind::Text
            }
            StreamedPart::Reasoning => {
                chunk(
                    out,
                    &Chunk::ReasoningStart {
                        id: PartId('r', index),
                    },
                );
                OpenKind::Reasoning
            }
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => {
                chunk(
                    out,
                    &Chunk::ToolInputStart {
                        tool_call_id: tool_call_id.as_str(),
                        tool_name,
                    },
                );
                OpenKind::Call {
                    tool_call_id: tool_call_id.clone(),
                    unsent: String::new(),
                    sent: 0,
                }
            }
        };
        self.open.push(OpenPart { index, kind });
    }

    fn part_delta(&mut self, index: u32, delta: &str, out: &mut Vec<u8>) {
        let Some(position) = self.open_position(index) else {
            return;
        };
        match &mut self.open[position].kind {
            OpenKind::Text => chunk(
                out,
                &Chunk::TextDelta {
                    id: PartId('t', index),
                    delta,
                },
            ),
            OpenKind::Reasoning => chunk(
                out,
                &Chunk::ReasoningDelta {
                    id: PartId('r', index),
                    delta,
                },
            ),
            OpenKind::Call {
                tool_call_id,
                unsent,
                sent,
            } => {
                unsent.push_str(delta);
                if unsent.len() >= MIN_TOOL_INPUT_DELTA.max(*sent / 8) {
                    flush_input(out, tool_call_id.as_str(), unsent, sent);
                }
            }
        }
    }

    fn part_complete(&mut self, index: u32, part: &Part, out: &mut Vec<u8>) {
        let Some(position) = self.open_position(index) else {
            self.whole_part(index, part, out);
            return;
        };
        match self.open.swap_remove(position).kind {
            OpenKind::Text => chunk(
                out,
                &Chunk::TextEnd {
                    id: PartId('t', index),
                },
            ),
            OpenKind::Reasoning => chunk(
                out,
                &Chunk::ReasoningEnd {
                    id: PartId('r', index),
                },
            ),
            OpenKind::Call {
                tool_call_id,
                mut unsent,
                mut sent,
            } => {
                flush_input(out, tool_call_id.as_str(), &mut unsent, &mut sent);
                self.whole_part(index, part, out);
            }
        }
    }

    /// A part that arrives whole, or the completion of a call.
    fn whole_part(&mut self, index: u32, part: &Part, out: &mut Vec<u8>) {
        match part {
            Part::Text(text) => whole_text(out, PartId('t', index), None, &text.text),
            Part::Refusal(refusal) => whole_text(
                out,
                PartId('t', index),
                Some(&refusal_marker()),
                &refusal.text,
            ),
            Part::Reasoning(reasoning) => {
                let id = PartId('r', index);
                chunk(out, &Chunk::ReasoningStart { id });
                if !reasoning.text.is_empty() {
                    chunk(
                        out,
                        &Chunk::ReasoningDelta {
                            id,
                            delta: &reasoning.text,
                        },
                    );
                }
                chunk(out, &Chunk::ReasoningEnd { id });
            }
            Part::ToolCall(call) => {
                chunk(
                    out,
                    &Chunk::ToolInputAvailable {
                        tool_call_id: call.tool_call_id.as_str(),
                        tool_name: &call.tool_name,
                        input: &call.args.0,
                        provider_metadata: None,
                    },
                );
                self.remember(part);
            }
            Part::ToolResult(result) => chunk(
                out,
                &Chunk::ToolOutputAvailable {
                    tool_call_id: result.tool_call_id.as_str(),
                    output: &result.result,
                    preliminary: None,
                    provider_metadata: None,
                },
            ),
            Part::ToolError(error) if self.denied.remove(&error.tool_call_id) => {}
            Part::ToolError(error) => {
                let known = self.calls.get(&error.tool_call_id);
                match (error.error_type, known) {
                    (ToolErrorKind::Validation, Some(call)) => chunk(
                        out,
                        &Chunk::ToolInputError {
                            tool_call_id: error.tool_call_id.as_str(),
                            tool_name: &call.tool_name,
                            input: &call.args,
                            error_text: &error.message,
                        },
                    ),
                    _ => chunk(
                        out,
                        &Chunk::ToolOutputError {
                            tool_call_id: error.tool_call_id.as_str(),
                            error_text: &error.message,
                            provider_metadata: None,
                        },
                    ),
                }
            }
            Part::ApprovalRequest(request) => {
                chunk(
                    out,
                    &Chunk::ToolApprovalRequest {
                        approval_id: request.approval_id.as_str(),
                        tool_call_id: request.tool_call_id.as_str(),
                        reason: request.reason.as_deref(),
                        provider_metadata: None,
                    },
                );
                self.remember(part);
            }
            Part::ApprovalResponse(response) => {
                chunk(
                    out,
                    &Chunk::ToolApprovalResponse {
                        approval_id: response.approval_id.as_str(),
                        approved: response.approved,
                        reason: response.reason.as_deref(),
                    },
                );
                if !response.approved
                    && let Some(tool_call_id) = self.approvals.get(&response.approval_id)
                {
                    chunk(
                        out,
                        &Chunk::ToolOutputDenied {
                            tool_call_id: tool_call_id.as_str(),
                            provider_metadata: None,
                        },
                    );
                    self.denied.insert(tool_call_id.clone());
                }
            }
            Part::StepStart(_) => {
                self.end_step(out);
                chunk(out, &Chunk::StartStep);
                self.step_open = true;
                self.nested.surfacing = false;
            }
            Part::File(file) => write_file(out, file),
            Part::Source(source) => chunk(
                out,
                &Chunk::SourceUrl {
                    source_id: source.source_id.as_str(),
                    url: &source.url,
                    title: source.title.as_deref(),
                },
            ),
            Part::Data(data) => write_data(out, &data.name, &data.data),
            Part::Artifact(_) | Part::PlanUpdate(_) => {
                if let Some((name, id, data)) = part_as_data(part) {
                    write_data_part(out, &format!("data-{name}"), Some(id), &data, false);
                }
            }
        }
    }

    /// Ends the response: `finish` (or `abort`) once, after the open step.
    fn end(&mut self, end: End<'_>, out: &mut Vec<u8>) {
        for part in std::mem::take(&mut self.open) {
            if let OpenKind::Call {
                tool_call_id,
                mut unsent,
                mut sent,
            } = part.kind
            {
                flush_input(out, tool_call_id.as_str(), &mut unsent, &mut sent);
            }
        }
        self.end_step(out);
        match end {
            End::Finish(finish_reason) => chunk(out, &Chunk::Finish { finish_reason }),
            End::Abort(reason) => chunk(out, &Chunk::Abort { reason }),
        }
        self.message = None;
        self.nested.surfacing = false;
        self.nested.adopt = false;
    }

    fn error(&mut self, text: &str, out: &mut Vec<u8>) {
        chunk(out, &Chunk::Error { error_text: text });
        self.last_error = Some(text.to_owned());
    }
}

impl AiSdkEncoder {
    /// A steer the run took: `steering-message {id, parts}` for a v7 client, with the message's
    /// text and files (the only parts the chunk holds); nothing for older ones.
    fn steering_message(&mut self, message: &Message, out: &mut Vec<u8>) {
        let Some(id) = &message.id else {
            return;
        };
        if !self.steering {
            return;
        }
        let parts: Vec<Value> = message
            .parts
            .iter()
            .filter_map(|part| match part {
                Part::Text(text) => Some(serde_json::json!({"type": "text", "text": text.text})),
                Part::File(file) => {
                    let mut json = serde_json::json!({
                        "type": "file",
                        "mediaType": file.media_type,
                        "url": file_url(&file.media_type, &file.source),
                    });
                    if let Some(filename) = &file.filename {
                        json["filename"] = Value::from(filename.as_str());
                    }
                    Some(json)
                }
                _ => None,
            })
            .collect();
        chunk(
            out,
            &Chunk::SteeringMessage {
                id: id.as_str(),
                parts: &parts,
            },
        );
    }
}

/// What became of a message the client sent while a run worked, as the transient data part
/// `data-agentwire-input`, with the client's message id as the part's id: `onData` sees it, the
/// message does not keep it. Every version since `ai` 5 reads transient data parts.
fn write_input(out: &mut Vec<u8>, outcome: &InputOutcome) {
    #[derive(Serialize)]
    struct InputChunk<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: &'a str,
        data: &'a InputOutcome,
        transient: bool,
    }
    out.extend_from_slice(b"data: ");
    let _ = serde_json::to_writer(
        &mut *out,
        &InputChunk {
            kind: INPUT_DATA,
            id: &outcome.client_message_id,
            data: outcome,
            transient: true,
        },
    );
    out.extend_from_slice(b"\n\n");
}

/// The type of the data part that carries an input's outcome.
pub const INPUT_DATA: &str = "data-agentwire-input";

/// The type of the data part that carries the session's shared state, whole.
pub const STATE_DATA: &str = "data-agentwire-state";

/// The id of every `data-agentwire-state` part: the client replaces the part of its message
/// that has it, so a message holds one, current, state.
pub const STATE_PART_ID: &str = "state";

/// The type of the transient data part that carries a change of the shared state, `{patch}`
/// (RFC 6902 operations), for `onData`.
pub const STATE_DELTA_DATA: &str = "data-agentwire-state-delta";

/// A data part `{type, id?, data, transient?}`.
fn write_data_part(out: &mut Vec<u8>, kind: &str, id: Option<&str>, data: &Value, transient: bool) {
    #[derive(Serialize)]
    struct DataChunk<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        data: &'a Value,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        transient: bool,
    }
    out.extend_from_slice(b"data: ");
    let _ = serde_json::to_writer(
        &mut *out,
        &DataChunk {
            kind,
            id,
            data,
            transient,
        },
    );
    out.extend_from_slice(b"\n\n");
}

enum End<'a> {
    Finish(Option<&'static str>),
    Abort(Option<&'a str>),
}

impl Encoder for AiSdkEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if !event.is_own() {
            if !matches!(event.kind, EventKind::Heartbeat {}) {
                self.encode_nested(event, out);
            }
            return;
        }
        // The state is sent whole at the next event that is not a delta (of a part or of the
        // state): so a call streaming into the state costs its deltas, and the state once.
        match &event.kind {
            EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. } => {
                return self.state_event(&event.kind, out);
            }
            EventKind::PartDelta { .. } | EventKind::Heartbeat {} => {}
            _ => self.send_state(out),
        }
        match &event.kind {
            // The message a sub-agent's output opened (a continuation) is this one.
            EventKind::MessageStart {
                message_id,
                metadata,
                created_at,
                ..
            } if std::mem::take(&mut self.nested.adopt) => {
                self.message = Some(message_id.clone());
                self.update_metadata(metadata_json(metadata, *created_at), out);
            }
            EventKind::MessageStart {
                message_id,
                metadata,
                created_at,
                ..
            } => self.start(message_id, metadata_json(metadata, *created_at), out),
            EventKind::PartStart { index, part, .. } if self.message.is_some() => {
                self.part_start(*index, part, out);
            }
            EventKind::PartDelta { index, delta, .. } if self.message.is_some() => {
                self.part_delta(*index, delta, out);
            }
            EventKind::PartComplete { index, part, .. } if self.message.is_some() => {
                self.part_complete(*index, part, out);
            }
            EventKind::MessageComplete { message }
                if self.message.is_some() && self.message == message.id =>
            {
                self.flush_progress(out);
                self.end_step(out);
                self.update_metadata(metadata_json(&message.metadata, message.created_at), out);
            }
            // A user message that arrives whole in a run's stream is a steer it took (the
            // run's own input is never streamed back); it must not join the assistant's text.
            EventKind::MessageComplete { message } if message.role == Role::User => {
                self.steering_message(message, out);
            }
            EventKind::Input(outcome) => write_input(out, outcome),
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => {
                if !matches!(
                    status,
                    RunStatus::Created | RunStatus::Queued | RunStatus::InProgress
                ) {
                    self.flush_progress(out);
                }
                if let (Some(usage), Some(_)) = (usage, &self.message) {
                    let mut patch = Map::new();
                    patch.insert("usage".into(), usage_json(usage));
                    self.update_metadata(patch, out);
                }
                let error_text = error.as_ref().map(|error| error.message.as_str());
                match status {
                    RunStatus::Completed | RunStatus::Awaiting(Awaiting::Input) => {
                        self.end(End::Finish(Some("stop")), out);
                    }
                    RunStatus::Awaiting(_) => self.end(End::Finish(Some("tool-calls")), out),
                    RunStatus::Incomplete => self.end(End::Finish(Some("other")), out),
                    RunStatus::Failed | RunStatus::Rejected => {
                        let text = error_text.unwrap_or("the run failed");
                        if self.last_error.as_deref() != Some(text) {
                            self.error(text, out);
                        }
                        self.end(End::Finish(Some("error")), out);
                    }
                    RunStatus::Canceled => self.end(End::Abort(error_text), out),
                    RunStatus::Created | RunStatus::Queued | RunStatus::InProgress => {}
                }
            }
            EventKind::Error(error) => self.error(&error.message, out),
            EventKind::Heartbeat {} => crate::sse::write_comment(out, "keep-alive"),
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.message.is_some() {
            self.send_state(out);
            self.end(End::Finish(None), out);
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

/// A text or reasoning part's id: `t3` is the text part at index 3.
#[derive(Clone, Copy)]
struct PartId(char, u32);

impl fmt::Display for PartId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.0, self.1)
    }
}

impl Serialize for PartId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The chunks the encoder writes (`data-<name>` is written by [`write_data`]).
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
enum Chunk<'a> {
    Start {
        message_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_metadata: Option<&'a Value>,
    },
    StartStep,
    FinishStep,
    TextStart {
        id: PartId,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    TextDelta {
        id: PartId,
        delta: &'a str,
    },
    TextEnd {
        id: PartId,
    },
    ReasoningStart {
        id: PartId,
    },
    ReasoningDelta {
        id: PartId,
        delta: &'a str,
    },
    ReasoningEnd {
        id: PartId,
    },
    ToolInputStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
    },
    ToolInputDelta {
        tool_call_id: &'a str,
        input_text_delta: &'a str,
    },
    ToolInputAvailable {
        tool_call_id: &'a str,
        tool_name: &'a str,
        input: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    ToolInputError {
        tool_call_id: &'a str,
        tool_name: &'a str,
        input: &'a Value,
        error_text: &'a str,
    },
    ToolOutputAvailable {
        tool_call_id: &'a str,
        output: &'a Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        preliminary: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    ToolOutputError {
        tool_call_id: &'a str,
        error_text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    ToolOutputDenied {
        tool_call_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    ToolApprovalRequest {
        approval_id: &'a str,
        tool_call_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    ToolApprovalResponse {
        approval_id: &'a str,
        approved: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    SourceUrl {
        source_id: &'a str,
        url: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
    File {
        url: &'a str,
        media_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<&'a Value>,
    },
    MessageMetadata {
        message_metadata: &'a Value,
    },
    SteeringMessage {
        id: &'a str,
        parts: &'a [Value],
    },
    Finish {
        #[serde(skip_serializing_if = "Option::is_none")]
        finish_reason: Option<&'static str>,
    },
    Abort {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    Error {
        error_text: &'a str,
    },
}

/// Appends one chunk as an SSE frame. Its JSON has no raw line breaks, so it is one `data:` line.
fn chunk(out: &mut Vec<u8>, chunk: &Chunk<'_>) {
    out.extend_from_slice(b"data: ");
    // Serializing a chunk cannot fail: keys are strings, numbers finite.
    let _ = serde_json::to_writer(&mut *out, chunk);
    out.extend_from_slice(b"\n\n");
}

fn write_data(out: &mut Vec<u8>, name: &str, data: &Value) {
    #[derive(Serialize)]
    struct DataChunk<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        data: &'a Value,
    }
    let kind = format!("data-{name}");
    out.extend_from_slice(b"data: ");
    let _ = serde_json::to_writer(&mut *out, &DataChunk { kind: &kind, data });
    out.extend_from_slice(b"\n\n");
}

fn write_file(out: &mut Vec<u8>, file: &FilePart) {
    let url = file_url(&file.media_type, &file.source);
    let filename = file
        .filename
        .as_deref()
        .map(|filename| provider_metadata("filename", Value::from(filename)));
    chunk(
        out,
        &Chunk::File {
            url: &url,
            media_type: &file.media_type,
            provider_metadata: filename.as_ref(),
        },
    );
}

fn refusal_marker() -> Value {
    provider_metadata("refusal", Value::Bool(true))
}

fn text_start(out: &mut Vec<u8>, index: u32, provider_metadata: Option<&Value>) {
    chunk(
        out,
        &Chunk::TextStart {
            id: PartId('t', index),
            provider_metadata,
        },
    );
}

fn whole_text(out: &mut Vec<u8>, id: PartId, provider_metadata: Option<&Value>, text: &str) {
    chunk(
        out,
        &Chunk::TextStart {
            id,
            provider_metadata,
        },
    );
    if !text.is_empty() {
        chunk(out, &Chunk::TextDelta { id, delta: text });
    }
    chunk(out, &Chunk::TextEnd { id });
}

/// Writes a call's unsent argument text as one `tool-input-delta`, if there is any.
fn flush_input(out: &mut Vec<u8>, tool_call_id: &str, unsent: &mut String, sent: &mut usize) {
    if unsent.is_empty() {
        return;
    }
    chunk(
        out,
        &Chunk::ToolInputDelta {
            tool_call_id,
            input_text_delta: unsent,
        },
    );
    *sent += unsent.len();
    unsent.clear();
}
