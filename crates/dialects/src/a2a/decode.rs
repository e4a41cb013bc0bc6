//! [`A2aDecoder`]: a `SendStreamingMessage` SSE stream → canonical events.

use std::collections::HashSet;

use agentwire_core::part::{ReasoningPart, RefusalPart};
use agentwire_core::{
    Awaiting, Emitter, ErrorInfo, Event, EventKind, InputOutcome, MessageBuilder, MessageStart,
    Metadata, Namespace, Part, Role, RunStatus, StreamedPart, Timestamp, Usage,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{self, A2aPart, Chunk, NAMESPACE, TaskState};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};

/// Decodes the SSE stream of an A2A `SendStreamingMessage` (or `SubscribeToTask`) response
/// into canonical events, numbered from 1, as the bytes arrive.
///
/// Frames of the default type and `event: error` frames are read as JSON-RPC responses; frames
/// of other types are skipped. The mapping is in the [module docs](super).
#[derive(Debug, Default)]
pub struct A2aDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    out: Emitter,
    started: bool,
    /// The run ended (a terminal state or a JSON-RPC error): later items are dropped.
    ended: bool,
    open: Option<OpenMessage>,
    /// Message ids already used, so that no message starts twice.
    used_ids: HashSet<String>,
    /// What an `INPUT_REQUIRED` without agentwire's metadata waits for, from the last message.
    awaiting: Option<Awaiting>,
    /// The artifacts of sub-agents' runs being read, each into a message of its run.
    nested: Vec<NestedMessage>,
}

/// An artifact of a sub-agent's run, read into a message of that run: its builder writes to an
/// emitter of its own, whose events go on under the run's namespace.
#[derive(Debug)]
struct NestedMessage {
    namespace: Namespace,
    open: OpenMessage,
    scratch: Emitter,
}

/// The artifact (or message) being read into one canonical message.
#[derive(Debug)]
struct OpenMessage {
    artifact_id: String,
    builder: MessageBuilder,
    /// The kind of text the last part was, which a chunk of the same kind continues.
    open_text: Option<StreamedPart>,
}

impl StreamDecoder for A2aDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let mut frames = std::mem::take(&mut self.frames);
        let mut result = Ok(());
        for frame in frames.drain(..) {
            self.n_frames += 1;
            if matches!(frame.event.as_deref(), None | Some("message" | "error")) {
                result = self.item(&frame.data);
                if result.is_err() {
                    break;
                }
            }
        }
        self.frames = frames;
        out.extend(self.out.drain());
        result
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()?;
        // A stream cut short still ends its message, so the messages accumulate.
        self.close_message();
        self.close_nested(None);
        out.extend(self.out.drain());
        Ok(())
    }
}

/// `metadata.agentwire` of a status update: the native `run_status`.
#[derive(Deserialize)]
struct RunStatusFields {
    #[serde(flatten)]
    status: RunStatus,
    #[serde(default)]
    error: Option<ErrorInfo>,
    #[serde(default)]
    usage: Option<Usage>,
}

/// `metadata.agentwire` of a status update that reports an `error` event.
#[derive(Deserialize)]
struct ErrorFields {
    error: ErrorInfo,
}

/// `metadata.agentwire` of an artifact: what A2A cannot say about the message.
#[derive(Default, Deserialize)]
struct ArtifactFields {
    /// The sub-agent's run the artifact is a message of.
    #[serde(default)]
    namespace: Option<Namespace>,
    #[serde(default)]
    role: Option<Role>,
    #[serde(default)]
    created_at: Option<Timestamp>,
    #[serde(default)]
    metadata: Option<Metadata>,
}

impl A2aDecoder {
    fn item(&mut self, data: &str) -> Result<(), DecodeError> {
        let frame = self.n_frames;
        let invalid = |source| DecodeError::InvalidFrame { frame, source };
        let response: wire::Response = serde_json::from_str(data).map_err(invalid)?;
        if self.ended {
            return Ok(());
        }
        match (response.result, response.error) {
            (_, Some(error)) => {
                self.close_message();
                let code = rpc_error_code(error.code);
                let message = if error.message.is_empty() {
                    format!("JSON-RPC error {}", error.code)
                } else {
                    error.message
                };
                self.run_status(RunStatus::Failed, Some(ErrorInfo::new(code, message)), None);
            }
            (Some(result), None) => self.result(result).map_err(invalid)?,
            (None, None) => {
                return Err(invalid(serde::de::Error::custom(
                    "a JSON-RPC response needs `result` or `error`",
                )));
            }
        }
        Ok(())
    }

