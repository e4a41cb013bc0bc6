//! The body of `POST /v1/responses` → canonical input messages, settings and client tools.

use agentwire_core::part::{ApprovalResponse, FilePart, FileSource, RefusalPart, TextPart};
use agentwire_core::{
    GenerationSettings, InvalidField, Message, Part, Role, ToolArgs, ToolCall, ToolResult, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::DecodeError;

/// What a `POST /v1/responses` body asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ResponsesRequest {
    /// `model`: the agent that answers (`None` when absent or empty).
    pub model: Option<String>,
    /// The input: `instructions` first as a system message, then `input` (a string is one
    /// user message). Consecutive assistant-side items (assistant messages, `function_call`s)
    /// make one assistant message; `function_call_output` and `mcp_approval_response` items
    /// join the assistant message before them, or stand as a user message.
    pub input: Vec<Message>,
    /// `instructions`, as sent.
    pub instructions: Option<String>,
    /// `previous_response_id`: the response this one continues.
    pub previous_response_id: Option<String>,
    /// `stream` (default `false`).
    pub stream: bool,
    /// `background` (default `false`).
    pub background: bool,
    /// `tools`, as sent (echoed in the response).
    pub tools: Vec<Value>,
    /// `tools` as the tools the client runs: a call to one ends the response with a
    /// `function_call` item, answered by a `function_call_output` in the next request.
    pub client_tools: Vec<ToolSpec>,
    /// `temperature`, `top_p` and `max_output_tokens`, checked.
    pub settings: GenerationSettings,
}

#[derive(Deserialize)]
struct RequestWire {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    temperature: Option<Value>,
    #[serde(default)]
    top_p: Option<Value>,
    #[serde(default)]
    max_output_tokens: Option<Value>,
}

/// Reads a `POST /v1/responses` body. A body that is not a JSON object, an input item of the
/// wrong shape, a setting out of range, a tool that is not a function, or a file by `file_id`
/// is an error, naming the field.
pub fn decode_request(body: &[u8]) -> Result<ResponsesRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let wire: RequestWire = serde_json::from_slice(body).map_err(invalid)?;
    let mut input = Vec::new();
    if let Some(instructions) = wire.instructions.as_deref().filter(|text| !text.is_empty()) {
        input.push(Message::system(instructions));
    }
    match &wire.input {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => input.push(Message::user(text.clone())),
        Some(Value::Array(items)) => read_items(items, &mut input)?,
        Some(_) => {
            return Err(InvalidField::new("input", "must be a string or a list of items").into());
        }
    }
    let tools = wire.tools.unwrap_or_default();
    for (index, tool) in tools.iter().enumerate() {
        match tool.get("type").and_then(Value::as_str) {
            Some("function") | None => {}
            Some(kind) => {
                return Err(InvalidField::new(
                    format!("tools[{index}].type"),
                    format!("only function tools are served here, not \"{kind}\""),
                )
                .into());
            }
        }
    }
    let client_tools = ToolSpec::from_declarations(&tools, "tools")?;
    let mut settings = Map::new();
    for (name, value) in [
        ("temperature", wire.temperature),
        ("top_p", wire.top_p),
        ("max_tokens", wire.max_output_tokens),
    ] {
        if let Some(value) = value {
            settings.insert(name.into(), value);
        }
    }
    let settings = GenerationSettings::from_object(&settings).map_err(|error| {
        let field = match error.field.as_str() {
            "max_tokens" => "max_output_tokens".to_owned(),
            field => field.to_owned(),
        };
        InvalidField::new(field, error.message)
    })?;
    Ok(ResponsesRequest {
        model: wire.model.filter(|model| !model.is_empty()),
        input,
        instructions: wire.instructions,
        previous_response_id: wire.previous_response_id.filter(|id| !id.is_empty()),
        stream: wire.stream.unwrap_or(false),
        background: wire.background.unwrap_or(false),
        tools,
        client_tools,
        settings,
    })
}

/// Reads the items of `input`, appending messages to `input`.
fn read_items(items: &[Value], input: &mut Vec<Message>) -> Result<(), InvalidField> {
    // Whether the last message is an assistant-side group still taking items.
    let mut group_open = false;
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        let Some(object) = item.as_object() else {
            return Err(InvalidField::new(at, "must be an object"));
        };
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = match object.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("system" | "developer") => Role::System,
                    Some("assistant") => Role::Assistant,
                    _ => {
                        return Err(InvalidField::new(
                            format!("{at}.role"),
                            "must be user, system, developer or assistant",
                        ));
                    }
                };
                let parts = content_parts(object.get("content"), &at)?;
                if role == Role::Assistant {
                    push_assistant(input, &mut group_open, parts);
                } else {
                    group_open = false;
                    input.push(Message::new(role, parts));
                }
            }
            "function_call" => {
                let call_id = string(object, "call_id", &at)?;
                let name = string(object, "name", &at)?;
                let arguments = object
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let call = ToolCall {
                    tool_call_id: call_id.into(),
                    tool_name: name,
                    args: ToolArgs::from_json_text(arguments),
                };
                push_assistant(input, &mut group_open, vec![Part::ToolCall(call)]);
            }
            "function_call_output" => {
                let call_id = string(object, "call_id", &at)?;
                let result = match object.get("output") {
                    Some(Value::String(text)) => parsed_output(text),
                    Some(other) => other.clone(),
                    None => {
                        return Err(InvalidField::new(format!("{at}.output"), "is missing"));
                    }
                };
                let part = Part::ToolResult(ToolResult {
                    tool_call_id: call_id.into(),
                    tool_name: None,
                    result,
                    is_error: None,
                });
                push_answer(input, group_open, part);
            }
            "mcp_approval_response" => {
                let approval_id = string(object, "approval_request_id", &at)?;
                let Some(approved) = object.get("approve").and_then(Value::as_bool) else {
                    return Err(InvalidField::new(
                        format!("{at}.approve"),
                        "must be true or false",
                    ));
                };
                let reason = object
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let part = Part::ApprovalResponse(ApprovalResponse {
                    approval_id: approval_id.into(),
                    approved,
                    reason,
                });
                push_answer(input, group_open, part);
            }
            // What the model produced besides (reasoning items, references to stored items,
            // built-in tools' calls) has no canonical form here: skipped.
            _ => {}
        }
    }
    Ok(())
}

