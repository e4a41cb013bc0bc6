//! [`ResponsesDecoder`]: Responses API stream events → canonical events.

use std::collections::{HashMap, HashSet};

use agentwire_core::part::ApprovalRequest;
use agentwire_core::{
    Awaiting, Emitter, ErrorInfo, Event, EventKind, MessageBuilder, MessageStart, Part, Role,
    RunStatus, ToolError, ToolErrorKind, ToolResult, Usage,
};
use serde::Deserialize;
use serde_json::Value;

use super::wire::{Frame, Item, KNOWN, ResponseObject, Status, WireEvent, WireUsage};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};

/// Decodes a Responses stream into events, through a [`MessageBuilder`], so that what it emits
/// always accumulates: one assistant message per response. Any split of the bytes gives the
/// same events.
///
/// An event of a type it does not know is skipped; a known event without its required keys, or
/// one about an output item that was never added, is a [`DecodeError::InvalidFrame`].
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    out: Emitter,
    response_id: String,
    status: Option<RunStatus>,
    message: Option<MessageBuilder>,
    /// Call ids of the call items, by item id.
    calls: HashMap<String, String>,
    /// Calls that streamed argument text, by call id.
    streamed_calls: HashSet<String>,
    /// Calls whose part is complete.
    ended_calls: HashSet<String>,
    /// Message items that streamed text.
    streamed_items: HashSet<String>,
    /// A text, refusal or reasoning delta arrived since the last `done`.
    text_streamed: bool,
    /// `function_call`s (for the client), and approval requests, in the stream.
    client_calls: usize,
    approvals: usize,
    /// The last `mcp_call` of each tool name, for approval requests.
    last_mcp: HashMap<String, String>,
    ended: bool,
}

fn invalid(frame: u64, what: impl std::fmt::Display) -> DecodeError {
    DecodeError::InvalidFrame {
        frame,
        source: serde::de::Error::custom(what),
    }
}

impl StreamDecoder for ResponsesDecoder {
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
        if let Some(message) = self.message.take() {
            message.finish(&mut self.out);
        }
        out.extend(self.out.drain());
        Ok(())
    }
}

impl ResponsesDecoder {
    fn frame(&mut self, data: &str) -> Result<(), DecodeError> {
        self.n_frames += 1;
        let frame = self.n_frames;
        if self.ended || data.trim() == "[DONE]" {
            return Ok(());
        }
        let parsed: Frame = match serde_json::from_str(data) {
            Ok(parsed) => parsed,
            Err(source) => {
                #[derive(Deserialize)]
                struct Typed {
                    #[serde(rename = "type")]
                    kind: String,
                }
                return match serde_json::from_str::<Typed>(data) {
                    Ok(typed) if !KNOWN.contains(&typed.kind.as_str()) => Ok(()),
                    _ => Err(DecodeError::InvalidFrame { frame, source }),
                };
            }
        };
        self.event(parsed.event, frame)
    }

    fn set_status(&mut self, status: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) {
        if self.status == Some(status) && error.is_none() && usage.is_none() {
            return;
        }
        self.status = Some(status);
        self.out.emit(EventKind::RunStatus {
            status,
            error,
            usage,
        });
    }

    /// The response's message, started if it is not, and where its events go.
    fn open(&mut self) -> (&mut MessageBuilder, &mut Emitter) {
        let out = &mut self.out;
        let message = self.message.get_or_insert_with(|| {
            let id = format!("{}_msg", self.response_id);
            MessageBuilder::start(out, MessageStart::new(id, Role::Assistant))
        });
        (message, out)
    }

    fn call_of(&self, item_id: &str, frame: u64) -> Result<String, DecodeError> {
        self.calls
            .get(item_id)
            .cloned()
            .ok_or_else(|| invalid(frame, format_args!("no call item '{item_id}' was added")))
    }

