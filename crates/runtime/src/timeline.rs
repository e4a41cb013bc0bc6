//! A message's timeline: each model call and each call of the agent's own tools that made the
//! message, with when it started and ended (the run's clock, in milliseconds) and the tokens a
//! model call used. The same facts as the OpenTelemetry spans (`chat {model}`,
//! `execute_tool {tool}`, see `telemetry.rs`), kept with the message itself, in its metadata
//! under `timeline`, so any reader of a run or a session (the web UI) can show where the time
//! went, with telemetry off, after a restart, on any node.
//!
//! Two clock reads per model call (plus one at its first event) and two per tool call; nothing
//! per delta.

use agentwire_core::{Timestamp, Usage};
use serde::Serialize;
use serde_json::Value;

/// The metadata key of a message's timeline.
pub(crate) const TIMELINE_KEY: &str = "timeline";

/// One entry of a timeline, as JSON:
///
/// ```json
/// {"kind": "chat", "name": "chat gpt-4o", "step": 0, "start": 1700000000000, "end": 1700000000420,
///  "first_token": 1700000000150, "input_tokens": 12, "output_tokens": 30, "finish_reason": "tool_calls"}
/// {"kind": "execute_tool", "name": "execute_tool write_file", "step": 0, "tool": "write_file",
///  "call_id": "c1", "start": 1700000000421, "end": 1700000000440, "error": false}
/// ```
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum TimelineEntry {
    /// A model call.
    Chat {
        /// `chat {model}`, or `chat` when the model is not known.
        name: String,
        /// The run's model call, counting from 0.
        step: u32,
        start: Timestamp,
        end: Timestamp,
        /// When its first event came, if any did.
        #[serde(skip_serializing_if = "Option::is_none")]
        first_token: Option<Timestamp>,
        #[serde(skip_serializing_if = "Option::is_none")]
        input_tokens: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        output_tokens: Option<u64>,
        /// Why the model stopped, or the code of the failure that stopped the call.
        finish_reason: String,
    },
    /// A call of one of the agent's own tools.
    ExecuteTool {
        /// `execute_tool {tool}`.
        name: String,
        /// The model call that asked for it.
        step: u32,
        tool: String,
        call_id: String,
        start: Timestamp,
        end: Timestamp,
        /// Whether the answer is a `tool_error` (or a result marked as an error).
        error: bool,
    },
}

impl TimelineEntry {
    /// A model call's entry.
    pub(crate) fn chat(
        model: Option<&str>,
        step: u32,
        (start, first_token, end): (Timestamp, Option<Timestamp>, Timestamp),
        usage: Option<Usage>,
        finish_reason: String,
    ) -> Self {
        Self::Chat {
            name: model.map_or_else(|| "chat".to_owned(), |model| format!("chat {model}")),
            step,
            start,
            end,
            first_token,
            input_tokens: usage.map(|usage| usage.input_tokens),
            output_tokens: usage.map(|usage| usage.output_tokens),
            finish_reason,
        }
    }
}

/// The timeline as the metadata value: the entries in the order they ended.
pub(crate) fn to_value(entries: &[TimelineEntry]) -> Value {
    // Serializing these plain records cannot fail.
    serde_json::to_value(entries).unwrap_or(Value::Null)
}
