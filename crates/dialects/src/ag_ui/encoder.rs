//! [`AgUiEncoder`]: canonical events → AG-UI 1.0 SSE frames.

use agentwire_core::part::{ApprovalRequest, StepStart};
use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, MessageId, Part, Role, RunStatus, StreamedPart,
    ToolCallId, Usage,
};
use serde_json::{Value, json};

use super::request::RunAgentInput;
use super::wire::{
    CUSTOM_ERROR, CUSTOM_INPUT, CUSTOM_PART, Interrupt, NAMESPACE, Outcome, PROTOCOL_VERSION,
    TokenUsage, WireEvent, content_of,
};
use crate::Encoder;

type Out<'a> = WireEvent<&'a str>;

/// Encodes canonical events as AG-UI 1.0 server-sent events: `data: {json}\n\n` per event, LF
/// only (the client splits frames on `\n\n` alone), no field ever `null`.
///
/// [`AgUiEncoder::for_input`] (or [`AgUiEncoder::new`]) echoes the ids of the client's
/// `RunAgentInput`, as the protocol asks; [`Default`] takes them from `run_created` (the session as the thread).
/// The mapping is in the [module docs](super).
#[derive(Debug, Default)]
pub struct AgUiEncoder {
    /// Ids given by the caller, which win over `run_created`'s.
    fixed_ids: bool,
    thread_id: String,
    run_id: String,
    parent_run_id: Option<String>,
    run_open: bool,
    message: Option<MessageState>,
    /// `stepName` of the step open in the current message.
    open_step: Option<String>,
    /// The run's tool calls, in order: what `pendingToolCallIds` is made of.
    calls: Vec<CallState>,
    /// Approval requests not yet answered: the interrupts of an awaiting run.
    approvals: Vec<ApprovalRequest>,
    /// Calls whose result the client sent in its history (its frontend tools' outputs): it
    /// holds those tool messages already, so their results are not sent back.
    client_results: Vec<ToolCallId>,
    /// The ids of the messages the client sent: a steer among them is not sent back (the
    /// client holds that user message already; its reducer would add it twice).
    client_messages: Vec<MessageId>,
}

#[derive(Debug)]
struct MessageState {
    id: MessageId,
    role: Role,
    /// AG-UI messages made for this message so far; the first takes the message's own id.
    minted: u32,
    /// The AG-UI assistant message that tool calls attach to (`parentMessageId`).
    assistant: Option<String>,
    /// What the last part was: tool calls join the message of a text or call just before them.
    last: Last,
    /// Streaming parts, by index.
    open: Vec<(u32, Open)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    TextOrCall,
    Other,
}

#[derive(Debug)]
enum Open {
    Text(String),
    Reasoning(String),
    ToolCall(ToolCallId),
}

#[derive(Debug)]
struct CallState {
    id: ToolCallId,
    name: String,
    answered: bool,
}

