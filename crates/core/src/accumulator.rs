//! [`Accumulator`]: the client's reducer. It turns a run's events back into messages, checking
//! as it goes that the stream is well formed.
//!
//! It is strict: a delta without its start, a delta after its part completed, a part out of
//! order, a completion that disagrees with its deltas — each is an [`AccumulateError`] naming
//! what was wrong, and the accumulator is left as it was before the bad event. It never panics.
//!
//! While a tool call streams, its part's `args` is a partial view of the arguments so far
//! (see [`PartialJson`]), kept up to date incrementally: reading it after every delta costs
//! nothing, and no delta causes earlier argument text to be parsed again.
//!
//! A sub-agent's run nested in the stream (an event with a [`Namespace`](crate::Namespace))
//! goes to an accumulator of its own, a child of its parent's ([`Accumulator::children`]), so
//! a run's messages are its own and each child's are the child's. The session's shared state
//! (`state_snapshot`, `state_delta`) is one for the whole tree, kept at the top.

use std::borrow::Cow;
use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::Value;
use thiserror::Error;

use crate::event::{ErrorInfo, Event, EventKind, RunStatus, StreamedPart};
use crate::ids::{MessageId, RunId, ToolCallId};
use crate::message::Message;
use crate::part::{Part, ReasoningPart, RefusalPart, TextPart, ToolArgs, ToolCall};
use crate::partial_json::PartialJson;
use crate::usage::Usage;

/// The state a client builds from one run's events: the messages, and the run's status.
#[derive(Debug, Default)]
pub struct Accumulator {
    messages: Vec<Message>,
    positions: HashMap<MessageId, usize>,
    streams: Vec<MessageStream>,
    last_seq: Option<u64>,
    run_id: Option<RunId>,
    agent: Option<String>,
    parent_tool_call_id: Option<ToolCallId>,
    status: Option<RunStatus>,
    usage: Option<Usage>,
    errors: Vec<ErrorInfo>,
    /// Sub-agents' runs, in the order they were created.
    children: IndexMap<RunId, Accumulator>,
    /// The shared state, at the top of the tree (`Value::Null` before any state event).
    state: Value,
}

/// Whether a part is still streaming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartStatus {
    /// Deltas may still arrive.
    Streaming,
    /// The part is final.
    Complete,
}

