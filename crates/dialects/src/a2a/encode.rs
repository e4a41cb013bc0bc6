//! [`A2aEncoder`]: canonical events → `SendStreamingMessage` SSE items.

use std::collections::VecDeque;

use agentwire_core::part::FileSource;
use agentwire_core::{
    ErrorInfo, Event, EventKind, InputOutcome, Message, MessageId, Metadata, Namespace, Outcome,
    Part, Role, RunStatus, StreamedPart, Timestamp, Usage,
};
use serde::Serialize;
use serde_json::Value;

use super::wire::NAMESPACE;
use crate::Encoder;
use crate::sse::write_comment;

/// Encodes a run's events as the SSE stream of an A2A 1.0 `SendStreamingMessage` response: one
/// JSON-RPC 2.0 response per item, `data: {"jsonrpc":"2.0","id":…,"result":{…}}`.
///
/// The mapping is in the [module docs](super). [`Default`] answers request id `1` and takes the
/// task id from `run_created`'s run id and the context id from its session id (the run id
/// again when there is none).
#[derive(Debug)]
pub struct A2aEncoder {
    envelope: Envelope,
    fixed_ids: bool,
    /// The A2A state last sent, repeated by items that report an error without a new state.
    state: &'static str,
    message: Option<OpenMessage>,
    /// The client has the task: an A2A stream begins with it, so a stream whose events do not
    /// begin with `run_created` (one converted from a dialect without it) gets one made up.
    task_sent: bool,
    /// The runtime reported a message delivered: a user message that follows whole is that
    /// steer, sent as a user status message rather than as an artifact (the agent's output).
    steer_pending: bool,
    /// The messages of sub-agents' runs nested in the stream, being written: artifacts of their
    /// own, interleaved with the run's.
    nested: Vec<OpenMessage>,
}

impl Default for A2aEncoder {
    fn default() -> Self {
        Self {
            envelope: Envelope::new(&Value::from(1), None),
            fixed_ids: false,
            state: "TASK_STATE_SUBMITTED",
            message: None,
            task_sent: false,
            steer_pending: false,
            nested: Vec::new(),
        }
    }
}

impl A2aEncoder {
    /// An encoder answering the JSON-RPC request `request_id` (a string or a number, as the
    /// client sent it) about task `task_id` in context `context_id`; `run_created` does not
    /// change these ids.
    pub fn new(
        request_id: impl Into<Value>,
        task_id: impl Into<String>,
        context_id: impl Into<String>,
    ) -> Self {
        let ids = (task_id.into(), context_id.into());
        Self {
            envelope: Envelope::new(&request_id.into(), Some(ids)),
            fixed_ids: true,
            ..Self::default()
        }
    }

    /// An encoder answering the JSON-RPC request `request_id`, taking the task and context ids
    /// from `run_created` (for a stream of a task that does not exist yet when it opens).
    pub fn answering(request_id: impl Into<Value>) -> Self {
        Self {
            envelope: Envelope::new(&request_id.into(), None),
            ..Self::default()
        }
    }

    /// The encoder of a stream that continues a task its client has been sent already, in
    /// `status` (a follow-up after an answer, which begins with the task as it waits; a steer,
    /// which joins the task as it works): no task is made up for it, and the items that report
    /// no new status (an `input` outcome, a steer, an error) repeat the state of `status` until
    /// a `run_status` changes it.
    #[must_use]
    pub fn continuing(mut self, status: RunStatus) -> Self {
        self.task_sent = true;
        self.state = task_state(status);
        self
    }

    fn status(
        &mut self,
        out: &mut Vec<u8>,
        seq: u64,
        status: RunStatus,
        error: Option<&ErrorInfo>,
        usage: Option<&Usage>,
    ) {
        self.state = task_state(status);
        let ours = RunStatusFields {
            status,
            error,
            usage,
        };
        self.envelope.status_update(
            out,
            seq,
            self.state,
            error.map(|e| e.message.as_str()),
            &ours,
        );
    }
}

