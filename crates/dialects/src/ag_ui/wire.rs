//! The AG-UI 1.0 events this dialect writes and reads, as serde types: `type` is the tag in
//! SCREAMING_SNAKE_CASE, fields are camelCase, and every optional field is left out when absent
//! (the client rejects `null` in any of them).
//!
//! The string type is a parameter: the encoder borrows (`&str`), the decoder owns (`String`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key our own additions live under, in event `metadata` and in `CUSTOM` values.
pub(super) const NAMESPACE: &str = "agentwire";
/// `CUSTOM` name of a part that has no AG-UI event: `{"messageId", "part"}`.
pub(super) const CUSTOM_PART: &str = "agentwire.part";
/// `CUSTOM` name of what became of a message sent while the run worked:
/// `{"client_message_id", "outcome", "step"?, "reason"?}` (the native `input` event's fields).
pub(super) const CUSTOM_INPUT: &str = "agentwire.input";
/// `CUSTOM` name of a non-fatal error: `{"code", "message"}`.
pub(super) const CUSTOM_ERROR: &str = "agentwire.error";
/// The protocol version we speak, declared on `RUN_STARTED`.
pub(super) const PROTOCOL_VERSION: &str = "1.0";
/// `activityType` of a plan's activity message; its content is the `plan_update` part's
/// native JSON without `type`.
pub(super) const ACTIVITY_PLAN: &str = "agentwire.plan";
/// `activityType` of an artifact's activity message; its content is the `artifact` part's
/// native JSON without `type`.
pub(super) const ACTIVITY_ARTIFACT: &str = "agentwire.artifact";
/// The key every event a sub-agent's run produces carries, naming that run.
pub(super) const SUBAGENT_RUN_ID: &str = "subagentRunId";

/// One AG-UI event. Types we do not read are `Other` and skipped.
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub(super) enum WireEvent<S> {
    RunStarted {
        thread_id: S,
        run_id: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol_version: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<S>,
    },
    RunFinished {
        thread_id: S,
        run_id: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome<S>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Vec<TokenUsage>>,
    },
    RunError {
        message: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Vec<TokenUsage>>,
    },
    StepStarted {
        step_name: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    StepFinished {
        step_name: S,
    },
    TextMessageStart {
        message_id: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    TextMessageContent {
        message_id: S,
        delta: S,
    },
    TextMessageEnd {
        message_id: S,
    },
    TextMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<S>,
    },
    ToolCallStart {
        tool_call_id: S,
        tool_call_name: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<S>,
    },
    ToolCallArgs {
        tool_call_id: S,
        delta: S,
    },
    ToolCallEnd {
        tool_call_id: S,
    },
    ToolCallChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_name: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<S>,
    },
    ToolCallResult {
        message_id: S,
        tool_call_id: S,
        /// A string, or a list of content parts.
        content: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    ReasoningStart {
        message_id: S,
    },
    ReasoningMessageStart {
        message_id: S,
        /// Always `"reasoning"`; required by the schema.
        role: S,
    },
    ReasoningMessageContent {
        message_id: S,
        delta: S,
    },
    ReasoningMessageEnd {
        message_id: S,
    },
    ReasoningMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delta: Option<S>,
    },
    ReasoningEnd {
        message_id: S,
    },
    ActivitySnapshot {
        message_id: S,
        activity_type: S,
        content: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replace: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    ActivityDelta {
        message_id: S,
        activity_type: S,
        /// RFC 6902 operations.
        patch: Vec<PatchOp<S>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    SubagentStarted {
        subagent_run_id: S,
        name: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_subagent_run_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_tool_call_id: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<S>,
    },
    SubagentFinished {
        subagent_run_id: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<SubagentOutcome<S>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    SubagentError {
        subagent_run_id: S,
        message: S,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<S>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// The whole shared state.
    StateSnapshot {
        snapshot: Value,
    },
    /// RFC 6902 operations on the shared state.
    StateDelta {
        delta: Value,
    },
    Custom {
        name: S,
        value: Value,
    },
    #[serde(other)]
    Other,
}

/// `RUN_FINISHED.outcome`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(super) enum Outcome<S> {
    Success {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending_tool_call_ids: Option<Vec<S>>,
    },
    Interrupt {
        interrupts: Vec<Interrupt<S>>,
    },
    Cancelled,
}

/// `SUBAGENT_FINISHED.outcome`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(super) enum SubagentOutcome<S> {
    Success,
    Suspended {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interrupt_ids: Option<Vec<S>>,
    },
}

/// One RFC 6902 operation of an `ACTIVITY_DELTA`: ours replace, add or remove a top-level key
/// of the activity's content.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct PatchOp<S> {
    pub(super) op: S,
    pub(super) path: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) value: Option<Value>,
}

/// Something a run needs from outside before it can go on; ours are tool approvals.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Interrupt<S> {
    pub(super) id: S,
    pub(super) reason: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tool_call_id: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) response_schema: Option<Value>,
    /// The sub-agent's run that asked, when it is not the run's own request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) subagent_run_id: Option<S>,
}

/// Token counts of one provider and model; the decoder sums the entries.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TokenUsage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cached_input_tokens: Option<u64>,
}

impl From<agentwire_core::Usage> for TokenUsage {
    fn from(usage: agentwire_core::Usage) -> Self {
        Self {
            input_tokens: Some(usage.input_tokens),
            output_tokens: Some(usage.output_tokens),
            total_tokens: Some(usage.total_tokens),
            reasoning_tokens: usage.reasoning_tokens,
            cached_input_tokens: usage.cached_input_tokens,
        }
    }
}

/// The run's usage: the sum of the entries; a missing total is input plus output.
pub(super) fn sum_usage(entries: &[TokenUsage]) -> agentwire_core::Usage {
    let mut sum = agentwire_core::Usage::default();
    for entry in entries {
        let input = entry.input_tokens.unwrap_or(0);
        let output = entry.output_tokens.unwrap_or(0);
        sum += agentwire_core::Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: entry.total_tokens.unwrap_or(input + output),
            reasoning_tokens: entry.reasoning_tokens,
            cached_input_tokens: entry.cached_input_tokens,
        };
    }
    sum
}

/// A tool's result as AG-UI `content` text: the result's JSON text, except that a string which
/// is not itself JSON text goes as it is, so people read plain text as text. [`result_of`]
/// reverses it exactly.
pub(super) fn content_of(result: &Value) -> String {
    match result {
        Value::String(text) if serde_json::from_str::<Value>(text).is_err() => text.clone(),
        other => other.to_string(),
    }
}

/// The result a tool's `content` stands for: parsed JSON text, else the text itself; a list of
/// content parts stays that list.
pub(super) fn result_of(content: Value) -> Value {
    match content {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        other => other,
    }
}
