//! The Responses API's JSON: the one enum of stream events ([`WireEvent`], each in a [`Frame`]
//! with its `sequence_number`), the `response` object, its output items, and OpenAI's error body.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// An event with its place in the response's stream.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Frame {
    #[serde(flatten)]
    pub(super) event: WireEvent,
    pub(super) sequence_number: u64,
}

/// Every event the encoder writes and the decoder reads, by its `type`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(super) enum WireEvent {
    #[serde(rename = "response.created")]
    Created { response: Box<ResponseObject> },
    #[serde(rename = "response.queued")]
    Queued { response: Box<ResponseObject> },
    #[serde(rename = "response.in_progress")]
    InProgress { response: Box<ResponseObject> },
    #[serde(rename = "response.completed")]
    Completed { response: Box<ResponseObject> },
    #[serde(rename = "response.failed")]
    Failed { response: Box<ResponseObject> },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Box<ResponseObject> },
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: usize, item: Item },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: usize, item: Item },
    #[serde(rename = "response.content_part.added")]
    ContentAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: Content,
    },
    #[serde(rename = "response.content_part.done")]
    ContentDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: Content,
    },
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        #[serde(default)]
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.output_text.done")]
    TextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        #[serde(default)]
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
    },
    #[serde(rename = "response.refusal.done")]
    RefusalDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        refusal: String,
    },
    #[serde(rename = "response.reasoning_summary_part.added")]
    SummaryAdded {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: Summary,
    },
    #[serde(rename = "response.reasoning_summary_part.done")]
    SummaryDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: Summary,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryTextDelta {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        delta: String,
    },
    #[serde(rename = "response.reasoning_summary_text.done")]
    SummaryTextDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        text: String,
    },
    /// Reasoning text (not a summary), as some servers stream it; only decoded.
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone {
        item_id: String,
        output_index: usize,
        arguments: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    #[serde(rename = "response.mcp_call.in_progress")]
    McpInProgress {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.mcp_call_arguments.done")]
    McpArgumentsDone {
        item_id: String,
        output_index: usize,
        arguments: String,
    },
    #[serde(rename = "response.mcp_call.completed")]
    McpCompleted {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "response.mcp_call.failed")]
    McpFailed {
        item_id: String,
        output_index: usize,
    },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        message: String,
        #[serde(default)]
        param: Option<String>,
    },
}

/// Every `type` of [`WireEvent`]: an event of another type comes from a newer server, or is one
/// agentwire does not map (built-in tools, audio), and is skipped.
pub(super) const KNOWN: &[&str] = &[
    "response.created",
    "response.queued",
    "response.in_progress",
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.delta",
    "response.refusal.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "error",
];

impl WireEvent {
    /// The event's `type`, the SSE `event:` name.
    pub(super) fn name(&self) -> &'static str {
        match self {
            WireEvent::Created { .. } => "response.created",
            WireEvent::Queued { .. } => "response.queued",
            WireEvent::InProgress { .. } => "response.in_progress",
            WireEvent::Completed { .. } => "response.completed",
            WireEvent::Failed { .. } => "response.failed",
            WireEvent::Incomplete { .. } => "response.incomplete",
            WireEvent::ItemAdded { .. } => "response.output_item.added",
            WireEvent::ItemDone { .. } => "response.output_item.done",
            WireEvent::ContentAdded { .. } => "response.content_part.added",
            WireEvent::ContentDone { .. } => "response.content_part.done",
            WireEvent::TextDelta { .. } => "response.output_text.delta",
            WireEvent::TextDone { .. } => "response.output_text.done",
            WireEvent::RefusalDelta { .. } => "response.refusal.delta",
            WireEvent::RefusalDone { .. } => "response.refusal.done",
            WireEvent::SummaryAdded { .. } => "response.reasoning_summary_part.added",
            WireEvent::SummaryDone { .. } => "response.reasoning_summary_part.done",
            WireEvent::SummaryTextDelta { .. } => "response.reasoning_summary_text.delta",
            WireEvent::SummaryTextDone { .. } => "response.reasoning_summary_text.done",
            WireEvent::ReasoningTextDelta { .. } => "response.reasoning_text.delta",
            WireEvent::ArgumentsDelta { .. } => "response.function_call_arguments.delta",
            WireEvent::ArgumentsDone { .. } => "response.function_call_arguments.done",
            WireEvent::McpInProgress { .. } => "response.mcp_call.in_progress",
            WireEvent::McpArgumentsDelta { .. } => "response.mcp_call_arguments.delta",
            WireEvent::McpArgumentsDone { .. } => "response.mcp_call_arguments.done",
            WireEvent::McpCompleted { .. } => "response.mcp_call.completed",
            WireEvent::McpFailed { .. } => "response.mcp_call.failed",
            WireEvent::Error { .. } => "error",
        }
    }
}