impl A2aEncoder {
    /// An event of a sub-agent's run nested in the stream: its messages are artifacts of the
    /// task, `artifactId` `<run>:<message>`, whose first and last chunks name the run
    /// (`metadata.agentwire.namespace`); anything else is a status update in the task's current
    /// state carrying the native event in `metadata.agentwire`.
    fn encode_nested(&mut self, event: &Event, out: &mut Vec<u8>) {
        let env = &self.envelope;
        let namespace = &event.namespace;
        match &event.kind {
            EventKind::MessageStart {
                message_id,
                role,
                created_at,
                ..
            } => {
                self.nested.push(OpenMessage::nested(
                    message_id.clone(),
                    *role,
                    *created_at,
                    event.namespace.clone(),
                ));
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                if let Some(open) = nested_message(&mut self.nested, namespace, message_id) {
                    open.part_start(*index, part);
                }
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                if let Some(open) = nested_message(&mut self.nested, namespace, message_id) {
                    open.part_delta(env, out, *index, delta);
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                if let Some(open) = nested_message(&mut self.nested, namespace, message_id) {
                    open.part_complete(env, out, *index, part);
                }
            }
            EventKind::MessageComplete { message } => {
                let at = self.nested.iter().position(|open| {
                    Some(&open.id) == message.id.as_ref()
                        && open.namespace.as_ref() == Some(&event.namespace)
                });
                let open = match at {
                    Some(at) => self.nested.remove(at),
                    None => {
                        let id = message.id.clone().unwrap_or_else(|| "message".into());
                        OpenMessage::nested(
                            id,
                            message.role,
                            message.created_at,
                            event.namespace.clone(),
                        )
                    }
                };
                open.complete(env, out, message);
            }
            EventKind::Heartbeat {} => {}
            _ => {
                // Items keep the order of the events: what the run holds back goes first.
                for open in &mut self.nested {
                    if open.namespace.as_ref() == Some(&event.namespace) {
                        open.flush(env, out, false, None);
                    }
                }
                let mut ours = serde_json::to_value(event).unwrap_or(Value::Null);
                if let Some(fields) = ours.as_object_mut() {
                    fields.remove("seq");
                }
                env.status_update(out, event.seq, self.state, None, &ours);
            }
        }
    }

    /// Writes the chunk every message holds back, before an item that must follow it.
    fn flush_all(&mut self, out: &mut Vec<u8>) {
        if let Some(message) = &mut self.message {
            message.flush(&self.envelope, out, false, None);
        }
        for open in &mut self.nested {
            open.flush(&self.envelope, out, false, None);
        }
    }
}

impl Encoder for A2aEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if !event.is_own() {
            if !self.task_sent {
                self.envelope.task(out, None);
                self.task_sent = true;
            }
            self.encode_nested(event, out);
            return;
        }
        let made_up = !matches!(
            event.kind,
            EventKind::RunCreated { .. } | EventKind::Heartbeat {}
        );
        if made_up && !self.task_sent {
            self.envelope.task(out, None);
        }
        self.task_sent |= !matches!(event.kind, EventKind::Heartbeat {});
        let env = &self.envelope;
        match &event.kind {
            EventKind::RunCreated {
                run_id,
                session_id,
                agent,
                ..
            } => {
                if !self.fixed_ids {
                    let context = session_id
                        .as_ref()
                        .map_or(run_id.as_str(), |id| id.as_str());
                    self.envelope
                        .set_ids(run_id.to_string(), context.to_owned());
                }
                self.envelope.task(out, agent.as_deref());
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => {
                // Items keep the order of the events: the held chunk goes first, not last. A
                // sub-agent's messages are artifacts of their own, unless the run is over.
                if status.is_terminal() || matches!(status, RunStatus::Awaiting(_)) {
                    self.flush_all(out);
                } else if let Some(message) = &mut self.message {
                    message.flush(env, out, false, None);
                }
                self.status(out, event.seq, *status, error.as_ref(), usage.as_ref());
            }
            EventKind::Error(error) => {
                if let Some(message) = &mut self.message {
                    message.flush(env, out, false, None);
                }
                let ours = ErrorFields { error };
                env.status_update(out, event.seq, self.state, Some(&error.message), &ours);
            }
            EventKind::MessageStart {
                message_id,
                role,
                created_at,
                ..
            } => {
                if let Some(mut open) = self.message.take() {
                    open.flush(env, out, false, None);
                }
                self.steer_pending = false;
                self.message = Some(OpenMessage::new(message_id.clone(), *role, *created_at));
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                if let Some(open) = open_message(&mut self.message, message_id) {
                    open.part_start(*index, part);
                }
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                if let Some(open) = open_message(&mut self.message, message_id) {
                    open.part_delta(env, out, *index, delta);
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                if let Some(open) = open_message(&mut self.message, message_id) {
                    open.part_complete(env, out, *index, part);
                }
            }
            EventKind::MessageComplete { message }
                if std::mem::take(&mut self.steer_pending)
                    && message.role == Role::User
                    && self.message.is_none() =>
            {
                env.user_status(out, self.state, message);
            }
            EventKind::MessageComplete { message } => {
                let open = match self.message.take() {
                    Some(open) if Some(&open.id) == message.id.as_ref() => open,
                    other => {
                        // A message that arrives whole (or one that never started).
                        self.message = other;
                        let id = message.id.clone().unwrap_or_else(|| "message".into());
                        OpenMessage::new(id, message.role, message.created_at)
                    }
                };
                open.complete(env, out, message);
            }
            EventKind::Heartbeat {} => write_comment(out, "heartbeat"),
            // The shared state is not written in this dialect yet.
            EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. } => {}
            // What became of a message sent while the task worked: a status update in the
            // current state whose `metadata.agentwire.input` says it.
            EventKind::Input(outcome) => {
                if let Some(message) = &mut self.message {
                    message.flush(env, out, false, None);
                }
                self.steer_pending = matches!(outcome.outcome, Outcome::Delivered { .. });
                let ours = InputFields { input: outcome };
                env.status_update(out, event.seq, self.state, None, &ours);
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if let Some(mut open) = self.message.take() {
            open.flush(&self.envelope, out, false, None);
        }
        for mut open in std::mem::take(&mut self.nested) {
            open.flush(&self.envelope, out, false, None);
        }
    }
}

fn nested_message<'m>(
    nested: &'m mut [OpenMessage],
    namespace: &Namespace,
    message_id: &MessageId,
) -> Option<&'m mut OpenMessage> {
    nested
        .iter_mut()
        .find(|open| open.id == *message_id && open.namespace.as_ref() == Some(namespace))
}

