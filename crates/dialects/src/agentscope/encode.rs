//! [`AgentScopeEncoder`]: canonical events → AgentScope response, message and content objects.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{
    ErrorInfo, Event, EventKind, Message, Metadata, Part, Role, RunStatus, StreamedPart, ToolKind,
    Usage,
};
use serde_json::{Value, json};

use crate::Encoder;

/// Encodes canonical events as AgentScope `data: {json}` frames (see the module docs for the
/// mapping). One encoder serves one stream.
#[derive(Debug, Default)]
pub struct AgentScopeEncoder {
    /// The response's id, as a JSON string; `"response"` until `run_created` names the run.
    response_id: String,
    session_id: Option<String>,
    created_at: i64,
    clock: Clock,
    /// The kinds of the tools that are not plain functions, by name.
    tool_kinds: HashMap<String, ToolKind>,
    /// The kind of each call seen that is not a plain function, by call id (for its output).
    call_kinds: HashMap<String, ToolKind>,
    next_seq: u64,
    started: bool,
    /// A response `in_progress` has been written since the last other status.
    in_progress: bool,
    ended: bool,
    usage: Option<Usage>,
    /// The completed messages, as JSON objects separated by commas: the final `output`.
    output: Vec<u8>,
    turn: Option<Turn>,
    scratch: Vec<u8>,
}

/// The canonical message being encoded: the AgentScope messages it opened, and where each of its
/// parts went.
#[derive(Debug)]
struct Turn {
    id: String,
    role: &'static str,
    /// The metadata the messages carry until the last one, as a JSON object.
    metadata: String,
    messages: Vec<AsMessage>,
    slots: Vec<Slot>,
}

/// One AgentScope message of the turn.
#[derive(Debug)]
struct AsMessage {
    /// The id as a JSON string, escaped once.
    id: String,
    kind: &'static str,
    role: &'static str,
    /// The completed contents, as JSON objects separated by commas.
    content: Vec<u8>,
    n_content: u32,
    n_open: u32,
    done: bool,
}

/// Where a streamed canonical part goes.
#[derive(Debug)]
struct Slot {
    part: u32,
    message: usize,
    index: u32,
    kind: SlotKind,
}

#[derive(Debug)]
enum SlotKind {
    Text,
    Refusal,
    /// A tool call: its argument text so far, which the completed content repeats whole; the
    /// MCP server of an MCP tool's call.
    Call {
        call_id: String,
        name: String,
        raw: String,
        server: Option<String>,
    },
}

/// Reads the time (Unix seconds) a response completes at; without one, `completed_at` is
/// `created_at`.
#[derive(Default)]
struct Clock(Option<Box<dyn Fn() -> i64 + Send>>);

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Clock" } else { "NoClock" })
    }
}

impl AgentScopeEncoder {
    /// An encoder that stamps responses with `created_at` (Unix seconds); the default stamps 0,
    /// since events carry no clock.
    pub fn with_created_at(created_at: i64) -> Self {
        Self {
            created_at,
            ..Self::default()
        }
    }

    /// Names the response's run and session before any event does (`run_created` names them
    /// otherwise): for a stream that picks up a run after its start, such as a waiting run
    /// answered.
    #[must_use]
    pub fn with_run(mut self, run_id: &str, session_id: Option<&str>) -> Self {
        let mut id = Vec::new();
        push_json(&mut id, run_id);
        self.response_id = String::from_utf8(id).unwrap_or_default();
        self.session_id = session_id.map(str::to_owned);
        self
    }

