//! The AgentScope objects as they are read, and the mapping of one content object to a part,
//! shared by the stream decoder and the request decoder.

use agentwire_core::Usage;
use agentwire_core::part::{
    ApprovalRequest, ApprovalResponse, DataPart, FilePart, FileSource, ReasoningPart, RefusalPart,
    TextPart,
};
use agentwire_core::{
    Metadata, Part, Role, ToolArgs, ToolCall, ToolError, ToolErrorKind, ToolResult,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Any AgentScope object: a response, a message or a content, told apart by `object`. One
/// struct with every field optional, so that a frame is parsed once whatever it is; a field of
/// the wrong type is an error, as it is for their pydantic models.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Obj {
    pub(super) object: Option<String>,
    pub(super) status: Option<Status>,
    pub(super) error: Option<ErrorField>,
    pub(super) id: Option<String>,
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    // response
    pub(super) session_id: Option<String>,
    pub(super) output: Option<Vec<Obj>>,
    pub(super) usage: Option<Map<String, Value>>,
    // message
    pub(super) role: Option<WireRole>,
    pub(super) content: Option<Vec<Obj>>,
    pub(super) code: Option<String>,
    pub(super) message: Option<String>,
    pub(super) metadata: Option<Map<String, Value>>,
    // content
    pub(super) index: Option<u32>,
    pub(super) delta: Option<bool>,
    pub(super) msg_id: Option<String>,
    pub(super) text: Option<String>,
    pub(super) refusal: Option<String>,
    /// A dict for `data` content, a base64 string for `audio`.
    pub(super) data: Option<Value>,
    pub(super) image_url: Option<String>,
    pub(super) video_url: Option<String>,
    pub(super) format: Option<String>,
    pub(super) file_url: Option<String>,
    pub(super) file_data: Option<String>,
    pub(super) filename: Option<String>,
    /// agentwire's extension on file contents (their models keep unknown keys).
    pub(super) media_type: Option<String>,
}

/// `RunStatus`: the statuses responses, messages and contents share. Another string is an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    Created,
    InProgress,
    Completed,
    Canceled,
    Failed,
    Rejected,
    Unknown,
    Queued,
    Incomplete,
}

/// `error`: `{code, message}` on events; a bare string in the frame AgentApp sends for a request
/// it refuses.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum ErrorField {
    Info { code: String, message: String },
    Text(String),
}

/// The roles their `Message` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum WireRole {
    Assistant,
    System,
    User,
    Tool,
}

impl From<WireRole> for Role {
    fn from(role: WireRole) -> Self {
        match role {
            WireRole::Assistant => Role::Assistant,
            WireRole::System => Role::System,
            WireRole::User => Role::User,
            WireRole::Tool => Role::Tool,
        }
    }
}

/// What a message's `type` makes of its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// `message` (and types we do not know): text, refusals, files and data.
    Message,
    /// `reasoning`: its text is reasoning.
    Reasoning,
    /// `function_call`, `plugin_call`, `mcp_call`, `component_call`: its data is a call.
    Call,
    /// The `…_output` of each: its data is the call's output.
    Output,
    /// `mcp_approval_request`.
    ApprovalRequest,
    /// `mcp_approval_response`.
    ApprovalResponse,
    /// `error`: the message's `code` and `message` are an error.
    Error,
    /// `heartbeat`, `mcp_list_tools`: nothing for the conversation.
    Skip,
}

impl Class {
    pub(super) fn of(message_type: &str) -> Self {
        match message_type {
            "reasoning" => Class::Reasoning,
            "function_call" | "plugin_call" | "mcp_call" | "component_call" => Class::Call,
            "function_call_output"
            | "plugin_call_output"
            | "mcp_call_output"
            | "component_call_output" => Class::Output,
            "mcp_approval_request" => Class::ApprovalRequest,
            "mcp_approval_response" => Class::ApprovalResponse,
            "error" => Class::Error,
            "heartbeat" | "mcp_list_tools" => Class::Skip,
            _ => Class::Message,
        }
    }
}

/// Part types that travel as the part's own JSON in a `data` content (see the module docs).
const PARTS_AS_DATA: &[&str] = &["data", "source", "artifact", "plan_update", "step_start"];

fn str_field<'v>(data: &'v Value, key: &str) -> Option<&'v str> {
    data.get(key).and_then(Value::as_str)
}

/// The whole part one content object of a message of class `class` stands for; `None` for a
/// content that has none (an unknown content type, a skipped message type).
pub(super) fn whole_part(class: Class, content: &Obj, msg_id: &str) -> Option<Part> {
    let kind = content.kind.as_deref()?;
    Some(match kind {
        "text" => {
            let text = content.text.clone().unwrap_or_default();
            match class {
                Class::Reasoning => Part::Reasoning(ReasoningPart { text }),
                _ => Part::Text(TextPart { text }),
            }
        }
        "refusal" => Part::Refusal(RefusalPart {
            text: content.refusal.clone().unwrap_or_default(),
        }),
        "image" | "audio" | "video" | "file" => Part::File(file_part(kind, content)),
        "data" => {
            let data = content.data.clone().unwrap_or(Value::Null);
            data_part(class, data, msg_id)?
        }
        _ => return None,
    })
}

