//! [`ResponseBuilder`]: AgentScope's layered builder, for code that writes a run's answer itself
//! (a custom agent handler) rather than streaming it from a model.
//!
//! Three layers, as in AgentScope's `agent_api_builder`:
//! - the [`ResponseBuilder`] is the run: `created → in_progress → completed` (or failed,
//!   canceled, incomplete), with the run's usage;
//! - a [`MessageWriter`] is one message of it: whole contents (text, data, an image or a file,
//!   any [`Part`]), its usage, and `complete()`;
//! - a [`ContentWriter`] is one streamed content of a message (text, reasoning, a refusal, a
//!   tool call's arguments): deltas or its whole text (`set_text`), then `complete()`; a
//!   [`DataWriter`] is a data content built up from dicts (`set_data`, `add_data_delta`,
//!   merged as AgentScope's `ContentBuilder` merges them), emitted whole when complete, since
//!   data parts do not stream in the canonical events.
//!
//! [`ResponseBuilder::generate_streaming_response`] writes AgentScope's whole sequence for a text
//! answer in one call: `created`, `in_progress`, a message whose text streams token by token,
//! its completion, `completed`.
//!
//! Every call produces the canonical [`Event`]s at once, through the same [`Emitter`] and
//! [`MessageBuilder`] the runtime uses for model output, so the numbering and the event order
//! are the protocol's by construction and any dialect can encode the result.
//!
//! Misuse cannot produce a malformed stream. A writer borrows its parent, so a message cannot
//! be written to once completed and a content cannot get a delta once completed: those do not
//! compile. What the types cannot rule out is a [`ResponseError`]: anything after the response
//! ended (completing it twice included), a status that goes back, a tool call id used twice.
//! A writer dropped without `complete()` leaves its content or message open; the next content,
//! message or final status completes it with what it has.
//!
//! ```
//! use agentwire_core::{Accumulator, MessageStart, Part, ResponseBuilder, Role, RunStatus, Usage};
//! use serde_json::json;
//!
//! let mut response = ResponseBuilder::new("run_1");
//! response.created()?;
//! response.in_progress()?;
//! let mut message = response.message(MessageStart::new("msg_1", Role::Assistant))?;
//! let mut text = message.text()?;
//! text.delta("Hello")?;
//! text.delta(", world!")?;
//! text.complete()?;
//! message.add_data("weather", json!({"city": "Paris", "sky": "clear"}))?;
//! message.add_image_url("https://example.com/sky.png", "image/png")?;
//! message.usage(Usage::new(12, 5));
//! message.complete()?;
//! response.completed()?;
//! assert!(response.completed().is_err(), "a response completes once");
//!
//! let mut client = Accumulator::default();
//! for event in response.drain() {
//!     client.push(&event)?;
//! }
//! assert_eq!(client.status(), Some(RunStatus::Completed));
//! assert_eq!(client.messages()[0].parts[0], Part::text("Hello, world!"));
//! assert_eq!(client.messages()[0].metadata.usage, Some(Usage::new(12, 5)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use serde_json::Value;
use thiserror::Error;

use crate::builder::{BuildError, MessageBuilder, MessageStart};
use crate::emitter::Emitter;
use crate::event::{ErrorInfo, Event, EventKind, RunStatus, StreamedPart};
use crate::ids::{MessageId, RunId, SessionId, ToolCallId};
use crate::part::{DataPart, FilePart, FileSource, Part};
use crate::usage::Usage;

/// Where a response is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    New,
    Created,
    InProgress,
}

