//! [`AiSdkDecoder`]: UI message stream chunks → canonical events.

use std::borrow::Cow;
use std::collections::HashMap;

use agentwire_core::part::{
    ApprovalRequest, ApprovalResponse, FilePart, ReasoningPart, RefusalPart, Source, StepStart,
    TextPart,
};
use agentwire_core::{
    Awaiting, BuildError, Emitter, ErrorInfo, Event, EventKind, MessageBuilder, MessageStart, Part,
    Role, RunStatus, ToolError, ToolErrorKind, ToolResult,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::encoder::{STATE_DATA, STATE_DELTA_DATA};
use super::{
    data_part, file_source, merge_metadata, metadata_from_json, present, provider_fact, step_id,
};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};

/// Decodes a UI message stream into events, through a [`MessageBuilder`], so that what it emits
/// always accumulates. Any split of the bytes gives the same events.
///
/// A chunk of a type it does not know is skipped; a known chunk without its required keys, or
/// one the client would refuse for its order (a delta for a part that never started), is a
/// [`DecodeError::InvalidFrame`].
#[derive(Debug, Default)]
pub struct AiSdkDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    out: Emitter,
    message: Option<OpenMessage>,
    n_messages: u32,
    last_error: Option<ErrorInfo>,
    /// `[DONE]` arrived, or the run reached a terminal status: later chunks are ignored.
    ended: bool,
    /// A `start-step` not yet written: the step that shows a sub-agent's requests is not the
    /// message's, and only the next chunk tells.
    pending_step: bool,
    /// Sub-agents' calls shown with an approval request and no outcome yet: a run that stops
    /// for tool calls with one of these waits for an approval.
    nested_approvals: Vec<String>,
}

#[derive(Debug)]
struct OpenMessage {
    id: String,
    builder: MessageBuilder,
    metadata: Map<String, Value>,
    /// Text and reasoning parts started and not ended, by kind and chunk id.
    texts: Vec<OpenText>,
    /// The text (kind and chunk id) whose part is open in the builder.
    current: Option<(TextKind, String)>,
    calls: HashMap<String, Call>,
    /// Approval requests by tool call id: the approval id, and whether it was answered.
    approvals: HashMap<String, (String, bool)>,
    n_steps: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextKind {
    Text,
    Refusal,
    Reasoning,
}

#[derive(Debug)]
struct OpenText {
    kind: TextKind,
    id: String,
    /// A delta arrived, so the builder holds a part for it.
    opened: bool,
}

#[derive(Debug)]
struct Call {
    tool_name: String,
    streaming: bool,
    has_delta: bool,
}

/// Every key a chunk may carry that the decoder reads; which are required depends on `type`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    message_metadata: Option<Value>,
    #[serde(default)]
    provider_metadata: Option<Value>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input_text_delta: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    output: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(default, borrow)]
    error_text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    approval_id: Option<Cow<'a, str>>,
    #[serde(default)]
    approved: Option<bool>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    source_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    url: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    media_type: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    transient: Option<bool>,
    #[serde(default)]
    preliminary: Option<bool>,
}

/// The chunk types the decoder knows (others are skipped, as newer peers' chunks).
const KNOWN: &[&str] = &[
    "start",
    "start-step",
    "finish-step",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-input-error",
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
    "tool-approval-request",
    "tool-approval-response",
    "source-url",
    "file",
    "message-metadata",
    "finish",
    "abort",
    "error",
];

/// What a frame said that does not fit the protocol.
fn invalid(frame: u64, what: impl std::fmt::Display) -> DecodeError {
    DecodeError::InvalidFrame {
        frame,
        source: serde::de::Error::custom(what),
    }
}

/// A required key of a chunk.
fn required<T>(value: Option<T>, frame: u64, kind: &str, key: &str) -> Result<T, DecodeError> {
    value.ok_or_else(|| invalid(frame, format_args!("`{kind}` needs `{key}`")))
}