/// A tool call from its `data`: `{call_id, name, arguments}`.
pub(super) fn tool_call(data: &Value, msg_id: &str, arguments: &str) -> ToolCall {
    ToolCall {
        tool_call_id: str_field(data, "call_id").unwrap_or(msg_id).into(),
        tool_name: str_field(data, "name").unwrap_or_default().to_owned(),
        args: ToolArgs::from_json_text(arguments),
    }
}

fn data_part(class: Class, data: Value, msg_id: &str) -> Option<Part> {
    Some(match class {
        Class::Call => {
            let arguments = str_field(&data, "arguments").unwrap_or_default();
            Part::ToolCall(tool_call(&data, msg_id, arguments))
        }
        Class::Output => {
            let tool_call_id = str_field(&data, "call_id").unwrap_or(msg_id).into();
            let tool_name = str_field(&data, "name").map(str::to_owned);
            let output = match data.get("output") {
                Some(Value::String(output)) => output.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let error_type = match str_field(&data, "error_type") {
                Some("VALIDATION") => Some(ToolErrorKind::Validation),
                Some("EXECUTION") => Some(ToolErrorKind::Execution),
                _ => None,
            };
            match error_type {
                Some(error_type) => Part::ToolError(ToolError {
                    tool_call_id,
                    tool_name,
                    error_type,
                    message: output,
                }),
                None => Part::ToolResult(ToolResult {
                    tool_call_id,
                    tool_name,
                    // Outputs are JSON text (`json.dumps` of the result); other text is kept as
                    // a string.
                    result: serde_json::from_str(&output).unwrap_or(Value::String(output)),
                    is_error: data.get("is_error").and_then(Value::as_bool),
                }),
            }
        }
        Class::ApprovalRequest => {
            let approval_id = str_field(&data, "id").unwrap_or(msg_id);
            Part::ApprovalRequest(ApprovalRequest {
                approval_id: approval_id.into(),
                tool_call_id: str_field(&data, "call_id").unwrap_or(approval_id).into(),
                reason: str_field(&data, "reason").map(str::to_owned),
            })
        }
        Class::ApprovalResponse => Part::ApprovalResponse(ApprovalResponse {
            approval_id: str_field(&data, "approval_request_id")
                .unwrap_or(msg_id)
                .into(),
            approved: data
                .get("approve")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            reason: str_field(&data, "reason").map(str::to_owned),
        }),
        Class::Message | Class::Reasoning => {
            let ours = str_field(&data, "type").is_some_and(|kind| PARTS_AS_DATA.contains(&kind));
            if ours && let Ok(part) = serde_json::from_value::<Part>(data.clone()) {
                part
            } else {
                Part::Data(DataPart {
                    name: "data".into(),
                    data,
                })
            }
        }
        Class::Error | Class::Skip => return None,
    })
}

fn file_part(kind: &str, content: &Obj) -> FilePart {
    let filename = content.filename.clone();
    let (guessed, source) = match kind {
        "image" => {
            let url = content.image_url.clone().unwrap_or_default();
            match parse_data_url(&url) {
                Some((media_type, data)) => (media_type.to_owned(), FileSource::Data(data.into())),
                None => ("image/*".to_owned(), FileSource::Url(url)),
            }
        }
        "audio" => {
            let media_type = match &content.format {
                Some(format) => format!("audio/{format}"),
                None => "audio/*".to_owned(),
            };
            let data = match &content.data {
                Some(Value::String(data)) => data.clone(),
                _ => String::new(),
            };
            (media_type, FileSource::Data(data))
        }
        "video" => (
            "video/*".to_owned(),
            FileSource::Url(content.video_url.clone().unwrap_or_default()),
        ),
        _ => {
            let source = match (&content.file_url, &content.file_data) {
                (Some(url), _) => FileSource::Url(url.clone()),
                (None, Some(data)) => FileSource::Data(data.clone()),
                (None, None) => FileSource::Url(String::new()),
            };
            ("application/octet-stream".to_owned(), source)
        }
    };
    FilePart {
        media_type: content.media_type.clone().unwrap_or(guessed),
        source,
        filename,
    }
}

/// `data:<media type>;base64,<data>`.
fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (media_type, data) = rest.split_once(";base64,")?;
    Some((media_type, data))
}

/// Usage from a `usage` dict; the total is the sum when they do not give it.
pub(super) fn usage(map: &Map<String, Value>) -> Option<Usage> {
    let mut usage: Usage = serde_json::from_value(Value::Object(map.clone())).ok()?;
    if !map.contains_key("total_tokens") && !map.contains_key("totalTokens") {
        usage.total_tokens = usage.input_tokens + usage.output_tokens;
    }
    Some(usage)
}

/// Metadata from a message's `metadata` and `usage`.
pub(super) fn metadata(obj: &Obj) -> Metadata {
    let mut metadata: Metadata = obj
        .metadata
        .as_ref()
        .and_then(|map| serde_json::from_value(Value::Object(map.clone())).ok())
        .unwrap_or_default();
    if let Some(map) = &obj.usage {
        metadata.usage = usage(map).or(metadata.usage);
    }
    metadata
}