    /// Reads `completed_at` (Unix seconds) from `clock` when the response completes (the codec
    /// reads no clock of its own). Without a clock it is `created_at`.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Fn() -> i64 + Send + 'static) -> Self {
        self.clock = Clock(Some(Box::new(clock)));
        self
    }

    /// Shows the calls of these tools by their kind: an MCP tool's as `mcp_call` (its data
    /// with `server_label`) and `mcp_call_output`, a plugin's as `plugin_call` and
    /// `plugin_call_output`, a component's as `component_call` and `component_call_output`.
    /// Calls of any other tool are `function_call`s.
    #[must_use]
    pub fn with_tool_kinds<'k>(
        mut self,
        kinds: impl IntoIterator<Item = (&'k str, &'k ToolKind)>,
    ) -> Self {
        self.tool_kinds.extend(
            kinds
                .into_iter()
                .filter(|(_, kind)| **kind != ToolKind::Function)
                .map(|(name, kind)| (name.to_owned(), kind.clone())),
        );
        self
    }

    /// The kind of the call `call_id` of tool `tool_name`, remembered for its output.
    fn call_kind(&mut self, call_id: &str, tool_name: &str) -> ToolKind {
        let Some(kind) = self.tool_kinds.get(tool_name) else {
            return ToolKind::Function;
        };
        self.call_kinds.insert(call_id.to_owned(), kind.clone());
        kind.clone()
    }

    /// The kind of the call an output answers: its tool's, else the call's as seen.
    fn output_kind(&self, call_id: &str, tool_name: Option<&str>) -> ToolKind {
        tool_name
            .and_then(|name| self.tool_kinds.get(name))
            .or_else(|| self.call_kinds.get(call_id))
            .cloned()
            .unwrap_or_default()
    }

    fn seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.response(out, "created", None);
        }
    }

    /// Writes a response frame. A terminal one carries the output and usage.
    fn response(&mut self, out: &mut Vec<u8>, status: &str, error: Option<&ErrorInfo>) {
        if !self.started {
            self.started = true;
            if self.response_id.is_empty() {
                self.response_id = "\"response\"".into();
            }
        }
        let terminal = !matches!(status, "created" | "in_progress" | "queued");
        let seq = self.seq();
        out.extend_from_slice(b"data: {\"sequence_number\":");
        push_u64(out, seq);
        out.extend_from_slice(b",\"object\":\"response\",\"status\":\"");
        out.extend_from_slice(status.as_bytes());
        out.extend_from_slice(b"\",\"error\":");
        match error {
            Some(error) => push_json(out, &json!({"code": error.code, "message": error.message})),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(self.response_id.as_bytes());
        out.extend_from_slice(b",\"created_at\":");
        push_i64(out, self.created_at);
        out.extend_from_slice(b",\"completed_at\":");
        if status == "completed" {
            let completed_at = self.clock.0.as_ref().map_or(self.created_at, |now| now());
            push_i64(out, completed_at.max(self.created_at));
        } else {
            out.extend_from_slice(b"null");
        }
        out.extend_from_slice(b",\"output\":");
        if terminal && !self.output.is_empty() {
            out.push(b'[');
            out.extend_from_slice(&self.output);
            out.push(b']');
        } else {
            out.extend_from_slice(b"null");
        }
        out.extend_from_slice(b",\"usage\":");
        match (terminal, &self.usage) {
            (true, Some(usage)) => push_json(out, usage),
            _ => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"session_id\":");
        match &self.session_id {
            Some(session_id) => push_json(out, session_id),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"}\n\n");
        self.in_progress = status == "in_progress";
        if terminal {
            self.ended = true;
        }
    }

    /// Starts the response, and says it is in progress if it has not: AgentScope's Runner
    /// always sends `in_progress` before any message, and their models' clients expect it, so
    /// a stream whose source has no run status (an AI SDK stream) gets one.
    fn ensure_in_progress(&mut self, out: &mut Vec<u8>) {
        self.ensure_started(out);
        if !self.in_progress && !self.ended {
            self.response(out, "in_progress", None);
        }
    }

    fn run_status(
        &mut self,
        out: &mut Vec<u8>,
        status: RunStatus,
        error: Option<&ErrorInfo>,
        usage: Option<&Usage>,
    ) {
        if let Some(usage) = usage {
            self.usage = Some(*usage);
        }
        let name = match status {
            RunStatus::Created if self.started => return,
            RunStatus::Created => "created",
            RunStatus::Queued => "queued",
            RunStatus::InProgress if self.in_progress => return,
            RunStatus::InProgress => "in_progress",
            // AgentScope has no waiting: the response completes, and the unanswered call or
            // approval request at its end says what the client owes.
            RunStatus::Awaiting(_) | RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Canceled => "canceled",
            RunStatus::Rejected => "rejected",
            RunStatus::Incomplete => "incomplete",
        };
        match status {
            RunStatus::Created
            | RunStatus::Queued
            | RunStatus::Rejected
            | RunStatus::InProgress => self.ensure_started(out),
            // A run that worked was in progress first.
            _ => self.ensure_in_progress(out),
        }
        // Why a run did not complete is also a message of AgentScope's `error` type, so that
        // clients that show messages show it, and the output keeps it.
        if let Some(error) = error
            && status.is_terminal()
        {
            self.error(out, error);
        }
        self.response(out, name, error);
    }

    fn message_start(&mut self, message_id: &str, role: Role, metadata: &Metadata) {
        self.turn = Some(Turn {
            id: message_id.to_owned(),
            role: role_name(role),
            metadata: metadata_json(metadata),
            messages: Vec::new(),
            slots: Vec::new(),
        });
    }

    /// Starts a turn for a part of a message that was never started.
    fn ensure_turn(&mut self, message_id: &str) {
        if self.turn.as_ref().is_none_or(|turn| turn.id != message_id) {
            self.message_start(message_id, Role::Assistant, &Metadata::default());
        }
    }

    /// The message a new content of `kind` goes in: the last one if it is of that kind and may
    /// hold more, else a new one (which closes the last one if its contents are complete).
    fn message_for(&mut self, out: &mut Vec<u8>, message_id: &str, kind: &'static str) -> usize {
        self.ensure_turn(message_id);
        let Some(turn) = &mut self.turn else { return 0 };
        let shared = matches!(kind, "message" | "reasoning");
        if let Some(last) = turn.messages.last()
            && shared
            && last.kind == kind
            && !last.done
        {
            return turn.messages.len() - 1;
        }
        // The last message completes first if it can, as AgentScope orders them.
        if let Some(last) = turn.messages.last()
            && !last.done
            && last.n_open == 0
        {
            let last = turn.messages.len() - 1;
            self.close(out, last, None, None);
        }
        let seq = self.next_seq;
        let Some(turn) = &mut self.turn else { return 0 };
        let id = if turn.messages.is_empty() {
            turn.id.clone()
        } else {
            format!("{}_{}", turn.id, turn.messages.len())
        };
        let mut id_json = Vec::with_capacity(id.len() + 2);
        push_json(&mut id_json, &id);
        turn.messages.push(AsMessage {
            id: String::from_utf8(id_json).unwrap_or_default(),
            kind,
            // Outputs are the tool's, as AgentScope writes them.
            role: if kind.ends_with("_output") {
                "tool"
            } else {
                turn.role
            },
            content: Vec::new(),
            n_content: 0,
            n_open: 0,
            done: false,
        });
        let at = turn.messages.len() - 1;
        write_message(
            out,
            seq,
            &turn.messages[at],
            "in_progress",
            &turn.metadata,
            None,
        );
        self.next_seq += 1;
        at
    }

    /// Closes message `at` of the turn if it is no longer the last one and all its contents
    /// are complete.
    fn close_if_done(&mut self, out: &mut Vec<u8>, at: usize) {
        let Some(turn) = &self.turn else { return };
        let message = &turn.messages[at];
        if message.done || message.n_open > 0 || at + 1 == turn.messages.len() {
            return;
        }
        self.close(out, at, None, None);
    }

    /// Writes `message completed` for message `at` and adds it to the output.
    fn close(
        &mut self,
        out: &mut Vec<u8>,
        at: usize,
        metadata: Option<&str>,
        usage: Option<&Usage>,
    ) {
        let seq = self.seq();
        let Some(turn) = &mut self.turn else { return };
        let message = &mut turn.messages[at];
        message.done = true;
        let metadata = metadata.unwrap_or(&turn.metadata);
        self.scratch.clear();
        write_message_object(
            &mut self.scratch,
            seq,
            message,
            "completed",
            metadata,
            usage,
        );
        frame(out, &self.scratch);
        if !self.output.is_empty() {
            self.output.push(b',');
        }
        self.output.extend_from_slice(&self.scratch);
    }

    fn part_start(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32, part: &StreamedPart) {
        let (kind, slot_kind) = match part {
            StreamedPart::Text => ("message", SlotKind::Text),
            StreamedPart::Reasoning => ("reasoning", SlotKind::Text),
            StreamedPart::Refusal => ("message", SlotKind::Refusal),
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => {
                let kind = self.call_kind(tool_call_id.as_str(), tool_name);
                (
                    call_type(&kind),
                    SlotKind::Call {
                        call_id: tool_call_id.to_string(),
                        name: tool_name.clone(),
                        raw: String::new(),
                        server: mcp_server(kind),
                    },
                )
            }
        };
        let at = self.message_for(out, message_id, kind);
        let seq = self.next_seq;
        let Some(turn) = &mut self.turn else { return };
        let message = &mut turn.messages[at];
        let content_index = message.n_content;
        message.n_content += 1;
        message.n_open += 1;
        // Text starts with its first delta; a call with the builders' first delta, which names
        // it (later ones carry argument text).
        if let SlotKind::Call {
            call_id,
            name,
            server,
            ..
        } = &slot_kind
        {
            self.next_seq += 1;
            out.extend_from_slice(b"data: ");
            content_head(
                out,
                seq,
                "in_progress",
                "data",
                content_index,
                "true",
                &message.id,
            );
            out.extend_from_slice(b",\"data\":");
            push_json(out, &call_data(call_id, name, "", server.as_deref()));
            out.extend_from_slice(b"}\n\n");
        }
        turn.slots.push(Slot {
            part: index,
            message: at,
            index: content_index,
            kind: slot_kind,
        });
    }

    fn part_delta(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32, delta: &str) {
        let seq = self.next_seq;
        let Some(turn) = &mut self.turn else { return };
        if turn.id != message_id {
            return;
        }
        let Some(slot) = turn.slots.iter_mut().rev().find(|slot| slot.part == index) else {
            return;
        };
        self.next_seq += 1;
        let message = &turn.messages[slot.message];
        out.extend_from_slice(b"data: ");
        match &mut slot.kind {
            SlotKind::Text => {
                content_head(
                    out,
                    seq,
                    "in_progress",
                    "text",
                    slot.index,
                    "true",
                    &message.id,
                );
                out.extend_from_slice(b",\"text\":");
            }
            SlotKind::Refusal => {
                content_head(
                    out,
                    seq,
                    "in_progress",
                    "refusal",
                    slot.index,
                    "true",
                    &message.id,
                );
                out.extend_from_slice(b",\"refusal\":");
            }
            SlotKind::Call { raw, .. } => {
                raw.push_str(delta);
                content_head(
                    out,
                    seq,
                    "in_progress",
                    "data",
                    slot.index,
                    "true",
                    &message.id,
                );
                out.extend_from_slice(b",\"data\":{\"arguments\":");
                push_json(out, delta);
                out.extend_from_slice(b"}}\n\n");
                return;
            }
        }
        push_json(out, delta);
        out.extend_from_slice(b"}\n\n");
    }

    fn part_complete(&mut self, out: &mut Vec<u8>, message_id: &str, index: u32, part: &Part) {
        let streamed = self.turn.as_ref().is_some_and(|turn| {
            turn.id == message_id && turn.slots.iter().any(|slot| slot.part == index)
        });
        if streamed {
            self.streamed_part_complete(out, index, part);
        } else {
            self.whole_part(out, message_id, part);
        }
    }

    fn streamed_part_complete(&mut self, out: &mut Vec<u8>, index: u32, part: &Part) {
        let seq = self.seq();
        let Some(turn) = &mut self.turn else { return };
        let Some(at) = turn.slots.iter().rposition(|slot| slot.part == index) else {
            return;
        };
        let slot = turn.slots.swap_remove(at);
        let message = &mut turn.messages[slot.message];
        self.scratch.clear();
        let body = &mut self.scratch;
        match (&slot.kind, part) {
            (
                SlotKind::Call {
                    call_id,
                    name,
                    raw,
                    server,
                },
                _,
            ) => {
                content_head(
                    body,
                    seq,
                    "completed",
                    "data",
                    slot.index,
                    "false",
                    &message.id,
                );
                body.extend_from_slice(b",\"data\":");
                push_json(body, &call_data(call_id, name, raw, server.as_deref()));
            }
            (SlotKind::Refusal, Part::Refusal(refusal)) => {
                content_head(
                    body,
                    seq,
                    "completed",
                    "refusal",
                    slot.index,
                    "false",
                    &message.id,
                );
                body.extend_from_slice(b",\"refusal\":");
                push_json(body, &refusal.text);
            }
            (_, Part::Text(text)) => text_body(body, seq, slot.index, &message.id, &text.text),
            (_, Part::Reasoning(text)) => text_body(body, seq, slot.index, &message.id, &text.text),
            (_, other) => text_body(body, seq, slot.index, &message.id, &text_of(other)),
        }
        body.push(b'}');
        frame(out, body);
        push_content(&mut message.content, body);
        message.n_open = message.n_open.saturating_sub(1);
        let at = slot.message;
        self.close_if_done(out, at);
    }

    /// A part that arrives whole: its content is written completed, in the message its kind
    /// goes in. Step starts have no AgentScope form.
    fn whole_part(&mut self, out: &mut Vec<u8>, message_id: &str, part: &Part) {
        let kind = match part {
            Part::StepStart(_) => {
                self.ensure_turn(message_id);
                return;
            }
            Part::Reasoning(_) => "reasoning",
            Part::ToolCall(call) => {
                call_type(&self.call_kind(call.tool_call_id.as_str(), &call.tool_name))
            }
            Part::ToolResult(result) => output_type(
                &self.output_kind(result.tool_call_id.as_str(), result.tool_name.as_deref()),
            ),
            Part::ToolError(error) => output_type(
                &self.output_kind(error.tool_call_id.as_str(), error.tool_name.as_deref()),
            ),
            Part::ApprovalRequest(_) => "mcp_approval_request",
            Part::ApprovalResponse(_) => "mcp_approval_response",
            _ => "message",
        };
        let at = self.message_for(out, message_id, kind);
        let seq = self.seq();
        let Some(turn) = &mut self.turn else { return };
        let message = &mut turn.messages[at];
        let index = message.n_content;
        message.n_content += 1;
        self.scratch.clear();
        let body = &mut self.scratch;
        let id = &message.id;
        match part {
            Part::Text(text) => text_body(body, seq, index, id, &text.text),
            Part::Reasoning(text) => text_body(body, seq, index, id, &text.text),
            Part::Refusal(refusal) => {
                content_head(body, seq, "completed", "refusal", index, "false", id);
                body.extend_from_slice(b",\"refusal\":");
                push_json(body, &refusal.text);
            }
            Part::File(file) => file_body(body, seq, index, id, file),
            Part::ToolCall(call) => {
                content_head(body, seq, "completed", "data", index, "false", id);
                body.extend_from_slice(b",\"data\":");
                let server = mcp_server(
                    self.tool_kinds
                        .get(&call.tool_name)
                        .cloned()
                        .unwrap_or_default(),
                );
                let arguments = call.args.to_json_text();
                push_json(
                    body,
                    &call_data(
                        call.tool_call_id.as_str(),
                        &call.tool_name,
                        &arguments,
                        server.as_deref(),
                    ),
                );
            }
            other => {
                content_head(body, seq, "completed", "data", index, "false", id);
                body.extend_from_slice(b",\"data\":");
                push_json(body, &data_of(other));
            }
        }
        body.push(b'}');
        frame(out, body);
        push_content(&mut message.content, body);
    }

    fn message_complete(&mut self, out: &mut Vec<u8>, message: &Message) {
        let id = message
            .id
            .as_ref()
            .map(|id| id.as_str())
            .unwrap_or_default();
        let known = self.turn.as_ref().is_some_and(|turn| turn.id == id);
        if !known {
            // A message that arrives whole: its parts, then its end.
            self.message_start(id, message.role, &message.metadata);
            for part in &message.parts {
                self.whole_part(out, id, part);
            }
        }
        if self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.messages.is_empty())
        {
            self.message_for(out, id, "message");
        }
        let final_metadata = metadata_json(&message.metadata);
        let usage = message.metadata.usage;
        let open: Vec<usize> = self
            .turn
            .as_ref()
            .map(|turn| {
                (0..turn.messages.len())
                    .filter(|&at| !turn.messages[at].done)
                    .collect()
            })
            .unwrap_or_default();
        let last = open.last().copied();
        for at in open {
            let usage = if Some(at) == last {
                usage.as_ref()
            } else {
                None
            };
            self.close(out, at, Some(&final_metadata), usage);
        }
        self.turn = None;
    }

    /// A keep-alive: a message of AgentScope's own `heartbeat` type (`MessageType.HEARTBEAT`,
    /// which their models accept and their clients pass on), numbered like every frame. Outside a
    /// response (none started, or ended) a comment, which every SSE reader skips.
    fn heartbeat(&mut self, out: &mut Vec<u8>) {
        if !self.started || self.ended {
            out.extend_from_slice(b": heartbeat\n\n");
            return;
        }
        let seq = self.seq();
        out.extend_from_slice(b"data: {\"sequence_number\":");
        push_u64(out, seq);
        out.extend_from_slice(
            b",\"object\":\"message\",\"status\":\"in_progress\",\"error\":null,\"id\":\"heartbeat_",
        );
        push_u64(out, seq);
        out.extend_from_slice(
            b"\",\"type\":\"heartbeat\",\"role\":\"assistant\",\"content\":null,\"code\":null,\"message\":null,\"usage\":null,\"metadata\":null}\n\n",
        );
    }

    /// A message of AgentScope's `error` type (`code`, `message`), completed at once and so
    /// part of the output.
    fn error(&mut self, out: &mut Vec<u8>, error: &ErrorInfo) {
        let seq = self.seq();
        let body = &mut self.scratch;
        body.clear();
        body.extend_from_slice(b"{\"sequence_number\":");
        push_u64(body, seq);
        body.extend_from_slice(
            b",\"object\":\"message\",\"status\":\"completed\",\"error\":null,\"id\":\"error_",
        );
        push_u64(body, seq);
        body.extend_from_slice(
            b"\",\"type\":\"error\",\"role\":\"assistant\",\"content\":null,\"code\":",
        );
        push_json(body, &error.code);
        body.extend_from_slice(b",\"message\":");
        push_json(body, &error.message);
        body.extend_from_slice(b",\"usage\":null,\"metadata\":null}");
        frame(out, body);
        push_content(&mut self.output, body);
    }
}