/// Receives a response's events as they are made (see [`ResponseBuilder::with_outlet`]).
type Outlet = Box<dyn FnMut(std::vec::Drain<'_, Event>) + Send>;

/// Builds one run's events: its status changes and its messages. See the module docs.
pub struct ResponseBuilder {
    out: Emitter,
    outlet: Option<Outlet>,
    run_id: RunId,
    session_id: Option<SessionId>,
    agent: Option<String>,
    stage: Stage,
    ended: Option<RunStatus>,
    message: Option<MessageBuilder>,
    usage: Option<Usage>,
}

/// A call the response's state does not allow. Nothing was emitted.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// The response has a final status; nothing more can be added to it.
    #[error("the response has ended as {}; nothing more can be added", .status.name())]
    Ended {
        /// How it ended.
        status: RunStatus,
    },
    /// A status method was called after a later one.
    #[error("the response is {current}; it cannot go back to {requested}")]
    Backwards {
        /// Where the response is.
        current: &'static str,
        /// The status asked for.
        requested: &'static str,
    },
    /// [`ResponseBuilder::end`] was given a status that does not end a run.
    #[error("{} does not end a response: use completed, failed, canceled, rejected or incomplete", .status.name())]
    NotFinal {
        /// The status given.
        status: RunStatus,
    },
    /// A tool call's content does not fit the calls in progress (an id used twice).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// [`ContentWriter::set_text`] was given a text that does not start with what the content
    /// has streamed already: streamed text cannot be taken back.
    #[error("the content has streamed {streamed:?} already; its whole text must start with it")]
    TextConflict {
        /// What the content had streamed.
        streamed: String,
    },
}

impl fmt::Debug for ResponseBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBuilder")
            .field("run_id", &self.run_id)
            .field("stage", &self.stage)
            .field("ended", &self.ended)
            .field("last_seq", &self.out.last_seq())
            .field("outlet", &self.outlet.is_some())
            .finish_non_exhaustive()
    }
}

impl ResponseBuilder {
    /// A response for run `run_id`, nothing emitted yet. Its events are kept until
    /// [`Self::drain`]ed, unless an outlet takes them.
    pub fn new(run_id: impl Into<RunId>) -> Self {
        Self {
            out: Emitter::default(),
            outlet: None,
            run_id: run_id.into(),
            session_id: None,
            agent: None,
            stage: Stage::New,
            ended: None,
            message: None,
            usage: None,
        }
    }

    /// Names the session the run belongs to (in `run_created`).
    #[must_use]
    pub fn with_session(mut self, session_id: impl Into<SessionId>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Names the agent running it (in `run_created`).
    #[must_use]
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Hands every event to `outlet` as soon as a call has made it, instead of keeping it for
    /// [`Self::drain`]: how a runtime sends a handler's events on while the handler works.
    #[must_use]
    pub fn with_outlet(
        mut self,
        outlet: impl FnMut(std::vec::Drain<'_, Event>) + Send + 'static,
    ) -> Self {
        self.outlet = Some(Box::new(outlet));
        self
    }

    /// The run.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The final status, once the response has one.
    pub fn ended(&self) -> Option<RunStatus> {
        self.ended
    }

    /// The run's tokens so far: what [`Self::add_usage`] and the messages' usage added up to.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The number of the last event made (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.out.last_seq()
    }

    /// The events made and not yet taken, oldest first (none when an outlet takes them).
    pub fn drain(&mut self) -> std::vec::Drain<'_, Event> {
        self.out.drain()
    }

    /// The response exists: emits `run_created`. Calling it again does nothing (a runtime
    /// creates the response before it hands it to a handler).
    pub fn created(&mut self) -> Result<(), ResponseError> {
        self.check_open()?;
        self.advance(Stage::Created);
        self.flush();
        Ok(())
    }

    /// The agent is working: emits `run_status in_progress` (and `run_created` first if the
    /// response was not created). Calling it again does nothing.
    pub fn in_progress(&mut self) -> Result<(), ResponseError> {
        self.check_open()?;
        self.advance(Stage::InProgress);
        self.flush();
        Ok(())
    }

    /// The run finished normally: completes an open message and emits `run_status completed`
    /// with the run's usage. Final.
    pub fn completed(&mut self) -> Result<(), ResponseError> {
        self.end(RunStatus::Completed, None)
    }