    fn result(&mut self, result: wire::StreamResponse) -> Result<(), serde_json::Error> {
        if let Some(task) = result.task {
            if self.started {
                return Ok(()); // a later snapshot says nothing the updates did not
            }
            self.started = true;
            let agent = ours(task.metadata.as_ref())
                .and_then(|ours| ours.get("agent"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.out.emit(EventKind::RunCreated {
                run_id: task.id.into(),
                session_id: Some(task.context_id)
                    .filter(|id| !id.is_empty())
                    .map(Into::into),
                agent,
                parent_run_id: None,
                parent_tool_call_id: None,
            });
            for artifact in task.artifacts {
                self.artifact(artifact, true)?;
            }
            if let Some(status) = task.status
                && !matches!(status.state, TaskState::Submitted | TaskState::Unspecified)
            {
                self.derived_status(status);
            }
        } else if let Some(message) = result.message {
            self.close_message();
            let start = MessageStart {
                metadata: message_metadata(message.metadata)?,
                ..MessageStart::new(self.unique_id(message.message_id), message.role.canonical())
            };
            self.open_message(String::new(), start);
            self.parts(message.parts);
            self.close_message();
        } else if let Some(update) = result.status_update {
            self.status_update(update)?;
        } else if let Some(update) = result.artifact_update {
            self.artifact(update.artifact, update.last_chunk)?;
        }
        Ok(())
    }

    fn status_update(&mut self, update: wire::StatusUpdate) -> Result<(), serde_json::Error> {
        // A sub-agent's event: the native event, with its namespace.
        if let Some(Value::Object(fields)) = ours(update.metadata.as_ref())
            && fields
                .get("namespace")
                .and_then(Value::as_array)
                .is_some_and(|path| !path.is_empty())
        {
            let mut fields = fields.clone();
            fields.insert("seq".into(), Value::from(0));
            let event = Event::deserialize(Value::Object(fields))?;
            if let EventKind::RunStatus { status, .. } = &event.kind
                && (status.is_terminal() || matches!(status, RunStatus::Awaiting(_)))
            {
                self.close_nested(Some(&event.namespace));
            }
            self.out.emit_in(event.namespace, event.kind);
            return Ok(());
        }
        match ours(update.metadata.as_ref()) {
            Some(fields) if fields.get("status").is_some() => {
                let fields = RunStatusFields::deserialize(fields)?;
                self.run_status(fields.status, fields.error, fields.usage);
            }
            Some(fields) if fields.get("error").is_some() => {
                let fields = ErrorFields::deserialize(fields)?;
                self.out.emit(EventKind::Error(fields.error));
            }
            Some(fields) if fields.get("input").is_some() => {
                let outcome = InputOutcome::deserialize(&fields["input"])?;
                self.out.emit(EventKind::Input(outcome));
            }
            _ => self.derived_status(update.status),
        }
        Ok(())
    }

    /// The run status of an A2A status from another agent. The status message is the reason of
    /// a failure, rejection or cancelation, and otherwise a message of the conversation.
    fn derived_status(&mut self, status: wire::TaskStatus) {
        let (run_status, code) = match status.state {
            TaskState::Unspecified => return,
            TaskState::Submitted => (RunStatus::Created, None),
            TaskState::Working => (RunStatus::InProgress, None),
            TaskState::Completed => (RunStatus::Completed, None),
            TaskState::InputRequired => (RunStatus::Awaiting(Awaiting::Input), None),
            TaskState::AuthRequired => (RunStatus::Awaiting(Awaiting::Input), None),
            TaskState::Failed => (RunStatus::Failed, Some("failed")),
            TaskState::Canceled => (RunStatus::Canceled, Some("canceled")),
            TaskState::Rejected => (RunStatus::Rejected, Some("rejected")),
        };
        let mut error = None;
        match (status.message, code) {
            (Some(message), Some(code)) => {
                let text: Vec<String> = message
                    .parts
                    .into_iter()
                    .filter_map(|part| part.text)
                    .collect();
                error = Some(ErrorInfo::new(code, text.join("\n")));
            }
            (Some(message), None) => {
                if !self.used_ids.contains(&message.message_id) {
                    self.close_message();
                    let start = MessageStart::new(
                        self.unique_id(message.message_id),
                        message.role.canonical(),
                    );
                    self.open_message(String::new(), start);
                    self.parts(message.parts);
                    self.close_message();
                }
            }
            (None, Some("failed")) => error = Some(ErrorInfo::new("failed", "the task failed")),
            (None, _) => {}
        }
        let run_status = if status.state == TaskState::InputRequired {
            self.close_message();
            RunStatus::Awaiting(self.awaiting.unwrap_or(Awaiting::Input))
        } else {
            run_status
        };
        self.run_status(run_status, error, None);
    }

    fn run_status(&mut self, status: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) {
        if status.is_terminal() || matches!(status, RunStatus::Awaiting(_)) {
            self.close_message();
            self.close_nested(None);
        }
        self.ended = status.is_terminal();
        self.out.emit(EventKind::RunStatus {
            status,
            error,
            usage,
        });
    }

    /// Reads an artifact (or a chunk of one) into the message of the same id.
    fn artifact(
        &mut self,
        artifact: wire::Artifact,
        last_chunk: bool,
    ) -> Result<(), serde_json::Error> {
        let fields = match ours(artifact.metadata.as_ref()) {
            Some(fields) => ArtifactFields::deserialize(fields)?,
            None => ArtifactFields::default(),
        };
        let nested = fields
            .namespace
            .as_ref()
            .is_some_and(|namespace| !namespace.is_root())
            || self
                .nested
                .iter()
                .any(|nested| nested.open.artifact_id == artifact.artifact_id);
        if nested {
            self.nested_artifact(artifact, fields, last_chunk);
            return Ok(());
        }
        if self
            .open
            .as_ref()
            .is_none_or(|open| open.artifact_id != artifact.artifact_id)
        {
            self.close_message();
            let start = MessageStart {
                created_at: fields.created_at,
                ..MessageStart::new(
                    self.unique_id(artifact.artifact_id.clone()),
                    fields.role.unwrap_or(Role::Assistant),
                )
            };
            self.open_message(artifact.artifact_id, start);
        }
        self.parts(artifact.parts);
        if let (Some(metadata), Some(open)) = (fields.metadata, &mut self.open) {
            *open.builder.metadata_mut() = metadata;
        }
        if last_chunk {
            self.close_message();
        }
        Ok(())
    }

    /// A chunk of a sub-agent's artifact: a message of its run, whose id is the artifact's
    /// without the run's prefix.
    fn nested_artifact(
        &mut self,
        artifact: wire::Artifact,
        fields: ArtifactFields,
        last_chunk: bool,
    ) {
        let at = match self
            .nested
            .iter()
            .position(|nested| nested.open.artifact_id == artifact.artifact_id)
        {
            Some(at) => at,
            None => {
                let namespace = fields.namespace.clone().unwrap_or_default();
                let prefix = format!(
                    "{}:",
                    namespace.run().map(|id| id.as_str()).unwrap_or_default()
                );
                let id = artifact
                    .artifact_id
                    .strip_prefix(&prefix)
                    .unwrap_or(&artifact.artifact_id)
                    .to_owned();
                let start = MessageStart {
                    created_at: fields.created_at,
                    ..MessageStart::new(id, fields.role.unwrap_or(Role::Assistant))
                };
                let mut scratch = Emitter::default();
                let builder = MessageBuilder::start(&mut scratch, start);
                self.nested.push(NestedMessage {
                    namespace,
                    open: OpenMessage {
                        artifact_id: artifact.artifact_id,
                        builder,
                        open_text: None,
                    },
                    scratch,
                });
                self.nested.len() - 1
            }
        };
        let nested = &mut self.nested[at];
        add_parts(&mut nested.open, &mut nested.scratch, artifact.parts);
        if let Some(metadata) = fields.metadata {
            *nested.open.builder.metadata_mut() = metadata;
        }
        if last_chunk {
            let nested = self.nested.remove(at);
            self.finish_nested(nested);
        } else {
            let namespace = nested.namespace.clone();
            for event in nested.scratch.drain() {
                self.out.emit_in(namespace.clone(), event.kind);
            }
        }
    }

    /// Ends the sub-agents' messages still being read: those of the run at `namespace`, or all.
    fn close_nested(&mut self, namespace: Option<&Namespace>) {
        let (closing, open): (Vec<NestedMessage>, Vec<NestedMessage>) =
            std::mem::take(&mut self.nested)
                .into_iter()
                .partition(|nested| {
                    namespace.is_none_or(|namespace| nested.namespace == *namespace)
                });
        self.nested = open;
        for nested in closing {
            self.finish_nested(nested);
        }
    }

    fn finish_nested(&mut self, mut nested: NestedMessage) {
        nested.open.builder.finish(&mut nested.scratch);
        for event in nested.scratch.drain() {
            self.out.emit_in(nested.namespace.clone(), event.kind);
        }
    }

    fn open_message(&mut self, artifact_id: String, start: MessageStart) {
        let builder = MessageBuilder::start(&mut self.out, start);
        self.open = Some(OpenMessage {
            artifact_id,
            builder,
            open_text: None,
        });
    }

    /// Adds A2A parts to the open message.
    fn parts(&mut self, parts: Vec<A2aPart>) {
        if let Some(open) = &mut self.open {
            add_parts(open, &mut self.out, parts);
        }
    }

    fn close_message(&mut self) {
        if let Some(open) = self.open.take() {
            self.awaiting = Some(awaits(&open.builder.message().parts));
            open.builder.finish(&mut self.out);
        }
    }

    /// `id`, or `id-2`, `id-3`, … when it was used already (an artifact appended to after its
    /// message ended).
    fn unique_id(&mut self, id: String) -> String {
        let mut unique = id.clone();
        let mut n = 1;
        while self.used_ids.contains(&unique) {
            n += 1;
            unique = format!("{id}-{n}");
        }
        self.used_ids.insert(unique.clone());
        unique
    }
}

/// Adds A2A parts to a message: text continues the text part before it when it is of the same
/// kind and not marked as a new part.
fn add_parts(open: &mut OpenMessage, out: &mut Emitter, parts: Vec<A2aPart>) {
    for part in parts {
        let new_part = part.starts_new_part();
        let Some(chunk) = part.into_chunk() else {
            continue; // content of a newer version
        };
        let builder = &mut open.builder;
        match chunk {
            Chunk::Streamed(kind, text) => {
                let continues = open.open_text.as_ref() == Some(&kind) && !new_part;
                if !continues {
                    builder.close_text(out);
                }
                if text.is_empty() {
                    if !continues {
                        builder.part(out, empty_text(&kind));
                        open.open_text = None;
                    }
                    continue;
                }
                match kind {
                    StreamedPart::Reasoning => builder.reasoning_delta(out, &text),
                    StreamedPart::Refusal => builder.refusal_delta(out, &text),
                    _ => builder.text_delta(out, &text),
                }
                open.open_text = Some(kind);
            }
            Chunk::Whole(part) => {
                builder.part(out, part);
                open.open_text = None;
            }
        }
    }
}

/// `metadata.agentwire`, when present.
fn ours(metadata: Option<&Map<String, Value>>) -> Option<&Value> {
    metadata?.get(NAMESPACE)
}

fn message_metadata(metadata: Option<Map<String, Value>>) -> Result<Metadata, serde_json::Error> {
    metadata.map_or(Ok(Metadata::default()), |metadata| {
        Metadata::deserialize(Value::Object(metadata))
    })
}

fn empty_text(kind: &StreamedPart) -> Part {
    match kind {
        StreamedPart::Reasoning => Part::Reasoning(ReasoningPart::default()),
        StreamedPart::Refusal => Part::Refusal(RefusalPart::default()),
        _ => Part::text(""),
    }
}

/// What a turn that ended with these parts waits for: an approval it asked for, else the
/// output of a tool call it made that has no result, else the user's input.
fn awaits(parts: &[Part]) -> Awaiting {
    if parts
        .iter()
        .any(|part| matches!(part, Part::ApprovalRequest(_)))
    {
        return Awaiting::Approval;
    }
    let unanswered = parts.iter().any(|part| {
        let Part::ToolCall(call) = part else {
            return false;
        };
        !parts.iter().any(|answer| match answer {
            Part::ToolResult(result) => result.tool_call_id == call.tool_call_id,
            Part::ToolError(error) => error.tool_call_id == call.tool_call_id,
            _ => false,
        })
    });
    if unanswered {
        Awaiting::FunctionOutput
    } else {
        Awaiting::Input
    }
}

/// The snake_case name of a JSON-RPC error code of A2A 1.0 (spec §5.4) or JSON-RPC itself.
fn rpc_error_code(code: i64) -> String {
    let name = match code {
        -32001 => "task_not_found",
        -32002 => "task_not_cancelable",
        -32003 => "push_notification_not_supported",
        -32004 => "unsupported_operation",
        -32005 => "content_type_not_supported",
        -32006 => "invalid_agent_response",
        -32007 => "extended_agent_card_not_configured",
        -32008 => "extension_support_required",
        -32009 => "version_not_supported",
        -32700 => "parse_error",
        -32600 => "invalid_request",
        -32601 => "method_not_found",
        -32602 => "invalid_params",
        -32603 => "internal_error",
        _ => return format!("jsonrpc_error_{code}"),
    };
    name.to_owned()
}
