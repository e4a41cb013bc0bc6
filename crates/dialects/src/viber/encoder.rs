//! [`ViberEncoder`]: canonical events → Viber packets and status frames.

use std::borrow::Cow;

use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, MessageId, Part, Role, RunId, RunStatus, SessionId,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{ChatStatus, WirePart, WireUsage, metadata_json};
use crate::Encoder;
use crate::packet::{PacketOrder, Piece, Sender, TextKind, number_last_frame};
use crate::sse::{write_comment, write_frame};

/// Encodes events as Viber packets and status frames over SSE. One encoder serves one stream,
/// in order; it remembers the run and its space from `run_created`, so every status frame
/// names them.
#[derive(Debug, Default)]
pub struct ViberEncoder {
    order: PacketOrder,
    space_id: Option<SessionId>,
    run_id: Option<RunId>,
}

/// A packet as written.
#[derive(Serialize)]
struct OutPacket<'a> {
    id: &'a MessageId,
    role: Role,
    parts: &'a [WirePart<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    metadata: Map<String, Value>,
}

/// A status frame as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutStatus<'a> {
    status: ChatStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    space_id: Option<&'a SessionId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a RunId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    awaiting: Option<Awaiting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<WireUsage>,
}

impl Encoder for ViberEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        // A sub-agent's run is not written: see the module docs' losses.
        if !event.is_own() {
            return;
        }
        let start = out.len();
        match &event.kind {
            EventKind::Heartbeat {} => {
                write_comment(out, "heartbeat");
                return;
            }
            EventKind::RunCreated {
                run_id,
                session_id,
                agent,
                ..
            } => {
                self.run_id = Some(run_id.clone());
                self.space_id = session_id.clone();
                let frame = self.status(ChatStatus::Streaming, agent.as_deref());
                write_status(out, &frame);
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => {
                let frame = OutStatus {
                    run_status: Some(status.name()),
                    awaiting: match status {
                        RunStatus::Awaiting(awaiting) => Some(*awaiting),
                        _ => None,
                    },
                    error: error.as_ref(),
                    usage: usage.map(WireUsage::from),
                    ..self.status(chat_status(*status), None)
                };
                write_status(out, &frame);
            }
            EventKind::Error(error) => {
                let json = serde_json::to_string(error).unwrap_or_default();
                write_frame(out, None, Some("error"), &json);
            }
            kind => self
                .order
                .push(kind, &mut |sender, piece| write_piece(out, sender, piece)),
        }
        number_last_frame(out, start, event.seq);
    }
}

impl ViberEncoder {
    /// An encoder for a stream that joins run `run_id` in space `space_id` after its start
    /// (an answered approval, a resumed stream), so its status frames name them though it sees
    /// no `run_created`.
    pub fn continuing(space_id: SessionId, run_id: RunId) -> Self {
        Self {
            space_id: Some(space_id),
            run_id: Some(run_id),
            ..Self::default()
        }
    }

    /// A status frame naming the run and its space.
    fn status<'a>(&'a self, status: ChatStatus, agent: Option<&'a str>) -> OutStatus<'a> {
        OutStatus {
            status,
            space_id: self.space_id.as_ref(),
            run_id: self.run_id.as_ref(),
            agent,
            run_status: None,
            awaiting: None,
            error: None,
            usage: None,
        }
    }
}

/// The `useXChat` status of a run in `status`.
fn chat_status(status: RunStatus) -> ChatStatus {
    match status {
        RunStatus::Created | RunStatus::Queued | RunStatus::InProgress => ChatStatus::Streaming,
        RunStatus::Awaiting(Awaiting::Approval) => ChatStatus::AwaitingApproval,
        _ => ChatStatus::Idle,
    }
}

fn write_status(out: &mut Vec<u8>, frame: &OutStatus<'_>) {
    let json = serde_json::to_string(frame).unwrap_or_default();
    write_frame(out, None, Some("status"), &json);
}

fn write_piece(out: &mut Vec<u8>, sender: Sender<'_>, piece: Piece<'_>) {
    let (part, content) = match piece {
        Piece::Text { kind, text } => match kind {
            TextKind::Text => (
                WirePart::Text {
                    text: Cow::Borrowed(text),
                },
                Some(text),
            ),
            TextKind::Reasoning => (
                WirePart::Reasoning {
                    content: Cow::Borrowed(text),
                },
                None,
            ),
            TextKind::Refusal => (
                WirePart::Refusal {
                    text: Cow::Borrowed(text),
                },
                Some(text),
            ),
        },
        Piece::Part(part) => (WirePart::from_part(part), content_of(part)),
        // The message's facts and time, when it has any, are one last packet without parts; a
        // message that produced no packet at all is sent as one empty packet so that it exists.
        Piece::End { message, sent } => {
            let metadata = metadata_json(&message.metadata, message.created_at);
            if !metadata.is_empty() || !sent {
                write_packet(out, sender, &[], None, metadata);
            }
            return;
        }
    };
    write_packet(
        out,
        sender,
        std::slice::from_ref(&part),
        content,
        Map::new(),
    );
}

/// The plain-text `content` a whole part adds: text and refusals, as [`Message::content`] says.
///
/// [`Message::content`]: agentwire_core::Message::content
fn content_of(part: &Part) -> Option<&str> {
    match part {
        Part::Text(text) => Some(&text.text),
        Part::Refusal(refusal) => Some(&refusal.text),
        _ => None,
    }
}

fn write_packet(
    out: &mut Vec<u8>,
    sender: Sender<'_>,
    parts: &[WirePart<'_>],
    content: Option<&str>,
    metadata: Map<String, Value>,
) {
    out.extend_from_slice(b"data: ");
    // Serializing a packet cannot fail: its keys are strings and its numbers finite. JSON text
    // has no raw newline, so the packet is one `data:` line.
    let packet = OutPacket {
        id: sender.id,
        role: sender.role,
        parts,
        content,
        metadata,
    };
    let _ = serde_json::to_writer(&mut *out, &packet);
    out.extend_from_slice(b"\n\n");
}
