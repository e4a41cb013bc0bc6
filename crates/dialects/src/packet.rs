//! What the message-packet dialects ([`agentx`](crate::agentx), [`viber`](crate::viber)) share:
//! the order packets leave in ([`PacketOrder`]) and the assembly of packets back into events
//! ([`PacketAssembler`]). Both dialects stream a turn as partial messages sharing one id, a text
//! delta or a whole part per packet; they differ only in how a packet is spelled, which stays in
//! their modules.
//!
//! The receiver of a packet knows no part indexes, so packets go out in part order: a part that
//! completes (or a delta that arrives) while a part before it still streams, as with parallel
//! tool calls, waits until that part is complete.

use std::collections::VecDeque;

use agentwire_core::part::RefusalPart;
use agentwire_core::{
    Emitter, EventKind, Message, MessageId, Metadata, Part, Role, StreamedPart, Timestamp,
};

/// The kind of a part whose text streams in packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextKind {
    Text,
    Reasoning,
    Refusal,
}

/// One packet's worth of a message, ready to be spelled by a dialect.
#[derive(Debug)]
pub(crate) enum Piece<'a> {
    /// Text of a streamed text-like part: one delta, or text held back while a part before it
    /// streamed.
    Text { kind: TextKind, text: &'a str },
    /// A part that goes whole (a tool call, a result, every part that does not stream, and a
    /// text-like part that arrived without deltas).
    Part(&'a Part),
    /// The message has completed and its parts are out: what the dialect may add in a last
    /// packet. `sent` says whether any packet of the message was written.
    End { message: &'a Message, sent: bool },
}

/// The message a packet belongs to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sender<'a> {
    pub(crate) id: &'a MessageId,
    pub(crate) role: Role,
}

/// Puts the parts of the messages being streamed in order (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct PacketOrder {
    open: Vec<OpenMessage>,
}

/// What the order keeps of a message being streamed.
#[derive(Debug)]
struct OpenMessage {
    id: MessageId,
    role: Role,
    /// Whether any packet of this message was written.
    sent: bool,
    /// The index of `waiting[0]`: every part before it has been written.
    next: u32,
    /// The parts from `next` on, written when every part before them is.
    waiting: VecDeque<Slot>,
}

/// A part not yet written in full.
#[derive(Debug, Default)]
struct Slot {
    /// The kind of a streamed text-like part.
    text_kind: Option<TextKind>,
    /// Text of the part received while a part before it was still open.
    held: String,
    /// Whether a packet of this part's text was written.
    streamed: bool,
    /// The part, once complete.
    complete: Option<Part>,
}

impl PacketOrder {
    /// Takes a message event and calls `write` for every packet that may go out now, in order,
    /// ending with [`Piece::End`] at `message_complete`. Events that are not about messages are
    /// ignored.
    pub(crate) fn push(&mut self, event: &EventKind, write: &mut dyn FnMut(Sender<'_>, Piece<'_>)) {
        match event {
            EventKind::MessageStart {
                message_id, role, ..
            } => self.open.push(OpenMessage {
                id: message_id.clone(),
                role: *role,
                sent: false,
                next: 0,
                waiting: VecDeque::new(),
            }),
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                let text_kind = match part {
                    StreamedPart::Text => TextKind::Text,
                    StreamedPart::Reasoning => TextKind::Reasoning,
                    StreamedPart::Refusal => TextKind::Refusal,
                    StreamedPart::ToolCall { .. } => return,
                };
                if let Some(slot) = self.message(message_id).and_then(|open| open.slot(*index)) {
                    slot.text_kind = Some(text_kind);
                }
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                let Some(message) = self.message(message_id) else {
                    return;
                };
                let at_front = *index == message.next;
                // Tool-call argument deltas have no text kind: the call goes whole.
                let Some(slot) = message.slot(*index) else {
                    return;
                };
                let Some(kind) = slot.text_kind else {
                    return;
                };
                if at_front {
                    slot.streamed = true;
                    message.sent = true;
                    write(message.sender(), Piece::Text { kind, text: delta });
                } else {
                    slot.held.push_str(delta);
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                let Some(message) = self.message(message_id) else {
                    return;
                };
                if let Some(slot) = message.slot(*index) {
                    slot.complete = Some(part.clone());
                }
                message.flush(write);
            }
            EventKind::MessageComplete { message } => {
                let Some(id) = message.id.as_ref() else {
                    return;
                };
                let Some(position) = self.open.iter().position(|open| open.id == *id) else {
                    return;
                };
                let open = self.open.swap_remove(position);
                let sent = open.sent;
                write(open.sender(), Piece::End { message, sent });
            }
            EventKind::RunCreated { .. }
            | EventKind::RunStatus { .. }
            | EventKind::Heartbeat {}
            | EventKind::Input(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. }
            | EventKind::Error(_) => {}
        }
    }