    /// The run failed: completes an open message and emits `run_status failed` with `error`.
    /// Final.
    pub fn failed(&mut self, error: ErrorInfo) -> Result<(), ResponseError> {
        self.end(RunStatus::Failed, Some(error))
    }

    /// Ends the response with any final status (`completed`, `failed`, `canceled`, `rejected`,
    /// `incomplete`) and why, completing an open message first.
    pub fn end(
        &mut self,
        status: RunStatus,
        error: Option<ErrorInfo>,
    ) -> Result<(), ResponseError> {
        self.check_open()?;
        if !status.is_terminal() {
            return Err(ResponseError::NotFinal { status });
        }
        self.advance(Stage::Created);
        self.finish_message();
        self.out.emit(EventKind::RunStatus {
            status,
            error,
            usage: self.usage,
        });
        self.ended = Some(status);
        self.flush();
        Ok(())
    }

    /// Adds tokens to the run's usage (a message's own usage is added by
    /// [`MessageWriter::usage`]).
    pub fn add_usage(&mut self, usage: Usage) {
        *self.usage.get_or_insert_default() += usage;
    }

    /// Starts a message: completes an open one, moves the response to `in_progress` if it is
    /// not, and emits `message_start`.
    pub fn message(&mut self, start: MessageStart) -> Result<MessageWriter<'_>, ResponseError> {
        self.check_open()?;
        self.advance(Stage::InProgress);
        self.finish_message();
        self.message = Some(MessageBuilder::start(&mut self.out, start));
        self.flush();
        Ok(MessageWriter { response: self })
    }

    /// AgentScope's `generate_streaming_response`: the whole answer of a run whose reply is one
    /// streamed text, in one call. Emits `run_created` and `in_progress` (those not emitted
    /// yet), the message `start` with a text content that streams `text_tokens` one delta each,
    /// its completion, the message's, and `completed`; returns the events (none when an outlet
    /// took them).
    ///
    /// ```
    /// use agentwire_core::{Accumulator, EventKind, MessageStart, Part, ResponseBuilder, Role};
    ///
    /// let mut response = ResponseBuilder::new("run_1").with_session("session_123");
    /// let start = MessageStart::new("msg_1", Role::Assistant);
    /// let events: Vec<_> = response
    ///     .generate_streaming_response(start, ["Hello", " ", "World", "!"])?
    ///     .collect();
    /// let deltas = events
    ///     .iter()
    ///     .filter(|event| matches!(event.kind, EventKind::PartDelta { .. }))
    ///     .count();
    /// assert_eq!(deltas, 4);
    /// let mut client = Accumulator::default();
    /// for event in &events {
    ///     client.push(event)?;
    /// }
    /// assert_eq!(client.messages()[0].parts, [Part::text("Hello World!")]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn generate_streaming_response<I>(
        &mut self,
        start: MessageStart,
        text_tokens: I,
    ) -> Result<std::vec::Drain<'_, Event>, ResponseError>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.created()?;
        self.in_progress()?;
        let mut message = self.message(start)?;
        let mut text = message.text()?;
        for token in text_tokens {
            text.delta(token.as_ref())?;
        }
        text.complete()?;
        message.complete()?;
        self.completed()?;
        Ok(self.drain())
    }

    fn check_open(&self) -> Result<(), ResponseError> {
        match self.ended {
            Some(status) => Err(ResponseError::Ended { status }),
            None => Ok(()),
        }
    }

    /// Moves forward to `stage`, emitting what each step says; never moves back.
    fn advance(&mut self, stage: Stage) {
        if self.stage < Stage::Created && stage >= Stage::Created {
            self.out.emit(EventKind::RunCreated {
                run_id: self.run_id.clone(),
                session_id: self.session_id.clone(),
                agent: self.agent.clone(),
                parent_run_id: None,
                parent_tool_call_id: None,
            });
            self.stage = Stage::Created;
        }
        if self.stage < Stage::InProgress && stage >= Stage::InProgress {
            self.out.emit(EventKind::RunStatus {
                status: RunStatus::InProgress,
                error: None,
                usage: None,
            });
            self.stage = Stage::InProgress;
        }
    }

    fn finish_message(&mut self) {
        if let Some(builder) = self.message.take() {
            builder.finish(&mut self.out);
        }
    }

    fn flush(&mut self) {
        if let Some(outlet) = &mut self.outlet {
            outlet(self.out.drain());
        }
    }

    /// The open message and the emitter; `None` only if the message was completed, which a
    /// writer's borrow rules out.
    fn open_message(&mut self) -> Result<(&mut MessageBuilder, &mut Emitter), ResponseError> {
        self.check_open()?;
        match self.message.as_mut() {
            Some(builder) => Ok((builder, &mut self.out)),
            // A writer exists only while its message is open; report it as ended rather than
            // panic should that ever change.
            None => Err(ResponseError::Ended {
                status: self.ended.unwrap_or(RunStatus::Completed),
            }),
        }
    }
}

