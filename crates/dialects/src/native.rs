//! The native dialect: agentwire's own events, as SSE or as NDJSON, and the
//! `POST /v1/runs` request.
//!
//! SSE frames carry `id:` = the event's sequence number (so `Last-Event-ID` resumes a stream),
//! `event:` = its name, and `data:` = its JSON:
//!
//! ```text
//! id: 4
//! event: part_delta
//! data: {"seq":4,"event":"part_delta","message_id":"msg_1","index":0,"delta":"Hel"}
//! ```
//!
//! A heartbeat has no `id:` line, so that it never moves a client's resume point. NDJSON is the
//! same JSON, one event per line. The native dialect expresses everything: nothing is lost.

use agentwire_core::{Event, GenerationSettings, Message, SessionId};
use serde::{Deserialize, Serialize};

use crate::error::DecodeError;
use crate::sse::{SseFrame, SseReader};
use crate::{Encoder, StreamDecoder};

/// The body of `POST /v1/runs`: which agent, which session, the input messages, and the run's
/// generation settings.
///
/// ```json
/// {"agent": "assistant", "session_id": "ses_1", "input": [{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}], "temperature": 0.2}
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// The agent to run; `None` means the server's default agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session to continue; `None` starts a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// The new messages, in either spelling of the model.
    pub input: Vec<Message>,
    /// Answer at once with the run (`202`) instead of streaming it or waiting for it to settle:
    /// the run goes on with nobody connected, and any client follows, polls or cancels it later
    /// by its id. `false` by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// The run's generation settings, as top-level keys beside `input` (`model`,
    /// `temperature`, `top_p`, `max_tokens`, `stop`, `seed`, `frequency_penalty`,
    /// `presence_penalty`, `n`; camelCase spellings too), overriding the agent's defaults.
    #[serde(flatten)]
    pub settings: GenerationSettings,
}

/// Reads a `POST /v1/runs` body.
pub fn decode_request(body: &[u8]) -> Result<RunRequest, DecodeError> {
    serde_json::from_slice(body).map_err(|source| DecodeError::InvalidRequest { source })
}

/// Encodes events as native SSE frames.
#[derive(Debug, Default)]
pub struct NativeSseEncoder;

impl Encoder for NativeSseEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if !matches!(event.kind, agentwire_core::EventKind::Heartbeat {}) {
            out.extend_from_slice(b"id: ");
            // Writing a number to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, &event.seq);
            out.push(b'\n');
        }
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.name().as_bytes());
        out.extend_from_slice(b"\ndata: ");
        write_json(event, out);
        out.extend_from_slice(b"\n\n");
    }
}

/// Encodes events as NDJSON: one JSON object per line.
#[derive(Debug, Default)]
pub struct NativeNdjsonEncoder;

impl Encoder for NativeNdjsonEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        write_json(event, out);
        out.push(b'\n');
    }
}

/// Decodes native SSE frames into events.
#[derive(Debug, Default)]
pub struct NativeSseDecoder {
    reader: SseReader,
    frames: Vec<SseFrame>,
    n_frames: u64,
}

impl StreamDecoder for NativeSseDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.feed(bytes, &mut self.frames)?;
        for frame in self.frames.drain(..) {
            self.n_frames += 1;
            let known = frame
                .event
                .as_deref()
                .is_none_or(|name| Event::NAMES.contains(&name));
            if known && let Some(event) = parse_event(frame.data.as_bytes(), self.n_frames)? {
                out.push(event);
            }
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<Event>) -> Result<(), DecodeError> {
        self.reader.finish()
    }
}

/// Decodes NDJSON lines into events. Blank lines are skipped; `\r\n` line ends are accepted.
#[derive(Debug, Default)]
pub struct NativeNdjsonDecoder {
    line: Vec<u8>,
    n_lines: u64,
}

impl StreamDecoder for NativeNdjsonDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&byte| byte == b'\n') {
            self.line.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.line);
            self.decode_line(&line, out)?;
            self.line = line;
            self.line.clear();
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let line = std::mem::take(&mut self.line);
        self.decode_line(&line, out)
    }
}

impl NativeNdjsonDecoder {
    fn decode_line(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        self.n_lines += 1;
        if let Some(event) = parse_event(line, self.n_lines)? {
            out.push(event);
        }
        Ok(())
    }
}

fn write_json(event: &Event, out: &mut Vec<u8>) {
    event.write_json(out);
}

/// Parses one event; `Ok(None)` for an event of a name this version does not know.
fn parse_event(json: &[u8], frame: u64) -> Result<Option<Event>, DecodeError> {
    match serde_json::from_slice(json) {
        Ok(event) => Ok(Some(event)),
        Err(source) => {
            // Only on failure: look at the name alone, to tell a newer peer's event from a
            // malformed one of ours.
            #[derive(Deserialize)]
            struct Named<'a> {
                #[serde(borrow)]
                event: Option<std::borrow::Cow<'a, str>>,
            }
            match serde_json::from_slice::<Named<'_>>(json) {
                Ok(Named { event: Some(name) }) if !Event::NAMES.contains(&name.as_ref()) => {
                    Ok(None)
                }
                _ => Err(DecodeError::InvalidFrame { frame, source }),
            }
        }
    }
}