/// The `response` object.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct ResponseObject {
    pub(super) id: String,
    #[serde(default = "response_object")]
    pub(super) object: String,
    #[serde(default)]
    pub(super) created_at: i64,
    pub(super) status: Status,
    #[serde(default)]
    pub(super) background: bool,
    #[serde(default)]
    pub(super) error: Option<WireError>,
    #[serde(default)]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(super) instructions: Option<String>,
    #[serde(default)]
    pub(super) max_output_tokens: Option<u32>,
    #[serde(default)]
    pub(super) metadata: Map<String, Value>,
    #[serde(default)]
    pub(super) model: String,
    #[serde(default)]
    pub(super) output: Vec<Item>,
    #[serde(default)]
    pub(super) parallel_tool_calls: bool,
    #[serde(default)]
    pub(super) previous_response_id: Option<String>,
    #[serde(default)]
    pub(super) store: bool,
    #[serde(default)]
    pub(super) temperature: Option<f64>,
    #[serde(default)]
    pub(super) text: Value,
    #[serde(default)]
    pub(super) tool_choice: Value,
    #[serde(default)]
    pub(super) tools: Vec<Value>,
    #[serde(default)]
    pub(super) top_p: Option<f64>,
    #[serde(default)]
    pub(super) truncation: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

fn response_object() -> String {
    "response".into()
}

/// A response's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Queued,
    InProgress,
    Completed,
    Failed,
    Incomplete,
    Cancelled,
}

/// `error` of a failed response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub(super) code: String,
    #[serde(default)]
    pub(super) message: String,
}

/// `incomplete_details`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct IncompleteDetails {
    #[serde(default)]
    pub(super) reason: String,
}

/// `usage`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct WireUsage {
    pub(super) input_tokens: u64,
    #[serde(default)]
    pub(super) input_tokens_details: TokenDetails,
    pub(super) output_tokens: u64,
    #[serde(default)]
    pub(super) output_tokens_details: TokenDetails,
    #[serde(default)]
    pub(super) total_tokens: u64,
}

/// The details of `usage`: cached input tokens, reasoning output tokens.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct TokenDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cached_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) reasoning_tokens: Option<u64>,
}

/// An output item.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item {
    Message {
        id: String,
        #[serde(default = "assistant")]
        role: String,
        #[serde(default = "in_progress")]
        status: String,
        #[serde(default)]
        content: Vec<Content>,
    },
    Reasoning {
        id: String,
        #[serde(default)]
        summary: Vec<Summary>,
    },
    FunctionCall {
        #[serde(default)]
        id: Option<String>,
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
        #[serde(default = "in_progress")]
        status: String,
    },
    McpCall {
        id: String,
        #[serde(default)]
        server_label: String,
        name: String,
        #[serde(default)]
        arguments: String,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        approval_request_id: Option<String>,
        #[serde(default = "in_progress")]
        status: String,
    },
    McpApprovalRequest {
        id: String,
        #[serde(default)]
        server_label: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    /// An item of a type agentwire does not map (a built-in tool's call, …).
    #[serde(other)]
    Other,
}

fn assistant() -> String {
    "assistant".into()
}

fn in_progress() -> String {
    "in_progress".into()
}

/// A content of a `message` item.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Content {
    OutputText {
        text: String,
        #[serde(default)]
        annotations: Vec<Value>,
        #[serde(default)]
        logprobs: Vec<Value>,
    },
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// A reasoning item's summary part.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Summary {
    #[serde(rename = "type", default = "summary_text")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) text: String,
}

fn summary_text() -> String {
    "summary_text".into()
}

impl Summary {
    pub(super) fn new(text: String) -> Self {
        Self {
            kind: summary_text(),
            text,
        }
    }
}

/// OpenAI's error body, `{"error": {"message", "type", "param", "code"}}`: `kind` is the error's
/// `type` (`invalid_request_error`, `not_found_error`, `server_error`, …), `param` the request
/// field at fault, if one is.
///
/// ```
/// use agentwire_dialects::openai_responses::error_body;
///
/// let body = error_body("no agent named 'x'", "invalid_request_error", Some("model"), "model_not_found");
/// assert_eq!(body["error"]["param"], "model");
/// ```
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}
