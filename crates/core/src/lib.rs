//! The core of agentwire: the canonical message model, the event protocol, the builder that
//! turns model output into events, the accumulator that turns events back into messages, and
//! the communication schema that says who may send what when, and what a request may ask of
//! a run's model ([`GenerationSettings`]).
//!
//! The core is pure: no IO, no async runtime, no clock, no randomness. Times and fresh ids come
//! in as arguments. That keeps it fast, fuzzable and usable by every client, server and codec.
//!
//! The three types to learn first:
//! - [`Message`] and its [`Part`]s: one entry of a conversation, in typed pieces;
//! - [`Event`]: one step of a run's stream (`message_start`, `part_delta`, …);
//! - [`MessageBuilder`] and [`Accumulator`]: model output → events → messages.
//!
//! Code that writes a run's answer itself (a custom agent handler) uses the layered
//! [`ResponseBuilder`] → [`MessageWriter`] → [`ContentWriter`] over the same builder.
//!
//! ```
//! use agentwire_core::{Accumulator, Emitter, MessageBuilder, MessageStart, Part, Role};
//!
//! // The server side: model output becomes events.
//! let mut out = Emitter::default();
//! let mut builder = MessageBuilder::start(&mut out, MessageStart::new("msg_1", Role::Assistant));
//! builder.text_delta(&mut out, "Hello");
//! builder.text_delta(&mut out, ", world!");
//! builder.tool_call_start(&mut out, "tc_1", "write_file")?;
//! builder.tool_call_delta(&mut out, "tc_1", r#"{"path": "a.txt", "#)?;
//! builder.tool_call_delta(&mut out, "tc_1", r#""content": "A"}"#)?;
//! builder.tool_call_end(&mut out, "tc_1")?;
//! builder.finish(&mut out);
//!
//! // The client side: events become the message again.
//! let mut accumulator = Accumulator::default();
//! for event in out.drain() {
//!     accumulator.push(&event)?;
//! }
//! let message = &accumulator.messages()[0];
//! assert_eq!(message.parts[0], Part::text("Hello, world!"));
//! assert_eq!(message.content(), "Hello, world!");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod accumulator;
pub mod builder;
mod camel;
pub mod communication;
pub mod emitter;
pub mod event;
pub mod ids;
pub mod input;
pub mod json_bounds;
pub mod message;
pub mod namespace;
pub mod part;
pub mod partial_json;
pub mod patch_budget;
pub mod patch_stream;
pub mod response;
pub mod settings;
pub mod settled;
pub mod tool_spec;
pub mod trace_context;
pub mod usage;

pub use accumulator::{AccumulateError, Accumulator};
pub use builder::{BuildError, MessageBuilder, MessageStart};
pub use emitter::Emitter;
pub use event::{Awaiting, ErrorInfo, Event, EventKind, RunStatus, StreamedPart};
pub use ids::{MessageId, RunId, SessionId, ToolCallId, WebhookId};
pub use input::{InputMode, InputOutcome, Outcome};
pub use message::{JsonOptions, Message, Metadata, Role, Spelling, Timestamp};
pub use namespace::Namespace;
pub use part::{Part, ToolArgs, ToolCall, ToolError, ToolErrorKind, ToolResult};
pub use partial_json::PartialJson;
pub use response::{ContentWriter, DataWriter, MessageWriter, ResponseBuilder, ResponseError};
pub use settings::{GenerationSettings, InvalidField};
pub use tool_spec::{ToolKind, ToolSpec};
pub use trace_context::TraceContext;
pub use usage::Usage;
