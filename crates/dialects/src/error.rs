//! [`DecodeError`]: why bytes from a peer could not be read as their dialect.

use agentwire_core::InvalidField;
use thiserror::Error;

/// Bytes that are not a well-formed stream or request of their dialect.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are not UTF-8 where text was required.
    #[error("invalid utf-8 at byte {offset}")]
    InvalidUtf8 {
        /// Where the invalid sequence starts, counted from the start of the stream.
        offset: u64,
    },
    /// A frame's JSON does not parse, or does not have the shape its type requires.
    #[error("frame {frame} is not valid: {source}")]
    InvalidFrame {
        /// The frame's position in the stream, counting from 1.
        frame: u64,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The stream ended in the middle of a frame.
    #[error("the stream ended in the middle of a frame")]
    UnexpectedEnd,
    /// A request body does not parse, or does not have the dialect's shape.
    #[error("invalid request: {source}")]
    InvalidRequest {
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// An agent card does not parse, or lacks what every card has (`name`).
    #[error("invalid agent card: {source}")]
    InvalidCard {
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A request field parses but cannot be used (a generation setting out of range, a tool
    /// declared without a name, …); the error names it.
    #[error("invalid request: {0}")]
    InvalidField(#[from] InvalidField),
}
