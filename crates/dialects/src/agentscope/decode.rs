//! [`AgentScopeDecoder`]: AgentScope SSE → canonical events, one turn per response.

use agentwire_core::part::{ReasoningPart, RefusalPart, TextPart};
use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, Message, MessageId, Metadata, Part, Role, RunStatus,
    StreamedPart, ToolArgs, Usage,
};
use serde::de::Error as _;
use serde_json::{Map, Value};

use super::wire::{self, Class, ErrorField, Obj, Status};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};

/// The error code given to the bare `{"error": "…"}` frame AgentApp sends for a request it
/// refuses (an invalid body, a session already running).
pub const REQUEST_REFUSED: &str = "request_refused";

/// Decodes AgentScope SSE into canonical events: every message of a response becomes part of one
/// assistant message (see the module docs).
#[derive(Debug, Default)]
pub struct AgentScopeDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    /// The last canonical sequence number given.
    seq: u64,
    run_created: bool,
    ended: bool,
    turn: Option<Turn>,
}

/// The canonical message being rebuilt.
#[derive(Debug)]
struct Turn {
    id: MessageId,
    role: Role,
    parts: Vec<Part>,
    /// Every message's `metadata`, later keys winning, and the last `usage`.
    metadata: Map<String, Value>,
    usage: Option<Usage>,
    messages: Vec<AsMessage>,
    slots: Vec<Slot>,
}

/// An AgentScope message of the turn.
#[derive(Debug)]
struct AsMessage {
    id: String,
    class: Class,
    done: bool,
}

/// One content of one AgentScope message: `(message, index)`.
#[derive(Debug)]
struct Slot {
    message: usize,
    index: Option<u32>,
    state: SlotState,
}

#[derive(Debug)]
enum SlotState {
    /// Text, reasoning or a refusal streaming into canonical part `part`.
    Text {
        part: u32,
    },
    /// A tool call streaming into part `part`; its argument text so far.
    Call {
        part: u32,
        raw: String,
    },
    /// Not shown yet: whole parts, and snapshots (`delta: false` while in progress), which
    /// replace each other and cannot be sent as deltas.
    Pending(Box<Obj>),
    Done,
}

impl StreamDecoder for AgentScopeDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let frames = std::mem::take(&mut self.frames);
        for frame in &frames {
            self.n_frames += 1;
            self.frame(&frame.data, out)?;
        }
        self.frames = frames;
        self.frames.clear();
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()
    }
}

impl AgentScopeDecoder {
    fn frame(&mut self, data: &str, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        // Their client drops what is not JSON, such as an OpenAI-style `[DONE]`.
        if self.ended || data.trim() == "[DONE]" {
            return Ok(());
        }
        let invalid = |source| DecodeError::InvalidFrame {
            frame: self.n_frames,
            source,
        };
        let obj: Obj = serde_json::from_str(data).map_err(invalid)?;
        match obj.object.as_deref() {
            Some("response") => self.response(obj, out),
            Some("message") => self.message(obj, out),
            Some("content") => {
                if obj.kind.is_none() {
                    return Err(invalid(serde_json::Error::missing_field("type")));
                }
                self.content(obj, out);
            }
            Some(_) => {}
            None => {
                if let Some(ErrorField::Text(message)) = obj.error {
                    self.emit(
                        out,
                        EventKind::RunStatus {
                            status: RunStatus::Rejected,
                            error: Some(ErrorInfo::new(REQUEST_REFUSED, message)),
                            usage: None,
                        },
                    );
                    self.ended = true;
                }
            }
        }
        Ok(())
    }

    fn emit(&mut self, out: &mut Vec<Event>, kind: EventKind) {
        self.seq += 1;
        out.push(Event::new(self.seq, kind));
    }