    fn event(&mut self, event: WireEvent, frame: u64) -> Result<(), DecodeError> {
        let build_error = |error| invalid(frame, error);
        match event {
            WireEvent::Created { response } => {
                self.response_id.clone_from(&response.id);
                self.out.emit(EventKind::RunCreated {
                    run_id: response.id.as_str().into(),
                    session_id: None,
                    agent: Some(response.model.clone()).filter(|model| !model.is_empty()),
                    parent_run_id: None,
                    parent_tool_call_id: None,
                });
                let status = match response.status {
                    Status::Queued => RunStatus::Queued,
                    _ => RunStatus::InProgress,
                };
                self.set_status(status, None, None);
            }
            WireEvent::Queued { .. } => self.set_status(RunStatus::Queued, None, None),
            WireEvent::InProgress { .. } => self.set_status(RunStatus::InProgress, None, None),
            WireEvent::ItemAdded { item, .. } => self.item_added(item, frame)?,
            WireEvent::ItemDone { item, .. } => self.item_done(item, frame)?,
            WireEvent::ContentAdded { .. } | WireEvent::ContentDone { .. } => {}
            WireEvent::SummaryAdded { .. } | WireEvent::SummaryDone { .. } => {}
            WireEvent::TextDelta { item_id, delta, .. } => {
                self.streamed_items.insert(item_id);
                self.text_streamed = true;
                let (message, out) = self.open();
                message.text_delta(out, delta);
            }
            WireEvent::RefusalDelta { item_id, delta, .. } => {
                self.streamed_items.insert(item_id);
                self.text_streamed = true;
                let (message, out) = self.open();
                message.refusal_delta(out, delta);
            }
            WireEvent::SummaryTextDelta { delta, .. }
            | WireEvent::ReasoningTextDelta { delta, .. } => {
                self.text_streamed = true;
                let (message, out) = self.open();
                message.reasoning_delta(out, delta);
            }
            WireEvent::TextDone { item_id, text, .. } => {
                self.text_done(text, |message, out, text| message.text_delta(out, text));
                self.streamed_items.insert(item_id);
            }
            WireEvent::RefusalDone {
                item_id, refusal, ..
            } => {
                self.text_done(refusal, |message, out, text| {
                    message.refusal_delta(out, text)
                });
                self.streamed_items.insert(item_id);
            }
            WireEvent::SummaryTextDone { text, .. } => {
                self.text_done(text, |message, out, text| {
                    message.reasoning_delta(out, text)
                });
            }
            WireEvent::ArgumentsDelta { item_id, delta, .. }
            | WireEvent::McpArgumentsDelta { item_id, delta, .. } => {
                let call_id = self.call_of(&item_id, frame)?;
                self.streamed_calls.insert(call_id.clone());
                let (message, out) = self.open();
                message
                    .tool_call_delta(out, &call_id, &delta)
                    .map_err(build_error)?;
            }
            WireEvent::ArgumentsDone {
                item_id, arguments, ..
            }
            | WireEvent::McpArgumentsDone {
                item_id, arguments, ..
            } => {
                let call_id = self.call_of(&item_id, frame)?;
                self.end_call(&call_id, &arguments, frame)?;
            }
            WireEvent::McpInProgress { .. }
            | WireEvent::McpCompleted { .. }
            | WireEvent::McpFailed { .. } => {}
            WireEvent::Completed { response } => {
                self.end_message();
                let status = if self.approvals > 0 {
                    RunStatus::Awaiting(Awaiting::Approval)
                } else if self.client_calls > 0 {
                    RunStatus::Awaiting(Awaiting::FunctionOutput)
                } else {
                    RunStatus::Completed
                };
                self.settle(status, None, &response);
            }
            WireEvent::Failed { response } => {
                self.end_message();
                let error = response
                    .error
                    .as_ref()
                    .map(|error| ErrorInfo::new(&error.code, &error.message))
                    .unwrap_or_else(|| ErrorInfo::new("error", "the response failed"));
                self.settle(RunStatus::Failed, Some(error), &response);
            }
            WireEvent::Incomplete { response } => {
                self.end_message();
                if response.status == Status::Cancelled {
                    self.settle(RunStatus::Canceled, None, &response);
                } else {
                    let reason = response
                        .incomplete_details
                        .as_ref()
                        .map_or("incomplete", |details| details.reason.as_str());
                    let code = match reason {
                        "max_output_tokens" => "max_tokens",
                        other => other,
                    };
                    let message = response.error.as_ref().map_or_else(
                        || format!("the response is incomplete: {reason}"),
                        |error| error.message.clone(),
                    );
                    let error = ErrorInfo::new(code, message);
                    self.settle(RunStatus::Incomplete, Some(error), &response);
                }
            }
            WireEvent::Error { code, message, .. } => {
                let code = code.unwrap_or_else(|| "error".to_owned());
                self.out
                    .emit(EventKind::Error(ErrorInfo::new(code, message)));
            }
        }
        Ok(())
    }

    /// A text, refusal or reasoning summary is done: its text if none of it streamed, then the
    /// part closes.
    fn text_done(
        &mut self,
        text: String,
        write: impl FnOnce(&mut MessageBuilder, &mut Emitter, String),
    ) {
        if !self.text_streamed && !text.is_empty() {
            let message = self.message.get_or_insert_with(|| {
                let id = format!("{}_msg", self.response_id);
                MessageBuilder::start(&mut self.out, MessageStart::new(id, Role::Assistant))
            });
            write(message, &mut self.out, text);
        }
        self.text_streamed = false;
        if let Some(message) = &mut self.message {
            message.close_text(&mut self.out);
        }
    }