fn open_message<'m>(
    message: &'m mut Option<OpenMessage>,
    message_id: &MessageId,
) -> Option<&'m mut OpenMessage> {
    message.as_mut().filter(|open| &open.id == message_id)
}

/// The A2A state a run status maps to.
pub(super) fn task_state(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Created | RunStatus::Queued => "TASK_STATE_SUBMITTED",
        RunStatus::InProgress => "TASK_STATE_WORKING",
        RunStatus::Awaiting(_) => "TASK_STATE_INPUT_REQUIRED",
        RunStatus::Completed => "TASK_STATE_COMPLETED",
        RunStatus::Failed | RunStatus::Incomplete => "TASK_STATE_FAILED",
        RunStatus::Canceled => "TASK_STATE_CANCELED",
        RunStatus::Rejected => "TASK_STATE_REJECTED",
    }
}

/// `metadata.agentwire` of a status update: the native `run_status`, so nothing is lost.
#[derive(Serialize)]
struct RunStatusFields<'a> {
    #[serde(flatten)]
    status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Usage>,
}

/// `metadata.agentwire` of the status update that carries an `input` event.
#[derive(Serialize)]
struct InputFields<'a> {
    input: &'a InputOutcome,
}

/// `metadata.agentwire` of the status update that carries an `error` event.
#[derive(Serialize)]
struct ErrorFields<'a> {
    error: &'a ErrorInfo,
}

/// What every item repeats, written once: the start of the JSON-RPC response and the ids.
#[derive(Debug)]
struct Envelope {
    /// `data: {"jsonrpc":"2.0","id":…,"result":{`
    head: Vec<u8>,
    task_id: String,
    context_id: String,
    /// `"taskId":"…","contextId":"…"`
    ids: Vec<u8>,
}

