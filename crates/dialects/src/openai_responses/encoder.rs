//! [`ResponsesEncoder`]: canonical events → Responses API stream events.

use std::collections::HashMap;

use agentwire_core::{
    ErrorInfo, Event, EventKind, Message, Part, Role, RunStatus, StreamedPart, Usage,
};
use serde_json::{Map, Value, json};

use super::wire::{
    Content, Frame, IncompleteDetails, Item, ResponseObject, Status, Summary, TokenDetails,
    WireError, WireEvent, WireUsage,
};
use crate::Encoder;
use crate::sse;

/// What a response says of itself besides its output: its id, the model (agent) answering, and
/// what the request asked for, echoed as OpenAI echoes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseInfo {
    /// The response's id.
    pub id: String,
    /// `model`: the agent's name.
    pub model: String,
    /// When the response was created, in Unix seconds.
    pub created_at: i64,
    /// Whether the request asked to run in the background (the response starts `queued`).
    pub background: bool,
    /// The response this one continues.
    pub previous_response_id: Option<String>,
    /// The request's `instructions`.
    pub instructions: Option<String>,
    /// The request's `tools`, as sent.
    pub tools: Vec<Value>,
    /// The request's `temperature`.
    pub temperature: Option<f64>,
    /// The request's `top_p`.
    pub top_p: Option<f64>,
    /// The request's `max_output_tokens`.
    pub max_output_tokens: Option<u32>,
}

/// Encodes one response: a run's events from its start, or from where it waited, until it
/// settles (completed, awaiting the client, or ended); events after that are ignored, so a
/// replay of a whole run gives its first response. See the [module docs](super) for the mapping.
#[derive(Debug)]
pub struct ResponsesEncoder {
    response: ResponseObject,
    next_seq: u64,
    starting_after: Option<u64>,
    started: bool,
    in_progress_sent: bool,
    ended: bool,
    /// The agent's own tools, by name: the `server_label` of their `mcp_call`s.
    agent_tools: HashMap<String, String>,
    /// The label of an agent tool called in an earlier response whose name is unknown here.
    default_label: String,
    /// Calls made before this response: name and argument text, by call id.
    known_calls: HashMap<String, (String, String)>,
    /// The `message` item that text and refusals go into now.
    open_message: Option<usize>,
    /// Where each streaming canonical part goes, by message id and part index.
    slots: HashMap<(String, u32), Slot>,
    /// The output index of every call's item, by call id.
    calls: HashMap<String, usize>,
    /// Which output items are done.
    done: Vec<bool>,
    /// Sub-agents' calls in the stream: name and argument text, by `<run>:<call id>`, so that
    /// an approval one of them asks can be shown.
    nested_calls: HashMap<String, (String, String)>,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    Text { output: usize, content: usize },
    Refusal { output: usize, content: usize },
    Reasoning { output: usize },
    Call { output: usize, mcp: bool },
}

impl ResponsesEncoder {
    /// An encoder of the response `info` describes.
    pub fn new(info: ResponseInfo) -> Self {
        let status = match info.background {
            true => Status::Queued,
            false => Status::InProgress,
        };
        let response = ResponseObject {
            id: info.id,
            object: "response".into(),
            created_at: info.created_at,
            status,
            background: info.background,
            error: None,
            incomplete_details: None,
            instructions: info.instructions,
            max_output_tokens: info.max_output_tokens,
            metadata: Map::new(),
            model: info.model.clone(),
            output: Vec::new(),
            parallel_tool_calls: true,
            previous_response_id: info.previous_response_id,
            store: true,
            temperature: info.temperature,
            text: json!({"format": {"type": "text"}}),
            tool_choice: json!("auto"),
            tools: info.tools,
            top_p: info.top_p,
            truncation: Some("disabled".into()),
            usage: None,
        };
        Self {
            response,
            next_seq: 0,
            starting_after: None,
            started: false,
            in_progress_sent: false,
            ended: false,
            agent_tools: HashMap::new(),
            default_label: info.model,
            known_calls: HashMap::new(),
            nested_calls: HashMap::new(),
            open_message: None,
            slots: HashMap::new(),
            calls: HashMap::new(),
            done: Vec::new(),
        }
    }

    /// Calls of these tools (name, `server_label`) are the agent's own: they go out as
    /// `mcp_call` items with their results, not as `function_call`s for the client to run.
    pub fn with_agent_tools(mut self, tools: impl IntoIterator<Item = (String, String)>) -> Self {
        self.agent_tools.extend(tools);
        self
    }

