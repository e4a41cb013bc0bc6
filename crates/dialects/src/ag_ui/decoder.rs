//! [`AgUiDecoder`]: AG-UI 1.0 SSE frames → canonical events.

use std::collections::HashMap;

use agentwire_core::ids::ApprovalId;
use agentwire_core::part::{
    ApprovalRequest, Artifact, DataPart, PlanUpdate, ReasoningPart, RefusalPart, StepStart,
    TextPart,
};
use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, InputOutcome, Message, MessageId, Metadata, Namespace,
    Part, Role, RunId, RunStatus, StreamedPart, ToolArgs, ToolCall, ToolError, ToolErrorKind,
    ToolResult, Usage,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{
    ACTIVITY_ARTIFACT, ACTIVITY_PLAN, CUSTOM_ERROR, CUSTOM_INPUT, CUSTOM_PART, NAMESPACE, Outcome,
    PatchOp, SUBAGENT_RUN_ID, SubagentOutcome, TokenUsage, WireEvent, result_of, sum_usage,
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
/// one run. A subagent (`SUBAGENT_STARTED`, and every event carrying its `subagentRunId`) is a
/// sub-agent's run nested under its namespace, its AG-UI messages one message of its own,
/// complete when `SUBAGENT_FINISHED` or `SUBAGENT_ERROR` ends it. `*_CHUNK` events are expanded
/// as the client expands them. The mapping and what is lost are in the [module docs](super).
#[derive(Debug, Default)]
pub struct AgUiDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    seq: u64,
    thread_id: Option<String>,
    /// The run's own messages and calls.
    own: RunDecode,
    /// The subagents, in the order they started.
    subagents: Vec<SubagentDecode>,
    /// Approval requests already in a message (from `CUSTOM`), so an interrupt does not repeat
    /// them.
    approvals: Vec<ApprovalId>,
    /// Activity messages by AG-UI message id: their content as the client holds it.
    activities: HashMap<String, Map<String, Value>>,
    /// The part a `*_CHUNK` event opened (and the subagent it is of), which the next event of
    /// another kind closes.
    chunk: Option<(Chunk, Option<String>)>,
    /// The run has ended (`RUN_FINISHED` or `RUN_ERROR`): a stream carries one run, so any
    /// further event is out of place.
    ended: bool,
}

/// One run being read: the run's own or a subagent's.
#[derive(Debug, Default)]
struct RunDecode {
    namespace: Namespace,
    run_id: Option<RunId>,
    /// `<subagentRunId>:`, which a subagent's AG-UI ids may start with (agentwire's do).
    prefix: Option<String>,
    message: Option<MessageBuild>,
    /// The run's tool calls by AG-UI id: (name, answered). A call left unanswered makes the run
    /// wait for the client, as the client itself concludes.
    calls: HashMap<String, (String, bool)>,
}

#[derive(Debug)]
struct SubagentDecode {
    id: String,
    run: RunDecode,
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
    /// Streaming tool calls, by AG-UI tool call id.
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

impl Chunk {
    /// The id of the message or call it streams.
    fn id(&self) -> &str {
        match self {
            Chunk::Text(id) | Chunk::Reasoning(id) | Chunk::ToolCall(id) => id,
        }
    }
}

/// Where a run's events go: numbered on from the stream's last.
struct Sink<'a> {
    seq: &'a mut u64,
    out: &'a mut Vec<Event>,
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
    /// How a subagent's run ended (`SUBAGENT_ERROR`), or what it waits for (`SUBAGENT_FINISHED`
    /// suspended).
    status: Option<String>,
    awaiting: Option<Awaiting>,
    usage: Option<TokenUsage>,
}

/// The value of a `CUSTOM` `agentwire.part` event.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CustomPart {
    message_id: Option<MessageId>,
    part: Part,
}

/// An event's attribution: the subagent run it belongs to.
#[derive(Deserialize)]
struct Attribution {
    #[serde(default, rename = "subagentRunId")]
    subagent_run_id: Option<String>,
}

impl StreamDecoder for AgUiDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let mut frames = std::mem::take(&mut self.frames);
        let result = frames.drain(..).try_for_each(|frame| {
            self.n_frames += 1;
            let invalid = |source| DecodeError::InvalidFrame {
                frame: self.n_frames,
                source,
            };
            let event: In = serde_json::from_str(&frame.data).map_err(invalid)?;
            // Only a frame that names a subagent is read twice.
            let tag = match frame.data.contains(SUBAGENT_RUN_ID) {
                true => {
                    let attribution: Attribution =
                        serde_json::from_str(&frame.data).map_err(invalid)?;
                    attribution.subagent_run_id
                }
                false => None,
            };
            self.event(event, tag, out)
        });
        self.frames = frames;
        result
    }

    fn finish(&mut self, _out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()
    }
}

