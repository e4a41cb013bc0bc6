//! [`MessageBuilder`]: turns what a model streams (text, reasoning, tool-call starts, argument
//! deltas and ends, tool results and errors) into the events of one message.
//!
//! This is a streaming message builder, done so that every part streams as it is made:
//! a part opens with `part_start` at its first delta, grows with `part_delta`, and is closed with
//! `part_complete` when the next kind of output begins or the message finishes. Each byte the
//! model sends is handled once; nothing is re-read.

use thiserror::Error;

use crate::emitter::Emitter;
use crate::event::{EventKind, StreamedPart};
use crate::ids::{MessageId, ToolCallId};
use crate::message::{Message, Metadata, Role, Timestamp};
use crate::part::{Part, ReasoningPart, RefusalPart, TextPart, ToolArgs, ToolCall};

/// Builds one message from model output, emitting its events as it goes.
///
/// Text, reasoning and refusals are sequential: a delta of one kind closes an open part of
/// another kind, and a tool call or a whole part closes them too. Tool calls are independent:
/// several may stream at once (parallel calls, interleaved by the provider), each in its own part,
/// found by its id.
#[derive(Debug)]
pub struct MessageBuilder {
    message_id: MessageId,
    message: Message,
    open_text: Option<usize>,
    open_calls: Vec<OpenCall>,
}

/// What a message is known to be when it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageStart {
    /// The message's id, minted by the caller.
    pub message_id: MessageId,
    /// Who writes it.
    pub role: Role,
    /// What is known of it at the start.
    pub metadata: Metadata,
    /// When it was created.
    pub created_at: Option<Timestamp>,
}

impl MessageStart {
    /// A start with empty metadata and no time.
    pub fn new(message_id: impl Into<MessageId>, role: Role) -> Self {
        Self {
            message_id: message_id.into(),
            role,
            metadata: Metadata::default(),
            created_at: None,
        }
    }
}

/// A tool-call delta or end that does not fit the calls in progress. The model's provider
/// sent something inconsistent; the builder's state is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A second start for a call that is still streaming.
    #[error("tool call {tool_call_id} is already streaming")]
    DuplicateToolCall {
        /// The call.
        tool_call_id: ToolCallId,
    },
    /// A delta or end for a call that is not streaming.
    #[error("tool call {tool_call_id} is not streaming")]
    UnknownToolCall {
        /// The call.
        tool_call_id: ToolCallId,
    },
}

#[derive(Debug)]
struct OpenCall {
    index: usize,
    raw_args: String,
}

impl MessageBuilder {
    /// Starts a message: emits `message_start`.
    pub fn start(out: &mut Emitter, start: MessageStart) -> Self {
        out.emit(EventKind::MessageStart {
            message_id: start.message_id.clone(),
            role: start.role,
            metadata: start.metadata.clone(),
            created_at: start.created_at,
        });
        let message = Message {
            id: Some(start.message_id.clone()),
            role: start.role,
            parts: Vec::new(),
            metadata: start.metadata,
            created_at: start.created_at,
        };
        Self {
            message_id: start.message_id.clone(),
            message,
            open_text: None,
            open_calls: Vec::new(),
        }
    }