impl Encoder for AgentScopeEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        // A sub-agent's run is not written: see the module docs' losses.
        if !event.is_own() {
            return;
        }
        if self.ended {
            return;
        }
        match &event.kind {
            EventKind::RunCreated {
                run_id, session_id, ..
            } => {
                if self.started {
                    return;
                }
                let mut id = Vec::new();
                push_json(&mut id, run_id.as_str());
                self.response_id = String::from_utf8(id).unwrap_or_default();
                self.session_id = session_id.as_ref().map(|id| id.to_string());
                self.response(out, "created", None);
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => self.run_status(out, *status, error.as_ref(), usage.as_ref()),
            EventKind::MessageStart {
                message_id,
                role,
                metadata,
                ..
            } => {
                self.ensure_in_progress(out);
                self.message_start(message_id.as_str(), *role, metadata);
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                self.ensure_in_progress(out);
                self.part_start(out, message_id.as_str(), *index, part);
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => self.part_delta(out, message_id.as_str(), *index, delta),
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                self.ensure_in_progress(out);
                self.part_complete(out, message_id.as_str(), *index, part);
            }
            EventKind::MessageComplete { message } => {
                self.ensure_in_progress(out);
                self.message_complete(out, message);
            }
            EventKind::Heartbeat {} => self.heartbeat(out),
            // What became of a message sent while the run worked: no message of the protocol.
            EventKind::Input(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => {}
            EventKind::Error(error) => {
                self.ensure_in_progress(out);
                self.error(out, error);
            }
        }
    }
}