/// One message of a response, open until [`Self::complete`]. See the module docs.
#[derive(Debug)]
pub struct MessageWriter<'r> {
    response: &'r mut ResponseBuilder,
}

impl MessageWriter<'_> {
    /// The message's id.
    pub fn id(&self) -> Option<&MessageId> {
        self.response
            .message
            .as_ref()
            .and_then(|builder| builder.message().id.as_ref())
    }

    /// Starts a streamed text content: emits `part_start` at once.
    pub fn text(&mut self) -> Result<ContentWriter<'_>, ResponseError> {
        self.sequential(StreamedPart::Text)
    }

    /// Starts a streamed reasoning content.
    pub fn reasoning(&mut self) -> Result<ContentWriter<'_>, ResponseError> {
        self.sequential(StreamedPart::Reasoning)
    }

    /// Starts a streamed refusal.
    pub fn refusal(&mut self) -> Result<ContentWriter<'_>, ResponseError> {
        self.sequential(StreamedPart::Refusal)
    }

    /// Starts a tool call whose argument JSON text streams as deltas.
    pub fn tool_call(
        &mut self,
        tool_call_id: impl Into<ToolCallId>,
        tool_name: impl Into<String>,
    ) -> Result<ContentWriter<'_>, ResponseError> {
        let tool_call_id = tool_call_id.into();
        let (builder, out) = self.response.open_message()?;
        builder.tool_call_start(out, tool_call_id.clone(), tool_name)?;
        let index = builder.message().parts.len() - 1;
        self.response.flush();
        Ok(ContentWriter {
            response: self.response,
            index,
            kind: Content::ToolCall(tool_call_id),
        })
    }

    /// Adds a whole text content (streamed as one delta, so every dialect shows it as text).
    pub fn add_text(&mut self, text: &str) -> Result<u32, ResponseError> {
        let mut content = self.text()?;
        content.delta(text)?;
        let index = content.index();
        content.complete()?;
        Ok(index)
    }

    /// Starts a data content named `name` (a `data` part), built up with
    /// [`DataWriter::set_data`] and [`DataWriter::add_data_delta`] and emitted whole when it is
    /// complete.
    pub fn data(&mut self, name: impl Into<String>) -> Result<DataWriter<'_>, ResponseError> {
        let (builder, _) = self.response.open_message()?;
        let index = builder.message().parts.len();
        Ok(DataWriter {
            response: self.response,
            name: name.into(),
            data: Some(Value::Null),
            index,
        })
    }

    /// Adds named structured data: a `data` part.
    pub fn add_data(&mut self, name: impl Into<String>, data: Value) -> Result<u32, ResponseError> {
        self.add_part(Part::Data(DataPart {
            name: name.into(),
            data,
        }))
    }

    /// Adds an image by URL (an `https:` or `data:` URL): a `file` part.
    pub fn add_image_url(
        &mut self,
        url: impl Into<String>,
        media_type: impl Into<String>,
    ) -> Result<u32, ResponseError> {
        self.add_file(FilePart {
            media_type: media_type.into(),
            source: FileSource::Url(url.into()),
            filename: None,
        })
    }

    /// Adds a file (an image or audio too), by URL or inline base64 data.
    pub fn add_file(&mut self, file: FilePart) -> Result<u32, ResponseError> {
        self.add_part(Part::File(file))
    }

    /// Adds any part that is whole when made (a tool result, a source, a plan update, …);
    /// returns its index. An open text content is completed first.
    pub fn add_part(&mut self, part: Part) -> Result<u32, ResponseError> {
        let (builder, out) = self.response.open_message()?;
        builder.part(out, part);
        let index = builder.message().parts.len() - 1;
        self.response.flush();
        Ok(wire_index(index))
    }

    /// Adds tokens to the message's usage (carried by its `message_complete`) and to the
    /// run's.
    pub fn usage(&mut self, usage: Usage) {
        if let Some(builder) = self.response.message.as_mut() {
            *builder.metadata_mut().usage.get_or_insert_default() += usage;
        }
        self.response.add_usage(usage);
    }

    /// Completes the message: its open contents, then `message_complete`.
    pub fn complete(self) -> Result<(), ResponseError> {
        self.response.check_open()?;
        self.response.finish_message();
        self.response.flush();
        Ok(())
    }

    fn sequential(&mut self, kind: StreamedPart) -> Result<ContentWriter<'_>, ResponseError> {
        let (builder, out) = self.response.open_message()?;
        let index = builder.open_sequential(out, kind.clone());
        self.response.flush();
        Ok(ContentWriter {
            response: self.response,
            index,
            kind: Content::Sequential(kind),
        })
    }
}