    /// The message as built so far; open parts hold what they have received.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The metadata that `message_complete` will carry, e.g. to add usage before finishing.
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.message.metadata
    }

    /// Appends answer text. An empty delta is ignored. A `String` becomes the event's delta
    /// as it is (no copy).
    pub fn text_delta(&mut self, out: &mut Emitter, text: impl Into<String>) {
        self.sequential_delta(out, StreamedPart::Text, text.into());
    }

    /// Appends reasoning text. An empty delta is ignored.
    pub fn reasoning_delta(&mut self, out: &mut Emitter, text: impl Into<String>) {
        self.sequential_delta(out, StreamedPart::Reasoning, text.into());
    }

    /// Appends refusal text. An empty delta is ignored.
    pub fn refusal_delta(&mut self, out: &mut Emitter, text: impl Into<String>) {
        self.sequential_delta(out, StreamedPart::Refusal, text.into());
    }

    /// Completes the open text, reasoning or refusal part, if any, so that the next delta starts a
    /// new part (as when a provider ends a content block).
    pub fn close_text(&mut self, out: &mut Emitter) {
        if let Some(index) = self.open_text.take() {
            self.emit_complete(out, index);
        }
    }

    /// Opens a tool call part; its argument text follows in [`Self::tool_call_delta`].
    pub fn tool_call_start(
        &mut self,
        out: &mut Emitter,
        tool_call_id: impl Into<ToolCallId>,
        tool_name: impl Into<String>,
    ) -> Result<(), BuildError> {
        let tool_call_id = tool_call_id.into();
        if self.open_call(tool_call_id.as_str()).is_some() {
            return Err(BuildError::DuplicateToolCall { tool_call_id });
        }
        self.close_text(out);
        let tool_name = tool_name.into();
        let index = self.message.parts.len();
        out.emit(EventKind::PartStart {
            message_id: self.message_id().clone(),
            index: wire_index(index),
            part: StreamedPart::ToolCall {
                tool_call_id: tool_call_id.clone(),
                tool_name: tool_name.clone(),
            },
        });
        self.message.parts.push(Part::ToolCall(ToolCall {
            tool_call_id,
            tool_name,
            args: ToolArgs(serde_json::Value::Null),
        }));
        self.open_calls.push(OpenCall {
            index,
            raw_args: String::new(),
        });
        Ok(())
    }

    /// Appends raw JSON text to a streaming call's arguments. An empty delta is ignored.
    pub fn tool_call_delta(
        &mut self,
        out: &mut Emitter,
        tool_call_id: &str,
        args: &str,
    ) -> Result<(), BuildError> {
        let Some(position) = self.open_call(tool_call_id) else {
            return Err(BuildError::UnknownToolCall {
                tool_call_id: tool_call_id.into(),
            });
        };
        if args.is_empty() {
            return Ok(());
        }
        let call = &mut self.open_calls[position];
        call.raw_args.push_str(args);
        let index = call.index;
        out.emit(EventKind::PartDelta {
            message_id: self.message_id().clone(),
            index: wire_index(index),
            delta: args.to_owned(),
        });
        Ok(())
    }

    /// Completes a streaming call: its argument text is parsed once, here (see [`ToolArgs`] for
    /// text that is not valid JSON).
    pub fn tool_call_end(
        &mut self,
        out: &mut Emitter,
        tool_call_id: &str,
    ) -> Result<(), BuildError> {
        let Some(position) = self.open_call(tool_call_id) else {
            return Err(BuildError::UnknownToolCall {
                tool_call_id: tool_call_id.into(),
            });
        };
        let call = self.open_calls.remove(position);
        self.end_call(out, call);
        Ok(())
    }

    /// Adds a part that is whole when produced (a tool result or error, a file, a step start, …):
    /// emits `part_complete` alone. Open text is completed first, so parts stay in the order they
    /// happened; streaming tool calls stay open.
    pub fn part(&mut self, out: &mut Emitter, part: Part) {
        self.close_text(out);
        self.message.parts.push(part);
        self.emit_complete(out, self.message.parts.len() - 1);
    }

    /// Completes every open part and emits `message_complete`. A tool call that never ended
    /// keeps the argument text it received.
    pub fn finish(mut self, out: &mut Emitter) {
        self.close_text(out);
        for call in std::mem::take(&mut self.open_calls) {
            self.end_call(out, call);
        }
        out.emit(EventKind::MessageComplete {
            message: self.message,
        });
    }

    /// The text a part has streamed so far: a text, reasoning or refusal part's text, an open
    /// tool call's argument text; `None` for a part of another kind or past the end.
    pub(crate) fn streamed_text(&self, index: usize) -> Option<&str> {
        match self.message.parts.get(index)? {
            Part::Text(TextPart { text })
            | Part::Reasoning(ReasoningPart { text })
            | Part::Refusal(RefusalPart { text }) => Some(text),
            Part::ToolCall(_) => self
                .open_calls
                .iter()
                .find(|call| call.index == index)
                .map(|call| call.raw_args.as_str()),
            _ => None,
        }
    }

    fn message_id(&self) -> &MessageId {
        &self.message_id
    }

    fn open_call(&self, tool_call_id: &str) -> Option<usize> {
        self.open_calls.iter().position(|call| {
            matches!(&self.message.parts[call.index], Part::ToolCall(part) if part.tool_call_id == tool_call_id)
        })
    }

    /// Closes any open text, reasoning or refusal part and opens a new one of `kind` (text,
    /// reasoning or refusal; anything else opens text) now, before its first delta: emits
    /// `part_start`. Returns its index. For writers that want a part to exist from the moment
    /// it is announced ([`crate::response`]); model output opens parts at their first delta.
    pub(crate) fn open_sequential(&mut self, out: &mut Emitter, kind: StreamedPart) -> usize {
        self.close_text(out);
        let index = self.message.parts.len();
        let kind = match kind {
            StreamedPart::Reasoning | StreamedPart::Refusal => kind,
            _ => StreamedPart::Text,
        };
        self.message.parts.push(match kind {
            StreamedPart::Reasoning => Part::Reasoning(ReasoningPart::default()),
            StreamedPart::Refusal => Part::Refusal(RefusalPart::default()),
            _ => Part::Text(TextPart::default()),
        });
        out.emit(EventKind::PartStart {
            message_id: self.message_id().clone(),
            index: wire_index(index),
            part: kind,
        });
        self.open_text = Some(index);
        index
    }

    fn sequential_delta(&mut self, out: &mut Emitter, kind: StreamedPart, text: String) {
        if text.is_empty() {
            return;
        }
        let index = match self.open_text {
            Some(index) if Self::streams_as(&self.message.parts[index], &kind) => index,
            _ => self.open_sequential(out, kind),
        };
        if let Part::Text(TextPart { text: buffer })
        | Part::Reasoning(ReasoningPart { text: buffer })
        | Part::Refusal(RefusalPart { text: buffer }) = &mut self.message.parts[index]
        {
            buffer.push_str(&text);
        }
        out.emit(EventKind::PartDelta {
            message_id: self.message_id().clone(),
            index: wire_index(index),
            delta: text,
        });
    }

    fn streams_as(part: &Part, kind: &StreamedPart) -> bool {
        matches!(
            (part, kind),
            (Part::Text(_), StreamedPart::Text)
                | (Part::Reasoning(_), StreamedPart::Reasoning)
                | (Part::Refusal(_), StreamedPart::Refusal)
        )
    }

    fn end_call(&mut self, out: &mut Emitter, call: OpenCall) {
        if let Part::ToolCall(part) = &mut self.message.parts[call.index] {
            part.args = ToolArgs::from_json_text(&call.raw_args);
        }
        self.emit_complete(out, call.index);
    }

    fn emit_complete(&self, out: &mut Emitter, index: usize) {
        out.emit(EventKind::PartComplete {
            message_id: self.message_id().clone(),
            index: wire_index(index),
            part: self.message.parts[index].clone(),
        });
    }
}