impl AgUiEncoder {
    /// An encoder for the run the client asked for: `RUN_STARTED` and `RUN_FINISHED` carry these
    /// ids, whatever `run_created` says.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            fixed_ids: true,
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Self::default()
        }
    }

    /// An encoder answering `input`: its `threadId`, `runId` and `parentRunId` are echoed, and
    /// the results of tool calls its history already holds are not sent back (the client's
    /// reducer would add each as a second tool message), nor are user messages it sent (a steer
    /// the run took).
    pub fn for_input(input: &RunAgentInput) -> Self {
        let client_results = input
            .messages
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some(result.tool_call_id.clone()),
                Part::ToolError(error) => Some(error.tool_call_id.clone()),
                _ => None,
            })
            .collect();
        let client_messages = input
            .messages
            .iter()
            .filter_map(|message| message.id.clone())
            .collect();
        Self {
            parent_run_id: input.parent_run_id.as_ref().map(ToString::to_string),
            client_results,
            client_messages,
            ..Self::new(input.thread_id.as_str(), input.run_id.as_str())
        }
    }

    fn start_run(&mut self, out: &mut Vec<u8>) {
        if self.run_open {
            return;
        }
        self.run_open = true;
        write(
            out,
            &Out::RunStarted {
                thread_id: &self.thread_id,
                run_id: &self.run_id,
                protocol_version: Some(PROTOCOL_VERSION),
                parent_run_id: self.parent_run_id.as_deref(),
            },
        );
    }

    fn message(&mut self, message_id: &MessageId, role: Role) -> &mut MessageState {
        if self.message.as_ref().is_none_or(|m| m.id != *message_id) {
            self.message = None;
        }
        self.message
            .get_or_insert_with(|| MessageState::new(message_id.clone(), role))
    }

    fn status(
        &mut self,
        status: RunStatus,
        error: Option<&ErrorInfo>,
        usage: Option<&Usage>,
        out: &mut Vec<u8>,
    ) {
        self.start_run(out);
        if matches!(
            status,
            RunStatus::Created | RunStatus::Queued | RunStatus::InProgress
        ) {
            return;
        }
        self.close_all(out);
        let usage = usage.map(|usage| vec![TokenUsage::from(*usage)]);
        let outcome = match status {
            RunStatus::Failed | RunStatus::Rejected | RunStatus::Incomplete => {
                let (code, message) = match error {
                    Some(error) => (error.code.as_str(), error.message.as_str()),
                    None => (status.name(), "the run ended without finishing"),
                };
                write(
                    out,
                    &Out::RunError {
                        message,
                        code: Some(code),
                        usage,
                    },
                );
                self.end_run();
                return;
            }
            RunStatus::Canceled => Outcome::Cancelled,
            RunStatus::Awaiting(Awaiting::FunctionOutput) => {
                let pending: Vec<&str> = self
                    .calls
                    .iter()
                    .filter(|call| !call.answered)
                    .map(|call| call.id.as_str())
                    .collect();
                Outcome::Success {
                    pending_tool_call_ids: (!pending.is_empty()).then_some(pending),
                }
            }
            RunStatus::Awaiting(Awaiting::Approval) if !self.approvals.is_empty() => {
                Outcome::Interrupt {
                    interrupts: self.approvals.iter().map(interrupt).collect(),
                }
            }
            // A question to the user (`ask_user`) is an interrupt of its own: the client's
            // next user message answers it.
            RunStatus::Awaiting(Awaiting::Input)
                if self
                    .calls
                    .iter()
                    .any(|call| !call.answered && call.name == ASK_USER) =>
            {
                Outcome::Interrupt {
                    interrupts: self
                        .calls
                        .iter()
                        .filter(|call| !call.answered && call.name == ASK_USER)
                        .map(|call| Interrupt {
                            id: call.id.as_str(),
                            reason: "input_required",
                            message: None,
                            tool_call_id: None,
                            response_schema: Some(json!({"type": "string"})),
                        })
                        .collect(),
                }
            }
            RunStatus::Completed | RunStatus::Awaiting(_) => Outcome::Success {
                pending_tool_call_ids: None,
            },
            RunStatus::Created | RunStatus::Queued | RunStatus::InProgress => return,
        };
        write(
            out,
            &Out::RunFinished {
                thread_id: &self.thread_id,
                run_id: &self.run_id,
                outcome: Some(outcome),
                usage,
            },
        );
        self.end_run();
    }

    fn end_run(&mut self) {
        self.run_open = false;
        self.calls.clear();
        self.approvals.clear();
    }

    /// Ends every open part and the open step: AG-UI refuses to finish a run with either open.
    fn close_all(&mut self, out: &mut Vec<u8>) {
        if let Some(message) = &mut self.message {
            for (_, open) in message.open.drain(..) {
                end(&open, out);
            }
        }
        self.close_step(out);
    }

    fn close_step(&mut self, out: &mut Vec<u8>) {
        if let Some(step_name) = self.open_step.take() {
            write(
                out,
                &Out::StepFinished {
                    step_name: &step_name,
                },
            );
        }
    }

    fn part_start(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &StreamedPart,
        out: &mut Vec<u8>,
    ) {
        let open = match part {
            StreamedPart::Text | StreamedPart::Refusal => {
                let message = self.message(message_id, Role::Assistant);
                let id = message.mint();
                let metadata = matches!(part, StreamedPart::Refusal)
                    .then(|| json!({ NAMESPACE: { "refusal": true } }));
                write(
                    out,
                    &Out::TextMessageStart {
                        message_id: &id,
                        role: Some(text_role(message.role)),
                        metadata,
                    },
                );
                message.assistant = Some(id.clone());
                message.last = Last::TextOrCall;
                Open::Text(id)
            }
            StreamedPart::Reasoning => {
                let message = self.message(message_id, Role::Assistant);
                let id = message.mint();
                write(out, &Out::ReasoningStart { message_id: &id });
                write(
                    out,
                    &Out::ReasoningMessageStart {
                        message_id: &id,
                        role: "reasoning",
                    },
                );
                message.last = Last::Other;
                Open::Reasoning(id)
            }
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => {
                let message = self.message(message_id, Role::Assistant);
                let parent = match (&message.assistant, message.last) {
                    (Some(parent), Last::TextOrCall) => parent.clone(),
                    _ => {
                        let id = message.mint();
                        message.assistant = Some(id.clone());
                        id
                    }
                };
                message.last = Last::TextOrCall;
                write(
                    out,
                    &Out::ToolCallStart {
                        tool_call_id: tool_call_id.as_str(),
                        tool_call_name: tool_name,
                        parent_message_id: Some(&parent),
                    },
                );
                self.calls.push(CallState {
                    id: tool_call_id.clone(),
                    name: tool_name.clone(),
                    answered: false,
                });
                Open::ToolCall(tool_call_id.clone())
            }
        };
        if let Some(message) = &mut self.message {
            message.open.push((index, open));
        }
    }

    fn part_delta(&mut self, index: u32, delta: &str, out: &mut Vec<u8>) {
        let Some(message) = &self.message else {
            return;
        };
        let Some((_, open)) = message.open.iter().find(|(at, _)| *at == index) else {
            return;
        };
        let event = match open {
            Open::Text(id) => Out::TextMessageContent {
                message_id: id,
                delta,
            },
            Open::Reasoning(id) => Out::ReasoningMessageContent {
                message_id: id,
                delta,
            },
            Open::ToolCall(id) => Out::ToolCallArgs {
                tool_call_id: id.as_str(),
                delta,
            },
        };
        write(out, &event);
    }

    fn part_complete(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &Part,
        out: &mut Vec<u8>,
    ) {
        let message = self.message(message_id, Role::Assistant);
        if let Some(at) = message.open.iter().position(|(open, _)| *open == index) {
            let (_, open) = message.open.remove(at);
            end(&open, out);
            return;
        }
        self.whole_part(message_id, index, part, out);
    }

    /// A part that arrives whole: streamed kinds are written as start, content and end at once.
    fn whole_part(&mut self, message_id: &MessageId, index: u32, part: &Part, out: &mut Vec<u8>) {
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
                let mut extra = serde_json::Map::new();
                if let Some(is_error) = result.is_error {
                    extra.insert("isError".into(), Value::Bool(is_error));
                }
                let content = content_of(&result.result);
                let name = result.tool_name.as_deref();
                return self.tool_message(
                    message_id,
                    &result.tool_call_id,
                    name,
                    &content,
                    extra,
                    out,
                );
            }
            Part::ToolError(error) => {
                let mut extra = serde_json::Map::new();
                extra.insert("errorType".into(), json!(error.error_type));
                let name = error.tool_name.as_deref();
                return self.tool_message(
                    message_id,
                    &error.tool_call_id,
                    name,
                    &error.message,
                    extra,
                    out,
                );
            }
            Part::StepStart(step) => return self.step(message_id, step, out),
            other => return self.custom_part(message_id, other, out),
        };
        self.part_start(message_id, index, &streamed, out);
        if !text.is_empty() {
            self.part_delta(index, &text, out);
        }
        if let Some(message) = &mut self.message
            && let Some(at) = message.open.iter().position(|(open, _)| *open == index)
        {
            let (_, open) = message.open.remove(at);
            end(&open, out);
        }
    }

    /// A tool result or error: a `TOOL_CALL_RESULT`, whose `metadata` (kept on the tool message
    /// by the client) says what AG-UI cannot: an error, and a tool name the call does not give.
    fn tool_message(
        &mut self,
        message_id: &MessageId,
        tool_call_id: &ToolCallId,
        tool_name: Option<&str>,
        content: &str,
        mut extra: serde_json::Map<String, Value>,
        out: &mut Vec<u8>,
    ) {
        let call = self.calls.iter_mut().find(|call| call.id == *tool_call_id);
        let derived = call.map(|call| {
            call.answered = true;
            call.name.as_str()
        });
        if self.client_results.contains(tool_call_id) {
            self.message(message_id, Role::Assistant).last = Last::Other;
            return;
        }
        if let Some(name) = tool_name
            && derived != Some(name)
        {
            extra.insert("toolName".into(), Value::String(name.to_owned()));
        }
        let metadata = (!extra.is_empty()).then(|| json!({ NAMESPACE: extra }));
        let message = self.message(message_id, Role::Assistant);
        let id = message.mint();
        message.last = Last::Other;
        write(
            out,
            &Out::ToolCallResult {
                message_id: &id,
                tool_call_id: tool_call_id.as_str(),
                content: Value::String(content.to_owned()),
                metadata,
            },
        );
    }

    fn step(&mut self, message_id: &MessageId, step: &StepStart, out: &mut Vec<u8>) {
        self.close_step(out);
        let message = self.message(message_id, Role::Assistant);
        message.last = Last::Other;
        let step_name = step.step_name.as_deref().unwrap_or(step.step_id.as_str());
        let metadata = json!({ NAMESPACE: { "messageId": message_id, "stepId": step.step_id } });
        write(
            out,
            &Out::StepStarted {
                step_name,
                metadata: Some(metadata),
            },
        );
        self.open_step = Some(step_name.to_owned());
    }

    /// A part AG-UI has no event for: a `CUSTOM` event named `agentwire.part`.
    fn custom_part(&mut self, message_id: &MessageId, part: &Part, out: &mut Vec<u8>) {
        match part {
            Part::ApprovalRequest(request) => self.approvals.push(request.clone()),
            Part::ApprovalResponse(response) => self
                .approvals
                .retain(|request| request.approval_id != response.approval_id),
            _ => {}
        }
        self.message(message_id, Role::Assistant).last = Last::Other;
        write(
            out,
            &Out::Custom {
                name: CUSTOM_PART,
                value: json!({ "messageId": message_id, "part": part }),
            },
        );
    }

    /// A message that arrives whole, without `message_start`: its parts, each whole.
    fn whole_message(&mut self, message: &agentwire_core::Message, out: &mut Vec<u8>) {
        let Some(message_id) = &message.id else {
            return;
        };
        if self.message.as_ref().is_some_and(|m| m.id == *message_id) {
            return;
        }
        if message.role == Role::User && self.client_messages.contains(message_id) {
            return;
        }
        self.message(message_id, message.role);
        for (index, part) in message.parts.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            self.whole_part(message_id, index, part, out);
        }
    }
}

