//! AgentX message packets: a turn streams as a sequence of partial `Message`
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
//!   consecutive packets of the same kind append to the same part, as in AgentX's example;
//! - a tool call is one packet with the whole call (`args` parsed), sent when it completes, as
//!   AgentX shows it; tool results, tool errors and every other whole part are one packet each;
//! - the message's final metadata (usage, agent name), when it has any, is one last packet with
//!   no parts. A message that produced no packet at all is sent as one empty packet so it exists.
//!
//! The run's own events, which a packet cannot carry, travel beside the packets as native events
//! with their names (`event: run_status`, `event: run_created`, `event: error`, and the
//! session's shared state as `event: state_snapshot` / `event: state_delta`), so a client
//! learns that the run failed or waits for an approval, and what the state is. Heartbeats are SSE comments. The last
//! frame written for an event has `id:` = its sequence number, so `Last-Event-ID` resumes.
//!
//! A sub-agent's run nested in the stream is not the conversation's, and a packet names only a
//! message: its packets would join the run's messages (every agent's first message may be
//! `msg_1`). So every event of a sub-agent's run travels as a native event too, with its name
//! and its `namespace` (`event: part_delta`, `data: {"seq", "namespace": ["run_b"], …}`). A
//! receiver that reads packets alone (an `EventSource`'s `onmessage`) sees the run's own
//! conversation, with the sub-agent's answer as its call's result; the decoder reads the
//! sub-agents' events back exactly.
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

use agentwire_core::{
    Event, EventKind, GenerationSettings, Message, MessageId, Metadata, Part, Role, RunStatus,
    SessionId, ToolSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::DecodeError;
use crate::packet::{
    InPacket, PacketAssembler, PacketOrder, Piece, Sender, TextKind, number_last_frame,
};
use crate::sse::{SseFrame, SseReader, write_comment, write_frame};
use crate::{Encoder, StreamDecoder};

/// The body of `POST /chat`: the new messages, and the session to continue.
///
/// Accepted forms: one message (as an AgentX client sends it), an array of messages, or
/// `{"messages": [...], "session_id"?: "…", "agent"?: "…"}`. The object form also takes the
/// run's generation settings as top-level keys, as the native body does (`model`,
/// `temperature`, `top_p`, `max_tokens`, `stop`, `seed`, the penalties, `n`), and the tools the
/// client runs itself as `tools` (OpenAI's function format, or `{name, description,
/// parameters}`): AgentX names neither, and a client that sends only messages is unaffected.
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
    order: PacketOrder,
}

impl Encoder for AgentxEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if let EventKind::Heartbeat {} = event.kind {
            write_comment(out, "heartbeat");
            return;
        }
        let start = out.len();
        self.write_frames(event, out);
        number_last_frame(out, start, event.seq);
    }
}

impl AgentxEncoder {
    fn write_frames(&mut self, event: &Event, out: &mut Vec<u8>) {
        match &event.kind {
            // A sub-agent's run is not the conversation's: its packets would join the run's
            // messages (a receiver knows messages by id alone), so every event of it rides
            // beside them as a native event with its namespace.
            _ if !event.is_own() => {
                let mut json = Vec::new();
                event.write_json(&mut json);
                write_frame(
                    out,
                    None,
                    Some(event.name()),
                    &String::from_utf8_lossy(&json),
                );
            }
            EventKind::RunCreated { .. }
            | EventKind::RunStatus { .. }
            | EventKind::Error(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => {
                let json = serde_json::to_string(event).unwrap_or_default();
                write_frame(out, None, Some(event.name()), &json);
            }
            kind => self
                .order
                .push(kind, &mut |sender, piece| write_piece(out, sender, piece)),
        }
    }
}

fn write_piece(out: &mut Vec<u8>, sender: Sender<'_>, piece: Piece<'_>) {
    match piece {
        Piece::Text { kind, text } => {
            let kind = match kind {
                TextKind::Text => "text",
                TextKind::Reasoning => "reasoning",
                TextKind::Refusal => "refusal",
            };
            let chunk = [TextChunk { kind, text }];
            write_packet(out, sender.id, sender.role, &chunk, None);
        }
        Piece::Part(part) => write_packet(
            out,
            sender.id,
            sender.role,
            std::slice::from_ref(part),
            None,
        ),
        // The final metadata, when there is any, is one last packet without parts; a message
        // that produced no packet at all is sent as one empty packet so that it exists.
        Piece::End { message, sent } => {
            let metadata = (!message.metadata.is_empty()).then_some(&message.metadata);
            if metadata.is_some() || !sent {
                write_packet(out, sender.id, sender.role, &[] as &[Part], metadata);
            }
        }
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
/// A packet without an `id` belongs to the message of the previous packet without one (AgentX's
/// first example has none); such messages get ids `agentx_1`, `agentx_2`, ….
#[derive(Debug)]
pub struct AgentxDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    packets: PacketAssembler,
}

impl Default for AgentxDecoder {
    fn default() -> Self {
        Self {
            reader: SseReader::default(),
            frames: Vec::new(),
            n_frames: 0,
            packets: PacketAssembler::new("agentx"),
        }
    }
}

/// A packet as read.
#[derive(Deserialize)]
struct WirePacket {
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
        out.extend(self.packets.out().drain());
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()?;
        self.packets.complete_message();
        out.extend(self.packets.out().drain());
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
                let packet: WirePacket = serde_json::from_str(&frame.data).map_err(invalid)?;
                self.packets.packet(InPacket {
                    id: packet.id,
                    role: packet.role,
                    parts: packet.parts,
                    metadata: packet.metadata,
                    created_at: None,
                });
            }
            Some(name) if Event::NAMES.contains(&name) && frame.data.contains("\"namespace\"") => {
                let event: Event = serde_json::from_str(&frame.data).map_err(invalid)?;
                if event.name() != name {
                    return Ok(());
                }
                match (event.is_own(), name) {
                    // A sub-agent's event, as it was.
                    (false, _) => {
                        self.packets.out().emit_in(event.namespace, event.kind);
                    }
                    (
                        true,
                        "run_created" | "run_status" | "error" | "state_snapshot" | "state_delta",
                    ) => self.run_event(event),
                    (true, _) => {}
                }
            }
            Some(
                name @ ("run_created" | "run_status" | "error" | "state_snapshot" | "state_delta"),
            ) => {
                let event: Event = serde_json::from_str(&frame.data).map_err(invalid)?;
                if event.name() != name {
                    return Ok(());
                }
                self.run_event(event);
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// A run event beside the packets.
    fn run_event(&mut self, event: Event) {
        // A run that ends or waits ends its message; an error mid-message does not.
        if let EventKind::RunStatus { status, .. } = &event.kind
            && *status != RunStatus::InProgress
        {
            self.packets.complete_message();
        }
        self.packets.out().emit(event.kind);
    }
}