/// What a [`ContentWriter`] streams.
#[derive(Debug)]
enum Content {
    Sequential(StreamedPart),
    ToolCall(ToolCallId),
}

/// One streamed content of a message, open until [`Self::complete`]. See the module docs.
#[derive(Debug)]
pub struct ContentWriter<'m> {
    response: &'m mut ResponseBuilder,
    index: usize,
    kind: Content,
}

impl ContentWriter<'_> {
    /// The content's place in its message (AgentScope's `index`).
    pub fn index(&self) -> u32 {
        wire_index(self.index)
    }

    /// Appends text (or, for a tool call, argument JSON text). An empty delta is ignored.
    pub fn delta(&mut self, text: &str) -> Result<(), ResponseError> {
        let (builder, out) = self.response.open_message()?;
        match &self.kind {
            // The writer's borrow keeps its part the open one, so the delta lands in it.
            Content::Sequential(kind) => match kind {
                StreamedPart::Reasoning => builder.reasoning_delta(out, text),
                StreamedPart::Refusal => builder.refusal_delta(out, text),
                _ => builder.text_delta(out, text),
            },
            Content::ToolCall(id) => builder.tool_call_delta(out, id.as_str(), text)?,
        }
        self.response.flush();
        Ok(())
    }

    /// Sets the content's whole text (AgentScope's `set_text`): what it has not streamed yet goes
    /// out as one delta. Streamed text cannot be taken back, so `text` must start with what
    /// has streamed ([`ResponseError::TextConflict`] otherwise, emitting nothing); setting the
    /// text the deltas already made emits nothing.
    pub fn set_text(&mut self, text: &str) -> Result<(), ResponseError> {
        let (builder, _) = self.response.open_message()?;
        let streamed = builder.streamed_text(self.index).unwrap_or_default();
        let Some(rest) = text.strip_prefix(streamed) else {
            return Err(ResponseError::TextConflict {
                streamed: streamed.to_owned(),
            });
        };
        self.delta(rest)
    }

    /// Completes the content: emits its `part_complete`.
    pub fn complete(self) -> Result<(), ResponseError> {
        let (builder, out) = self.response.open_message()?;
        match &self.kind {
            Content::Sequential(_) => builder.close_text(out),
            Content::ToolCall(id) => builder.tool_call_end(out, id.as_str())?,
        }
        self.response.flush();
        Ok(())
    }
}