/// Part indexes are `u32` on the wire; a message never holds four billion parts.
fn wire_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::Event;

    fn names(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|event| match &event.kind {
                EventKind::PartStart { index, part, .. } => {
                    format!("start {index} {}", part.type_name())
                }
                EventKind::PartDelta { index, delta, .. } => format!("delta {index} {delta}"),
                EventKind::PartComplete { index, part, .. } => {
                    format!("complete {index} {}", part.type_name())
                }
                _ => event.name().to_owned(),
            })
            .collect()
    }

    #[test]
    fn kinds_of_text_take_turns() {
        let mut out = Emitter::default();
        let mut builder = MessageBuilder::start(&mut out, MessageStart::new("m", Role::Assistant));
        builder.reasoning_delta(&mut out, "think");
        builder.text_delta(&mut out, "");
        builder.text_delta(&mut out, "say");
        builder.text_delta(&mut out, " more");
        builder.finish(&mut out);
        let events: Vec<Event> = out.drain().collect();
        assert_eq!(
            names(&events),
            [
                "message_start",
                "start 0 reasoning",
                "delta 0 think",
                "complete 0 reasoning",
                "start 1 text",
                "delta 1 say",
                "delta 1  more",
                "complete 1 text",
                "message_complete",
            ]
        );
        let seqs: Vec<u64> = events.iter().map(|event| event.seq).collect();
        assert_eq!(seqs, (1..=9).collect::<Vec<_>>());
    }

    #[test]
    fn interleaved_calls_keep_their_own_parts() -> Result<(), BuildError> {
        let mut out = Emitter::default();
        let mut builder = MessageBuilder::start(&mut out, MessageStart::new("m", Role::Assistant));
        builder.text_delta(&mut out, "two calls");
        builder.tool_call_start(&mut out, "a", "f")?;
        builder.tool_call_start(&mut out, "b", "g")?;
        builder.tool_call_delta(&mut out, "b", "{\"y\":")?;
        builder.tool_call_delta(&mut out, "a", "{\"x\":")?;
        builder.tool_call_delta(&mut out, "a", "1}")?;
        builder.tool_call_delta(&mut out, "b", "2}")?;
        builder.tool_call_end(&mut out, "b")?;
        builder.tool_call_end(&mut out, "a")?;
        assert_eq!(
            builder.message().parts[1],
            Part::tool_call("a", "f", json!({"x": 1}))
        );
        assert_eq!(
            builder.message().parts[2],
            Part::tool_call("b", "g", json!({"y": 2}))
        );
        assert_eq!(
            builder.tool_call_delta(&mut out, "a", "x"),
            Err(BuildError::UnknownToolCall {
                tool_call_id: "a".into()
            })
        );
        Ok(())
    }

    #[test]
    fn finish_closes_unended_calls_with_what_they_have() -> Result<(), BuildError> {
        let mut out = Emitter::default();
        let mut builder = MessageBuilder::start(&mut out, MessageStart::new("m", Role::Assistant));
        builder.tool_call_start(&mut out, "a", "f")?;
        assert_eq!(
            builder.tool_call_start(&mut out, "a", "f"),
            Err(BuildError::DuplicateToolCall {
                tool_call_id: "a".into()
            })
        );
        builder.tool_call_delta(&mut out, "a", "{\"x\":")?;
        builder.finish(&mut out);
        let last = out.drain().next_back();
        let Some(Event {
            kind: EventKind::MessageComplete { message },
            ..
        }) = last
        else {
            panic!("ends with message_complete");
        };
        assert_eq!(message.parts, [Part::tool_call("a", "f", json!("{\"x\":"))]);
        Ok(())
    }
}