impl AgUiDecoder {
    fn invalid(&self, why: String) -> DecodeError {
        DecodeError::InvalidFrame {
            frame: self.n_frames,
            source: serde::de::Error::custom(why),
        }
    }

    fn sink<'a>(seq: &'a mut u64, out: &'a mut Vec<Event>) -> Sink<'a> {
        Sink { seq, out }
    }

    fn event(
        &mut self,
        event: In,
        tag: Option<String>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
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
        self.apply(event, tag, out)
    }

    /// The run an event tagged `tag` belongs to, and the sink its events go to: the run's own
    /// for no tag, else that subagent's, started now (from its id alone) if it never was.
    fn run(
        &mut self,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<&mut RunDecode, DecodeError> {
        let Some(tag) = tag else {
            return Ok(&mut self.own);
        };
        let at = match self.subagents.iter().position(|s| s.id == tag) {
            Some(at) => at,
            None => {
                self.start_subagent(tag.to_owned(), None, None, None, out);
                self.subagents.len() - 1
            }
        };
        if self.subagents[at].ended {
            return Err(self.invalid(format!("an event of subagent {tag} after it ended")));
        }
        Ok(&mut self.subagents[at].run)
    }

    /// Emits a subagent's `run_created` and `run_status in_progress`, under its parent.
    fn start_subagent(
        &mut self,
        id: String,
        name: Option<String>,
        parent: Option<&str>,
        parent_tool_call_id: Option<String>,
        out: &mut Vec<Event>,
    ) {
        let parent_run = parent.and_then(|parent| self.subagents.iter().find(|s| s.id == parent));
        let (parent_namespace, parent_run_id, parent_call) = match parent_run {
            Some(parent) => (
                parent.run.namespace.clone(),
                parent.run.run_id.clone(),
                parent_tool_call_id.map(|call| parent.run.local(&call)),
            ),
            None => (
                Namespace::ROOT,
                self.own.run_id.clone(),
                parent_tool_call_id,
            ),
        };
        let run_id = RunId::from(id.as_str());
        let namespace = Namespace::new(
            parent_namespace
                .path()
                .iter()
                .cloned()
                .chain(std::iter::once(run_id.clone())),
        );
        let mut sink = Self::sink(&mut self.seq, out);
        sink.emit(
            &namespace,
            EventKind::RunCreated {
                run_id: run_id.clone(),
                session_id: self.thread_id.clone().map(Into::into),
                agent: name,
                parent_run_id,
                parent_tool_call_id: parent_call.map(Into::into),
            },
        );
        sink.emit(&namespace, status(RunStatus::InProgress, None, None));
        self.subagents.push(SubagentDecode {
            id: id.clone(),
            run: RunDecode {
                namespace,
                run_id: Some(run_id),
                prefix: Some(format!("{id}:")),
                ..RunDecode::default()
            },
            ended: false,
        });
    }

    /// Applies one event; a chunk's expansion comes back here without closing the chunk.
    fn apply(
        &mut self,
        event: In,
        tag: Option<String>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let tag = tag.as_deref();
        match event {
            In::RunStarted {
                thread_id, run_id, ..
            } => {
                let run_id = RunId::from(run_id);
                self.own.run_id = Some(run_id.clone());
                self.thread_id = Some(thread_id.clone());
                let mut sink = Self::sink(&mut self.seq, out);
                sink.emit(
                    &Namespace::ROOT,
                    EventKind::RunCreated {
                        run_id,
                        session_id: Some(thread_id.into()),
                        agent: None,
                        parent_run_id: None,
                        parent_tool_call_id: None,
                    },
                );
                sink.emit(&Namespace::ROOT, status(RunStatus::InProgress, None, None));
            }
            In::RunFinished { outcome, usage, .. } => {
                let status = self.finished_status(outcome, out)?;
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
            In::SubagentStarted {
                subagent_run_id,
                name,
                parent_subagent_run_id,
                parent_tool_call_id,
                ..
            } => {
                if self.subagents.iter().any(|s| s.id == subagent_run_id) {
                    return Err(self.invalid(format!("subagent {subagent_run_id} started twice")));
                }
                self.start_subagent(
                    subagent_run_id,
                    Some(name),
                    parent_subagent_run_id.as_deref(),
                    parent_tool_call_id,
                    out,
                );
            }
            In::SubagentFinished {
                subagent_run_id,
                result: _,
                outcome,
                metadata,
            } => self.subagent_finished(subagent_run_id, outcome, metadata, out)?,
            In::SubagentError {
                subagent_run_id,
                message,
                code,
                metadata,
            } => self.subagent_error(subagent_run_id, message, code, metadata, out)?,
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
                self.whole_part(
                    tag,
                    ours.message_id.as_ref().map(MessageId::as_str),
                    part,
                    out,
                )?;
            }
            In::TextMessageStart {
                message_id,
                role,
                metadata,
            } => self.text_start(message_id, role, metadata, tag, out)?,
            In::TextMessageContent { message_id, delta } => {
                self.text_content(message_id, delta, tag, out)?
            }
            In::TextMessageEnd { message_id } => self.text_end(message_id, tag, out)?,
            In::ReasoningMessageStart { message_id, .. } => {
                self.reasoning_start(message_id, tag, out)?
            }
            In::ReasoningMessageContent { message_id, delta } => {
                self.reasoning_content(message_id, delta, tag, out)?
            }
            In::ReasoningMessageEnd { message_id } => self.reasoning_end(message_id, tag, out)?,
            In::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => self.tool_call_start(tool_call_id, tool_call_name, parent_message_id, tag, out)?,
            In::ToolCallArgs {
                tool_call_id,
                delta,
            } => self.tool_call_args(tool_call_id, delta, tag, out)?,
            In::ToolCallEnd { tool_call_id } => self.tool_call_end(tool_call_id, tag, out)?,
            In::ToolCallResult {
                message_id,
                tool_call_id,
                content,
                metadata,
            } => self.tool_call_result(message_id, tool_call_id, content, metadata, tag, out)?,
            // A snapshot that does not replace leaves a known activity as it is.
            In::ActivitySnapshot {
                message_id,
                replace: Some(false),
                ..
            } if self.activities.contains_key(&message_id) => {}
            In::ActivitySnapshot {
                message_id,
                activity_type,
                content,
                metadata,
                ..
            } => self.activity_snapshot(message_id, activity_type, content, metadata, tag, out)?,
            In::ActivityDelta {
                message_id,
                activity_type,
                patch,
                metadata,
            } => self.activity_delta(message_id, activity_type, patch, metadata, tag, out)?,
            In::StateSnapshot { snapshot } => {
                // The thread's state is one, whichever run changed it.
                Self::sink(&mut self.seq, out).emit(
                    &Namespace::ROOT,
                    EventKind::StateSnapshot { state: snapshot },
                );
            }
            In::StateDelta { delta } => {
                let patch =
                    serde_json::from_value(delta).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                Self::sink(&mut self.seq, out)
                    .emit(&Namespace::ROOT, EventKind::StateDelta { patch });
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
                let message_id = custom.message_id.as_ref().map(MessageId::as_str);
                self.whole_part(tag, message_id, custom.part, out)?;
            }
            In::Custom { name, value } if name == CUSTOM_INPUT => {
                let outcome: InputOutcome =
                    serde_json::from_value(value).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                let namespace = self.run(tag, out)?.namespace.clone();
                Self::sink(&mut self.seq, out).emit(&namespace, EventKind::Input(outcome));
            }
            In::Custom { name, value } if name == CUSTOM_ERROR => {
                let error: ErrorInfo =
                    serde_json::from_value(value).map_err(|source| DecodeError::InvalidFrame {
                        frame: self.n_frames,
                        source,
                    })?;
                let namespace = self.run(tag, out)?.namespace.clone();
                Self::sink(&mut self.seq, out).emit(&namespace, EventKind::Error(error));
            }
            In::TextMessageChunk {
                message_id,
                role,
                delta,
            } => self.text_chunk(message_id, role, delta, tag, out)?,
            In::ReasoningMessageChunk { message_id, delta } => {
                self.reasoning_chunk(message_id, delta, tag, out)?
            }
            In::ToolCallChunk {
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
            } => self.tool_call_chunk(
                tool_call_id,
                tool_call_name,
                parent_message_id,
                delta,
                tag,
                out,
            )?,
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

    /// `SUBAGENT_FINISHED`: the sub-agent's run ends, or waits (`suspended`).
    fn subagent_finished(
        &mut self,
        subagent_run_id: String,
        outcome: Option<SubagentOutcome<String>>,
        metadata: Option<Value>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let ours = ours(metadata.as_ref());
        let at = self.open_subagent(&subagent_run_id)?;
        let status = match outcome {
            Some(SubagentOutcome::Suspended { .. }) => {
                let waits = ours
                    .awaiting
                    .unwrap_or_else(|| self.subagents[at].run.waits_for());
                RunStatus::Awaiting(waits)
            }
            Some(SubagentOutcome::Success) | None => RunStatus::Completed,
        };
        self.end_subagent(
            at,
            status,
            None,
            ours.usage.map(|usage| sum_usage(&[usage])),
            out,
        );
        Ok(())
    }

    /// `SUBAGENT_ERROR`: the sub-agent's run ends as its `metadata` says, else failed.
    fn subagent_error(
        &mut self,
        subagent_run_id: String,
        message: String,
        code: Option<String>,
        metadata: Option<Value>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let ours = ours(metadata.as_ref());
        let at = self.open_subagent(&subagent_run_id)?;
        let status = match ours.status.as_deref() {
            Some("canceled") => RunStatus::Canceled,
            Some("incomplete") => RunStatus::Incomplete,
            Some("rejected") => RunStatus::Rejected,
            _ => RunStatus::Failed,
        };
        let error = ErrorInfo::new(code.unwrap_or_else(|| "subagent_error".into()), message);
        self.end_subagent(
            at,
            status,
            Some(error),
            ours.usage.map(|usage| sum_usage(&[usage])),
            out,
        );
        Ok(())
    }

    /// `TEXT_MESSAGE_START`: a text (or refusal) part opens in the run's message.
    fn text_start(
        &mut self,
        message_id: String,
        role: Option<String>,
        metadata: Option<Value>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
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
        let run = self.run(tag, out)?;
        if run
            .message
            .as_ref()
            .is_some_and(|m| m.texts.contains_key(&message_id))
        {
            return Err(self.invalid(format!("text message {message_id} started twice")));
        }
        let (run, mut sink) = self.split(tag, out);
        let index = run.start_part(Some(&message_id), role, kind, &mut sink);
        let open = OpenText {
            index,
            text: String::new(),
            refusal,
        };
        run.building().texts.insert(message_id, open);
        Ok(())
    }

    /// `TEXT_MESSAGE_CONTENT`: a delta of an open text part.
    fn text_content(
        &mut self,
        message_id: String,
        delta: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.texts.get_mut(&message_id))
        else {
            return Err(self.not_open("text message", &message_id));
        };
        open.text.push_str(&delta);
        let index = open.index;
        let (run, mut sink) = self.split(tag, out);
        run.delta(index, delta, &mut sink);
        Ok(())
    }

    /// `TEXT_MESSAGE_END`: the text part completes.
    fn text_end(
        &mut self,
        message_id: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.texts.remove(&message_id))
        else {
            return Err(self.not_open("text message", &message_id));
        };
        let (run, mut sink) = self.split(tag, out);
        run.complete_part(open.index, text_part(open), &mut sink);
        Ok(())
    }

    /// `REASONING_MESSAGE_START`: a reasoning part opens.
    fn reasoning_start(
        &mut self,
        message_id: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        if run
            .message
            .as_ref()
            .is_some_and(|m| m.reasonings.contains_key(&message_id))
        {
            return Err(self.invalid(format!("reasoning {message_id} started twice")));
        }
        let (run, mut sink) = self.split(tag, out);
        let index = run.start_part(
            Some(&message_id),
            Role::Assistant,
            StreamedPart::Reasoning,
            &mut sink,
        );
        let open = OpenText {
            index,
            text: String::new(),
            refusal: false,
        };
        run.building().reasonings.insert(message_id, open);
        Ok(())
    }

    /// `REASONING_MESSAGE_CONTENT`: a delta of an open reasoning part.
    fn reasoning_content(
        &mut self,
        message_id: String,
        delta: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.reasonings.get_mut(&message_id))
        else {
            return Err(self.not_open("reasoning message", &message_id));
        };
        open.text.push_str(&delta);
        let index = open.index;
        let (run, mut sink) = self.split(tag, out);
        run.delta(index, delta, &mut sink);
        Ok(())
    }