impl Envelope {
    fn new(request_id: &Value, ids: Option<(String, String)>) -> Self {
        let mut head = b"data: {\"jsonrpc\":\"2.0\",\"id\":".to_vec();
        json(&mut head, request_id);
        head.extend_from_slice(b",\"result\":{");
        let (task_id, context_id) = ids.unwrap_or_else(|| ("task".into(), "context".into()));
        let mut envelope = Self {
            head,
            task_id: String::new(),
            context_id: String::new(),
            ids: Vec::new(),
        };
        envelope.set_ids(task_id, context_id);
        envelope
    }

    fn set_ids(&mut self, task_id: String, context_id: String) {
        self.ids.clear();
        self.ids.extend_from_slice(b"\"taskId\":");
        json(&mut self.ids, &task_id);
        self.ids.extend_from_slice(b",\"contextId\":");
        json(&mut self.ids, &context_id);
        self.task_id = task_id;
        self.context_id = context_id;
    }

    /// Starts an item: `data: {"jsonrpc":"2.0","id":…,"result":{"<field>":{`.
    fn open(&self, out: &mut Vec<u8>, field: &str) {
        out.extend_from_slice(&self.head);
        out.push(b'"');
        out.extend_from_slice(field.as_bytes());
        out.extend_from_slice(b"\":{");
    }

    /// Ends an item and its SSE frame.
    fn close(out: &mut Vec<u8>) {
        out.extend_from_slice(b"}}}\n\n");
    }

    /// The first item: the task, submitted.
    fn task(&self, out: &mut Vec<u8>, agent: Option<&str>) {
        self.open(out, "task");
        out.extend_from_slice(b"\"id\":");
        json(out, &self.task_id);
        out.extend_from_slice(b",\"contextId\":");
        json(out, &self.context_id);
        out.extend_from_slice(b",\"status\":{\"state\":\"TASK_STATE_SUBMITTED\"}");
        if let Some(agent) = agent {
            out.extend_from_slice(b",\"metadata\":{\"");
            out.extend_from_slice(NAMESPACE.as_bytes());
            out.extend_from_slice(b"\":{\"agent\":");
            json(out, agent);
            out.extend_from_slice(b"}}");
        }
        Self::close(out);
    }

    /// A status update in `state` whose message is the user's `message`, a steer the task took
    /// while it worked (its text and files; A2A messages hold no other part of a user's).
    fn user_status(&self, out: &mut Vec<u8>, state: &str, message: &Message) {
        self.open(out, "statusUpdate");
        out.extend_from_slice(&self.ids);
        out.extend_from_slice(b",\"status\":{\"state\":\"");
        out.extend_from_slice(state.as_bytes());
        out.extend_from_slice(b"\",\"message\":{\"messageId\":");
        let id = message.id.as_ref().map_or("steer", |id| id.as_str());
        json(out, id);
        out.push(b',');
        out.extend_from_slice(&self.ids);
        out.extend_from_slice(b",\"role\":\"ROLE_USER\",\"parts\":[");
        let mut first = true;
        for part in &message.parts {
            let comma = if first { "" } else { "," };
            match part {
                Part::Text(text) => {
                    out.extend_from_slice(comma.as_bytes());
                    out.extend_from_slice(b"{\"text\":");
                    json(out, &text.text);
                    out.push(b'}');
                }
                Part::File(file) => {
                    out.extend_from_slice(comma.as_bytes());
                    let field: &[u8] = match &file.source {
                        FileSource::Url(_) => b"{\"url\":",
                        FileSource::Data(_) => b"{\"raw\":",
                    };
                    out.extend_from_slice(field);
                    match &file.source {
                        FileSource::Url(location) | FileSource::Data(location) => {
                            json(out, location);
                        }
                    }
                    out.extend_from_slice(b",\"mediaType\":");
                    json(out, &file.media_type);
                    out.push(b'}');
                }
                _ => continue,
            }
            first = false;
        }
        out.extend_from_slice(b"]}}");
        Self::close(out);
    }