    /// The calls among `messages` (the run's output before this response), so that a result
    /// of one of them in this response carries its name and arguments.
    pub fn knowing(mut self, messages: &[Message]) -> Self {
        for part in messages.iter().flat_map(|message| &message.parts) {
            if let Part::ToolCall(call) = part {
                self.known_calls.insert(
                    call.tool_call_id.to_string(),
                    (call.tool_name.clone(), call.args.to_json_text()),
                );
            }
        }
        self
    }

    /// Leaves out every event whose `sequence_number` is `n` or less: the stream a client
    /// resumes after the event `n` it last saw.
    pub fn starting_after(mut self, n: u64) -> Self {
        self.starting_after = Some(n);
        self
    }

    /// The `response` object as it stands: every item so far, as far as it has streamed.
    pub fn response(&self) -> Value {
        serde_json::to_value(&self.response).unwrap_or(Value::Null)
    }

    /// Whether the response has settled (its last event is written).
    pub fn is_done(&self) -> bool {
        self.ended
    }

    fn emit(&mut self, out: &mut Vec<u8>, event: WireEvent) {
        let sequence_number = self.next_seq;
        self.next_seq += 1;
        if self
            .starting_after
            .is_some_and(|after| sequence_number <= after)
        {
            return;
        }
        let name = event.name();
        let frame = Frame {
            event,
            sequence_number,
        };
        if let Ok(data) = serde_json::to_string(&frame) {
            sse::write_frame(out, None, Some(name), &data);
        }
    }

    fn snapshot(&self) -> Box<ResponseObject> {
        Box::new(self.response.clone())
    }

