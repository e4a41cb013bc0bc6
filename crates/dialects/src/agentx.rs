//! AgentX message packets (seed 000 §4): a turn streams as a sequence of partial `Message`
//! objects that share one `id`, over one connection (`POST /chat`).
//!
//! ```text
//! id: 5
//! data: {"id":"msg_abc","role":"assistant","parts":[{"type":"text","text":"I have"}]}
//!
//! id: 6
//! data: {"id":"msg_abc","role":"assistant","parts":[{"type":"text","text":" successfully"}]}
//! ```
//!
//! Framing is SSE. Each packet is a `data:` frame of the default event type, carrying one
//! message's `id`, `role` and what is new:
//! - a text, reasoning or refusal delta is a packet with one part holding the delta's text;
//!   consecutive packets of the same kind append to the same part, as in the seed's example;
//! - a tool call is one packet with the whole call (`args` parsed), sent when it completes, as
//!   the seed shows it; tool results, tool errors and every other whole part are one packet each;
//! - the message's final metadata (usage, agent name), when it has any, is one last packet with
//!   no parts. A message that produced no packet at all is sent as one empty packet so it exists.
//!
//! The run's own events, which a packet cannot carry, travel beside the packets as native events
//! with their names (`event: run_status`, `event: run_created`, `event: error`), so a client
//! learns that the run failed or waits for an approval. Heartbeats are SSE comments. The last
//! frame written for an event has `id:` = its sequence number, so `Last-Event-ID` resumes.
//!
//! Packets go out in part order: a part that completes (or a delta that arrives) while a part
//! before it still streams, as with parallel tool calls, waits until that part is complete.
//!
//! # Losses
//! - Tool-call arguments do not stream: the call arrives whole when its arguments are complete.
//! - Two adjacent parts of the same text kind (two text parts with nothing between them) arrive
//!   as one part; the packets carry no part boundary.
//! - `created_at` and the metadata of `message_start` are not sent; the final metadata is.
//! - Sequence numbers: the decoder numbers the events it makes from 1.

use std::collections::VecDeque;

use agentwire_core::part::RefusalPart;
use agentwire_core::{
    Emitter, Event, EventKind, GenerationSettings, Message, MessageId, Metadata, Part, Role,
    RunStatus, SessionId, StreamedPart, ToolSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader, write_comment, write_frame};
use crate::{Encoder, StreamDecoder};

/// The body of `POST /chat`: the new messages, and the session to continue.
///
/// Accepted forms: one message (as the seed sends it), an array of messages, or
/// `{"messages": [...], "session_id"?: "…", "agent"?: "…"}`. The object form also takes the
/// run's generation settings as top-level keys, as the native body does (`model`,
/// `temperature`, `top_p`, `max_tokens`, `stop`, `seed`, the penalties, `n`), and the tools the
/// client runs itself as `tools` (OpenAI's function format, or `{name, description,
/// parameters}`): seed 000 names neither, and a client that sends only messages is unaffected.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The agent to run; `None` means the default agent (or the one in the URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session to continue; `None` starts a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The new messages, in either spelling of the model.
    pub messages: Vec<Message>,
    /// The run's generation settings, overriding the agent's defaults.
    #[serde(flatten)]
    pub settings: GenerationSettings,
    /// Tools the client executes itself, for this run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
}