    /// `REASONING_MESSAGE_END`: the reasoning part completes.
    fn reasoning_end(
        &mut self,
        message_id: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.reasonings.remove(&message_id))
        else {
            return Err(self.not_open("reasoning message", &message_id));
        };
        let part = Part::Reasoning(ReasoningPart { text: open.text });
        let (run, mut sink) = self.split(tag, out);
        run.complete_part(open.index, part, &mut sink);
        Ok(())
    }

    /// `TOOL_CALL_START`: a tool call opens, in the message its `parentMessageId` names.
    fn tool_call_start(
        &mut self,
        tool_call_id: String,
        tool_call_name: String,
        parent_message_id: Option<String>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        if run
            .message
            .as_ref()
            .is_some_and(|m| m.calls.contains_key(&tool_call_id))
        {
            return Err(self.invalid(format!("tool call {tool_call_id} started twice")));
        }
        let kind = StreamedPart::ToolCall {
            tool_call_id: run.local(&tool_call_id).into(),
            tool_name: tool_call_name.clone(),
        };
        let owner = parent_message_id
            .as_deref()
            .unwrap_or(&tool_call_id)
            .to_owned();
        let (run, mut sink) = self.split(tag, out);
        let index = run.start_part(Some(&owner), Role::Assistant, kind, &mut sink);
        run.calls
            .insert(tool_call_id.clone(), (tool_call_name.clone(), false));
        let open = OpenCall {
            index,
            name: tool_call_name,
            args: String::new(),
        };
        run.building().calls.insert(tool_call_id, open);
        Ok(())
    }

    /// `TOOL_CALL_ARGS`: argument text of an open call.
    fn tool_call_args(
        &mut self,
        tool_call_id: String,
        delta: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.calls.get_mut(&tool_call_id))
        else {
            return Err(self.not_open("tool call", &tool_call_id));
        };
        open.args.push_str(&delta);
        let index = open.index;
        let (run, mut sink) = self.split(tag, out);
        run.delta(index, delta, &mut sink);
        Ok(())
    }

    /// `TOOL_CALL_END`: the call completes, its arguments parsed.
    fn tool_call_end(
        &mut self,
        tool_call_id: String,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let run = self.run(tag, out)?;
        let Some(open) = run
            .message
            .as_mut()
            .and_then(|m| m.calls.remove(&tool_call_id))
        else {
            return Err(self.not_open("tool call", &tool_call_id));
        };
        let (index, part) = run.call_part(&tool_call_id, open);
        let (run, mut sink) = self.split(tag, out);
        run.complete_part(index, part, &mut sink);
        Ok(())
    }

    /// `TOOL_CALL_RESULT`: a result, or an error when `metadata` says so.
    fn tool_call_result(
        &mut self,
        message_id: String,
        tool_call_id: String,
        content: Value,
        metadata: Option<Value>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let ours = ours(metadata.as_ref());
        let run = self.run(tag, out)?;
        let called = run.calls.get_mut(&tool_call_id).map(|(name, answered)| {
            *answered = true;
            name.clone()
        });
        let tool_name = ours.tool_name.or(called);
        let tool_call_id = run.local(&tool_call_id);
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
        self.whole_part(tag, Some(&message_id), part, out)?;
        Ok(())
    }

    /// `ACTIVITY_SNAPSHOT`: a plan, an artifact or another activity, whole.
    fn activity_snapshot(
        &mut self,
        message_id: String,
        activity_type: String,
        content: Value,
        metadata: Option<Value>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let content = match content {
            Value::Object(content) => content,
            other => Map::from_iter([("value".to_owned(), other)]),
        };
        let part = activity_part(&activity_type, &content);
        self.activities.insert(message_id, content);
        let message_id = ours(metadata.as_ref()).message_id;
        self.whole_part(tag, message_id.as_ref().map(MessageId::as_str), part, out)?;
        Ok(())
    }

    /// `ACTIVITY_DELTA`: a change of a known activity, applied to what it held.
    fn activity_delta(
        &mut self,
        message_id: String,
        activity_type: String,
        patch: Vec<PatchOp<String>>,
        metadata: Option<Value>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let Some(content) = self.activities.get_mut(&message_id) else {
            return Ok(());
        };
        apply_patch(content, patch);
        let part = activity_part(&activity_type, content);
        let message_id = ours(metadata.as_ref()).message_id;
        self.whole_part(tag, message_id.as_ref().map(MessageId::as_str), part, out)?;
        Ok(())
    }

    /// `TEXT_MESSAGE_CHUNK`: opens a text message (closing another chunk's) unless it
    /// continues the open one, then adds its delta.
    fn text_chunk(
        &mut self,
        message_id: Option<String>,
        role: Option<String>,
        delta: Option<String>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let text = |chunk: &Chunk| matches!(chunk, Chunk::Text(_));
        let id = match self.continued(text, message_id.as_deref()) {
            Some(id) => id,
            None => {
                let opened = message_id.map(|id| {
                    let start = In::TextMessageStart {
                        message_id: id.clone(),
                        role,
                        metadata: None,
                    };
                    (Chunk::Text(id), start)
                });
                let missing = "the first TEXT_MESSAGE_CHUNK has no messageId";
                self.open_chunk(opened, missing, tag, out)?
            }
        };
        if let Some(delta) = delta {
            let content = In::TextMessageContent {
                message_id: id,
                delta,
            };
            self.apply(content, self.chunk_tag(), out)?;
        }
        Ok(())
    }

    /// `REASONING_MESSAGE_CHUNK`: as [`Self::text_chunk`], for reasoning.
    fn reasoning_chunk(
        &mut self,
        message_id: Option<String>,
        delta: Option<String>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let reasoning = |chunk: &Chunk| matches!(chunk, Chunk::Reasoning(_));
        let id = match self.continued(reasoning, message_id.as_deref()) {
            Some(id) => id,
            None => {
                let opened = message_id.map(|id| {
                    let start = In::ReasoningMessageStart {
                        message_id: id.clone(),
                        role: "reasoning".into(),
                    };
                    (Chunk::Reasoning(id), start)
                });
                let missing = "the first REASONING_MESSAGE_CHUNK has no messageId";
                self.open_chunk(opened, missing, tag, out)?
            }
        };
        if let Some(delta) = delta {
            let content = In::ReasoningMessageContent {
                message_id: id,
                delta,
            };
            self.apply(content, self.chunk_tag(), out)?;
        }
        Ok(())
    }

    /// `TOOL_CALL_CHUNK`: as [`Self::text_chunk`], for a tool call.
    fn tool_call_chunk(
        &mut self,
        tool_call_id: Option<String>,
        tool_call_name: Option<String>,
        parent_message_id: Option<String>,
        delta: Option<String>,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        let call = |chunk: &Chunk| matches!(chunk, Chunk::ToolCall(_));
        let id = match self.continued(call, tool_call_id.as_deref()) {
            Some(id) => id,
            None => {
                let opened = match (tool_call_id, tool_call_name) {
                    (Some(id), Some(name)) => {
                        let start = In::ToolCallStart {
                            tool_call_id: id.clone(),
                            tool_call_name: name,
                            parent_message_id,
                        };
                        Some((Chunk::ToolCall(id), start))
                    }
                    _ => None,
                };
                let missing = "the first TOOL_CALL_CHUNK needs toolCallId and toolCallName";
                self.open_chunk(opened, missing, tag, out)?
            }
        };
        if let Some(delta) = delta {
            let args = In::ToolCallArgs {
                tool_call_id: id,
                delta,
            };
            self.apply(args, self.chunk_tag(), out)?;
        }
        Ok(())
    }

    /// The id of the open chunk, when it is of the kind `same` accepts and `given` names it or
    /// names nothing: the chunk continues it.
    fn continued(&self, same: fn(&Chunk) -> bool, given: Option<&str>) -> Option<String> {
        let (chunk, _) = self.chunk.as_ref()?;
        let id = chunk.id();
        (same(chunk) && given.is_none_or(|given| given == id)).then(|| id.to_owned())
    }

    /// Closes the open chunk and opens `opened` with its start event, returning its id;
    /// `None` (the chunk lacks what a start needs) is refused with `missing`.
    fn open_chunk(
        &mut self,
        opened: Option<(Chunk, In)>,
        missing: &str,
        tag: Option<&str>,
        out: &mut Vec<Event>,
    ) -> Result<String, DecodeError> {
        self.close_chunk(out)?;
        let Some((chunk, start)) = opened else {
            return Err(self.invalid(missing.into()));
        };
        self.apply(start, tag.map(str::to_owned), out)?;
        let id = chunk.id().to_owned();
        self.chunk = Some((chunk, tag.map(str::to_owned)));
        Ok(id)
    }

    fn chunk_tag(&self) -> Option<String> {
        self.chunk.as_ref().and_then(|(_, tag)| tag.clone())
    }

    /// The run `tag` names, which [`Self::run`] has just found or started, and the sink its
    /// events go to.
    fn split<'a>(
        &'a mut self,
        tag: Option<&str>,
        out: &'a mut Vec<Event>,
    ) -> (&'a mut RunDecode, Sink<'a>) {
        let Self {
            seq,
            own,
            subagents,
            ..
        } = self;
        let run = match tag.and_then(|tag| subagents.iter().position(|s| s.id == tag)) {
            Some(at) => &mut subagents[at].run,
            None => own,
        };
        (run, Sink { seq, out })
    }

    /// The subagent `id`, which must be going on.
    fn open_subagent(&self, id: &str) -> Result<usize, DecodeError> {
        match self.subagents.iter().position(|s| s.id == id) {
            Some(at) if !self.subagents[at].ended => Ok(at),
            _ => Err(self.invalid(format!("subagent {id} is not going on"))),
        }
    }

    /// Ends the part a chunk opened, as the client does when another kind of event arrives.
    fn close_chunk(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        match self.chunk.take() {
            None => Ok(()),
            Some((Chunk::Text(message_id), tag)) => {
                self.apply(In::TextMessageEnd { message_id }, tag, out)
            }
            Some((Chunk::Reasoning(message_id), tag)) => {
                self.apply(In::ReasoningMessageEnd { message_id }, tag, out)
            }
            Some((Chunk::ToolCall(tool_call_id), tag)) => {
                self.apply(In::ToolCallEnd { tool_call_id }, tag, out)
            }
        }
    }

    fn not_open(&self, what: &str, id: &str) -> DecodeError {
        self.invalid(format!("{what} {id} is not open"))
    }

    fn whole_part(
        &mut self,
        tag: Option<&str>,
        message_id: Option<&str>,
        part: Part,
        out: &mut Vec<Event>,
    ) -> Result<(), DecodeError> {
        self.run(tag, out)?;
        let (run, mut sink) = self.split(tag, out);
        run.whole_part(message_id, part, &mut sink);
        Ok(())
    }

    /// The status a `RUN_FINISHED` reports, adding the approval requests its interrupts carry
    /// to the run that asked (a subagent's, when the interrupt names one still going).
    fn finished_status(
        &mut self,
        outcome: Option<Outcome<String>>,
        out: &mut Vec<Event>,
    ) -> Result<RunStatus, DecodeError> {
        Ok(match outcome {
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
                    let tag = interrupt.subagent_run_id.as_deref();
                    if tag.is_some_and(|tag| self.open_subagent(tag).is_err()) {
                        continue;
                    }
                    let tool_call_id = self.run(tag, out)?.local(&tool_call_id);
                    let part = Part::ApprovalRequest(ApprovalRequest {
                        approval_id: interrupt.id.into(),
                        tool_call_id: tool_call_id.into(),
                        reason: interrupt.message,
                    });
                    self.whole_part(tag, None, part, out)?;
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
                if self.own.calls.values().any(|(_, answered)| !answered) {
                    RunStatus::Awaiting(Awaiting::FunctionOutput)
                } else {
                    RunStatus::Completed
                }
            }
        })
    }

    /// Ends the subagent at `at`: completes its message, reports its status.
    fn end_subagent(
        &mut self,
        at: usize,
        status: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<Usage>,
        out: &mut Vec<Event>,
    ) {
        let mut sink = Self::sink(&mut self.seq, out);
        let subagent = &mut self.subagents[at];
        subagent.ended = true;
        subagent.run.end(status, error, usage, &mut sink);
    }

    /// Ends the run: every subagent still going (what it waits for, else incomplete), then the
    /// run's own message and status.
    fn end_run(
        &mut self,
        status: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<&[TokenUsage]>,
        out: &mut Vec<Event>,
    ) {
        self.ended = true;
        for at in (0..self.subagents.len()).rev() {
            if !self.subagents[at].ended {
                let waits = self.subagents[at].run.waiting();
                let status = waits.map_or(RunStatus::Incomplete, RunStatus::Awaiting);
                self.end_subagent(at, status, None, None, out);
            }
        }
        self.approvals.clear();
        let mut sink = Self::sink(&mut self.seq, out);
        self.own.end(status, error, usage.map(sum_usage), &mut sink);
    }
}