    /// Writes `response.created` once, first.
    fn start(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.started = true;
            let response = self.snapshot();
            self.emit(out, WireEvent::Created { response });
        }
    }

    /// The response is under way: `response.in_progress`, once.
    fn in_progress(&mut self, out: &mut Vec<u8>) {
        self.start(out);
        self.response.status = Status::InProgress;
        if !self.in_progress_sent {
            self.in_progress_sent = true;
            let response = self.snapshot();
            self.emit(out, WireEvent::InProgress { response });
        }
    }

    fn add_item(&mut self, out: &mut Vec<u8>, item: Item) -> usize {
        let output_index = self.response.output.len();
        self.response.output.push(item.clone());
        self.done.push(false);
        self.emit(out, WireEvent::ItemAdded { output_index, item });
        output_index
    }

    fn finish_item(&mut self, out: &mut Vec<u8>, output_index: usize) {
        if self.done.get(output_index).copied().unwrap_or(true) {
            return;
        }
        self.done[output_index] = true;
        // A message or a client's call is complete when done; an `mcp_call` keeps its own
        // status (one waiting for its approval is still in progress).
        if let Some(Item::Message { status, .. } | Item::FunctionCall { status, .. }) =
            self.response.output.get_mut(output_index)
        {
            "completed".clone_into(status);
        }
        let item = self.response.output[output_index].clone();
        self.emit(out, WireEvent::ItemDone { output_index, item });
    }

    fn close_message(&mut self, out: &mut Vec<u8>) {
        if let Some(output_index) = self.open_message.take() {
            self.finish_item(out, output_index);
        }
    }

    /// The open `message` item, opened if there is none.
    fn message_item(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32) -> usize {
        if let Some(open) = self.open_message {
            return open;
        }
        let item = Item::Message {
            id: format!("{message_id}_{index}"),
            role: "assistant".into(),
            status: "in_progress".into(),
            content: Vec::new(),
        };
        let output_index = self.add_item(out, item);
        self.open_message = Some(output_index);
        output_index
    }

    fn item_id(&self, output_index: usize) -> String {
        match &self.response.output[output_index] {
            Item::Message { id, .. }
            | Item::Reasoning { id, .. }
            | Item::McpCall { id, .. }
            | Item::McpApprovalRequest { id, .. } => id.clone(),
            Item::FunctionCall { id, call_id, .. } => id.clone().unwrap_or_else(|| call_id.clone()),
            Item::Other => String::new(),
        }
    }

    fn label_of(&self, tool_name: &str) -> Option<String> {
        self.agent_tools.get(tool_name).cloned()
    }

    fn part_start(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32, part: &StreamedPart) {
        let slot = match part {
            StreamedPart::Text | StreamedPart::Refusal => {
                let output = self.message_item(out, message_id, index);
                let (content, part) = match part {
                    StreamedPart::Text => (
                        Content::OutputText {
                            text: String::new(),
                            annotations: Vec::new(),
                            logprobs: Vec::new(),
                        },
                        true,
                    ),
                    _ => (
                        Content::Refusal {
                            refusal: String::new(),
                        },
                        false,
                    ),
                };
                let Item::Message {
                    content: contents, ..
                } = &mut self.response.output[output]
                else {
                    return;
                };
                let content_index = contents.len();
                contents.push(content.clone());
                let item_id = self.item_id(output);
                self.emit(
                    out,
                    WireEvent::ContentAdded {
                        item_id,
                        output_index: output,
                        content_index,
                        part: content,
                    },
                );
                match part {
                    true => Slot::Text {
                        output,
                        content: content_index,
                    },
                    false => Slot::Refusal {
                        output,
                        content: content_index,
                    },
                }
            }
            StreamedPart::Reasoning => {
                self.close_message(out);
                let id = format!("{message_id}_{index}");
                let output = self.add_item(
                    out,
                    Item::Reasoning {
                        id: id.clone(),
                        summary: Vec::new(),
                    },
                );
                // The summary part is added by its own event, after the item.
                if let Item::Reasoning { summary, .. } = &mut self.response.output[output] {
                    summary.push(Summary::new(String::new()));
                }
                self.emit(
                    out,
                    WireEvent::SummaryAdded {
                        item_id: id,
                        output_index: output,
                        summary_index: 0,
                        part: Summary::new(String::new()),
                    },
                );
                Slot::Reasoning { output }
            }
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => {
                self.close_message(out);
                let call_id = tool_call_id.to_string();
                let (item, mcp) = match self.label_of(tool_name) {
                    Some(server_label) => (
                        Item::McpCall {
                            id: format!("mcp_{call_id}"),
                            server_label,
                            name: tool_name.clone(),
                            arguments: String::new(),
                            output: None,
                            error: None,
                            approval_request_id: None,
                            status: "in_progress".into(),
                        },
                        true,
                    ),
                    None => (
                        Item::FunctionCall {
                            id: Some(format!("fc_{call_id}")),
                            call_id: call_id.clone(),
                            name: tool_name.clone(),
                            arguments: String::new(),
                            status: "in_progress".into(),
                        },
                        false,
                    ),
                };
                let output = self.add_item(out, item);
                self.calls.insert(call_id, output);
                if mcp {
                    let item_id = self.item_id(output);
                    self.emit(
                        out,
                        WireEvent::McpInProgress {
                            item_id,
                            output_index: output,
                        },
                    );
                }
                Slot::Call { output, mcp }
            }
        };
        self.slots.insert((message_id.to_owned(), index), slot);
    }

    fn part_delta(&mut self, out: &mut Vec<u8>, slot: Slot, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let event = match slot {
            Slot::Text { output, content } | Slot::Refusal { output, content } => {
                let item_id = self.item_id(output);
                if let Item::Message {
                    content: contents, ..
                } = &mut self.response.output[output]
                {
                    match &mut contents[content] {
                        Content::OutputText { text, .. } => text.push_str(delta),
                        Content::Refusal { refusal } => refusal.push_str(delta),
                        Content::Other => {}
                    }
                }
                match slot {
                    Slot::Text { .. } => WireEvent::TextDelta {
                        item_id,
                        output_index: output,
                        content_index: content,
                        delta: delta.to_owned(),
                        logprobs: Vec::new(),
                    },
                    _ => WireEvent::RefusalDelta {
                        item_id,
                        output_index: output,
                        content_index: content,
                        delta: delta.to_owned(),
                    },
                }
            }
            Slot::Reasoning { output } => {
                let item_id = self.item_id(output);
                if let Item::Reasoning { summary, .. } = &mut self.response.output[output]
                    && let Some(first) = summary.first_mut()
                {
                    first.text.push_str(delta);
                }
                WireEvent::SummaryTextDelta {
                    item_id,
                    output_index: output,
                    summary_index: 0,
                    delta: delta.to_owned(),
                }
            }
            Slot::Call { output, mcp } => {
                let item_id = self.item_id(output);
                if let Item::FunctionCall { arguments, .. } | Item::McpCall { arguments, .. } =
                    &mut self.response.output[output]
                {
                    arguments.push_str(delta);
                }
                match mcp {
                    true => WireEvent::McpArgumentsDelta {
                        item_id,
                        output_index: output,
                        delta: delta.to_owned(),
                    },
                    false => WireEvent::ArgumentsDelta {
                        item_id,
                        output_index: output,
                        delta: delta.to_owned(),
                    },
                }
            }
        };
        self.emit(out, event);
    }

    fn part_done(&mut self, out: &mut Vec<u8>, slot: Slot) {
        match slot {
            Slot::Text { output, content } | Slot::Refusal { output, content } => {
                let item_id = self.item_id(output);
                let Item::Message {
                    content: contents, ..
                } = &self.response.output[output]
                else {
                    return;
                };
                let part = contents[content].clone();
                let done = match &part {
                    Content::OutputText { text, .. } => WireEvent::TextDone {
                        item_id: item_id.clone(),
                        output_index: output,
                        content_index: content,
                        text: text.clone(),
                        logprobs: Vec::new(),
                    },
                    Content::Refusal { refusal } => WireEvent::RefusalDone {
                        item_id: item_id.clone(),
                        output_index: output,
                        content_index: content,
                        refusal: refusal.clone(),
                    },
                    Content::Other => return,
                };
                self.emit(out, done);
                self.emit(
                    out,
                    WireEvent::ContentDone {
                        item_id,
                        output_index: output,
                        content_index: content,
                        part,
                    },
                );
            }
            Slot::Reasoning { output } => {
                let item_id = self.item_id(output);
                let text = match &self.response.output[output] {
                    Item::Reasoning { summary, .. } => summary
                        .first()
                        .map(|part| part.text.clone())
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                self.emit(
                    out,
                    WireEvent::SummaryTextDone {
                        item_id: item_id.clone(),
                        output_index: output,
                        summary_index: 0,
                        text: text.clone(),
                    },
                );
                self.emit(
                    out,
                    WireEvent::SummaryDone {
                        item_id,
                        output_index: output,
                        summary_index: 0,
                        part: Summary::new(text),
                    },
                );
                self.finish_item(out, output);
            }
            Slot::Call { output, mcp } => {
                let item_id = self.item_id(output);
                let (arguments, name) = match &self.response.output[output] {
                    Item::FunctionCall {
                        arguments, name, ..
                    }
                    | Item::McpCall {
                        arguments, name, ..
                    } => (arguments.clone(), name.clone()),
                    _ => return,
                };
                if mcp {
                    self.emit(
                        out,
                        WireEvent::McpArgumentsDone {
                            item_id,
                            output_index: output,
                            arguments,
                        },
                    );
                } else {
                    self.emit(
                        out,
                        WireEvent::ArgumentsDone {
                            item_id,
                            output_index: output,
                            arguments,
                            name: Some(name),
                        },
                    );
                    self.finish_item(out, output);
                }
            }
        }
    }

    /// A part that completes: the end of a streamed one, or a whole one.
    fn part_complete(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32, part: &Part) {
        let key = (message_id.to_owned(), index);
        if let Some(slot) = self.slots.remove(&key) {
            // A call's argument text is what streamed; an empty stream takes the whole value.
            if let (Slot::Call { output, mcp }, Part::ToolCall(call)) = (slot, part)
                && let Item::FunctionCall { arguments, .. } | Item::McpCall { arguments, .. } =
                    &self.response.output[output]
                && arguments.is_empty()
                && mcp == matches!(self.response.output[output], Item::McpCall { .. })
            {
                self.part_delta(out, slot, &call.args.to_json_text());
            }
            self.part_done(out, slot);
            return;
        }
        let (streamed, text) = match part {
            Part::Text(text) => (StreamedPart::Text, text.text.clone()),
            Part::Refusal(refusal) => (StreamedPart::Refusal, refusal.text.clone()),
            Part::Reasoning(reasoning) => (StreamedPart::Reasoning, reasoning.text.clone()),
            Part::ToolCall(call) => (
                StreamedPart::ToolCall {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                },
                call.args.to_json_text(),
            ),
            Part::ToolResult(result) => {
                let output = match &result.result {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                let name = result.tool_name.as_deref();
                self.outcome(out, result.tool_call_id.as_str(), name, Ok(output));
                return;
            }
            Part::ToolError(error) => {
                let name = error.tool_name.as_deref();
                let message = error.message.clone();
                self.outcome(out, error.tool_call_id.as_str(), name, Err(message));
                return;
            }
            Part::ApprovalRequest(request) => {
                self.approval_request(
                    out,
                    request.approval_id.as_str(),
                    request.tool_call_id.as_str(),
                );
                return;
            }
            _ => return,
        };
        self.part_start(out, message_id, index, &streamed);
        if let Some(slot) = self.slots.remove(&key) {
            self.part_delta(out, slot, &text);
            self.part_done(out, slot);
        }
    }

    /// A call's result or error: its `mcp_call` is done. A client's own output (of a
    /// `function_call`) is not sent back.
    fn outcome(
        &mut self,
        out: &mut Vec<u8>,
        call_id: &str,
        tool_name: Option<&str>,
        outcome: Result<String, String>,
    ) {
        let output = match self.calls.get(call_id) {
            Some(&output) if matches!(self.response.output[output], Item::McpCall { .. }) => output,
            Some(_) => return,
            None => {
                let known = self.known_calls.get(call_id).cloned();
                let name = tool_name
                    .map(str::to_owned)
                    .or_else(|| known.as_ref().map(|(name, _)| name.clone()));
                let Some(name) = name else { return };
                let Some(server_label) = self.label_of(&name) else {
                    return;
                };
                self.close_message(out);
                let arguments = known.map_or_else(|| "{}".to_owned(), |(_, args)| args);
                let output = self.add_item(
                    out,
                    Item::McpCall {
                        id: format!("mcp_{call_id}"),
                        server_label,
                        name,
                        arguments,
                        output: None,
                        error: None,
                        approval_request_id: None,
                        status: "in_progress".into(),
                    },
                );
                self.calls.insert(call_id.to_owned(), output);
                output
            }
        };
        if self.done[output] {
            return;
        }
        let item_id = self.item_id(output);
        let failed = outcome.is_err();
        if let Item::McpCall {
            output: result,
            error,
            status,
            ..
        } = &mut self.response.output[output]
        {
            match outcome {
                Ok(text) => *result = Some(text),
                Err(message) => *error = Some(message),
            }
            *status = match failed {
                true => "failed".into(),
                false => "completed".into(),
            };
        }
        let event = match failed {
            true => WireEvent::McpFailed {
                item_id,
                output_index: output,
            },
            false => WireEvent::McpCompleted {
                item_id,
                output_index: output,
            },
        };
        self.emit(out, event);
        self.finish_item(out, output);
    }

    fn approval_request(&mut self, out: &mut Vec<u8>, approval_id: &str, call_id: &str) {
        self.close_message(out);
        let (name, arguments, server_label) = match self.calls.get(call_id) {
            Some(&output) => match &mut self.response.output[output] {
                Item::McpCall {
                    name,
                    arguments,
                    server_label,
                    approval_request_id,
                    ..
                } => {
                    *approval_request_id = Some(approval_id.to_owned());
                    (name.clone(), arguments.clone(), server_label.clone())
                }
                Item::FunctionCall {
                    name, arguments, ..
                } => (name.clone(), arguments.clone(), self.default_label.clone()),
                _ => return,
            },
            None => match self.known_calls.get(call_id) {
                Some((name, arguments)) => {
                    let label = self
                        .label_of(name)
                        .unwrap_or_else(|| self.default_label.clone());
                    (name.clone(), arguments.clone(), label)
                }
                None => (String::new(), "{}".to_owned(), self.default_label.clone()),
            },
        };
        let output = self.add_item(
            out,
            Item::McpApprovalRequest {
                id: approval_id.to_owned(),
                server_label,
                name,
                arguments,
            },
        );
        self.finish_item(out, output);
    }

    /// The response settles with `status`: every open item is closed, then the terminal event.
    fn settle(&mut self, out: &mut Vec<u8>, status: RunStatus, error: Option<&ErrorInfo>) {
        self.in_progress(out);
        self.close_message(out);
        for output_index in 0..self.done.len() {
            self.finish_item(out, output_index);
        }
        let wire_error = error.map(|error| WireError {
            code: error.code.clone(),
            message: error.message.clone(),
        });
        let event = |response| match status {
            RunStatus::Failed | RunStatus::Rejected => WireEvent::Failed { response },
            RunStatus::Incomplete | RunStatus::Canceled => WireEvent::Incomplete { response },
            _ => WireEvent::Completed { response },
        };
        match status {
            RunStatus::Failed | RunStatus::Rejected => {
                self.response.status = Status::Failed;
                self.response.error = Some(wire_error.unwrap_or(WireError {
                    code: "server_error".into(),
                    message: "the run failed".into(),
                }));
            }
            RunStatus::Canceled => self.response.status = Status::Cancelled,
            RunStatus::Incomplete => {
                self.response.status = Status::Incomplete;
                let reason = match error.map(|error| error.code.as_str()) {
                    Some("max_tokens") => "max_output_tokens".to_owned(),
                    Some("content_filter") => "content_filter".to_owned(),
                    Some(code) => {
                        self.response.error = wire_error;
                        code.to_owned()
                    }
                    None => "interrupted".to_owned(),
                };
                self.response.incomplete_details = Some(IncompleteDetails { reason });
            }
            _ => self.response.status = Status::Completed,
        }
        self.ended = true;
        let response = self.snapshot();
        self.emit(out, event(response));
    }
}

fn wire_usage(usage: &Usage) -> WireUsage {
    WireUsage {
        input_tokens: usage.input_tokens,
        input_tokens_details: TokenDetails {
            cached_tokens: Some(usage.cached_input_tokens.unwrap_or(0)),
            reasoning_tokens: None,
        },
        output_tokens: usage.output_tokens,
        output_tokens_details: TokenDetails {
            cached_tokens: None,
            reasoning_tokens: Some(usage.reasoning_tokens.unwrap_or(0)),
        },
        total_tokens: usage.total_tokens,
    }
}

impl ResponsesEncoder {
    /// An event of a sub-agent's run nested in the stream. A response's output is the model's;
    /// a sub-agent's messages have no item, and its answer is its call's output. What it asks
    /// for approval is an `mcp_approval_request` of the response all the same, so that the
    /// client can answer it (`mcp_approval_response`, naming the approval, which the runtime
    /// hands down).
    fn encode_nested(&mut self, event: &Event, out: &mut Vec<u8>) {
        let run = event
            .namespace
            .run()
            .map(ToString::to_string)
            .unwrap_or_default();
        let EventKind::PartComplete { part, .. } = &event.kind else {
            return;
        };
        match part {
            Part::ToolCall(call) => {
                self.nested_calls.insert(
                    format!("{run}:{}", call.tool_call_id),
                    (call.tool_name.clone(), call.args.to_json_text()),
                );
            }
            Part::ApprovalRequest(request) => {
                let Some((name, arguments)) = self
                    .nested_calls
                    .get(&format!("{run}:{}", request.tool_call_id))
                    .cloned()
                else {
                    return;
                };
                self.in_progress(out);
                self.close_message(out);
                let server_label = self
                    .label_of(&name)
                    .unwrap_or_else(|| self.default_label.clone());
                let output = self.add_item(
                    out,
                    Item::McpApprovalRequest {
                        id: request.approval_id.to_string(),
                        server_label,
                        name,
                        arguments,
                    },
                );
                self.finish_item(out, output);
            }
            _ => {}
        }
    }
}

impl Encoder for ResponsesEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if self.ended {
            return;
        }
        if !event.is_own() {
            self.encode_nested(event, out);
            return;
        }
        match &event.kind {
            EventKind::RunCreated { run_id, .. } => {
                // A response converted from a run is named after it.
                if self.response.id.is_empty() {
                    self.response.id = run_id.to_string();
                }
                self.start(out);
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => {
                if let Some(usage) = usage {
                    self.response.usage = Some(wire_usage(usage));
                }
                match status {
                    RunStatus::Created | RunStatus::Queued => self.start(out),
                    RunStatus::InProgress => self.in_progress(out),
                    status => self.settle(out, *status, error.as_ref()),
                }
            }
            EventKind::MessageStart { role, .. } => {
                if *role == Role::Assistant {
                    self.in_progress(out);
                }
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                self.in_progress(out);
                self.part_start(out, message_id.as_str(), *index, part);
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                let key = (message_id.to_string(), *index);
                if let Some(slot) = self.slots.get(&key).copied() {
                    self.part_delta(out, slot, delta);
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                self.in_progress(out);
                self.part_complete(out, message_id.as_str(), *index, part);
            }
            EventKind::MessageComplete { message } => {
                // A message that arrives whole is the run's input, not its output.
                if message.role == Role::Assistant {
                    self.close_message(out);
                }
            }
            EventKind::Heartbeat {} => sse::write_comment(out, "keep-alive"),
            // What became of a message sent while the response worked: no event of the API.
            EventKind::Input(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => {}
            EventKind::Error(error) => {
                self.start(out);
                self.emit(
                    out,
                    WireEvent::Error {
                        code: Some(error.code.clone()),
                        message: error.message.clone(),
                        param: None,
                    },
                );
            }
        }
    }
}