impl MessageState {
    fn new(id: MessageId, role: Role) -> Self {
        Self {
            id,
            role,
            minted: 0,
            assistant: None,
            last: Last::Other,
            open: Vec::new(),
        }
    }

    /// The id of the next AG-UI message made for this message: its own id first, then
    /// `<id>.1`, `<id>.2`, …
    fn mint(&mut self) -> String {
        let n = self.minted;
        self.minted += 1;
        if n == 0 {
            self.id.to_string()
        } else {
            format!("{}.{n}", self.id)
        }
    }
}

impl Encoder for AgUiEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        // Sub-agents' runs nested in the stream are not written in this dialect yet.
        if !event.is_own() {
            return;
        }
        match &event.kind {
            EventKind::RunCreated {
                run_id, session_id, ..
            } => {
                if !self.fixed_ids && !self.run_open {
                    self.run_id = run_id.to_string();
                    self.thread_id = match session_id {
                        Some(session_id) => session_id.to_string(),
                        None => run_id.to_string(),
                    };
                }
                self.start_run(out);
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => self.status(*status, error.as_ref(), usage.as_ref(), out),
            EventKind::MessageStart {
                message_id, role, ..
            } => {
                self.start_run(out);
                self.message = None;
                self.message(message_id, *role);
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                self.start_run(out);
                self.part_start(message_id, *index, part, out);
            }
            EventKind::PartDelta { index, delta, .. } => self.part_delta(*index, delta, out),
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                self.start_run(out);
                self.part_complete(message_id, *index, part, out);
            }
            EventKind::MessageComplete { message } => {
                self.start_run(out);
                self.whole_message(message, out);
                if let Some(state) = &mut self.message {
                    for (_, open) in state.open.drain(..) {
                        end(&open, out);
                    }
                }
                self.close_step(out);
                self.message = None;
            }
            EventKind::Heartbeat {} => crate::sse::write_comment(out, "keepalive"),
            // The session's shared state is the thread's state (`agent.state` in the client).
            EventKind::StateSnapshot { state } => {
                self.start_run(out);
                write(
                    out,
                    &Out::StateSnapshot {
                        snapshot: state.clone(),
                    },
                );
            }
            EventKind::StateDelta { patch } => {
                self.start_run(out);
                write(
                    out,
                    &Out::StateDelta {
                        delta: json!(patch),
                    },
                );
            }
            // What became of a message sent while the run worked: AG-UI has no event for it.
            // The steer itself follows as a whole user message (`TEXT_MESSAGE_*`, role user).
            EventKind::Input(outcome) => {
                self.start_run(out);
                write(
                    out,
                    &Out::Custom {
                        name: CUSTOM_INPUT,
                        value: json!(outcome),
                    },
                );
            }
            EventKind::Error(error) => {
                self.start_run(out);
                write(
                    out,
                    &Out::Custom {
                        name: CUSTOM_ERROR,
                        value: json!({ "code": error.code, "message": error.message }),
                    },
                );
            }
        }
    }
}