impl Sink<'_> {
    fn emit(&mut self, namespace: &Namespace, kind: EventKind) {
        *self.seq += 1;
        self.out.push(Event {
            seq: *self.seq,
            namespace: namespace.clone(),
            kind,
        });
    }
}

impl RunDecode {
    /// An AG-UI id of this run's as the run knows it: without its subagent prefix.
    fn local(&self, id: &str) -> String {
        match &self.prefix {
            Some(prefix) => id.strip_prefix(prefix.as_str()).unwrap_or(id).to_owned(),
            None => id.to_owned(),
        }
    }

    /// The message being built, started (`message_start`) if there is none: its id is `id`
    /// (without the subagent prefix), or the run's id with `.message` when the first event
    /// names no message.
    fn ensure_message(&mut self, id: Option<&str>, role: Role, sink: &mut Sink<'_>) {
        if self.message.is_some() {
            return;
        }
        let id: MessageId = match (id, &self.run_id) {
            (Some(id), _) => self.local(id).into(),
            (None, Some(run_id)) => format!("{run_id}.message").into(),
            (None, None) => "message".into(),
        };
        sink.emit(
            &self.namespace,
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
        sink: &mut Sink<'_>,
    ) -> u32 {
        self.ensure_message(message_id, role, sink);
        let message = self.building();
        let index = u32::try_from(message.parts.len()).unwrap_or(u32::MAX);
        message.parts.push(None);
        let message_id = message.id.clone();
        sink.emit(
            &self.namespace,
            EventKind::PartStart {
                message_id,
                index,
                part,
            },
        );
        index
    }

    fn delta(&mut self, index: u32, delta: String, sink: &mut Sink<'_>) {
        if delta.is_empty() {
            return;
        }
        let message_id = self.building().id.clone();
        sink.emit(
            &self.namespace,
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            },
        );
    }

