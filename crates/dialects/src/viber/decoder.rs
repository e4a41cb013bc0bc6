//! [`ViberDecoder`]: Viber packets and status frames → canonical events.

use agentwire_core::{Awaiting, ErrorInfo, Event, EventKind, RunId, RunStatus, SessionId, Usage};
use serde::Deserialize;
use serde_json::json;

use super::{ChatStatus, WireMessage, WireUsage};
use crate::StreamDecoder;
use crate::error::DecodeError;
use crate::packet::{InPacket, PacketAssembler};
use crate::sse::{SseFrame, SseReader};

/// Decodes Viber packets (and the status and error frames beside them) into events.
///
/// A status frame with agentwire's `runStatus` is that status; one with a `runId` but no
/// `runStatus` is the run's creation; one with neither (a Viber server that is not agentwire)
/// is read from the chat status alone: `streaming` → in progress, `awaiting-approval` →
/// awaiting approval, `idle` → completed. A packet without an `id` belongs to the message of
/// the previous packet without one; such messages get ids `viber_1`, `viber_2`, ….
#[derive(Debug)]
pub struct ViberDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
    packets: PacketAssembler,
}

impl Default for ViberDecoder {
    fn default() -> Self {
        Self {
            reader: SseReader::default(),
            frames: Vec::new(),
            n_frames: 0,
            packets: PacketAssembler::new("viber"),
        }
    }
}

/// A status frame as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InStatus {
    status: ChatStatus,
    #[serde(default)]
    space_id: Option<SessionId>,
    #[serde(default)]
    run_id: Option<RunId>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    run_status: Option<String>,
    #[serde(default)]
    awaiting: Option<Awaiting>,
    #[serde(default)]
    error: Option<ErrorInfo>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

impl StreamDecoder for ViberDecoder {
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

impl ViberDecoder {
    fn frame(&mut self, frame: &SseFrame) -> Result<(), DecodeError> {
        let n_frame = self.n_frames;
        let invalid = |source| DecodeError::InvalidFrame {
            frame: n_frame,
            source,
        };
        match frame.event.as_deref() {
            None | Some("message") => {
                let message: WireMessage = serde_json::from_str(&frame.data).map_err(invalid)?;
                let (id, role) = (message.id.clone(), message.role);
                let (parts, metadata, created_at) = message.into_parts();
                self.packets.packet(InPacket {
                    id,
                    role,
                    parts,
                    metadata,
                    created_at,
                });
            }
            Some("status") => {
                let status: InStatus = serde_json::from_str(&frame.data).map_err(invalid)?;
                if let Some(kind) = status_event(status).map_err(invalid)? {
                    // A run that ends or waits ends its message; going on does not.
                    if let EventKind::RunStatus { status, .. } = &kind
                        && *status != RunStatus::InProgress
                    {
                        self.packets.complete_message();
                    }
                    self.packets.out().emit(kind);
                }
            }
            Some("error") => {
                let error: ErrorInfo = serde_json::from_str(&frame.data).map_err(invalid)?;
                self.packets.out().emit(EventKind::Error(error));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// The event a status frame stands for; `None` for the creation of a run whose id is not said.
fn status_event(frame: InStatus) -> Result<Option<EventKind>, serde_json::Error> {
    let status = match (&frame.run_status, &frame.run_id) {
        (Some(name), _) => {
            // The status's own serde form reads the name and what it awaits, and refuses a
            // name it does not know.
            serde_json::from_value::<RunStatus>(
                json!({"status": name, "awaiting": frame.awaiting}),
            )?
        }
        (None, Some(run_id)) => {
            return Ok(Some(EventKind::RunCreated {
                run_id: run_id.clone(),
                session_id: frame.space_id,
                agent: frame.agent,
                parent_run_id: None,
                parent_tool_call_id: None,
            }));
        }
        (None, None) => match frame.status {
            ChatStatus::Streaming => RunStatus::InProgress,
            ChatStatus::AwaitingApproval => RunStatus::Awaiting(Awaiting::Approval),
            ChatStatus::Idle => RunStatus::Completed,
        },
    };
    Ok(Some(EventKind::RunStatus {
        status,
        error: frame.error,
        usage: frame.usage.map(Usage::from),
    }))
}
