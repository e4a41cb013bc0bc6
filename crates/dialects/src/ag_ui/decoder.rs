//! [`AgUiDecoder`]: AG-UI 1.0 SSE frames → canonical events.

use std::collections::HashMap;

use agentwire_core::ids::ApprovalId;
use agentwire_core::part::{
    ApprovalRequest, DataPart, ReasoningPart, RefusalPart, StepStart, TextPart,
};
use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, InputOutcome, Message, MessageId, Metadata, Part, Role,
    RunId, RunStatus, StreamedPart, ToolArgs, ToolCall, ToolError, ToolErrorKind, ToolResult,
};
use serde::Deserialize;
use serde_json::Value;

use super::wire::{
    CUSTOM_ERROR, CUSTOM_INPUT, CUSTOM_PART, NAMESPACE, Outcome, TokenUsage, WireEvent, result_of,
    sum_usage,
};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};

type In = WireEvent<String>;

/// Decodes AG-UI 1.0 server-sent events into canonical events, incrementally: bytes may arrive
/// split anywhere.
///
/// A run's AG-UI messages (text, reasoning, tool calls and their results) become one assistant
/// message, whose id is that of the first AG-UI message of the run; it completes when the run
/// does (`RUN_FINISHED` or `RUN_ERROR`), and any event after that is an error: a stream carries
/// one run. `*_CHUNK` events are expanded as the client expands them. The mapping and what is
/// lost are in the [module docs](super).
#[derive(Debug, Default)]
pub struct AgUiDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    seq: u64,
    run_id: Option<RunId>,
    message: Option<MessageBuild>,
    /// The run's tool calls: id → (name, answered). A call left unanswered makes the run wait
    /// for the client, as the client itself concludes.
    calls: HashMap<String, (String, bool)>,
    /// Approval requests already in the message (from `CUSTOM`), so an interrupt does not repeat
    /// them.
    approvals: Vec<ApprovalId>,
    /// The part a `*_CHUNK` event opened, which the next event of another kind closes.
    chunk: Option<Chunk>,
    /// The run has ended (`RUN_FINISHED` or `RUN_ERROR`): a stream carries one run, so any
    /// further event is out of place.
    ended: bool,
}

#[derive(Debug)]
struct MessageBuild {
    id: MessageId,
    role: Role,
    parts: Vec<Option<Part>>,
    /// Streaming text and refusals, by AG-UI message id.
    texts: HashMap<String, OpenText>,
    /// Streaming reasoning, by AG-UI message id.
    reasonings: HashMap<String, OpenText>,
    /// Streaming tool calls, by tool call id.
    calls: HashMap<String, OpenCall>,
}

#[derive(Debug)]
struct OpenText {
    index: u32,
    text: String,
    refusal: bool,
}

#[derive(Debug)]
struct OpenCall {
    index: u32,
    name: String,
    args: String,
}

#[derive(Debug)]
enum Chunk {
    Text(String),
    Reasoning(String),
    ToolCall(String),
}

/// What our `metadata.agentwire` may say.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ours {
    message_id: Option<MessageId>,
    step_id: Option<String>,
    #[serde(default)]
    refusal: bool,
    is_error: Option<bool>,
    error_type: Option<ToolErrorKind>,
    tool_name: Option<String>,
}

/// The value of a `CUSTOM` `agentwire.part` event.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CustomPart {
    message_id: Option<MessageId>,
    part: Part,
}

impl StreamDecoder for AgUiDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let mut frames = std::mem::take(&mut self.frames);
        let result = frames.drain(..).try_for_each(|frame| {
            self.n_frames += 1;
            let event: In =
                serde_json::from_str(&frame.data).map_err(|source| DecodeError::InvalidFrame {
                    frame: self.n_frames,
                    source,
                })?;
            self.event(event, out)
        });
        self.frames = frames;
        result
    }

    fn finish(&mut self, _out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()
    }
}