    fn complete_part(&mut self, index: u32, part: Part, sink: &mut Sink<'_>) {
        let message = self.building();
        if let Some(slot) = message.parts.get_mut(index as usize) {
            *slot = Some(part.clone());
        }
        let message_id = message.id.clone();
        sink.emit(
            &self.namespace,
            EventKind::PartComplete {
                message_id,
                index,
                part,
            },
        );
    }

    fn whole_part(&mut self, message_id: Option<&str>, part: Part, sink: &mut Sink<'_>) {
        self.ensure_message(message_id, Role::Assistant, sink);
        let message = self.building();
        let index = u32::try_from(message.parts.len()).unwrap_or(u32::MAX);
        message.parts.push(None);
        self.complete_part(index, part, sink);
    }

    fn call_part(&self, tool_call_id: &str, call: OpenCall) -> (u32, Part) {
        let part = Part::ToolCall(ToolCall {
            tool_call_id: self.local(tool_call_id).into(),
            tool_name: call.name,
            args: ToolArgs::from_json_text(&call.args),
        });
        (call.index, part)
    }

    /// What the run waits for, judging by what it left unanswered: an approval, else a call's
    /// output; `None` when nothing is left.
    fn waiting(&self) -> Option<Awaiting> {
        let parts = self.message.iter().flat_map(|m| m.parts.iter().flatten());
        let mut requested = Vec::new();
        for part in parts {
            match part {
                Part::ApprovalRequest(request) => requested.push(&request.approval_id),
                Part::ApprovalResponse(response) => {
                    requested.retain(|id| **id != response.approval_id);
                }
                _ => {}
            }
        }
        if !requested.is_empty() {
            return Some(Awaiting::Approval);
        }
        self.calls
            .values()
            .any(|(_, answered)| !answered)
            .then_some(Awaiting::FunctionOutput)
    }