    fn message(&mut self, id: &MessageId) -> Option<&mut OpenMessage> {
        self.open.iter_mut().find(|open| open.id == *id)
    }
}

impl OpenMessage {
    fn sender(&self) -> Sender<'_> {
        Sender {
            id: &self.id,
            role: self.role,
        }
    }

    /// The slot of part `index`, made on first sight; `None` for a part already written.
    fn slot(&mut self, index: u32) -> Option<&mut Slot> {
        let offset = usize::try_from(index.checked_sub(self.next)?).ok()?;
        if offset >= self.waiting.len() {
            self.waiting.resize_with(offset + 1, Slot::default);
        }
        self.waiting.get_mut(offset)
    }

    /// Writes what can go out from the front: held text, then each complete part in order,
    /// stopping at the first part still open.
    fn flush(&mut self, write: &mut dyn FnMut(Sender<'_>, Piece<'_>)) {
        let sender = Sender {
            id: &self.id,
            role: self.role,
        };
        while let Some(front) = self.waiting.front_mut() {
            if let Some(kind) = front.text_kind
                && !front.held.is_empty()
            {
                front.streamed = true;
                self.sent = true;
                write(
                    sender,
                    Piece::Text {
                        kind,
                        text: &front.held,
                    },
                );
                front.held.clear();
            }
            let Some(part) = &front.complete else {
                break;
            };
            // Streamed text was written delta by delta; a part without any is written whole.
            if !front.streamed {
                self.sent = true;
                write(sender, Piece::Part(part));
            }
            self.waiting.pop_front();
            self.next += 1;
        }
    }
}

/// Builds events from packets: consecutive text-like pieces of one kind grow one part, every
/// other part is whole. A packet with another id than the one before starts a new message.
///
/// A packet without an `id` belongs to the message of the previous packet without one; such
/// messages get ids `<prefix>_1`, `<prefix>_2`, ….
#[derive(Debug)]
pub(crate) struct PacketAssembler {
    out: Emitter,
    current: Option<Current>,
    prefix: &'static str,
    n_anonymous: u64,
}

/// A packet as a dialect read it.
#[derive(Debug)]
pub(crate) struct InPacket {
    pub(crate) id: Option<MessageId>,
    pub(crate) role: Role,
    pub(crate) parts: Vec<Part>,
    pub(crate) metadata: Metadata,
    pub(crate) created_at: Option<Timestamp>,
}

/// The message being received.
#[derive(Debug)]
struct Current {
    /// The id the packets give, `None` for packets without one.
    wire_id: Option<MessageId>,
    message: Message,
    /// The text-like part still growing: its kind and its text so far.
    open: Option<(StreamedPart, String)>,
}

impl PacketAssembler {
    /// An assembler naming messages without an id `<prefix>_<n>`.
    pub(crate) fn new(prefix: &'static str) -> Self {
        Self {
            out: Emitter::default(),
            current: None,
            prefix,
            n_anonymous: 0,
        }
    }

    /// The events made so far, to be drained.
    pub(crate) fn out(&mut self) -> &mut Emitter {
        &mut self.out
    }