/// A data content of a message, built up from JSON values until [`Self::complete`] emits it as
/// one `data` part (data parts do not stream in the canonical events; a dialect that streams
/// data, such as AgentScope, shows it complete). Dropped unfinished, it is emitted as it
/// stands. See the module docs.
#[derive(Debug)]
pub struct DataWriter<'m> {
    response: &'m mut ResponseBuilder,
    name: String,
    /// The data so far; `None` once emitted.
    data: Option<Value>,
    index: usize,
}

impl DataWriter<'_> {
    /// The content's place in its message (AgentScope's `index`).
    pub fn index(&self) -> u32 {
        wire_index(self.index)
    }

    /// The data so far (`null` before any).
    pub fn data(&self) -> &Value {
        self.data.as_ref().unwrap_or(&Value::Null)
    }

    /// Replaces the data (AgentScope's `set_data`).
    pub fn set_data(&mut self, data: Value) {
        self.data = Some(data);
    }

    /// Merges `delta` into the data (AgentScope's `add_data_delta`), key by key as their
    /// `ContentBuilder` merges deltas: strings are appended, numbers added, lists extended,
    /// objects merged the same way, and any other value (a boolean, a value of another type, a
    /// new key) replaces what was there. A `delta` that is not an object replaces the data.
    pub fn add_data_delta(&mut self, delta: Value) {
        let data = self.data.get_or_insert(Value::Null);
        merge_delta(data, delta);
    }

    /// Completes the content: emits its `part_complete`, a `data` part. Returns its index.
    pub fn complete(mut self) -> Result<u32, ResponseError> {
        self.emit()
    }

    fn emit(&mut self) -> Result<u32, ResponseError> {
        let Some(data) = self.data.take() else {
            return Ok(wire_index(self.index));
        };
        let (builder, out) = self.response.open_message()?;
        builder.part(
            out,
            Part::Data(DataPart {
                name: std::mem::take(&mut self.name),
                data,
            }),
        );
        self.response.flush();
        Ok(wire_index(self.index))
    }
}

impl Drop for DataWriter<'_> {
    fn drop(&mut self) {
        // A response that has ended takes nothing more; there is no one to tell.
        let _ = self.emit();
    }
}

/// Merges `delta` into `base` (see [`DataWriter::add_data_delta`]).
fn merge_delta(base: &mut Value, delta: Value) {
    match (base, delta) {
        (Value::Object(base), Value::Object(delta)) => {
            for (key, delta) in delta {
                match base.get_mut(&key) {
                    Some(value) => merge_delta(value, delta),
                    None => {
                        base.insert(key, delta);
                    }
                }
            }
        }
        (Value::String(base), Value::String(delta)) => base.push_str(&delta),
        (Value::Array(base), Value::Array(delta)) => base.extend(delta),
        (Value::Number(base), Value::Number(delta)) => {
            let sum = match (base.as_i64(), delta.as_i64()) {
                (Some(a), Some(b)) => a.checked_add(b).map(serde_json::Number::from),
                _ => None,
            };
            let sum = sum.or_else(|| {
                let (a, b) = (base.as_f64()?, delta.as_f64()?);
                serde_json::Number::from_f64(a + b)
            });
            if let Some(sum) = sum {
                *base = sum;
            }
        }
        (base, delta) => *base = delta,
    }
}

/// Part indexes are `u32` on the wire; a message never holds four billion parts.
fn wire_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}