impl AgUiDecoder {
    fn emit(&mut self, out: &mut Vec<Event>, kind: EventKind) {
        self.seq += 1;
        out.push(Event::new(self.seq, kind));
    }

    fn invalid(&self, why: String) -> DecodeError {
        DecodeError::InvalidFrame {
            frame: self.n_frames,
            source: serde::de::Error::custom(why),
        }
    }

    fn event(&mut self, event: In, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        if self.ended && !matches!(event, In::Other) {
            return Err(self.invalid("an event after the run ended".into()));
        }
        let is_chunk = matches!(
            event,
            In::TextMessageChunk { .. }
                | In::ReasoningMessageChunk { .. }
                | In::ToolCallChunk { .. }
        );
        if !is_chunk && !matches!(event, In::Other) {
            self.close_chunk(out)?;
        }
        self.apply(event, out)
    }

    /// Applies one event; a chunk's expansion comes back here without closing the chunk.
    fn apply(&mut self, event: In, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        match event {
            In::RunStarted {
                thread_id, run_id, ..
            } => {
                let run_id = RunId::from(run_id);
                self.run_id = Some(run_id.clone());
                self.emit(
                    out,
                    EventKind::RunCreated {
                        run_id,
                        session_id: Some(thread_id.into()),
                        agent: None,
                        parent_run_id: None,
                        parent_tool_call_id: None,
                    },
                );
                self.emit(out, status(RunStatus::InProgress, None, None));
            }
            In::RunFinished { outcome, usage, .. } => {
                let status = self.finished_status(outcome, out);
                self.end_run(status, None, usage.as_deref(), out);
            }
            In::RunError {
                message,
                code,
                usage,
            } => {
                let error = ErrorInfo::new(code.unwrap_or_else(|| "run_error".into()), message);
                self.end_run(RunStatus::Failed, Some(error), usage.as_deref(), out);
            }
            In::StepStarted {
                step_name,
                metadata,
            } => {
                let ours = ours(metadata.as_ref());
                let step_id = ours.step_id.unwrap_or_else(|| step_name.clone());
                let step_name = (step_name != step_id).then_some(step_name);
                let part = Part::StepStart(StepStart {
                    step_id: step_id.into(),
                    step_name,
                });
                self.whole_part(ours.message_id, part, out);
            }
            In::TextMessageStart {
                message_id,
                role,
                metadata,
            } => {
                let refusal = ours(metadata.as_ref()).refusal;
                let role = match role.as_deref() {
                    Some("user") => Role::User,
                    Some("system" | "developer") => Role::System,
                    _ => Role::Assistant,
                };
                let kind = if refusal {
                    StreamedPart::Refusal
                } else {
                    StreamedPart::Text
                };
                if self
                    .message
                    .as_ref()
                    .is_some_and(|m| m.texts.contains_key(&message_id))
                {
                    return Err(self.invalid(format!("text message {message_id} started twice")));
                }
                let index = self.start_part(Some(&message_id), role, kind, out);
                let open = OpenText {
                    index,
                    text: String::new(),
                    refusal,
                };
                self.building().texts.insert(message_id, open);
            }
            In::TextMessageContent { message_id, delta } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.texts.get_mut(&message_id));
                let Some(open) = open else {
                    return Err(self.not_open("text message", &message_id));
                };
                open.text.push_str(&delta);
                let index = open.index;
                self.delta(index, delta, out);
            }
            In::TextMessageEnd { message_id } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.texts.remove(&message_id));
                let Some(open) = open else {
                    return Err(self.not_open("text message", &message_id));
                };
                self.complete_part(open.index, text_part(open), out);
            }
            In::ReasoningMessageStart { message_id, .. } => {
                if self
                    .message
                    .as_ref()
                    .is_some_and(|m| m.reasonings.contains_key(&message_id))
                {
                    return Err(self.invalid(format!("reasoning {message_id} started twice")));
                }
                let index = self.start_part(
                    Some(&message_id),
                    Role::Assistant,
                    StreamedPart::Reasoning,
                    out,
                );
                let open = OpenText {
                    index,
                    text: String::new(),
                    refusal: false,
                };
                self.building().reasonings.insert(message_id, open);
            }
            In::ReasoningMessageContent { message_id, delta } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.reasonings.get_mut(&message_id));
                let Some(open) = open else {
                    return Err(self.not_open("reasoning message", &message_id));
                };
                open.text.push_str(&delta);
                let index = open.index;
                self.delta(index, delta, out);
            }
            In::ReasoningMessageEnd { message_id } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.reasonings.remove(&message_id));
                let Some(open) = open else {
                    return Err(self.not_open("reasoning message", &message_id));
                };
                let part = Part::Reasoning(ReasoningPart { text: open.text });
                self.complete_part(open.index, part, out);
            }
            In::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => {
                if self
                    .message
                    .as_ref()
                    .is_some_and(|m| m.calls.contains_key(&tool_call_id))
                {
                    return Err(self.invalid(format!("tool call {tool_call_id} started twice")));
                }
                let kind = StreamedPart::ToolCall {
                    tool_call_id: tool_call_id.as_str().into(),
                    tool_name: tool_call_name.clone(),
                };
                let owner = parent_message_id.as_deref().unwrap_or(&tool_call_id);
                let index = self.start_part(Some(owner), Role::Assistant, kind, out);
                self.calls
                    .insert(tool_call_id.clone(), (tool_call_name.clone(), false));
                let open = OpenCall {
                    index,
                    name: tool_call_name,
                    args: String::new(),
                };
                self.building().calls.insert(tool_call_id, open);
            }
            In::ToolCallArgs {
                tool_call_id,
                delta,
            } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.calls.get_mut(&tool_call_id));
                let Some(open) = open else {
                    return Err(self.not_open("tool call", &tool_call_id));
                };
                open.args.push_str(&delta);
                let index = open.index;
                self.delta(index, delta, out);
            }
            In::ToolCallEnd { tool_call_id } => {
                let open = self
                    .message
                    .as_mut()
                    .and_then(|m| m.calls.remove(&tool_call_id));
                let Some(open) = open else {
                    return Err(self.not_open("tool call", &tool_call_id));
                };
                let part = call_part(tool_call_id, open);
                self.complete_part(part.0, part.1, out);
            }
            In::ToolCallResult {
                message_id,
                tool_call_id,
                content,
                metadata,
            } => {
                let ours = ours(metadata.as_ref());
                let call = self.calls.get_mut(&tool_call_id);
                let called = call.map(|(name, answered)| {
                    *answered = true;
                    name.clone()
                });
                let tool_name = ours.tool_name.or(called);
                let part = match ours.error_type {
                    Some(error_type) => Part::ToolError(ToolError {
                        tool_call_id: tool_call_id.into(),
                        tool_name,
                        error_type,
                        message: match content {
                            Value::String(text) => text,
                            other => other.to_string(),
                        },
                    }),
                    None => Part::ToolResult(ToolResult {
                        tool_call_id: tool_call_id.into(),
                        tool_name,
                        result: result_of(content),
                        is_error: ours.is_error,
                    }),
                };
                self.whole_part(Some(message_id.into()), part, out);
            }
            In::ActivitySnapshot {
                activity_type,
                content,
                ..
            } => {
                let part = Part::Data(DataPart {
                    name: activity_type,
                    data: content,
                });
                self.whole_part(None, part, out);
            }
            In::StateSnapshot { snapshot } => {
                self.emit(out, EventKind::StateSnapshot { state: snapshot });
            }
            In::StateDelta { delta } => {
                let patch =
                    serde_json::from_value(delta).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                self.emit(out, EventKind::StateDelta { patch });
            }
            In::Custom { name, value } if name == CUSTOM_PART => {
                let custom: CustomPart =
                    serde_json::from_value(value).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                if let Part::ApprovalRequest(request) = &custom.part {
                    self.approvals.push(request.approval_id.clone());
                }
                self.whole_part(custom.message_id, custom.part, out);
            }
            In::Custom { name, value } if name == CUSTOM_INPUT => {
                let outcome: InputOutcome =
                    serde_json::from_value(value).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                self.emit(out, EventKind::Input(outcome));
            }
            In::Custom { name, value } if name == CUSTOM_ERROR => {
                let error: ErrorInfo =
                    serde_json::from_value(value).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                self.emit(out, EventKind::Error(error));
            }
            In::TextMessageChunk {
                message_id,
                role,
                delta,
            } => {
                let open = match (&self.chunk, &message_id) {
                    (Some(Chunk::Text(id)), None) => Some(id.clone()),
                    (Some(Chunk::Text(id)), Some(given)) if id == given => Some(id.clone()),
                    _ => None,
                };
                let id = match open {
                    Some(id) => id,
                    None => {
                        self.close_chunk(out)?;
                        let Some(id) = message_id else {
                            return Err(self
                                .invalid("the first TEXT_MESSAGE_CHUNK has no messageId".into()));
                        };
                        let start = In::TextMessageStart {
                            message_id: id.clone(),
                            role,
                            metadata: None,
                        };
                        self.apply(start, out)?;
                        self.chunk = Some(Chunk::Text(id.clone()));
                        id
                    }
                };
                if let Some(delta) = delta {
                    self.apply(
                        In::TextMessageContent {
                            message_id: id,
                            delta,
                        },
                        out,
                    )?;
                }
            }
            In::ReasoningMessageChunk { message_id, delta } => {
                let open = match (&self.chunk, &message_id) {
                    (Some(Chunk::Reasoning(id)), None) => Some(id.clone()),
                    (Some(Chunk::Reasoning(id)), Some(given)) if id == given => Some(id.clone()),
                    _ => None,
                };
                let id = match open {
                    Some(id) => id,
                    None => {
                        self.close_chunk(out)?;
                        let Some(id) = message_id else {
                            return Err(self.invalid(
                                "the first REASONING_MESSAGE_CHUNK has no messageId".into(),
                            ));
                        };
                        let start = In::ReasoningMessageStart {
                            message_id: id.clone(),
                            role: "reasoning".into(),
                        };
                        self.apply(start, out)?;
                        self.chunk = Some(Chunk::Reasoning(id.clone()));
                        id
                    }
                };
                if let Some(delta) = delta {
                    self.apply(
                        In::ReasoningMessageContent {
                            message_id: id,
                            delta,
                        },
                        out,
                    )?;
                }
            }
            In::ToolCallChunk {
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
            } => {
                let open = match (&self.chunk, &tool_call_id) {
                    (Some(Chunk::ToolCall(id)), None) => Some(id.clone()),
                    (Some(Chunk::ToolCall(id)), Some(given)) if id == given => Some(id.clone()),
                    _ => None,
                };
                let id = match open {
                    Some(id) => id,
                    None => {
                        self.close_chunk(out)?;
                        let (Some(id), Some(name)) = (tool_call_id, tool_call_name) else {
                            return Err(self.invalid(
                                "the first TOOL_CALL_CHUNK needs toolCallId and toolCallName"
                                    .into(),
                            ));
                        };
                        let start = In::ToolCallStart {
                            tool_call_id: id.clone(),
                            tool_call_name: name,
                            parent_message_id,
                        };
                        self.apply(start, out)?;
                        self.chunk = Some(Chunk::ToolCall(id.clone()));
                        id
                    }
                };
                if let Some(delta) = delta {
                    self.apply(
                        In::ToolCallArgs {
                            tool_call_id: id,
                            delta,
                        },
                        out,
                    )?;
                }
            }
            // Spans, step ends, message snapshots, raw and unknown events carry nothing the
            // canonical messages hold.
            In::ReasoningStart { .. }
            | In::ReasoningEnd { .. }
            | In::StepFinished { .. }
            | In::Custom { .. }
            | In::Other => {}
        }
        Ok(())
    }

    /// Ends the part a chunk opened, as the client does when another kind of event arrives.
    fn close_chunk(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        match self.chunk.take() {
            None => Ok(()),
            Some(Chunk::Text(message_id)) => self.apply(In::TextMessageEnd { message_id }, out),
            Some(Chunk::Reasoning(message_id)) => {
                self.apply(In::ReasoningMessageEnd { message_id }, out)
            }
            Some(Chunk::ToolCall(tool_call_id)) => {
                self.apply(In::ToolCallEnd { tool_call_id }, out)
            }
        }
    }

    fn not_open(&self, what: &str, id: &str) -> DecodeError {
        self.invalid(format!("{what} {id} is not open"))
    }

    /// The message being built, started (`message_start`) if there is none: its id is `id`, or
    /// the run's id with `.message` when the first event names no message.
    fn ensure_message(&mut self, id: Option<&str>, role: Role, out: &mut Vec<Event>) {
        if self.message.is_some() {
            return;
        }
        let id: MessageId = match (id, &self.run_id) {
            (Some(id), _) => id.into(),
            (None, Some(run_id)) => format!("{run_id}.message").into(),
            (None, None) => "message".into(),
        };
        self.emit(
            out,
            EventKind::MessageStart {
                message_id: id.clone(),
                role,
                metadata: Metadata::default(),
                created_at: None,
            },
        );
        self.message = Some(MessageBuild {
            id,
            role,
            parts: Vec::new(),
            texts: HashMap::new(),
            reasonings: HashMap::new(),
            calls: HashMap::new(),
        });
    }

    /// The message being built; only called right after [`Self::ensure_message`].
    fn building(&mut self) -> &mut MessageBuild {
        self.message.get_or_insert_with(|| MessageBuild {
            id: "message".into(),
            role: Role::Assistant,
            parts: Vec::new(),
            texts: HashMap::new(),
            reasonings: HashMap::new(),
            calls: HashMap::new(),
        })
    }

    fn start_part(
        &mut self,
        message_id: Option<&str>,
        role: Role,
        part: StreamedPart,
        out: &mut Vec<Event>,
    ) -> u32 {
        self.ensure_message(message_id, role, out);
        let message = self.building();
        let index = u32::try_from(message.parts.len()).unwrap_or(u32::MAX);
        message.parts.push(None);
        let message_id = message.id.clone();
        self.emit(
            out,
            EventKind::PartStart {
                message_id,
                index,
                part,
            },
        );
        index
    }

    fn delta(&mut self, index: u32, delta: String, out: &mut Vec<Event>) {
        if delta.is_empty() {
            return;
        }
        let message_id = self.building().id.clone();
        self.emit(
            out,
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            },
        );
    }

    fn complete_part(&mut self, index: u32, part: Part, out: &mut Vec<Event>) {
        let message = self.building();
        if let Some(slot) = message.parts.get_mut(index as usize) {
            *slot = Some(part.clone());
        }
        let message_id = message.id.clone();
        self.emit(
            out,
            EventKind::PartComplete {
                message_id,
                index,
                part,
            },
        );
    }

    fn whole_part(&mut self, message_id: Option<MessageId>, part: Part, out: &mut Vec<Event>) {
        self.ensure_message(
            message_id.as_ref().map(MessageId::as_str),
            Role::Assistant,
            out,
        );
        let message = self.building();
        let index = u32::try_from(message.parts.len()).unwrap_or(u32::MAX);
        message.parts.push(None);
        self.complete_part(index, part, out);
    }

    /// The status a `RUN_FINISHED` reports, adding the approval requests its interrupts carry.
    fn finished_status(
        &mut self,
        outcome: Option<Outcome<String>>,
        out: &mut Vec<Event>,
    ) -> RunStatus {
        match outcome {
            Some(Outcome::Interrupt { interrupts }) => {
                let mut approval = false;
                for interrupt in interrupts {
                    approval |= interrupt.reason == "tool_call" || interrupt.tool_call_id.is_some();
                    let Some(tool_call_id) = interrupt.tool_call_id else {
                        continue;
                    };
                    if self.approvals.iter().any(|id| id.as_str() == interrupt.id) {
                        continue;
                    }
                    let part = Part::ApprovalRequest(ApprovalRequest {
                        approval_id: interrupt.id.into(),
                        tool_call_id: tool_call_id.into(),
                        reason: interrupt.message,
                    });
                    self.whole_part(None, part, out);
                }
                if approval {
                    RunStatus::Awaiting(Awaiting::Approval)
                } else {
                    RunStatus::Awaiting(Awaiting::Input)
                }
            }
            Some(Outcome::Cancelled) => RunStatus::Canceled,
            Some(Outcome::Success {
                pending_tool_call_ids: Some(ids),
            }) if !ids.is_empty() => RunStatus::Awaiting(Awaiting::FunctionOutput),
            Some(Outcome::Success { .. }) | None => {
                if self.calls.values().any(|(_, answered)| !answered) {
                    RunStatus::Awaiting(Awaiting::FunctionOutput)
                } else {
                    RunStatus::Completed
                }
            }
        }
    }

    /// Completes the message (ending any part still open) and reports the run's status.
    fn end_run(
        &mut self,
        status: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<&[TokenUsage]>,
        out: &mut Vec<Event>,
    ) {
        self.ended = true;
        if let Some(message) = &mut self.message {
            let mut open: Vec<(u32, Part)> = Vec::new();
            open.extend(message.texts.drain().map(|(_, t)| (t.index, text_part(t))));
            open.extend(
                message
                    .reasonings
                    .drain()
                    .map(|(_, t)| (t.index, Part::Reasoning(ReasoningPart { text: t.text }))),
            );
            open.extend(message.calls.drain().map(|(id, call)| call_part(id, call)));
            open.sort_by_key(|(index, _)| *index);
            for (index, part) in open {
                self.complete_part(index, part, out);
            }
        }
        if let Some(message) = self.message.take() {
            let message = Message {
                id: Some(message.id),
                role: message.role,
                parts: message.parts.into_iter().flatten().collect(),
                metadata: Metadata::default(),
                created_at: None,
            };
            self.emit(out, EventKind::MessageComplete { message });
        }
        self.calls.clear();
        self.approvals.clear();
        self.emit(out, status_of(status, error, usage));
    }
}

fn status(
    status: RunStatus,
    error: Option<ErrorInfo>,
    usage: Option<agentwire_core::Usage>,
) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage,
    }
}

fn status_of(run: RunStatus, error: Option<ErrorInfo>, usage: Option<&[TokenUsage]>) -> EventKind {
    status(run, error, usage.map(sum_usage))
}

/// What `metadata.agentwire` says, if anything; what does not parse is ignored.
fn ours(metadata: Option<&Value>) -> Ours {
    metadata
        .and_then(|metadata| metadata.get(NAMESPACE))
        .and_then(|ours| Ours::deserialize(ours).ok())
        .unwrap_or_default()
}

fn text_part(open: OpenText) -> Part {
    if open.refusal {
        Part::Refusal(RefusalPart { text: open.text })
    } else {
        Part::Text(TextPart { text: open.text })
    }
}

fn call_part(tool_call_id: String, call: OpenCall) -> (u32, Part) {
    let part = Part::ToolCall(ToolCall {
        tool_call_id: tool_call_id.into(),
        tool_name: call.name,
        args: ToolArgs::from_json_text(&call.args),
    });
    (call.index, part)
}