    /// A status update in `state`; `text`, when given, is sent as the status message, so that
    /// A2A clients can show it; `ours` goes to `metadata.agentwire`.
    fn status_update(
        &self,
        out: &mut Vec<u8>,
        seq: u64,
        state: &str,
        text: Option<&str>,
        ours: &impl Serialize,
    ) {
        self.open(out, "statusUpdate");
        out.extend_from_slice(&self.ids);
        out.extend_from_slice(b",\"status\":{\"state\":\"");
        out.extend_from_slice(state.as_bytes());
        out.push(b'"');
        if let Some(text) = text {
            out.extend_from_slice(b",\"message\":{\"messageId\":");
            json(out, &format!("{}-status-{seq}", self.task_id));
            out.push(b',');
            out.extend_from_slice(&self.ids);
            out.extend_from_slice(b",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":");
            json(out, text);
            out.extend_from_slice(b"}]}");
        }
        out.extend_from_slice(b"},\"metadata\":{\"");
        out.extend_from_slice(NAMESPACE.as_bytes());
        out.extend_from_slice(b"\":");
        json(out, ours);
        out.push(b'}');
        Self::close(out);
    }
}

/// Appends `value` as JSON. Serializing the model to a `Vec` cannot fail: its keys are strings
/// and its numbers finite.
fn json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The kinds of A2A part a canonical part becomes; text of one kind continues the part before
/// it unless marked as a new part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    Refusal,
    Other,
}

impl Kind {
    fn of(part: &Part) -> Self {
        match part {
            Part::Text(_) => Kind::Text,
            Part::Reasoning(_) => Kind::Reasoning,
            Part::Refusal(_) => Kind::Refusal,
            _ => Kind::Other,
        }
    }

    fn streamed(part: &StreamedPart) -> Self {
        match part {
            StreamedPart::Text => Kind::Text,
            StreamedPart::Reasoning => Kind::Reasoning,
            StreamedPart::Refusal => Kind::Refusal,
            StreamedPart::ToolCall { .. } => Kind::Other,
        }
    }
}

/// A part at or after the next index to write, that cannot be written yet.
#[derive(Debug)]
enum Slot {
    /// No event seen for it yet.
    Unknown,
    /// A tool call whose arguments stream: it is written whole when complete.
    Call,
    /// Streaming text; `buffered` holds deltas that arrived while an earlier part was open.
    Text {
        kind: Kind,
        buffered: String,
        wrote: bool,
    },
    /// Complete while an earlier part is still open.
    Done(Part),
}

/// The message being written: its artifact, the chunk held back, and parts waiting for their
/// turn.
///
/// One chunk is held back so that the message's last chunk can say `lastChunk: true` (A2A
/// artifacts need at least one part, so the end cannot be a chunk of its own). Parts are written
/// in their canonical order: a part that completes while an earlier tool call still streams
/// waits for it (parallel tool calls end in any order).
#[derive(Debug)]
struct OpenMessage {
    id: MessageId,
    /// The artifact's id: the message's, prefixed `<run>:` in a sub-agent's run.
    artifact_id: String,
    /// The sub-agent's run the message is of; `None` for the run's own.
    namespace: Option<Namespace>,
    role: Role,
    created_at: Option<Timestamp>,
    next: u32,
    waiting: VecDeque<Slot>,
    last_written: Option<(u32, Kind)>,
    held: Vec<u8>,
    has_held: bool,
    held_first: bool,
    created: bool,
}

impl OpenMessage {
    fn new(id: MessageId, role: Role, created_at: Option<Timestamp>) -> Self {
        Self {
            artifact_id: id.to_string(),
            namespace: None,
            id,
            role,
            created_at,
            next: 0,
            waiting: VecDeque::new(),
            last_written: None,
            held: Vec::new(),
            has_held: false,
            held_first: false,
            created: false,
        }
    }

    /// A message of the sub-agent's run at `namespace`.
    fn nested(
        id: MessageId,
        role: Role,
        created_at: Option<Timestamp>,
        namespace: Namespace,
    ) -> Self {
        let run = namespace.run().map(ToString::to_string).unwrap_or_default();
        Self {
            artifact_id: format!("{run}:{id}"),
            namespace: Some(namespace),
            ..Self::new(id, role, created_at)
        }
    }