/// Reads a `POST /chat` body. A setting or tool that cannot be used is an
/// [`DecodeError::InvalidField`] naming it.
pub fn decode_request(body: &[u8]) -> Result<ChatRequest, DecodeError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Body {
        Envelope {
            messages: Vec<Message>,
            #[serde(default)]
            session_id: Option<SessionId>,
            #[serde(default)]
            agent: Option<String>,
            /// Everything else: the settings and tools.
            #[serde(flatten)]
            rest: Map<String, Value>,
        },
        Many(Vec<Message>),
        One(Box<Message>),
    }
    let body = serde_json::from_slice::<Body>(body).or_else(|_| {
        // The untagged error says only "did not match"; parse as one message to say why.
        serde_json::from_slice::<Message>(body)
            .map(|message| Body::One(Box::new(message)))
            .map_err(|source| DecodeError::InvalidRequest { source })
    })?;
    let only = |messages| ChatRequest {
        agent: None,
        session_id: None,
        messages,
        settings: GenerationSettings::default(),
        tools: Vec::new(),
    };
    Ok(match body {
        Body::Envelope {
            messages,
            session_id,
            agent,
            rest,
        } => ChatRequest {
            agent,
            session_id,
            messages,
            settings: GenerationSettings::from_object(&rest)?,
            tools: crate::declared_tools(&rest)?,
        },
        Body::Many(messages) => only(messages),
        Body::One(message) => only(vec![*message]),
    })
}

/// A packet as written: borrowed pieces, so a delta is not copied into a `Message` to send it.
#[derive(Serialize)]
struct Packet<'a, P: Serialize> {
    id: &'a MessageId,
    role: Role,
    parts: P,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
}

/// One streamed text-like part as a packet part: `{"type": "text", "text": "<delta>"}`.
#[derive(Serialize)]
struct TextChunk<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

/// Encodes events as AgentX packets over SSE.
///
/// Packets go out in part order: a part that completes (or a delta that arrives) while a part
/// before it is still streaming waits until that one is complete, as happens with parallel tool
/// calls. Only then can the receiver, which knows no part indexes, rebuild the parts in order.
#[derive(Debug, Default)]
pub struct AgentxEncoder {
    open: Vec<OpenMessage>,
}

/// What the encoder keeps of a message being streamed.
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
    /// `text`, `reasoning` or `refusal` for a streamed text-like part.
    text_kind: Option<&'static str>,
    /// Text of the part received while a part before it was still open.
    held: String,
    /// Whether a packet of this part's text was written.
    streamed: bool,
    /// The part, once complete.
    complete: Option<Part>,
}

impl Encoder for AgentxEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if let EventKind::Heartbeat {} = event.kind {
            write_comment(out, "heartbeat");
            return;
        }
        let start = out.len();
        self.write_frames(event, out);
        // The last frame an event wrote carries its number: a client that saw it has seen the
        // whole event, so `Last-Event-ID` resumes after it and loses nothing.
        if out.len() > start {
            let last = out[start..out.len() - 2]
                .windows(2)
                .rposition(|pair| pair == b"\n\n")
                .map_or(start, |at| start + at + 2);
            let id = format!("id: {}\n", event.seq);
            out.splice(last..last, id.into_bytes());
        }
    }
}

impl AgentxEncoder {
    fn write_frames(&mut self, event: &Event, out: &mut Vec<u8>) {
        match &event.kind {
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
                    StreamedPart::Text => "text",
                    StreamedPart::Reasoning => "reasoning",
                    StreamedPart::Refusal => "refusal",
                    StreamedPart::ToolCall { .. } => return,
                };
                if let Some(slot) = self.slot(message_id, *index) {
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
                    message.write_text(out, kind, delta);
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
                message.flush(out);
            }
            EventKind::MessageComplete { message } => {
                let Some(id) = message.id.as_ref() else {
                    return;
                };
                let Some(position) = self.open.iter().position(|open| open.id == *id) else {
                    return;
                };
                let open = self.open.swap_remove(position);
                let metadata = (!message.metadata.is_empty()).then_some(&message.metadata);
                if metadata.is_some() || !open.sent {
                    write_packet(out, &open.id, open.role, &[] as &[Part], metadata);
                }
            }
            EventKind::RunCreated { .. } | EventKind::RunStatus { .. } | EventKind::Error(_) => {
                let json = serde_json::to_string(event).unwrap_or_default();
                write_frame(out, None, Some(event.name()), &json);
            }
            EventKind::Heartbeat {} => {}
        }
    }

    fn message(&mut self, id: &MessageId) -> Option<&mut OpenMessage> {
        self.open.iter_mut().find(|open| open.id == *id)
    }

    fn slot(&mut self, id: &MessageId, index: u32) -> Option<&mut Slot> {
        self.message(id)?.slot(index)
    }
}