    fn response(&mut self, obj: Obj, out: &mut Vec<Event>) {
        if !self.run_created {
            self.run_created = true;
            let run_id = obj.id.clone().unwrap_or_else(|| "response".into());
            self.emit(
                out,
                EventKind::RunCreated {
                    run_id: run_id.into(),
                    session_id: obj.session_id.clone().map(Into::into),
                    agent: None,
                    parent_run_id: None,
                    parent_tool_call_id: None,
                },
            );
        }
        let status = match obj.status.unwrap_or(Status::Created) {
            Status::Created | Status::Unknown => return,
            Status::InProgress => RunStatus::InProgress,
            Status::Queued => RunStatus::Queued,
            Status::Completed => RunStatus::Completed,
            Status::Failed => RunStatus::Failed,
            Status::Canceled => RunStatus::Canceled,
            Status::Rejected => RunStatus::Rejected,
            Status::Incomplete => RunStatus::Incomplete,
        };
        if !status.is_terminal() {
            self.emit(
                out,
                EventKind::RunStatus {
                    status,
                    error: None,
                    usage: None,
                },
            );
            return;
        }
        // The output holds every completed message: any not seen streaming count now.
        for message in obj.output.into_iter().flatten() {
            let seen = self.turn.as_ref().is_some_and(|turn| {
                turn.messages
                    .iter()
                    .any(|seen| seen.done && Some(&seen.id) == message.id.as_ref())
            });
            if !seen {
                self.message(message, out);
            }
        }
        let awaiting = self.finish_turn(out);
        let status = match (status, awaiting) {
            (RunStatus::Completed, Some(awaiting)) => RunStatus::Awaiting(awaiting),
            (status, _) => status,
        };
        let error = obj.error.map(|error| match error {
            ErrorField::Info { code, message } => ErrorInfo { code, message },
            ErrorField::Text(message) => ErrorInfo::new(REQUEST_REFUSED, message),
        });
        self.emit(
            out,
            EventKind::RunStatus {
                status,
                error,
                usage: obj.usage.as_ref().and_then(wire::usage),
            },
        );
        self.ended = true;
    }

    /// The turn's position of the AgentScope message `id`, registering it (and starting the
    /// turn) when it is new.
    fn as_message(&mut self, id: &str, class: Class, obj: &Obj, out: &mut Vec<Event>) -> usize {
        if let Some(turn) = &self.turn
            && let Some(at) = turn.messages.iter().rposition(|message| message.id == id)
        {
            return at;
        }
        if self.turn.is_none() {
            // An output's role is the tool's; the turn is the assistant's.
            let role = match (class, obj.role) {
                (Class::Output, _) | (_, None) => Role::Assistant,
                (_, Some(role)) => role.into(),
            };
            let metadata = obj.metadata.clone().unwrap_or_default();
            let start_metadata: Metadata =
                serde_json::from_value(Value::Object(metadata.clone())).unwrap_or_default();
            self.emit(
                out,
                EventKind::MessageStart {
                    message_id: id.into(),
                    role,
                    metadata: start_metadata,
                    created_at: None,
                },
            );
            self.turn = Some(Turn {
                id: id.into(),
                role,
                parts: Vec::new(),
                metadata: Map::new(),
                usage: None,
                messages: Vec::new(),
                slots: Vec::new(),
            });
        }
        let Some(turn) = &mut self.turn else { return 0 };
        turn.messages.push(AsMessage {
            id: id.to_owned(),
            class,
            done: false,
        });
        turn.messages.len() - 1
    }