/// The events that end a streaming part.
fn end(open: &Open, out: &mut Vec<u8>) {
    match open {
        Open::Text(id) => write(out, &Out::TextMessageEnd { message_id: id }),
        Open::Reasoning(id) => {
            write(out, &Out::ReasoningMessageEnd { message_id: id });
            write(out, &Out::ReasoningEnd { message_id: id });
        }
        Open::ToolCall(id) => write(
            out,
            &Out::ToolCallEnd {
                tool_call_id: id.as_str(),
            },
        ),
    }
}

/// An approval request as an interrupt the client answers with a resume entry
/// `{interruptId, status, payload: {approved, reason?}}`.
/// agentwire's built-in question to the user, whose unanswered call is awaiting input.
const ASK_USER: &str = "ask_user";

fn interrupt(request: &ApprovalRequest) -> Interrupt<&str> {
    Interrupt {
        id: request.approval_id.as_str(),
        reason: "tool_call",
        message: request.reason.as_deref(),
        tool_call_id: Some(request.tool_call_id.as_str()),
        response_schema: Some(json!({
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        })),
    }
}

/// `TEXT_MESSAGE_START.role`: AG-UI text messages are assistant, user, system or developer.
fn text_role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::System => "system",
        Role::Assistant | Role::Tool | Role::Data => "assistant",
    }
}

/// Appends one frame: `data: {json}\n\n`.
fn write(out: &mut Vec<u8>, event: &Out<'_>) {
    out.extend_from_slice(b"data: ");
    // Serializing cannot fail: keys are strings and numbers finite.
    let _ = serde_json::to_writer(&mut *out, event);
    out.extend_from_slice(b"\n\n");
}