impl OpenMessage {
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
    fn flush(&mut self, out: &mut Vec<u8>) {
        while let Some(front) = self.waiting.front_mut() {
            if let Some(kind) = front.text_kind
                && !front.held.is_empty()
            {
                let held = std::mem::take(&mut front.held);
                front.streamed = true;
                self.write_text(out, kind, &held);
            }
            let Some(front) = self.waiting.front() else {
                break;
            };
            let Some(part) = &front.complete else {
                break;
            };
            // Streamed text was written delta by delta; a part without any is written whole.
            if !front.streamed {
                self.sent = true;
                write_packet(out, &self.id, self.role, std::slice::from_ref(part), None);
            }
            self.waiting.pop_front();
            self.next += 1;
        }
    }

    fn write_text(&mut self, out: &mut Vec<u8>, kind: &'static str, text: &str) {
        self.sent = true;
        let chunk = [TextChunk { kind, text }];
        write_packet(out, &self.id, self.role, &chunk, None);
    }
}

fn write_packet<P: Serialize>(
    out: &mut Vec<u8>,
    id: &MessageId,
    role: Role,
    parts: P,
    metadata: Option<&Metadata>,
) {
    out.extend_from_slice(b"data: ");
    // Serializing a packet cannot fail: its keys are strings and its numbers finite. JSON text
    // has no raw newline, so the packet is one `data:` line.
    let packet = Packet {
        id,
        role,
        parts,
        metadata,
    };
    let _ = serde_json::to_writer(&mut *out, &packet);
    out.extend_from_slice(b"\n\n");
}

/// Decodes AgentX packets (and the run events beside them) into events.
///
/// A packet without an `id` belongs to the message of the previous packet without one (the
/// seed's first example has none); such messages get ids `agentx_1`, `agentx_2`, ….
#[derive(Debug, Default)]
pub struct AgentxDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    out: Emitter,
    current: Option<Current>,
    n_anonymous: u64,
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

/// A packet as read.
#[derive(Deserialize)]
struct InPacket {
    #[serde(default)]
    id: Option<MessageId>,
    role: Role,
    #[serde(default)]
    parts: Vec<Part>,
    #[serde(default)]
    metadata: Metadata,
}

impl StreamDecoder for AgentxDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        let frames = std::mem::take(&mut self.frames);
        for frame in &frames {
            self.n_frames += 1;
            self.frame(frame)?;
        }
        self.frames = frames;
        self.frames.clear();
        out.extend(self.out.drain());
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()?;
        self.complete_message();
        out.extend(self.out.drain());
        Ok(())
    }
}

impl AgentxDecoder {
    fn frame(&mut self, frame: &SseFrame) -> Result<(), DecodeError> {
        let invalid = |source| DecodeError::InvalidFrame {
            frame: self.n_frames,
            source,
        };
        match frame.event.as_deref() {
            None | Some("message") => {
                let packet: InPacket = serde_json::from_str(&frame.data).map_err(invalid)?;
                self.packet(packet);
            }
            Some(name @ ("run_created" | "run_status" | "error")) => {
                let event: Event = serde_json::from_str(&frame.data).map_err(invalid)?;
                if event.name() != name {
                    return Ok(());
                }
                // A run that ends or waits ends its message; an error mid-message does not.
                if let EventKind::RunStatus { status, .. } = &event.kind
                    && *status != RunStatus::InProgress
                {
                    self.complete_message();
                }
                self.out.emit(event.kind);
            }
            Some(_) => {}
        }
        Ok(())
    }

    fn packet(&mut self, packet: InPacket) {
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
                    MessageId::from(format!("agentx_{}", self.n_anonymous))
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
    }

    /// Completes the message being received, if any.
    fn complete_message(&mut self) {
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
            .unwrap_or_else(|| MessageId::from("agentx"))
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
