//! Pure codecs between agentwire's canonical events and messages (`agentwire-core`) and the wire
//! formats that real clients already speak, so that one agent works unchanged in every
//! ecosystem.
//!
//! Each dialect is a module with up to three codecs:
//! - an [`Encoder`]: canonical events → the dialect's frames, appended to a byte buffer;
//! - a [`StreamDecoder`]: the dialect's frames, fed in pieces as they arrive → canonical events;
//! - a request decoder: the body a client of that dialect sends → canonical input messages.
//!
//! Dialects: [`native`] (agentwire's own events, as SSE and NDJSON), [`agentx`] (AgentX message
//! packets), [`ai_sdk`] (the AI SDK UI message stream that `useChat` reads), [`agentscope`]
//! (AgentScope's Agent API), [`ag_ui`] (AG-UI 1.0, `@ag-ui/client`), [`a2a`] (A2A 1.0, JSON-RPC
//! binding), [`viber`] (Viber's camelCase message packets and chat status),
//! [`openai_responses`] (OpenAI's Responses API, the official `openai` SDKs' `responses`).
//! [`Dialect`] names them all for code that picks one at run time.
//!
//! Codecs do no IO and keep only the state their format needs, so the server mounts them and the
//! client SDK reuses them. What a dialect cannot express is listed in its module docs.
//!
//! ```
//! use agentwire_core::{Emitter, MessageBuilder, MessageStart, Role};
//! use agentwire_dialects::native::{NativeSseDecoder, NativeSseEncoder};
//! use agentwire_dialects::{Encoder, StreamDecoder};
//!
//! let mut out = Emitter::default();
//! let mut builder = MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
//! builder.text_delta(&mut out, "Hello");
//! builder.finish(&mut out);
//! let events: Vec<_> = out.drain().collect();
//!
//! let mut wire = Vec::new();
//! let mut encoder = NativeSseEncoder::default();
//! for event in &events {
//!     encoder.encode(event, &mut wire);
//! }
//! encoder.finish(&mut wire);
//! assert!(wire.starts_with(b"id: 1\nevent: message_start\ndata: {"));
//!
//! let mut decoded = Vec::new();
//! let mut decoder = NativeSseDecoder::default();
//! decoder.decode(&wire, &mut decoded)?;
//! decoder.finish(&mut decoded)?;
//! assert_eq!(decoded, events);
//! # Ok::<(), agentwire_dialects::DecodeError>(())
//! ```

pub mod a2a;
pub mod ag_ui;
pub mod agentscope;
pub mod agentx;
pub mod ai_sdk;
mod dialect;
mod error;
pub mod native;
pub mod openai_responses;
mod packet;
pub mod sse;
pub mod viber;

pub use dialect::{Dialect, UnknownDialect};
pub use error::DecodeError;

use agentwire_core::{Event, InvalidField, ToolSpec};
use serde_json::{Map, Value};

/// Turns canonical events into a dialect's wire frames.
///
/// Encoders may keep state (a dialect's own ids, which parts are open), so one encoder serves one
/// stream, in order.
pub trait Encoder {
    /// Appends the frames for `event` to `out`; an event the dialect has no frame for appends
    /// nothing.
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>);

    /// Appends what ends the stream in this dialect (e.g. a `[DONE]` frame), if anything.
    fn finish(&mut self, _out: &mut Vec<u8>) {}
}

/// Turns a dialect's wire frames, arriving in pieces of any size, into canonical events.
///
/// A malformed frame is a terminal [`DecodeError`]: the decoder stops there. A frame of a type the
/// dialect does not define is skipped, so that newer peers keep working.
pub trait StreamDecoder {
    /// Decodes the next piece of the stream, appending the events it completes to `out`.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError>;

    /// The stream has ended: decodes what is left, or fails if the stream stopped mid-frame.
    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError>;
}

/// The tools a client declares in the `tools` key of a request object (OpenAI's function format
/// or bare `{name, description, parameters}`), for the dialects whose requests carry them as a
/// loose key: none when the key is missing or null.
pub(crate) fn declared_tools(object: &Map<String, Value>) -> Result<Vec<ToolSpec>, InvalidField> {
    match object.get("tools") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(tools)) => ToolSpec::from_declarations(tools, "tools"),
        Some(_) => Err(InvalidField::new("tools", "must be a list of tools")),
    }
}