impl StreamDecoder for AiSdkDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let frames = std::mem::take(&mut self.frames);
        let result = frames.iter().try_for_each(|frame| self.frame(&frame.data));
        self.frames = frames;
        self.frames.clear();
        out.extend(self.out.drain());
        result
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()?;
        self.end_of_stream();
        out.extend(self.out.drain());
        Ok(())
    }
}

impl AiSdkDecoder {
    fn frame(&mut self, data: &str) -> Result<(), DecodeError> {
        self.n_frames += 1;
        let frame = self.n_frames;
        if self.ended {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.end_of_stream();
            self.ended = true;
            return Ok(());
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(source) => {
                // Only on failure: a newer peer's chunk may carry keys of other shapes.
                #[derive(Deserialize)]
                struct Typed<'a> {
                    #[serde(rename = "type", borrow)]
                    kind: Cow<'a, str>,
                }
                return match serde_json::from_str::<Typed<'_>>(data) {
                    Ok(typed) if !is_known(&typed.kind) => Ok(()),
                    _ => Err(DecodeError::InvalidFrame { frame, source }),
                };
            }
        };
        if !is_known(&chunk.kind) {
            return Ok(());
        }
        self.chunk(chunk, frame)
    }

    fn chunk(&mut self, chunk: Chunk<'_>, frame: u64) -> Result<(), DecodeError> {
        let kind = chunk.kind.as_ref();
        // A sub-agent's request or its outcome, as a tool part of the message: not the run's
        // own. The step opened right before the first of them was opened for them.
        if provider_fact(chunk.provider_metadata.as_ref(), "runId").is_some() {
            let call = chunk.tool_call_id.as_deref().unwrap_or_default().to_owned();
            match kind {
                "tool-input-available" => self.pending_step = false,
                "tool-approval-request" => self.nested_approvals.push(call),
                "tool-output-available" | "tool-output-error" | "tool-output-denied" => {
                    self.nested_approvals.retain(|waiting| *waiting != call);
                }
                _ => {}
            }
            return Ok(());
        }
        self.write_pending_step();
        match kind {
            "start" => {
                let metadata = object(chunk.message_metadata);
                match (&mut self.message, chunk.message_id) {
                    (Some(open), Some(id)) if open.id != id => {
                        self.complete_message();
                        self.open_message(Some(id.into_owned()), metadata);
                    }
                    (Some(open), _) => merge_metadata(&mut open.metadata, metadata),
                    (None, id) => self.open_message(id.map(Cow::into_owned), metadata),
                }
            }
            "message-metadata" => {
                let metadata = required(chunk.message_metadata, frame, kind, "messageMetadata")?;
                merge_metadata(&mut self.message().metadata, object(Some(metadata)));
            }
            "finish" => {
                if self.message.is_some() {
                    merge_metadata(&mut self.message().metadata, object(chunk.message_metadata));
                }
                let status = chunk
                    .finish_reason
                    .as_deref()
                    .map(|reason| self.finish_status(reason));
                let usage = self.complete_message();
                if let Some((status, error)) = status {
                    self.run_status(status, error, usage);
                }
            }
            "abort" => {
                self.complete_message();
                let error = chunk
                    .reason
                    .map(|reason| ErrorInfo::new("aborted", reason.into_owned()));
                self.run_status(RunStatus::Canceled, error, None);
            }
            // The shared state needs no message: the stream carries it beside them.
            STATE_DATA => {
                let state = required(chunk.data, frame, kind, "data")?;
                self.out.emit(EventKind::StateSnapshot { state });
            }
            STATE_DELTA_DATA => {
                let patch = required(chunk.data, frame, kind, "data")?
                    .get_mut("patch")
                    .map(Value::take);
                let patch = required(patch, frame, kind, "data.patch")?;
                let patch = serde_json::from_value(patch)
                    .map_err(|source| DecodeError::InvalidFrame { frame, source })?;
                self.out.emit(EventKind::StateDelta { patch });
            }
            "error" => {
                let text = required(chunk.error_text, frame, kind, "errorText")?;
                let error = ErrorInfo::new("error", text.into_owned());
                self.out.emit(EventKind::Error(error.clone()));
                self.last_error = Some(error);
            }
            _ => self.message_chunk(chunk, frame)?,
        }
        Ok(())
    }

    /// A chunk that adds to the message.
    fn message_chunk(&mut self, chunk: Chunk<'_>, frame: u64) -> Result<(), DecodeError> {
        let kind = chunk.kind.as_ref();
        let n_messages = &mut self.n_messages;
        let out = &mut self.out;
        let message = self
            .message
            .get_or_insert_with(|| OpenMessage::start(out, n_messages, None, Map::new()));
        let build_error = |error: BuildError| invalid(frame, error);
        match kind {
            "start-step" => self.pending_step = true,
            "finish-step" => {}
            "text-start" | "reasoning-start" => {
                let id = required(chunk.id, frame, kind, "id")?.into_owned();
                let kind = if kind == "reasoning-start" {
                    TextKind::Reasoning
                } else if provider_fact(chunk.provider_metadata.as_ref(), "refusal")
                    == Some(&Value::Bool(true))
                {
                    TextKind::Refusal
                } else {
                    TextKind::Text
                };
                message
                    .texts
                    .retain(|text| !(text.id == id && same_map(text.kind, kind)));
                message.texts.push(OpenText {
                    kind,
                    id,
                    opened: false,
                });
            }
            "text-delta" | "reasoning-delta" => {
                let id = required(chunk.id, frame, kind, "id")?;
                let delta = required(chunk.delta, frame, kind, "delta")?;
                let reasoning = kind == "reasoning-delta";
                let Some(text) = message.find_text(&id, reasoning) else {
                    return Err(invalid(
                        frame,
                        format_args!("`{kind}` for `{id}`, which did not start"),
                    ));
                };
                if delta.is_empty() {
                    return Ok(());
                }
                let text_kind = message.texts[text].kind;
                let key = (text_kind, id.into_owned());
                if message.current.as_ref() != Some(&key) {
                    message.builder.close_text(out);
                    message.current = Some(key);
                }
                message.texts[text].opened = true;
                match text_kind {
                    TextKind::Text => message.builder.text_delta(out, delta),
                    TextKind::Refusal => message.builder.refusal_delta(out, delta),
                    TextKind::Reasoning => message.builder.reasoning_delta(out, delta),
                }
            }
            "text-end" | "reasoning-end" => {
                let id = required(chunk.id, frame, kind, "id")?;
                let Some(text) = message.find_text(&id, kind == "reasoning-end") else {
                    return Err(invalid(
                        frame,
                        format_args!("`{kind}` for `{id}`, which did not start"),
                    ));
                };
                let text = message.texts.swap_remove(text);
                message.end_text(out, &text);
            }
            "tool-input-start" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let tool_name = required(chunk.tool_name, frame, kind, "toolName")?;
                message.current = None;
                message
                    .builder
                    .tool_call_start(out, tool_call_id.as_ref(), tool_name.as_ref())
                    .map_err(build_error)?;
                message.calls.insert(
                    tool_call_id.into_owned(),
                    Call {
                        tool_name: tool_name.into_owned(),
                        streaming: true,
                        has_delta: false,
                    },
                );
            }
            "tool-input-delta" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let delta = required(chunk.input_text_delta, frame, kind, "inputTextDelta")?;
                match message.calls.get_mut(tool_call_id.as_ref()) {
                    Some(call) if call.streaming => {
                        if !delta.is_empty() {
                            call.has_delta = true;
                            message
                                .builder
                                .tool_call_delta(out, &tool_call_id, &delta)
                                .map_err(build_error)?;
                        }
                    }
                    _ => {
                        return Err(invalid(
                            frame,
                            format_args!("`{kind}` for `{tool_call_id}`, which did not start"),
                        ));
                    }
                }
            }
            "tool-input-available" | "tool-input-error" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let tool_name = required(chunk.tool_name, frame, kind, "toolName")?;
                let input = required(chunk.input, frame, kind, "input")?;
                let error_text = if kind == "tool-input-error" {
                    Some(required(chunk.error_text, frame, kind, "errorText")?)
                } else {
                    None
                };
                // An invalid call the client already has keeps its input.
                let completed = message
                    .calls
                    .get(tool_call_id.as_ref())
                    .is_some_and(|call| !call.streaming);
                if !(completed && error_text.is_some()) {
                    message
                        .complete_call(out, &tool_call_id, &tool_name, &input)
                        .map_err(build_error)?;
                }
                if let Some(error_text) = error_text {
                    let error = ToolError {
                        tool_call_id: tool_call_id.as_ref().into(),
                        tool_name: Some(tool_name.into_owned()),
                        error_type: ToolErrorKind::Validation,
                        message: error_text.into_owned(),
                    };
                    message.whole(out, Part::ToolError(error));
                }
            }
            "tool-output-available" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let output = required(chunk.output, frame, kind, "output")?;
                if chunk.preliminary != Some(true) {
                    let result = ToolResult {
                        tool_name: message.tool_name(&tool_call_id),
                        tool_call_id: tool_call_id.as_ref().into(),
                        result: output,
                        is_error: None,
                    };
                    message.whole(out, Part::ToolResult(result));
                }
            }
            "tool-output-error" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let error_text = required(chunk.error_text, frame, kind, "errorText")?;
                let error = ToolError {
                    tool_name: message.tool_name(&tool_call_id),
                    tool_call_id: tool_call_id.as_ref().into(),
                    error_type: ToolErrorKind::Execution,
                    message: error_text.into_owned(),
                };
                message.whole(out, Part::ToolError(error));
            }
            "tool-output-denied" => {
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                let part = match message.approvals.get_mut(tool_call_id.as_ref()) {
                    Some((_, true)) => None,
                    Some((approval_id, answered)) => {
                        *answered = true;
                        Some(Part::ApprovalResponse(ApprovalResponse {
                            approval_id: approval_id.as_str().into(),
                            approved: false,
                            reason: None,
                        }))
                    }
                    None => Some(Part::ToolError(ToolError {
                        tool_name: message.tool_name(&tool_call_id),
                        tool_call_id: tool_call_id.as_ref().into(),
                        error_type: ToolErrorKind::Execution,
                        message: "the tool call was denied".into(),
                    })),
                };
                if let Some(part) = part {
                    message.whole(out, part);
                }
            }
            "tool-approval-request" => {
                let approval_id = required(chunk.approval_id, frame, kind, "approvalId")?;
                let tool_call_id = required(chunk.tool_call_id, frame, kind, "toolCallId")?;
                message.approvals.insert(
                    tool_call_id.clone().into_owned(),
                    (approval_id.clone().into_owned(), false),
                );
                let request = ApprovalRequest {
                    approval_id: approval_id.as_ref().into(),
                    tool_call_id: tool_call_id.as_ref().into(),
                    reason: chunk.reason.map(Cow::into_owned),
                };
                message.whole(out, Part::ApprovalRequest(request));
            }
            "tool-approval-response" => {
                let approval_id = required(chunk.approval_id, frame, kind, "approvalId")?;
                let approved = required(chunk.approved, frame, kind, "approved")?;
                if let Some((_, answered)) = message
                    .approvals
                    .values_mut()
                    .find(|(id, _)| *id == approval_id)
                {
                    *answered = true;
                }
                let response = ApprovalResponse {
                    approval_id: approval_id.as_ref().into(),
                    approved,
                    reason: chunk.reason.map(Cow::into_owned),
                };
                message.whole(out, Part::ApprovalResponse(response));
            }
            "source-url" => {
                let source = Source {
                    source_id: required(chunk.source_id, frame, kind, "sourceId")?
                        .as_ref()
                        .into(),
                    url: required(chunk.url, frame, kind, "url")?.into_owned(),
                    title: chunk.title.map(Cow::into_owned),
                };
                message.whole(out, Part::Source(source));
            }
            "file" => {
                let url = required(chunk.url, frame, kind, "url")?;
                let media_type = required(chunk.media_type, frame, kind, "mediaType")?;
                let filename = provider_fact(chunk.provider_metadata.as_ref(), "filename")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let file = FilePart {
                    source: file_source(&media_type, &url),
                    media_type: media_type.into_owned(),
                    filename,
                };
                message.whole(out, Part::File(file));
            }
            data_kind => {
                // `is_known` let only `data-*` through to here.
                let name = data_kind.strip_prefix("data-").unwrap_or(data_kind);
                let data = required(chunk.data, frame, data_kind, "data")?;
                if chunk.transient != Some(true) {
                    message.whole(out, data_part(name, data));
                }
            }
        }
        Ok(())
    }

    fn message(&mut self) -> &mut OpenMessage {
        let n_messages = &mut self.n_messages;
        let out = &mut self.out;
        self.message
            .get_or_insert_with(|| OpenMessage::start(out, n_messages, None, Map::new()))
    }

    fn open_message(&mut self, id: Option<String>, metadata: Map<String, Value>) {
        self.message = Some(OpenMessage::start(
            &mut self.out,
            &mut self.n_messages,
            id,
            metadata,
        ));
    }

    /// Completes the open message, if any; returns the usage its metadata reports.
    fn complete_message(&mut self) -> Option<agentwire_core::Usage> {
        self.message.take()?.finish(&mut self.out)
    }

    fn finish_status(&mut self, reason: &str) -> (RunStatus, Option<ErrorInfo>) {
        let stopped = |code: &str| ErrorInfo::new(code, format!("the model stopped: {reason}"));
        match reason {
            "stop" => (RunStatus::Completed, None),
            "tool-calls" => {
                let unanswered = self.message.as_ref().is_some_and(|message| {
                    message.approvals.values().any(|(_, answered)| !answered)
                }) || !self.nested_approvals.is_empty();
                let awaiting = if unanswered {
                    Awaiting::Approval
                } else {
                    Awaiting::FunctionOutput
                };
                (RunStatus::Awaiting(awaiting), None)
            }
            "error" => {
                let error = self
                    .last_error
                    .clone()
                    .unwrap_or_else(|| ErrorInfo::new("error", "the stream ended with an error"));
                (RunStatus::Failed, Some(error))
            }
            "interrupted" => (RunStatus::Canceled, None),
            "length" => (RunStatus::Incomplete, Some(stopped("length"))),
            "content-filter" => (RunStatus::Incomplete, Some(stopped("content_filter"))),
            _ => (RunStatus::Incomplete, Some(stopped("other"))),
        }
    }

    fn run_status(
        &mut self,
        status: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<agentwire_core::Usage>,
    ) {
        self.out.emit(EventKind::RunStatus {
            status,
            error,
            usage,
        });
        if status.is_terminal() {
            self.ended = true;
        }
    }

    /// The stream ended (`[DONE]` or the last byte): the open message completes; a stream that
    /// reported an error and never finished failed.
    /// Writes the step a `start-step` opened, once the chunk after it says it is the message's.
    fn write_pending_step(&mut self) {
        if !std::mem::take(&mut self.pending_step) {
            return;
        }
        let out = &mut self.out;
        let n_messages = &mut self.n_messages;
        let message = self
            .message
            .get_or_insert_with(|| OpenMessage::start(out, n_messages, None, Map::new()));
        message.n_steps += 1;
        let step = StepStart {
            step_id: step_id(message.n_steps).into(),
            step_name: None,
        };
        message.whole(out, Part::StepStart(step));
    }

    fn end_of_stream(&mut self) {
        if self.ended {
            return;
        }
        self.write_pending_step();
        let usage = self.complete_message();
        if let Some(error) = self.last_error.take() {
            self.run_status(RunStatus::Failed, Some(error), usage);
        }
    }
}