    fn start_call(
        &mut self,
        item_id: &str,
        call_id: &str,
        name: &str,
        frame: u64,
    ) -> Result<(), DecodeError> {
        self.calls.insert(item_id.to_owned(), call_id.to_owned());
        let (message, out) = self.open();
        message
            .tool_call_start(out, call_id, name)
            .map_err(|error| invalid(frame, error))
    }

    fn end_call(&mut self, call_id: &str, arguments: &str, frame: u64) -> Result<(), DecodeError> {
        if !self.ended_calls.insert(call_id.to_owned()) {
            return Ok(());
        }
        let build_error = |error| invalid(frame, error);
        if !self.streamed_calls.contains(call_id) {
            let (message, out) = self.open();
            message
                .tool_call_delta(out, call_id, arguments)
                .map_err(build_error)?;
        }
        let (message, out) = self.open();
        message.tool_call_end(out, call_id).map_err(build_error)
    }

    fn item_added(&mut self, item: Item, frame: u64) -> Result<(), DecodeError> {
        match item {
            Item::FunctionCall {
                id, call_id, name, ..
            } => {
                let item_id = id.unwrap_or_else(|| call_id.clone());
                self.client_calls += 1;
                self.start_call(&item_id, &call_id, &name, frame)?;
            }
            Item::McpCall { id, name, .. } => {
                let call_id = id.strip_prefix("mcp_").unwrap_or(&id).to_owned();
                self.last_mcp.insert(name.clone(), call_id.clone());
                self.start_call(&id, &call_id, &name, frame)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn item_done(&mut self, item: Item, frame: u64) -> Result<(), DecodeError> {
        match item {
            Item::Message { id, content, .. } => {
                if self.streamed_items.contains(&id) {
                    return Ok(());
                }
                // A message that arrives whole.
                for content in content {
                    match content {
                        super::wire::Content::OutputText { text, .. } => {
                            let (message, out) = self.open();
                            message.text_delta(out, text);
                        }
                        super::wire::Content::Refusal { refusal } => {
                            let (message, out) = self.open();
                            message.refusal_delta(out, refusal);
                        }
                        super::wire::Content::Other => {}
                    }
                    if let Some(message) = &mut self.message {
                        message.close_text(&mut self.out);
                    }
                }
            }
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
                ..
            } => {
                let item_id = id.unwrap_or_else(|| call_id.clone());
                if !self.calls.contains_key(&item_id) {
                    self.client_calls += 1;
                    self.start_call(&item_id, &call_id, &name, frame)?;
                }
                self.end_call(&call_id, &arguments, frame)?;
            }
            Item::McpCall {
                id,
                name,
                arguments,
                output,
                error,
                ..
            } => {
                let call_id = id.strip_prefix("mcp_").unwrap_or(&id).to_owned();
                if !self.calls.contains_key(&id) {
                    self.last_mcp.insert(name.clone(), call_id.clone());
                    self.start_call(&id, &call_id, &name, frame)?;
                }
                self.end_call(&call_id, &arguments, frame)?;
                let part = match (output, error) {
                    (_, Some(message)) => Part::ToolError(ToolError {
                        tool_call_id: call_id.as_str().into(),
                        tool_name: Some(name),
                        error_type: ToolErrorKind::Execution,
                        message,
                    }),
                    (Some(output), None) => Part::ToolResult(ToolResult {
                        tool_call_id: call_id.as_str().into(),
                        tool_name: Some(name),
                        result: serde_json::from_str(&output).unwrap_or(Value::String(output)),
                        is_error: None,
                    }),
                    (None, None) => return Ok(()),
                };
                let (message, out) = self.open();
                message.part(out, part);
            }
            Item::McpApprovalRequest { id, name, .. } => {
                let call_id = self
                    .last_mcp
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| id.clone());
                self.approvals += 1;
                let part = Part::ApprovalRequest(ApprovalRequest {
                    approval_id: id.as_str().into(),
                    tool_call_id: call_id.as_str().into(),
                    reason: None,
                });
                let (message, out) = self.open();
                message.part(out, part);
            }
            Item::Reasoning { .. } | Item::Other => {}
        }
        Ok(())
    }

    fn end_message(&mut self) {
        if let Some(message) = self.message.take() {
            message.finish(&mut self.out);
        }
    }

    fn settle(&mut self, status: RunStatus, error: Option<ErrorInfo>, response: &ResponseObject) {
        let usage = response.usage.as_ref().map(usage_of);
        self.set_status(status, error, usage);
        self.ended = true;
    }
}

fn usage_of(usage: &WireUsage) -> Usage {
    Usage {
        total_tokens: usage
            .total_tokens
            .max(usage.input_tokens + usage.output_tokens),
        reasoning_tokens: usage.output_tokens_details.reasoning_tokens,
        cached_input_tokens: usage.input_tokens_details.cached_tokens,
        ..Usage::new(usage.input_tokens, usage.output_tokens)
    }
}