/// Adds assistant-side parts: to the open group, or as a new assistant message.
fn push_assistant(input: &mut Vec<Message>, group_open: &mut bool, parts: Vec<Part>) {
    if *group_open && let Some(group) = input.last_mut() {
        group.parts.extend(parts);
        return;
    }
    *group_open = true;
    input.push(Message::new(Role::Assistant, parts));
}

/// Adds a client's answer: to the assistant message it answers, or as a user message (the
/// answer to a waiting run). Consecutive answers share that user message.
fn push_answer(input: &mut Vec<Message>, group_open: bool, part: Part) {
    match input.last_mut() {
        Some(last) if group_open || (last.role == Role::User && is_answer(last)) => {
            last.parts.push(part);
        }
        _ => input.push(Message::new(Role::User, vec![part])),
    }
}

fn is_answer(message: &Message) -> bool {
    message
        .parts
        .iter()
        .all(|part| matches!(part, Part::ToolResult(_) | Part::ApprovalResponse(_)))
}

/// A function's output: JSON objects and lists as such, anything else as the text sent.
fn parsed_output(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(text.to_owned()),
    }
}

fn string(object: &Map<String, Value>, key: &str, at: &str) -> Result<String, InvalidField> {
    match object.get(key) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        _ => Err(InvalidField::new(
            format!("{at}.{key}"),
            "must be a non-empty string",
        )),
    }
}

/// A message's `content`: a string, or a list of `input_text`, `input_image`, `input_file`,
/// `output_text` and `refusal` parts.
fn content_parts(content: Option<&Value>, at: &str) -> Result<Vec<Part>, InvalidField> {
    let items = match content {
        Some(Value::String(text)) => return Ok(vec![Part::Text(TextPart { text: text.clone() })]),
        Some(Value::Array(items)) => items,
        _ => {
            return Err(InvalidField::new(
                format!("{at}.content"),
                "must be a string or a list of content parts",
            ));
        }
    };
    let mut parts = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("{at}.content[{index}]");
        let object = item
            .as_object()
            .ok_or_else(|| InvalidField::new(&at, "must be an object"))?;
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let part = match object.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text") => Part::Text(TextPart {
                text: text("text").unwrap_or_default(),
            }),
            Some("refusal") => Part::Refusal(RefusalPart {
                text: text("refusal").unwrap_or_default(),
            }),
            Some("input_image") => {
                let Some(url) = text("image_url") else {
                    return Err(by_file_id(&at, object));
                };
                file_part(&url, None, "image/*")
            }
            Some("input_file") => {
                let filename = text("filename");
                let url = text("file_data").or_else(|| text("file_url"));
                let Some(url) = url else {
                    return Err(by_file_id(&at, object));
                };
                let guess = filename
                    .as_deref()
                    .map_or("application/octet-stream", media_type_of);
                file_part(&url, filename.clone(), guess)
            }
            _ => {
                return Err(InvalidField::new(
                    format!("{at}.type"),
                    "must be input_text, input_image, input_file, output_text or refusal",
                ));
            }
        };
        parts.push(part);
    }
    Ok(parts)
}

/// The error for a file given only by `file_id`: agentwire has no files API.
fn by_file_id(at: &str, object: &Map<String, Value>) -> InvalidField {
    match object.get("file_id") {
        Some(_) => InvalidField::new(
            format!("{at}.file_id"),
            "files by id are not served here; send the file's data or URL",
        ),
        None => InvalidField::new(at, "needs the file's data or URL"),
    }
}

/// A file from a `data:` URL (inline base64 data of its own media type) or any other URL.
fn file_part(url: &str, filename: Option<String>, guess: &str) -> Part {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    let (media_type, source) = match inline {
        Some((media_type, data)) => (media_type.to_owned(), FileSource::Data(data.to_owned())),
        None => {
            let from_url = media_type_of(url.split(['?', '#']).next().unwrap_or(url));
            let media_type = match from_url {
                "application/octet-stream" => guess,
                known => known,
            };
            (media_type.to_owned(), FileSource::Url(url.to_owned()))
        }
    };
    Part::File(FilePart {
        media_type,
        source,
        filename,
    })
}

/// The media type a file name's extension says, or `application/octet-stream`.
fn media_type_of(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}