    /// Takes one packet.
    pub(crate) fn packet(&mut self, packet: InPacket) {
        let same = self
            .current
            .as_ref()
            .is_some_and(|current| current.wire_id == packet.id);
        if !same {
            self.complete_message();
            let id = match &packet.id {
                Some(id) => id.clone(),
                None => {
                    self.n_anonymous += 1;
                    MessageId::from(format!("{}_{}", self.prefix, self.n_anonymous))
                }
            };
            self.out.emit(EventKind::MessageStart {
                message_id: id.clone(),
                role: packet.role,
                metadata: Metadata::default(),
                created_at: None,
            });
            self.current = Some(Current {
                wire_id: packet.id,
                message: Message::new(packet.role, Vec::new()).with_id(id),
                open: None,
            });
        }
        let Some(current) = self.current.as_mut() else {
            return;
        };
        for part in packet.parts {
            current.part(&mut self.out, part);
        }
        if !packet.metadata.is_empty() {
            let metadata = &mut current.message.metadata;
            metadata.agent_name = packet.metadata.agent_name.or(metadata.agent_name.take());
            metadata.usage = packet.metadata.usage.or(metadata.usage);
            metadata.extra.extend(packet.metadata.extra);
        }
        if packet.created_at.is_some() {
            current.message.created_at = packet.created_at;
        }
    }

    /// Completes the message being received, if any.
    pub(crate) fn complete_message(&mut self) {
        let Some(mut current) = self.current.take() else {
            return;
        };
        current.close(&mut self.out);
        self.out.emit(EventKind::MessageComplete {
            message: current.message,
        });
    }
}

impl Current {
    fn id(&self) -> MessageId {
        self.message
            .id
            .clone()
            .unwrap_or_else(|| MessageId::from("packet"))
    }

    fn part(&mut self, out: &mut Emitter, part: Part) {
        let (kind, text) = match part {
            Part::Text(text) => (StreamedPart::Text, text.text),
            Part::Reasoning(reasoning) => (StreamedPart::Reasoning, reasoning.text),
            Part::Refusal(refusal) => (StreamedPart::Refusal, refusal.text),
            whole => {
                self.close(out);
                let index = self.message.parts.len();
                self.message.parts.push(whole.clone());
                out.emit(EventKind::PartComplete {
                    message_id: self.id(),
                    index: wire_index(index),
                    part: whole,
                });
                return;
            }
        };
        if self.open.as_ref().is_none_or(|open| open.0 != kind) {
            self.close(out);
            out.emit(EventKind::PartStart {
                message_id: self.id(),
                index: wire_index(self.message.parts.len()),
                part: kind.clone(),
            });
            self.open = Some((kind, String::new()));
        }
        if !text.is_empty() {
            out.emit(EventKind::PartDelta {
                message_id: self.id(),
                index: wire_index(self.message.parts.len()),
                delta: text.clone(),
            });
            if let Some(open) = self.open.as_mut() {
                open.1.push_str(&text);
            }
        }
    }

    /// Completes the open text-like part, if any.
    fn close(&mut self, out: &mut Emitter) {
        let Some((kind, text)) = self.open.take() else {
            return;
        };
        let part = match kind {
            StreamedPart::Reasoning => Part::reasoning(text),
            StreamedPart::Refusal => Part::Refusal(RefusalPart { text }),
            _ => Part::text(text),
        };
        let index = self.message.parts.len();
        self.message.parts.push(part.clone());
        out.emit(EventKind::PartComplete {
            message_id: self.id(),
            index: wire_index(index),
            part,
        });
    }
}

/// A part's index on the wire; a message has far fewer than 2³² parts.
fn wire_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// Appends `id: <seq>` to the last frame written since `start`: a client that saw it has seen
/// the whole event, so `Last-Event-ID` resumes after it and loses nothing.
pub(crate) fn number_last_frame(out: &mut Vec<u8>, start: usize, seq: u64) {
    if out.len() <= start {
        return;
    }
    let last = out[start..out.len().saturating_sub(2).max(start)]
        .windows(2)
        .rposition(|pair| pair == b"\n\n")
        .map_or(start, |at| start + at + 2);
    let id = format!("id: {seq}\n");
    out.splice(last..last, id.into_bytes());
}