    fn slot(&mut self, index: u32) -> Option<&mut Slot> {
        let position = index.checked_sub(self.next)? as usize;
        while self.waiting.len() <= position {
            self.waiting.push_back(Slot::Unknown);
        }
        self.waiting.get_mut(position)
    }

    fn part_start(&mut self, index: u32, part: &StreamedPart) {
        if let Some(slot) = self.slot(index) {
            *slot = match part {
                StreamedPart::ToolCall { .. } => Slot::Call,
                text => Slot::Text {
                    kind: Kind::streamed(text),
                    buffered: String::new(),
                    wrote: false,
                },
            };
        }
    }

    fn part_delta(&mut self, env: &Envelope, out: &mut Vec<u8>, index: u32, delta: &str) {
        let Some(position) = index.checked_sub(self.next) else {
            return;
        };
        if delta.is_empty() {
            return;
        }
        if let Some(Slot::Text {
            kind,
            buffered,
            wrote,
        }) = self.waiting.get_mut(position as usize)
        {
            if position == 0 {
                *wrote = true;
                let kind = *kind;
                self.write_text(env, out, index, kind, delta);
            } else {
                buffered.push_str(delta);
            }
        }
    }

    fn part_complete(&mut self, env: &Envelope, out: &mut Vec<u8>, index: u32, part: &Part) {
        if index == self.next {
            if !matches!(self.waiting.front(), Some(Slot::Text { wrote: true, .. })) {
                self.write_whole(env, out, index, part);
            }
            self.waiting.pop_front();
            self.next += 1;
            self.advance(env, out);
        } else if let Some(slot) = self.slot(index) {
            *slot = Slot::Done(part.clone());
        }
    }

    /// Writes what waited for the part just written.
    fn advance(&mut self, env: &Envelope, out: &mut Vec<u8>) {
        loop {
            match self.waiting.front_mut() {
                Some(Slot::Done(_)) => {
                    if let Some(Slot::Done(part)) = self.waiting.pop_front() {
                        self.write_whole(env, out, self.next, &part);
                    }
                    self.next += 1;
                }
                Some(Slot::Text {
                    kind,
                    buffered,
                    wrote,
                }) => {
                    if !buffered.is_empty() {
                        *wrote = true;
                        let (kind, text) = (*kind, std::mem::take(buffered));
                        self.write_text(env, out, self.next, kind, &text);
                    }
                    return;
                }
                _ => return,
            }
        }
    }

    /// Writes what is left of the message from its completion, and its last chunk.
    fn complete(mut self, env: &Envelope, out: &mut Vec<u8>, message: &Message) {
        for (index, part) in message.parts.iter().enumerate().skip(self.next as usize) {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            let wrote = matches!(
                self.waiting.get((index - self.next) as usize),
                Some(Slot::Text { wrote: true, .. })
            );
            if !wrote {
                self.write_whole(env, out, index, part);
            }
        }
        self.flush(env, out, true, Some(&message.metadata));
    }

    fn write_whole(&mut self, env: &Envelope, out: &mut Vec<u8>, index: u32, part: &Part) {
        match part {
            Part::Text(text) => self.write_text(env, out, index, Kind::Text, &text.text),
            Part::Reasoning(text) => self.write_text(env, out, index, Kind::Reasoning, &text.text),
            Part::Refusal(text) => self.write_text(env, out, index, Kind::Refusal, &text.text),
            other => self.hold(env, out, index, Kind::of(other), |buf| match other {
                Part::File(file) => {
                    let (field, location) = match &file.source {
                        FileSource::Url(url) => ("\"url\":", url),
                        FileSource::Data(data) => ("\"raw\":", data),
                    };
                    buf.extend_from_slice(field.as_bytes());
                    json(buf, location);
                    buf.extend_from_slice(b",\"mediaType\":");
                    json(buf, &file.media_type);
                    if let Some(filename) = &file.filename {
                        buf.extend_from_slice(b",\"filename\":");
                        json(buf, filename);
                    }
                }
                data => {
                    buf.extend_from_slice(b"\"data\":");
                    json(buf, data);
                }
            }),
        }
    }