    fn message(&mut self, obj: Obj, out: &mut Vec<Event>) {
        let class = Class::of(obj.kind.as_deref().unwrap_or("message"));
        match class {
            Class::Skip => return,
            Class::Error => {
                let code = obj.code.clone().unwrap_or_else(|| "error".into());
                let message = obj.message.clone().unwrap_or_default();
                self.emit(out, EventKind::Error(ErrorInfo { code, message }));
                return;
            }
            _ => {}
        }
        let id = obj.id.clone().unwrap_or_default();
        let at = self.as_message(&id, class, &obj, out);
        let Some(turn) = &mut self.turn else { return };
        turn.messages[at].class = class;
        if let Some(metadata) = &obj.metadata {
            turn.metadata.extend(
                metadata
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
        }
        if let Some(usage) = obj.usage.as_ref().and_then(wire::usage) {
            turn.usage = Some(usage);
        }
        if obj.status != Some(Status::Completed) || turn.messages[at].done {
            return;
        }
        // The completed message's contents are authoritative for those still open, and stand
        // for those that never streamed.
        for (position, content) in obj.content.into_iter().flatten().enumerate() {
            let index = content.index.or(u32::try_from(position).ok());
            self.complete_content(at, index, content, out);
        }
        let Some(turn) = &mut self.turn else { return };
        let open: Vec<usize> = (0..turn.slots.len())
            .filter(|&slot| turn.slots[slot].message == at)
            .collect();
        for slot in open {
            self.finish_slot(slot, out);
        }
        if let Some(turn) = &mut self.turn {
            turn.messages[at].done = true;
        }
    }

    fn content(&mut self, obj: Obj, out: &mut Vec<Event>) {
        let msg_id = obj.msg_id.clone().unwrap_or_default();
        // A content may come before its message (the `text` framework never announces it).
        let at = self.as_message(&msg_id, Class::Message, &Obj::default(), out);
        let Some(turn) = &mut self.turn else { return };
        let class = turn.messages[at].class;
        if matches!(class, Class::Skip | Class::Error) {
            return;
        }
        if obj.status == Some(Status::Completed) {
            self.complete_content(at, obj.index, obj, out);
            return;
        }
        let is_delta = obj.delta == Some(true);
        let Some(slot) = self.find_slot(at, obj.index) else {
            match streamed_part(class, &obj, &msg_id) {
                Some(part) if is_delta => {
                    let slot = self.start_stream(at, obj.index, part, out);
                    self.append(slot, streamed_piece(&obj), out);
                }
                _ => {
                    self.push_slot(at, obj.index, SlotState::Pending(Box::new(obj)));
                }
            }
            return;
        };
        let Some(turn) = &mut self.turn else { return };
        match &mut turn.slots[slot].state {
            SlotState::Done => {}
            SlotState::Pending(pending) if is_delta => merge(pending, obj),
            SlotState::Pending(pending) => **pending = obj,
            SlotState::Text { .. } | SlotState::Call { .. } if is_delta => {
                self.append(slot, streamed_piece(&obj), out);
            }
            SlotState::Text { .. } | SlotState::Call { .. } => self.extend_to(slot, &obj, out),
        }
    }

    fn find_slot(&self, message: usize, index: Option<u32>) -> Option<usize> {
        let turn = self.turn.as_ref()?;
        turn.slots
            .iter()
            .rposition(|slot| slot.message == message && slot.index == index)
    }

    fn push_slot(&mut self, message: usize, index: Option<u32>, state: SlotState) -> usize {
        let Some(turn) = &mut self.turn else { return 0 };
        turn.slots.push(Slot {
            message,
            index,
            state,
        });
        turn.slots.len() - 1
    }

    /// Opens the canonical part a streaming content goes to.
    fn start_stream(
        &mut self,
        message: usize,
        index: Option<u32>,
        part: StreamedPart,
        out: &mut Vec<Event>,
    ) -> usize {
        let Some(turn) = &mut self.turn else { return 0 };
        let position = part_index(&turn.parts);
        let (placeholder, state) = match &part {
            StreamedPart::Text => (
                Part::Text(TextPart::default()),
                SlotState::Text { part: position },
            ),
            StreamedPart::Reasoning => (
                Part::Reasoning(ReasoningPart::default()),
                SlotState::Text { part: position },
            ),
            StreamedPart::Refusal => (
                Part::Refusal(RefusalPart::default()),
                SlotState::Text { part: position },
            ),
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => (
                Part::ToolCall(agentwire_core::ToolCall {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    args: ToolArgs::default(),
                }),
                SlotState::Call {
                    part: position,
                    raw: String::new(),
                },
            ),
        };
        turn.parts.push(placeholder);
        let message_id = turn.id.clone();
        self.emit(
            out,
            EventKind::PartStart {
                message_id,
                index: position,
                part,
            },
        );
        self.push_slot(message, index, state)
    }

    /// Streams `piece` into the slot's part.
    fn append(&mut self, slot: usize, piece: &str, out: &mut Vec<Event>) {
        let Some(turn) = &mut self.turn else { return };
        if piece.is_empty() {
            return;
        }
        let index = match &mut turn.slots[slot].state {
            SlotState::Text { part } => {
                if let Some(
                    Part::Text(TextPart { text })
                    | Part::Reasoning(ReasoningPart { text })
                    | Part::Refusal(RefusalPart { text }),
                ) = turn.parts.get_mut(*part as usize)
                {
                    text.push_str(piece);
                }
                *part
            }
            SlotState::Call { part, raw } => {
                raw.push_str(piece);
                *part
            }
            SlotState::Pending(_) | SlotState::Done => return,
        };
        let message_id = turn.id.clone();
        self.emit(
            out,
            EventKind::PartDelta {
                message_id,
                index,
                delta: piece.to_owned(),
            },
        );
    }

    /// A snapshot or completion of a streaming content: what extends the text so far streams
    /// as a delta; a snapshot that rewrites it cannot, and the deltas stand.
    fn extend_to(&mut self, slot: usize, obj: &Obj, out: &mut Vec<Event>) {
        let Some(turn) = &self.turn else { return };
        let full = streamed_piece(obj);
        let so_far = match &turn.slots[slot].state {
            SlotState::Text { part } => match turn.parts.get(*part as usize) {
                Some(
                    Part::Text(TextPart { text })
                    | Part::Reasoning(ReasoningPart { text })
                    | Part::Refusal(RefusalPart { text }),
                ) => text.as_str(),
                _ => return,
            },
            SlotState::Call { raw, .. } => raw.as_str(),
            SlotState::Pending(_) | SlotState::Done => return,
        };
        if let Some(rest) = full.strip_prefix(so_far)
            && !rest.is_empty()
        {
            let rest = rest.to_owned();
            self.append(slot, &rest, out);
        }
    }

    fn complete_content(
        &mut self,
        message: usize,
        index: Option<u32>,
        obj: Obj,
        out: &mut Vec<Event>,
    ) {
        let Some(slot) = self.find_slot(message, index) else {
            let slot = self.push_slot(message, index, SlotState::Pending(Box::new(obj)));
            self.finish_slot(slot, out);
            return;
        };
        let Some(turn) = &mut self.turn else { return };
        match &mut turn.slots[slot].state {
            SlotState::Done => return,
            SlotState::Pending(pending) if obj.delta == Some(true) => merge(pending, obj),
            SlotState::Pending(pending) => **pending = obj,
            SlotState::Text { .. } | SlotState::Call { .. } if obj.delta == Some(true) => {
                self.append(slot, streamed_piece(&obj), out);
            }
            SlotState::Text { .. } | SlotState::Call { .. } => self.extend_to(slot, &obj, out),
        }
        self.finish_slot(slot, out);
    }

    /// Completes a slot with what it has: a streamed part as it streamed, a pending one whole.
    fn finish_slot(&mut self, slot: usize, out: &mut Vec<Event>) {
        let Some(turn) = &mut self.turn else { return };
        let state = std::mem::replace(&mut turn.slots[slot].state, SlotState::Done);
        let (index, part) = match state {
            SlotState::Done => return,
            SlotState::Text { part } => match turn.parts.get(part as usize) {
                Some(done) => (part, done.clone()),
                None => return,
            },
            SlotState::Call { part, raw } => match turn.parts.get_mut(part as usize) {
                Some(Part::ToolCall(call)) => {
                    call.args = ToolArgs::from_json_text(&raw);
                    (part, Part::ToolCall(call.clone()))
                }
                _ => return,
            },
            SlotState::Pending(obj) => {
                let message = &turn.messages[turn.slots[slot].message];
                let Some(part) = wire::whole_part(message.class, &obj, &message.id) else {
                    return;
                };
                let index = part_index(&turn.parts);
                turn.parts.push(part.clone());
                (index, part)
            }
        };
        let message_id = turn.id.clone();
        self.emit(
            out,
            EventKind::PartComplete {
                message_id,
                index,
                part,
            },
        );
    }

    /// Ends the turn: what is still open completes as it stands (a failed run leaves contents
    /// open), then the message. Returns what a completed run waits for, judged by its end.
    fn finish_turn(&mut self, out: &mut Vec<Event>) -> Option<Awaiting> {
        let n_slots = self.turn.as_ref()?.slots.len();
        for slot in 0..n_slots {
            self.finish_slot(slot, out);
        }
        let turn = self.turn.take()?;
        let awaiting = awaiting(&turn.parts);
        let mut metadata: Metadata =
            serde_json::from_value(Value::Object(turn.metadata)).unwrap_or_default();
        if turn.usage.is_some() {
            metadata.usage = turn.usage;
        }
        self.emit(
            out,
            EventKind::MessageComplete {
                message: Message {
                    id: Some(turn.id),
                    role: turn.role,
                    parts: turn.parts,
                    metadata,
                    created_at: None,
                },
            },
        );
        awaiting
    }
}

fn part_index(parts: &[Part]) -> u32 {
    u32::try_from(parts.len()).unwrap_or(u32::MAX)
}

/// What kind of part a content streams as, if it streams.
fn streamed_part(class: Class, obj: &Obj, msg_id: &str) -> Option<StreamedPart> {
    Some(match (obj.kind.as_deref()?, class) {
        ("text", Class::Reasoning) => StreamedPart::Reasoning,
        ("text", _) => StreamedPart::Text,
        ("refusal", _) => StreamedPart::Refusal,
        ("data", Class::Call) => {
            let call = wire::tool_call(obj.data.as_ref().unwrap_or(&Value::Null), msg_id, "");
            StreamedPart::ToolCall {
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
            }
        }
        _ => return None,
    })
}

/// The text a streaming content carries: its text, its refusal, or its argument text.
fn streamed_piece(obj: &Obj) -> &str {
    let piece = match obj.kind.as_deref() {
        Some("text") => obj.text.as_deref(),
        Some("refusal") => obj.refusal.as_deref(),
        _ => obj
            .data
            .as_ref()
            .and_then(|data| data.get("arguments"))
            .and_then(Value::as_str),
    };
    piece.unwrap_or_default()
}

/// Merges a delta into a pending content the way their `ContentBuilder` does: strings
/// concatenate, numbers add, lists extend, objects merge, anything else is replaced.
fn merge(pending: &mut Obj, delta: Obj) {
    fn concat(into: &mut Option<String>, more: Option<String>) {
        match (into.as_mut(), more) {
            (Some(into), Some(more)) => into.push_str(&more),
            (None, more) => *into = more,
            (Some(_), None) => {}
        }
    }
    concat(&mut pending.text, delta.text);
    concat(&mut pending.refusal, delta.refusal);
    concat(&mut pending.image_url, delta.image_url);
    match (pending.data.as_mut(), delta.data) {
        (Some(into), Some(more)) => merge_value(into, more),
        (None, more) => pending.data = more,
        (Some(_), None) => {}
    }
    if pending.kind.is_none() {
        pending.kind = delta.kind;
    }
}

fn merge_value(into: &mut Value, more: Value) {
    match (into, more) {
        (Value::String(into), Value::String(more)) => into.push_str(&more),
        (Value::Number(into), Value::Number(more)) => {
            let sum = match (into.as_i64(), more.as_i64()) {
                (Some(a), Some(b)) => a.checked_add(b).map(serde_json::Number::from),
                _ => into
                    .as_f64()
                    .zip(more.as_f64())
                    .and_then(|(a, b)| serde_json::Number::from_f64(a + b)),
            };
            if let Some(sum) = sum {
                *into = sum;
            }
        }
        (Value::Array(into), Value::Array(more)) => into.extend(more),
        (Value::Object(into), Value::Object(more)) => {
            for (key, value) in more {
                match into.get_mut(&key) {
                    Some(existing) => merge_value(existing, value),
                    None => {
                        into.insert(key, value);
                    }
                }
            }
        }
        (into, more) => *into = more,
    }
}

/// The built-in tool of agentwire's agents that asks the user a question: its call, unanswered
/// at the end of a completed response, is AgentScope's form of a run awaiting input.
const ASK_USER: &str = "ask_user";

/// A completed turn waits when it ends owing something: an approval request nobody answered,
/// a call without a result (a tool the client runs), or, last, a question to the user (an
/// `ask_user` call without a result: awaiting input).
fn awaiting(parts: &[Part]) -> Option<Awaiting> {
    let answered = |approval_id: &str| {
        parts.iter().any(|part| {
            matches!(part, Part::ApprovalResponse(response) if response.approval_id.as_str() == approval_id)
        })
    };
    let has_output = |call_id: &str| {
        parts.iter().any(|part| match part {
            Part::ToolResult(result) => result.tool_call_id.as_str() == call_id,
            Part::ToolError(error) => error.tool_call_id.as_str() == call_id,
            _ => false,
        })
    };
    let mut owes_output = false;
    let mut owes_answer = false;
    for part in parts {
        match part {
            Part::ApprovalRequest(request) if !answered(request.approval_id.as_str()) => {
                return Some(Awaiting::Approval);
            }
            Part::ToolCall(call) if !has_output(call.tool_call_id.as_str()) => {
                match call.tool_name == ASK_USER {
                    true => owes_answer = true,
                    false => owes_output = true,
                }
            }
            _ => {}
        }
    }
    match (owes_output, owes_answer) {
        (true, _) => Some(Awaiting::FunctionOutput),
        (false, true) => Some(Awaiting::Input),
        (false, false) => None,
    }
}