fn is_known(kind: &str) -> bool {
    KNOWN.contains(&kind) || kind.starts_with("data-")
}

/// Text and refusal ids share the client's map of text parts; reasoning has its own.
fn same_map(a: TextKind, b: TextKind) -> bool {
    (a == TextKind::Reasoning) == (b == TextKind::Reasoning)
}

/// Metadata as an object; anything else (`null`, a number) adds nothing.
fn object(metadata: Option<Value>) -> Map<String, Value> {
    match metadata {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

impl OpenMessage {
    fn start(
        out: &mut Emitter,
        n_messages: &mut u32,
        id: Option<String>,
        metadata: Map<String, Value>,
    ) -> Self {
        *n_messages += 1;
        let id = id.unwrap_or_else(|| format!("msg_{n_messages}"));
        let (start_metadata, created_at) = metadata_from_json(metadata.clone());
        let start = MessageStart {
            message_id: id.as_str().into(),
            role: Role::Assistant,
            metadata: start_metadata,
            created_at,
        };
        Self {
            id,
            builder: MessageBuilder::start(out, start),
            metadata,
            texts: Vec::new(),
            current: None,
            calls: HashMap::new(),
            approvals: HashMap::new(),
            n_steps: 0,
        }
    }

    /// A part that arrives whole (the builder closes the open text first).
    fn whole(&mut self, out: &mut Emitter, part: Part) {
        self.current = None;
        self.builder.part(out, part);
    }

    fn find_text(&self, id: &str, reasoning: bool) -> Option<usize> {
        self.texts
            .iter()
            .position(|text| text.id == id && (text.kind == TextKind::Reasoning) == reasoning)
    }

    fn end_text(&mut self, out: &mut Emitter, text: &OpenText) {
        if !text.opened {
            let part = match text.kind {
                TextKind::Text => Part::Text(TextPart::default()),
                TextKind::Refusal => Part::Refusal(RefusalPart::default()),
                TextKind::Reasoning => Part::Reasoning(ReasoningPart::default()),
            };
            self.whole(out, part);
        } else if self
            .current
            .as_ref()
            .is_some_and(|(kind, id)| *kind == text.kind && *id == text.id)
        {
            self.builder.close_text(out);
            self.current = None;
        }
    }

    fn tool_name(&self, tool_call_id: &str) -> Option<String> {
        self.calls
            .get(tool_call_id)
            .map(|call| call.tool_name.clone())
    }

    /// Completes a call with `input`: a call that streamed argument text keeps that text; one
    /// that did not (or never started) takes `input`'s JSON text as its one delta.
    fn complete_call(
        &mut self,
        out: &mut Emitter,
        tool_call_id: &str,
        tool_name: &str,
        input: &Value,
    ) -> Result<(), BuildError> {
        let call = self.calls.get(tool_call_id);
        if !call.is_some_and(|call| call.streaming) {
            self.current = None;
            self.builder.tool_call_start(out, tool_call_id, tool_name)?;
        }
        if !call.is_some_and(|call| call.has_delta) {
            self.builder
                .tool_call_delta(out, tool_call_id, &input.to_string())?;
        }
        self.builder.tool_call_end(out, tool_call_id)?;
        self.calls.insert(
            tool_call_id.to_owned(),
            Call {
                tool_name: tool_name.to_owned(),
                streaming: false,
                has_delta: false,
            },
        );
        Ok(())
    }

    /// Completes the message: the texts that started without a delta become empty parts, the
    /// metadata is what the chunks merged. Returns the usage the metadata reports.
    fn finish(mut self, out: &mut Emitter) -> Option<agentwire_core::Usage> {
        for text in std::mem::take(&mut self.texts) {
            if !text.opened {
                self.end_text(out, &text);
            }
        }
        let (metadata, _) = metadata_from_json(self.metadata);
        let usage = metadata.usage;
        *self.builder.metadata_mut() = metadata;
        self.builder.finish(out);
        usage
    }
}