    /// What a suspended run waits for, when its end does not say.
    fn waits_for(&self) -> Awaiting {
        self.waiting().unwrap_or(Awaiting::Input)
    }

    /// Completes the message (ending any part still open) and reports the run's status.
    fn end(
        &mut self,
        status: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<Usage>,
        sink: &mut Sink<'_>,
    ) {
        if let Some(message) = &mut self.message {
            let mut open: Vec<(u32, Part)> = Vec::new();
            open.extend(message.texts.drain().map(|(_, t)| (t.index, text_part(t))));
            open.extend(
                message
                    .reasonings
                    .drain()
                    .map(|(_, t)| (t.index, Part::Reasoning(ReasoningPart { text: t.text }))),
            );
            let calls: Vec<(String, OpenCall)> = message.calls.drain().collect();
            for (id, call) in calls {
                open.push(self.call_part(&id, call));
            }
            open.sort_by_key(|(index, _)| *index);
            for (index, part) in open {
                self.complete_part(index, part, sink);
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
            sink.emit(&self.namespace, EventKind::MessageComplete { message });
        }
        self.calls.clear();
        sink.emit(&self.namespace, status_of(status, error, usage));
    }
}

fn status(status: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage,
    }
}

fn status_of(run: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) -> EventKind {
    status(run, error, usage)
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

/// The part an activity message stands for: a plan update or an artifact for ours, else a
/// `data` part named after its `activityType`.
fn activity_part(activity_type: &str, content: &Map<String, Value>) -> Part {
    let content = Value::Object(content.clone());
    let ours = match activity_type {
        ACTIVITY_PLAN => serde_json::from_value::<PlanUpdate>(content.clone())
            .ok()
            .map(Part::PlanUpdate),
        ACTIVITY_ARTIFACT => serde_json::from_value::<Artifact>(content.clone())
            .ok()
            .map(Part::Artifact),
        _ => None,
    };
    ours.unwrap_or_else(|| {
        Part::Data(DataPart {
            name: activity_type.to_owned(),
            data: content,
        })
    })
}

/// Applies the operations of an `ACTIVITY_DELTA` that touch a top-level key (`add`, `replace`,
/// `remove`); deeper paths and other operations are beyond what agentwire's activities need,
/// and are skipped.
fn apply_patch(content: &mut Map<String, Value>, patch: Vec<PatchOp<String>>) {
    for op in patch {
        let Some(key) = op.path.strip_prefix('/') else {
            continue;
        };
        if key.contains('/') {
            continue;
        }
        let key = key.replace("~1", "/").replace("~0", "~");
        match op.op.as_str() {
            "add" | "replace" => {
                content.insert(key, op.value.unwrap_or(Value::Null));
            }
            "remove" => {
                content.remove(&key);
            }
            _ => {}
        }
    }
}