/// An event that does not fit the stream so far. The accumulator is unchanged by it.
#[derive(Clone, Debug, PartialEq, Error)]
#[non_exhaustive]
pub enum AccumulateError {
    /// Sequence numbers must grow (a heartbeat may repeat the last one).
    #[error("event {seq} came after event {last}: sequence numbers must grow")]
    SeqNotIncreasing {
        /// The event's number.
        seq: u64,
        /// The number of the event before it.
        last: u64,
    },
    /// Only heartbeats may follow a terminal run status.
    #[error("event {seq} ({event}) came after the run ended as {status}")]
    AfterRunEnded {
        /// The event's number.
        seq: u64,
        /// The event's name.
        event: &'static str,
        /// How the run ended.
        status: &'static str,
    },
    /// A run stream announces its run once.
    #[error("run {run_id} was already created")]
    RunAlreadyCreated {
        /// The run of the second announcement.
        run_id: RunId,
    },
    /// An event of a nested run that was not created (no `run_created` under its namespace
    /// before it), or a `run_created` whose run is not the one its namespace names.
    #[error("no nested run {run_id} was created")]
    UnknownRun {
        /// The run the namespace names.
        run_id: RunId,
    },
    /// A `state_delta` that cannot be applied to the state so far (a path that is not there,
    /// a failed `test`).
    #[error("state_delta {seq} does not apply to the state: {reason}")]
    BadPatch {
        /// The event's number.
        seq: u64,
        /// Why, as the JSON Patch implementation says it.
        reason: String,
    },
    /// A message id may start only once.
    #[error("message {message_id} started twice")]
    DuplicateMessage {
        /// The message.
        message_id: MessageId,
    },
    /// A part event for a message that never started.
    #[error("message {message_id} was not started")]
    UnknownMessage {
        /// The message.
        message_id: MessageId,
    },
    /// A part event for a message that is already complete.
    #[error("message {message_id} is already complete")]
    MessageAlreadyComplete {
        /// The message.
        message_id: MessageId,
    },
    /// A `message_complete` whose message has no id.
    #[error("message_complete carries a message without an id")]
    MessageWithoutId,
    /// Parts start (or arrive whole) at the next free index only.
    #[error("part {index} of message {message_id} is out of order: the next part is {expected}")]
    PartOutOfOrder {
        /// The message.
        message_id: MessageId,
        /// The index the event named.
        index: u32,
        /// The next free index.
        expected: usize,
    },
    /// A delta for a part that never started.
    #[error("delta for part {index} of message {message_id}, which was not started")]
    DeltaWithoutStart {
        /// The message.
        message_id: MessageId,
        /// The part.
        index: u32,
    },
    /// A delta for a part that is complete.
    #[error("delta for part {index} of message {message_id}, which is complete")]
    DeltaAfterComplete {
        /// The message.
        message_id: MessageId,
        /// The part.
        index: u32,
    },
    /// A second completion of a part.
    #[error("part {index} of message {message_id} completed twice")]
    PartAlreadyComplete {
        /// The message.
        message_id: MessageId,
        /// The part.
        index: u32,
    },
    /// A part's completion disagrees with what streamed.
    #[error(
        "completion of part {index} of message {message_id} disagrees with its deltas: {mismatch}"
    )]
    CompletionMismatch {
        /// The message.
        message_id: MessageId,
        /// The part.
        index: u32,
        /// How they differ.
        mismatch: Mismatch,
    },
    /// A message completed while some of its parts still stream.
    #[error("message {message_id} completed while part {index} is still streaming")]
    PartStillStreaming {
        /// The message.
        message_id: MessageId,
        /// The first part still streaming.
        index: usize,
    },
    /// A `message_complete` disagrees with the parts completed before it.
    #[error("message {message_id} disagrees with its streamed parts: {mismatch}")]
    MessageMismatch {
        /// The message.
        message_id: MessageId,
        /// How they differ.
        mismatch: Mismatch,
    },
}

/// How a completion differs from what streamed before it.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// A different kind of part.
    #[error("it is a {found} part, but a {expected} part streamed")]
    PartType {
        /// The type that streamed.
        expected: &'static str,
        /// The type of the completion.
        found: &'static str,
    },
    /// Different text.
    #[error("its text differs from the streamed text")]
    Text,
    /// A tool call with another id or tool name.
    #[error("it names another tool call or tool")]
    ToolCall,
    /// Different tool arguments.
    #[error("its arguments differ from the streamed argument text")]
    Args,
    /// Another role.
    #[error("its role differs from the one it started with")]
    Role,
    /// Another number of parts.
    #[error("it has {found} parts, but {expected} streamed")]
    PartCount {
        /// How many streamed.
        expected: usize,
        /// How many the completion has.
        found: usize,
    },
    /// A part that differs.
    #[error("part {index} differs")]
    Part {
        /// The first differing part.
        index: usize,
    },
}

/// A message whose parts are still arriving.
#[derive(Debug)]
struct MessageStream {
    message_id: MessageId,
    position: usize,
    parts: Vec<Progress>,
    n_streaming: usize,
}

/// Where one part of a streaming message is.
#[derive(Debug)]
enum Progress {
    /// Text, reasoning or a refusal: deltas go straight into the part's text.
    Text,
    /// A tool call: the raw argument text, and the parser keeping the part's `args` current.
    Args(Box<ArgsProgress>),
    Complete,
}

#[derive(Debug, Default)]
struct ArgsProgress {
    raw: String,
    parser: PartialJson,
    invalid: bool,
}

impl Accumulator {
    /// Applies the next event. On error the accumulator is unchanged.
    pub fn push(&mut self, event: &Event) -> Result<(), AccumulateError> {
        self.check_order(event)?;
        match &event.kind {
            EventKind::StateSnapshot { state } => self.state = state.clone(),
            EventKind::StateDelta { patch } => {
                json_patch::patch(&mut self.state, patch).map_err(|error| {
                    AccumulateError::BadPatch {
                        seq: event.seq,
                        reason: error.to_string(),
                    }
                })?;
            }
            _ if !event.namespace.is_root() => self.push_nested(event)?,
            kind => self.apply(kind)?,
        }
        self.last_seq = Some(event.seq);
        Ok(())
    }