    fn write_text(
        &mut self,
        env: &Envelope,
        out: &mut Vec<u8>,
        index: u32,
        kind: Kind,
        text: &str,
    ) {
        self.hold(env, out, index, kind, |buf| {
            let type_name = match kind {
                Kind::Reasoning => "reasoning",
                Kind::Refusal => "refusal",
                _ => {
                    buf.extend_from_slice(b"\"text\":");
                    json(buf, text);
                    return;
                }
            };
            buf.extend_from_slice(b"\"data\":{\"type\":\"");
            buf.extend_from_slice(type_name.as_bytes());
            buf.extend_from_slice(b"\",\"text\":");
            json(buf, text);
            buf.push(b'}');
        });
    }

    /// Writes the held chunk, if any, and holds the A2A part that `members` writes.
    fn hold(
        &mut self,
        env: &Envelope,
        out: &mut Vec<u8>,
        index: u32,
        kind: Kind,
        members: impl FnOnce(&mut Vec<u8>),
    ) {
        let new_part = kind != Kind::Other
            && matches!(self.last_written, Some((last, last_kind)) if last != index && last_kind == kind);
        self.last_written = Some((index, kind));
        self.flush(env, out, false, None);
        self.held.clear();
        self.held.push(b'{');
        members(&mut self.held);
        if new_part {
            self.held.extend_from_slice(b",\"metadata\":{\"");
            self.held.extend_from_slice(NAMESPACE.as_bytes());
            self.held.extend_from_slice(b"\":{\"new_part\":true}}");
        }
        self.held.push(b'}');
        self.has_held = true;
        self.held_first = !self.created;
        self.created = true;
    }

    /// Writes the held chunk as an artifact update; the first carries the message's role and
    /// time when they are not the defaults, the last its final metadata.
    fn flush(
        &mut self,
        env: &Envelope,
        out: &mut Vec<u8>,
        last: bool,
        metadata: Option<&Metadata>,
    ) {
        if !std::mem::take(&mut self.has_held) {
            return;
        }
        env.open(out, "artifactUpdate");
        out.extend_from_slice(&env.ids);
        out.extend_from_slice(b",\"artifact\":{\"artifactId\":");
        json(out, &self.artifact_id);
        out.extend_from_slice(b",\"parts\":[");
        out.extend_from_slice(&self.held);
        out.push(b']');
        let role = (self.held_first && self.role != Role::Assistant).then_some(self.role);
        let created_at = self.created_at.filter(|_| self.held_first);
        let metadata = metadata.filter(|metadata| last && !metadata.is_empty());
        // The a2a-sdk's fold replaces the artifact's metadata keys with an appended chunk's: the
        // run is named on the first chunk and again on the last.
        let namespace = self.namespace.as_ref().filter(|_| self.held_first || last);
        if role.is_some() || created_at.is_some() || metadata.is_some() || namespace.is_some() {
            #[derive(Serialize)]
            struct ArtifactFields<'a> {
                #[serde(skip_serializing_if = "Option::is_none")]
                namespace: Option<&'a Namespace>,
                #[serde(skip_serializing_if = "Option::is_none")]
                role: Option<Role>,
                #[serde(skip_serializing_if = "Option::is_none")]
                created_at: Option<Timestamp>,
                #[serde(skip_serializing_if = "Option::is_none")]
                metadata: Option<&'a Metadata>,
            }
            out.extend_from_slice(b",\"metadata\":{\"");
            out.extend_from_slice(NAMESPACE.as_bytes());
            out.extend_from_slice(b"\":");
            let fields = ArtifactFields {
                namespace,
                role,
                created_at,
                metadata,
            };
            json(out, &fields);
            out.push(b'}');
        }
        out.extend_from_slice(if self.held_first {
            b"},\"append\":false,\"lastChunk\":"
        } else {
            b"},\"append\":true,\"lastChunk\":"
        });
        out.extend_from_slice(if last { b"true" } else { b"false" });
        Envelope::close(out);
        self.held_first = false;
    }
}