/// The type of the message a call of this kind is.
fn call_type(kind: &ToolKind) -> &'static str {
    match kind {
        ToolKind::Mcp { .. } => "mcp_call",
        ToolKind::Plugin => "plugin_call",
        ToolKind::Component => "component_call",
        _ => "function_call",
    }
}

/// The type of the message the output of a call of this kind is.
fn output_type(kind: &ToolKind) -> &'static str {
    match kind {
        ToolKind::Mcp { .. } => "mcp_call_output",
        ToolKind::Plugin => "plugin_call_output",
        ToolKind::Component => "component_call_output",
        _ => "function_call_output",
    }
}

fn mcp_server(kind: ToolKind) -> Option<String> {
    match kind {
        ToolKind::Mcp { server } => Some(server),
        _ => None,
    }
}

/// A call's `data`: their `FunctionCall` (`call_id`, `name`, `arguments`), or `McpCall` with
/// the server's `server_label`.
fn call_data(call_id: &str, name: &str, arguments: &str, server: Option<&str>) -> Value {
    let mut data = json!({"call_id": call_id, "name": name, "arguments": arguments});
    if let Some(server) = server {
        data["server_label"] = json!(server);
    }
    data
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Tool => "tool",
        // `data` is not one of their roles.
        Role::Assistant | Role::Data => "assistant",
    }
}