    /// Applies a nested run's event to its accumulator, creating it at its `run_created`.
    fn push_nested(&mut self, event: &Event) -> Result<(), AccumulateError> {
        let Some((run_id, parents)) = event.namespace.path().split_last() else {
            return self.apply(&event.kind);
        };
        let mut parent = &mut *self;
        for id in parents {
            parent = parent
                .children
                .get_mut(id)
                .ok_or_else(|| AccumulateError::UnknownRun { run_id: id.clone() })?;
        }
        match (&event.kind, parent.children.get_mut(run_id)) {
            (
                EventKind::RunCreated {
                    run_id: created, ..
                },
                None,
            ) if created == run_id => {
                let mut child = Accumulator::default();
                child.apply(&event.kind)?;
                child.last_seq = Some(event.seq);
                parent.children.insert(run_id.clone(), child);
                Ok(())
            }
            (_, None) => Err(AccumulateError::UnknownRun {
                run_id: run_id.clone(),
            }),
            (_, Some(child)) => {
                child.check_order(event)?;
                child.apply(&event.kind)?;
                child.last_seq = Some(event.seq);
                Ok(())
            }
        }
    }

    /// Applies an event's kind to this run's own state. On error nothing changed.
    fn apply(&mut self, kind: &EventKind) -> Result<(), AccumulateError> {
        match kind {
            EventKind::RunCreated {
                run_id,
                agent,
                parent_tool_call_id,
                ..
            } => {
                if self.run_id.is_some() {
                    return Err(AccumulateError::RunAlreadyCreated {
                        run_id: run_id.clone(),
                    });
                }
                self.run_id = Some(run_id.clone());
                self.agent = agent.clone();
                self.parent_tool_call_id = parent_tool_call_id.clone();
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => {
                self.status = Some(*status);
                if let Some(usage) = usage {
                    self.usage = Some(*usage);
                }
                if let Some(error) = error {
                    self.errors.push(error.clone());
                }
            }
            EventKind::MessageStart {
                message_id,
                role,
                metadata,
                created_at,
            } => {
                if self.positions.contains_key(message_id) {
                    return Err(AccumulateError::DuplicateMessage {
                        message_id: message_id.clone(),
                    });
                }
                let position = self.messages.len();
                self.messages.push(Message {
                    id: Some(message_id.clone()),
                    role: *role,
                    parts: Vec::new(),
                    metadata: metadata.clone(),
                    created_at: *created_at,
                });
                self.positions.insert(message_id.clone(), position);
                self.streams.push(MessageStream {
                    message_id: message_id.clone(),
                    position,
                    parts: Vec::new(),
                    n_streaming: 0,
                });
            }
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => self.part_start(message_id, *index, part)?,
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => self.part_delta(message_id, *index, delta)?,
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => self.part_complete(message_id, *index, part)?,
            EventKind::MessageComplete { message } => self.message_complete(message)?,
            EventKind::Heartbeat {}
            | EventKind::Input(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => {}
            EventKind::Error(error) => self.errors.push(error.clone()),
        }
        Ok(())
    }

    /// Every message seen, in the order they started; streaming parts show what has arrived
    /// (a tool call's `args` is the partial view of its arguments).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The message with this id.
    pub fn message(&self, message_id: &str) -> Option<&Message> {
        self.positions
            .get(message_id)
            .map(|&position| &self.messages[position])
    }

    /// Whether a part is streaming or complete; `None` for a part not seen.
    pub fn part_status(&self, message_id: &str, index: usize) -> Option<PartStatus> {
        let message = self.message(message_id)?;
        if index >= message.parts.len() {
            return None;
        }
        let streaming = self
            .streams
            .iter()
            .find(|stream| stream.message_id == message_id)
            .is_some_and(|stream| !matches!(stream.parts[index], Progress::Complete));
        Some(if streaming {
            PartStatus::Streaming
        } else {
            PartStatus::Complete
        })
    }

    /// The raw argument text received so far by a streaming tool call.
    pub fn raw_args(&self, message_id: &str, index: usize) -> Option<&str> {
        let stream = self
            .streams
            .iter()
            .find(|stream| stream.message_id == message_id)?;
        match stream.parts.get(index)? {
            Progress::Args(args) => Some(&args.raw),
            _ => None,
        }
    }

    /// The run, once `run_created` arrived.
    pub fn run_id(&self) -> Option<&RunId> {
        self.run_id.as_ref()
    }

    /// The agent running it, as `run_created` named it.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// For a sub-agent's run, the parent's tool call it answers.
    pub fn parent_tool_call_id(&self) -> Option<&ToolCallId> {
        self.parent_tool_call_id.as_ref()
    }

    /// The sub-agents' runs this run started, in the order they were created; each holds its
    /// own messages, status and children.
    pub fn children(&self) -> impl ExactSizeIterator<Item = &Accumulator> {
        self.children.values()
    }

    /// The nested run at `path` (run ids from this run's child down); this run for `[]`.
    pub fn descendant(&self, path: &[RunId]) -> Option<&Accumulator> {
        path.iter().try_fold(self, |run, id| run.children.get(id))
    }

    /// The session's shared state as the stream has built it (`Null` before any state event).
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// The run's latest status.
    pub fn status(&self) -> Option<RunStatus> {
        self.status
    }

    /// The run's latest reported usage.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Errors reported in the stream, oldest first.
    pub fn errors(&self) -> &[ErrorInfo] {
        &self.errors
    }

    /// The number of the last event applied: where to resume from.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// The messages, taken out.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The events that complete every message of this run still open, as it stands: each
    /// streaming part completed with what arrived (a tool call with its argument text so far,
    /// by the rule of [`ToolArgs::from_json_text`]), then the message. Pushed in order (with
    /// growing sequence numbers) they are accepted, and leave every message whole with what
    /// it had. What a reader emits for a stream it stops reading mid-message, so the stream it
    /// passes on stays well formed. Runs nested in this one are not included (each is one of
    /// [`Accumulator::children`]).
    ///
    /// ```
    /// use agentwire_core::{Accumulator, Event, EventKind, MessageId, Role, StreamedPart};
    ///
    /// let message_id = MessageId::from("msg_1");
    /// let mut run = Accumulator::default();
    /// run.push(&Event::new(1, EventKind::MessageStart {
    ///     message_id: message_id.clone(),
    ///     role: Role::Assistant,
    ///     metadata: Default::default(),
    ///     created_at: None,
    /// }))?;
    /// run.push(&Event::new(2, EventKind::PartStart { message_id: message_id.clone(), index: 0, part: StreamedPart::Text }))?;
    /// run.push(&Event::new(3, EventKind::PartDelta { message_id, index: 0, delta: "Hel".into() }))?;
    ///
    /// let mut seq = 3;
    /// for kind in run.completions() {
    ///     seq += 1;
    ///     run.push(&Event::new(seq, kind))?;
    /// }
    /// assert!(run.completions().is_empty());
    /// assert_eq!(run.messages()[0].content(), "Hel");
    /// # Ok::<(), agentwire_core::AccumulateError>(())
    /// ```
    pub fn completions(&self) -> Vec<EventKind> {
        let mut events = Vec::new();
        for stream in &self.streams {
            let message = &self.messages[stream.position];
            let mut whole = message.clone();
            for (index, progress) in stream.parts.iter().enumerate() {
                let part = match (progress, &message.parts[index]) {
                    (Progress::Complete, _) => continue,
                    (Progress::Args(args), Part::ToolCall(call)) => Part::ToolCall(ToolCall {
                        args: ToolArgs(final_args(args, &call.args.0).into_owned()),
                        ..call.clone()
                    }),
                    (_, part) => part.clone(),
                };
                whole.parts[index] = part.clone();
                events.push(EventKind::PartComplete {
                    message_id: stream.message_id.clone(),
                    // A message's parts are counted in u32 on the wire.
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    part,
                });
            }
            events.push(EventKind::MessageComplete { message: whole });
        }
        events
    }

    fn check_order(&self, event: &Event) -> Result<(), AccumulateError> {
        let is_heartbeat = matches!(event.kind, EventKind::Heartbeat {});
        if let Some(last) = self.last_seq
            && (event.seq < last || (event.seq == last && !is_heartbeat))
        {
            return Err(AccumulateError::SeqNotIncreasing {
                seq: event.seq,
                last,
            });
        }
        if let Some(status) = self.status
            && status.is_terminal()
            && !is_heartbeat
        {
            return Err(AccumulateError::AfterRunEnded {
                seq: event.seq,
                event: event.name(),
                status: status.name(),
            });
        }
        Ok(())
    }

    /// The open stream of a message, or the error saying why there is none.
    fn stream(&mut self, message_id: &MessageId) -> Result<usize, AccumulateError> {
        // Usually one message streams at a time, and its id shares the allocation of the
        // event's id when both came from one builder: compare pointers before strings.
        let found = self
            .streams
            .iter()
            .position(|stream| stream.message_id.same_allocation(message_id))
            .or_else(|| {
                self.streams
                    .iter()
                    .position(|stream| &stream.message_id == message_id)
            });
        found.ok_or_else(|| {
            let message_id = message_id.clone();
            if self.positions.contains_key(&message_id) {
                AccumulateError::MessageAlreadyComplete { message_id }
            } else {
                AccumulateError::UnknownMessage { message_id }
            }
        })
    }

    fn part_start(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &StreamedPart,
    ) -> Result<(), AccumulateError> {
        let stream_idx = self.stream(message_id)?;
        let stream = &mut self.streams[stream_idx];
        if index as usize != stream.parts.len() {
            return Err(AccumulateError::PartOutOfOrder {
                message_id: message_id.clone(),
                index,
                expected: stream.parts.len(),
            });
        }
        let (placeholder, progress) = match part {
            StreamedPart::Text => (Part::Text(TextPart::default()), Progress::Text),
            StreamedPart::Reasoning => (Part::Reasoning(ReasoningPart::default()), Progress::Text),
            StreamedPart::Refusal => (Part::Refusal(RefusalPart::default()), Progress::Text),
            StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } => (
                Part::ToolCall(ToolCall {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    args: ToolArgs(Value::Null),
                }),
                Progress::Args(Box::default()),
            ),
        };
        stream.parts.push(progress);
        stream.n_streaming += 1;
        self.messages[stream.position].parts.push(placeholder);
        Ok(())
    }

    fn part_delta(
        &mut self,
        message_id: &MessageId,
        index: u32,
        delta: &str,
    ) -> Result<(), AccumulateError> {
        let stream_idx = self.stream(message_id)?;
        let stream = &mut self.streams[stream_idx];
        let part = self.messages[stream.position].parts.get_mut(index as usize);
        match (stream.parts.get_mut(index as usize), part) {
            (Some(Progress::Text), Some(part)) => {
                if let Part::Text(TextPart { text })
                | Part::Reasoning(ReasoningPart { text })
                | Part::Refusal(RefusalPart { text }) = part
                {
                    text.push_str(delta);
                }
                Ok(())
            }
            (Some(Progress::Args(args)), Some(Part::ToolCall(call))) => {
                args.raw.push_str(delta);
                // Invalid argument text is the model's mistake, not a broken stream: the raw
                // text is kept and the view stays at the last point that parsed.
                if !args.invalid && args.parser.push(&mut call.args.0, delta).is_err() {
                    args.invalid = true;
                }
                Ok(())
            }
            (Some(_), _) => Err(AccumulateError::DeltaAfterComplete {
                message_id: message_id.clone(),
                index,
            }),
            (None, _) => Err(AccumulateError::DeltaWithoutStart {
                message_id: message_id.clone(),
                index,
            }),
        }
    }

    fn part_complete(
        &mut self,
        message_id: &MessageId,
        index: u32,
        part: &Part,
    ) -> Result<(), AccumulateError> {
        let stream_idx = self.stream(message_id)?;
        let stream = &mut self.streams[stream_idx];
        let parts = &mut self.messages[stream.position].parts;
        let position = index as usize;
        if position == stream.parts.len() {
            // A part that arrives whole.
            stream.parts.push(Progress::Complete);
            parts.push(part.clone());
            return Ok(());
        }
        let mismatch = |mismatch| AccumulateError::CompletionMismatch {
            message_id: message_id.clone(),
            index,
            mismatch,
        };
        match stream.parts.get_mut(position) {
            None => {
                return Err(AccumulateError::PartOutOfOrder {
                    message_id: message_id.clone(),
                    index,
                    expected: stream.parts.len(),
                });
            }
            Some(Progress::Complete) => {
                return Err(AccumulateError::PartAlreadyComplete {
                    message_id: message_id.clone(),
                    index,
                });
            }
            Some(Progress::Text) => {
                let streamed = &parts[position];
                if streamed.type_name() != part.type_name() {
                    return Err(mismatch(Mismatch::PartType {
                        expected: streamed.type_name(),
                        found: part.type_name(),
                    }));
                }
                if streamed != part {
                    return Err(mismatch(Mismatch::Text));
                }
            }
            Some(Progress::Args(args)) => {
                let (Part::ToolCall(streamed), Part::ToolCall(completed)) =
                    (&mut parts[position], part)
                else {
                    return Err(mismatch(Mismatch::PartType {
                        expected: "tool_call",
                        found: part.type_name(),
                    }));
                };
                if streamed.tool_call_id != completed.tool_call_id
                    || streamed.tool_name != completed.tool_name
                {
                    return Err(mismatch(Mismatch::ToolCall));
                }
                let final_args = final_args(args, &streamed.args.0);
                if *final_args != completed.args.0 {
                    return Err(mismatch(Mismatch::Args));
                }
                if let Cow::Owned(final_args) = final_args {
                    streamed.args.0 = final_args;
                }
            }
        }
        stream.parts[position] = Progress::Complete;
        stream.n_streaming -= 1;
        Ok(())
    }

    fn message_complete(&mut self, message: &Message) -> Result<(), AccumulateError> {
        let Some(message_id) = &message.id else {
            return Err(AccumulateError::MessageWithoutId);
        };
        let stream_idx = match self.stream(message_id) {
            Ok(stream_idx) => stream_idx,
            Err(AccumulateError::UnknownMessage { .. }) => {
                // A message that arrives whole.
                self.positions
                    .insert(message_id.clone(), self.messages.len());
                self.messages.push(message.clone());
                return Ok(());
            }
            Err(_) => {
                return Err(AccumulateError::DuplicateMessage {
                    message_id: message_id.clone(),
                });
            }
        };
        let stream = &self.streams[stream_idx];
        if stream.n_streaming > 0 {
            let index = stream
                .parts
                .iter()
                .position(|progress| !matches!(progress, Progress::Complete))
                .unwrap_or_default();
            return Err(AccumulateError::PartStillStreaming {
                message_id: message_id.clone(),
                index,
            });
        }
        let streamed = &mut self.messages[stream.position];
        let mismatch = if streamed.role != message.role {
            Some(Mismatch::Role)
        } else if streamed.parts.len() != message.parts.len() {
            Some(Mismatch::PartCount {
                expected: streamed.parts.len(),
                found: message.parts.len(),
            })
        } else {
            streamed
                .parts
                .iter()
                .zip(&message.parts)
                .position(|(a, b)| a != b)
                .map(|index| Mismatch::Part { index })
        };
        if let Some(mismatch) = mismatch {
            return Err(AccumulateError::MessageMismatch {
                message_id: message_id.clone(),
                mismatch,
            });
        }
        // The completion is authoritative for what is known only at the end (usage, timing).
        streamed.metadata = message.metadata.clone();
        streamed.created_at = message.created_at;
        self.streams.swap_remove(stream_idx);
        Ok(())
    }
}

/// The arguments a tool call ends with, by the rule of [`ToolArgs::from_json_text`], from the
/// incremental parse: usually the view itself; never a parse of the text again.
fn final_args<'v>(args: &ArgsProgress, view: &'v Value) -> Cow<'v, Value> {
    if args.raw.trim_ascii().is_empty() {
        return Cow::Owned(ToolArgs::default().0);
    }
    if !args.invalid && ToolArgs::nests_within_bound(view) {
        if args.parser.is_complete() {
            return Cow::Borrowed(view);
        }
        // A number at the root is complete only when the text ends.
        let mut parser = args.parser.clone();
        let mut value = view.clone();
        if parser.finish(&mut value).is_ok() {
            return Cow::Owned(value);
        }
    }
    Cow::Owned(Value::String(args.raw.clone()))
}