/// A message's metadata as AgentScope carries it: everything but the usage, which has its own
/// key.
fn metadata_json(metadata: &Metadata) -> String {
    let without_usage = Metadata {
        usage: None,
        ..metadata.clone()
    };
    serde_json::to_string(&without_usage).unwrap_or_else(|_| "{}".into())
}

fn write_message(
    out: &mut Vec<u8>,
    seq: u64,
    message: &AsMessage,
    status: &str,
    metadata: &str,
    usage: Option<&Usage>,
) {
    out.extend_from_slice(b"data: ");
    write_message_object(out, seq, message, status, metadata, usage);
    out.extend_from_slice(b"\n\n");
}

fn write_message_object(
    out: &mut Vec<u8>,
    seq: u64,
    message: &AsMessage,
    status: &str,
    metadata: &str,
    usage: Option<&Usage>,
) {
    out.extend_from_slice(b"{\"sequence_number\":");
    push_u64(out, seq);
    out.extend_from_slice(b",\"object\":\"message\",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\",\"error\":null,\"id\":");
    out.extend_from_slice(message.id.as_bytes());
    out.extend_from_slice(b",\"type\":\"");
    out.extend_from_slice(message.kind.as_bytes());
    out.extend_from_slice(b"\",\"role\":\"");
    out.extend_from_slice(message.role.as_bytes());
    out.extend_from_slice(b"\",\"content\":");
    if status == "completed" && !message.content.is_empty() {
        out.push(b'[');
        out.extend_from_slice(&message.content);
        out.push(b']');
    } else {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"code\":null,\"message\":null,\"usage\":");
    match usage {
        Some(usage) => push_json(out, usage),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(metadata.as_bytes());
    out.push(b'}');
}

/// The keys every content starts with, up to `msg_id`; the caller adds its own and the `}`.
fn content_head(
    out: &mut Vec<u8>,
    seq: u64,
    status: &str,
    content_type: &str,
    index: u32,
    delta: &str,
    msg_id: &str,
) {
    out.extend_from_slice(b"{\"sequence_number\":");
    push_u64(out, seq);
    out.extend_from_slice(b",\"object\":\"content\",\"status\":\"");
    out.extend_from_slice(status.as_bytes());
    out.extend_from_slice(b"\",\"error\":null,\"type\":\"");
    out.extend_from_slice(content_type.as_bytes());
    out.extend_from_slice(b"\",\"index\":");
    push_u64(out, u64::from(index));
    out.extend_from_slice(b",\"delta\":");
    out.extend_from_slice(delta.as_bytes());
    out.extend_from_slice(b",\"msg_id\":");
    out.extend_from_slice(msg_id.as_bytes());
}

fn text_body(out: &mut Vec<u8>, seq: u64, index: u32, msg_id: &str, text: &str) {
    content_head(out, seq, "completed", "text", index, "false", msg_id);
    out.extend_from_slice(b",\"text\":");
    push_json(out, text);
}

/// Images as `image` (inline data as a `data:` URL), inline audio as `audio`, anything else as
/// `file`; each with our `media_type` key, and `filename` when there is one.
fn file_body(out: &mut Vec<u8>, seq: u64, index: u32, msg_id: &str, file: &FilePart) {
    let media_type = file.media_type.as_str();
    match (&file.source, media_type) {
        (source, _) if media_type.starts_with("image/") => {
            content_head(out, seq, "completed", "image", index, "false", msg_id);
            out.extend_from_slice(b",\"image_url\":");
            match source {
                FileSource::Url(url) => push_json(out, url),
                FileSource::Data(data) => {
                    push_json(out, &format!("data:{media_type};base64,{data}"))
                }
            }
        }
        (FileSource::Data(data), _) if media_type.starts_with("audio/") => {
            content_head(out, seq, "completed", "audio", index, "false", msg_id);
            out.extend_from_slice(b",\"data\":");
            push_json(out, data);
            out.extend_from_slice(b",\"format\":");
            push_json(out, &media_type["audio/".len()..]);
        }
        (source, _) => {
            content_head(out, seq, "completed", "file", index, "false", msg_id);
            let (url, data) = match source {
                FileSource::Url(url) => (Some(url), None),
                FileSource::Data(data) => (None, Some(data)),
            };
            out.extend_from_slice(b",\"file_url\":");
            push_json(out, &url);
            out.extend_from_slice(b",\"file_id\":null,\"filename\":");
            push_json(out, &file.filename);
            out.extend_from_slice(b",\"file_data\":");
            push_json(out, &data);
            out.extend_from_slice(b",\"media_type\":");
            push_json(out, media_type);
            return;
        }
    }
    out.extend_from_slice(b",\"media_type\":");
    push_json(out, media_type);
    if let Some(filename) = &file.filename {
        out.extend_from_slice(b",\"filename\":");
        push_json(out, filename);
    }
}

/// The `data` of a content for a part that is not text or a file: the call and output shapes
/// of their `FunctionCall`/`FunctionCallOutput`, approval shapes of their MCP approval models,
/// and our own JSON for the parts AgentScope has no form for.
fn data_of(part: &Part) -> Value {
    match part {
        Part::ToolCall(call) => json!({
            "call_id": call.tool_call_id.as_str(),
            "name": call.tool_name,
            "arguments": call.args.to_json_text(),
        }),
        Part::ToolResult(result) => {
            let mut data = json!({"call_id": result.tool_call_id.as_str()});
            if let Some(name) = &result.tool_name {
                data["name"] = json!(name);
            }
            data["output"] = json!(result.result.to_string());
            if let Some(is_error) = result.is_error {
                data["is_error"] = json!(is_error);
            }
            data
        }
        Part::ToolError(error) => {
            let mut data = json!({"call_id": error.tool_call_id.as_str()});
            if let Some(name) = &error.tool_name {
                data["name"] = json!(name);
            }
            data["output"] = json!(error.message);
            data["error_type"] = serde_json::to_value(error.error_type).unwrap_or(Value::Null);
            data
        }
        Part::ApprovalRequest(request) => {
            let mut data = json!({"id": request.approval_id.as_str(), "call_id": request.tool_call_id.as_str()});
            if let Some(reason) = &request.reason {
                data["reason"] = json!(reason);
            }
            data
        }
        Part::ApprovalResponse(response) => {
            let mut data = json!({"approval_request_id": response.approval_id.as_str(), "approve": response.approved});
            if let Some(reason) = &response.reason {
                data["reason"] = json!(reason);
            }
            data
        }
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

fn text_of(part: &Part) -> String {
    match part {
        Part::Text(text) => text.text.clone(),
        Part::Reasoning(text) => text.text.clone(),
        Part::Refusal(text) => text.text.clone(),
        _ => String::new(),
    }
}

fn frame(out: &mut Vec<u8>, object: &[u8]) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(object);
    out.extend_from_slice(b"\n\n");
}

fn push_content(content: &mut Vec<u8>, object: &[u8]) {
    if !content.is_empty() {
        content.push(b',');
    }
    content.extend_from_slice(object);
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Serializing strings, maps of strings and usage cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn push_u64(out: &mut Vec<u8>, n: u64) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{n}");
}

fn push_i64(out: &mut Vec<u8>, n: i64) {
    let _ = write!(out, "{n}");
}
