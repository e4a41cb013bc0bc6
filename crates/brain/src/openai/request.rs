//! The Chat Completions request for a [`BrainRequest`]: our conversation mapped to the
//! provider's `messages`, pure and exact.
//!
//! Our model keeps ONE assistant message per turn, its steps marked by `step_start` parts, with
//! tool results and errors as parts of that same message. Chat Completions wants one `assistant`
//! message per model call, each followed by one `tool` message per call it made. So:
//!
//! - An assistant message is cut into steps: at each `step_start`, and where text or a tool call
//!   follows a tool result or error (a history written without `step_start`s). A step becomes
//!   one `assistant` message (`content`: its text and refusals, or `null`; `tool_calls` with the
//!   arguments as JSON text), then one `tool` message per call, in call order.
//! - A tool outcome is found wherever it is: in the assistant message (server tools) or in a
//!   later user or tool message (tools the client ran). Its `tool` message goes right after the
//!   assistant message holding its call. `content` is a string result as is, any other result as
//!   JSON text, a result marked `is_error` as `{"error": <result>}`, and a `tool_error` as
//!   `{"error": {"type": "VALIDATION" | "EXECUTION", "message": "…"}}`, which the model reads
//!   and corrects itself from (seed 000 §3.3).
//! - A tool call with no outcome in the history is left out of its assistant message: the API
//!   rejects a call without its answer, and such a history only happens when a turn was cut
//!   short (a canceled run); the runtime never calls the brain while a call is pending. An
//!   outcome whose call is nowhere is left out for the same reason.
//! - User (and other tool-role) parts: text as a `content` string (parts joined by `\n`); with a
//!   file, `content` parts: images as `image_url` (the URL, or a `data:` URL of inline data),
//!   WAV and MP3 data as `input_audio`, other inline data as `file` (`file_data`), a file only
//!   known by a non-image URL as a text line naming it; `data` parts as their JSON text.
//! - `system` messages and the request's system prompt are `system` messages.
//! - Dropped, because they mean nothing to the model or cannot be sent back: reasoning
//!   (providers refuse it or ignore it in input), `step_start`, approval requests and responses
//!   (the runtime turns a denial into a tool outcome), artifacts, plan updates, sources, and
//!   files and data in assistant messages; `data`-role messages entirely.

use std::collections::HashMap;

use agentwire_core::part::{DataPart, FilePart, FileSource};
use agentwire_core::{Message, Part, Role, ToolCall, ToolError, ToolResult, ToolSpec};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::BrainRequest;

/// What a request needs besides the conversation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings<'a> {
    pub(crate) model: &'a str,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<u32>,
    /// Keys merged into the body last; a `null` removes the key.
    pub(crate) extra_body: &'a Map<String, Value>,
}

/// The request body: `model`, `messages`, `tools` (when any), `stream: true` with usage, the
/// generation settings, then `extra_body`.
pub(crate) fn request_body(settings: Settings<'_>, request: &BrainRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), settings.model.into());
    let messages = messages(request.system.as_deref(), &request.messages);
    body.insert("messages".into(), to_value(&messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(tool).collect();
        body.insert("tools".into(), tools.into());
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(max_tokens) = settings.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    for (key, value) in settings.extra_body {
        if value.is_null() {
            body.remove(key);
        } else {
            body.insert(key.clone(), value.clone());
        }
    }
    Value::Object(body)
}

/// One entry of `messages`.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ChatMessage<'a> {
    System {
        content: String,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the step only called tools.
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(String),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: String },
    ImageUrl { image_url: Url },
    InputAudio { input_audio: Audio<'a> },
    File { file: FileData<'a> },
}

#[derive(Debug, PartialEq, Serialize)]
struct Url {
    url: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct Audio<'a> {
    data: &'a str,
    format: &'static str,
}

#[derive(Debug, PartialEq, Serialize)]
struct FileData<'a> {
    filename: &'a str,
    file_data: String,
}

#[derive(Debug, PartialEq, Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Debug, PartialEq, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    arguments: String,
}

/// A tool's outcome, wherever in the history it was found.
#[derive(Clone, Copy)]
enum Outcome<'a> {
    Result(&'a ToolResult),
    Error(&'a ToolError),
}

/// The conversation as Chat Completions messages.
fn messages<'a>(system: Option<&str>, history: &'a [Message]) -> Vec<ChatMessage<'a>> {
    let outcomes = outcomes(history);
    let mut out = Vec::new();
    if let Some(system) = system.filter(|system| !system.is_empty()) {
        out.push(ChatMessage::System {
            content: system.to_owned(),
        });
    }
    for message in history {
        match message.role {
            Role::System => {
                let content = joined_text(&message.parts);
                if !content.is_empty() {
                    out.push(ChatMessage::System { content });
                }
            }
            Role::User | Role::Tool => {
                if let Some(content) = user_content(&message.parts) {
                    out.push(ChatMessage::User { content });
                }
            }
            Role::Assistant => assistant(&message.parts, &outcomes, &mut out),
            Role::Data => {}
        }
    }
    out
}

/// Every tool outcome in the history, by call id; the first one wins.
fn outcomes(history: &[Message]) -> HashMap<&str, Outcome<'_>> {
    let mut outcomes = HashMap::new();
    for part in history.iter().flat_map(|message| &message.parts) {
        let (id, outcome) = match part {
            Part::ToolResult(result) => (result.tool_call_id.as_str(), Outcome::Result(result)),
            Part::ToolError(error) => (error.tool_call_id.as_str(), Outcome::Error(error)),
            _ => continue,
        };
        outcomes.entry(id).or_insert(outcome);
    }
    outcomes
}

/// An assistant message, step by step.
fn assistant<'a>(
    parts: &'a [Part],
    outcomes: &HashMap<&str, Outcome<'a>>,
    out: &mut Vec<ChatMessage<'a>>,
) {
    let mut text = String::new();
    let mut calls: Vec<&ToolCall> = Vec::new();
    let mut after_outcome = false;
    for part in parts {
        let starts_step = match part {
            Part::StepStart(_) => true,
            Part::Text(_) | Part::Refusal(_) | Part::ToolCall(_) => after_outcome,
            _ => false,
        };
        if starts_step {
            step(&mut text, &mut calls, outcomes, out);
            after_outcome = false;
        }
        match part {
            Part::Text(part) => text.push_str(&part.text),
            Part::Refusal(part) => text.push_str(&part.text),
            Part::ToolCall(call) => calls.push(call),
            Part::ToolResult(_) | Part::ToolError(_) => after_outcome = true,
            _ => {}
        }
    }
    step(&mut text, &mut calls, outcomes, out);
}

/// Writes one step (an assistant message and its tool messages) and empties it.
fn step<'a>(
    text: &mut String,
    calls: &mut Vec<&'a ToolCall>,
    outcomes: &HashMap<&str, Outcome<'a>>,
    out: &mut Vec<ChatMessage<'a>>,
) {
    let answered: Vec<(&ToolCall, Outcome<'_>)> = calls
        .drain(..)
        .filter_map(|call| Some((call, *outcomes.get(call.tool_call_id.as_str())?)))
        .collect();
    let content = std::mem::take(text);
    if content.is_empty() && answered.is_empty() {
        return;
    }
    out.push(ChatMessage::Assistant {
        content: (!content.is_empty()).then_some(content),
        tool_calls: answered
            .iter()
            .map(|(call, _)| ChatToolCall {
                id: call.tool_call_id.as_str(),
                kind: "function",
                function: FunctionCall {
                    name: &call.tool_name,
                    arguments: call.args.to_json_text(),
                },
            })
            .collect(),
    });
    for (call, outcome) in answered {
        out.push(ChatMessage::Tool {
            tool_call_id: call.tool_call_id.as_str(),
            content: outcome_text(outcome),
        });
    }
}

/// What the model reads as a tool's answer.
fn outcome_text(outcome: Outcome<'_>) -> String {
    match outcome {
        Outcome::Result(result) if result.is_error() => json!({"error": result.result}).to_string(),
        Outcome::Result(ToolResult {
            result: Value::String(text),
            ..
        }) => text.clone(),
        Outcome::Result(result) => result.result.to_string(),
        Outcome::Error(error) => {
            json!({"error": {"type": error.error_type, "message": error.message}}).to_string()
        }
    }
}

/// A user message's content: a string when it is only text, else content parts; `None` when
/// nothing in it is for the model.
fn user_content(parts: &[Part]) -> Option<UserContent<'_>> {
    let mut content: Vec<ContentPart<'_>> = Vec::new();
    for part in parts {
        match part {
            Part::Text(part) => content.push(ContentPart::Text {
                text: part.text.clone(),
            }),
            Part::File(file) => content.push(file_part(file)),
            Part::Data(data) => content.push(ContentPart::Text {
                text: data_text(data),
            }),
            _ => {}
        }
    }
    if content.is_empty() {
        return None;
    }
    if content
        .iter()
        .all(|part| matches!(part, ContentPart::Text { .. }))
    {
        let texts: Vec<String> = content
            .into_iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text),
                _ => None,
            })
            .collect();
        return Some(UserContent::Text(texts.join("\n")));
    }
    Some(UserContent::Parts(content))
}

fn file_part(file: &FilePart) -> ContentPart<'_> {
    let media_type = file.media_type.as_str();
    let filename = file.filename.as_deref().unwrap_or("file");
    let url = match &file.source {
        FileSource::Url(url) => url.clone(),
        FileSource::Data(data) => {
            let format = match media_type {
                "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
                "audio/mpeg" | "audio/mp3" => Some("mp3"),
                _ => None,
            };
            if let Some(format) = format {
                return ContentPart::InputAudio {
                    input_audio: Audio { data, format },
                };
            }
            format!("data:{media_type};base64,{data}")
        }
    };
    if media_type.starts_with("image/") {
        ContentPart::ImageUrl {
            image_url: Url { url },
        }
    } else if url.starts_with("data:") {
        ContentPart::File {
            file: FileData {
                filename,
                file_data: url,
            },
        }
    } else {
        // Chat Completions takes other files only as inline data: name it for the model.
        ContentPart::Text {
            text: format!("[file {filename} ({media_type}): {url}]"),
        }
    }
}

/// A data part as the model reads it: its native JSON.
fn data_text(data: &DataPart) -> String {
    json!({"type": "data", "name": data.name, "data": data.data}).to_string()
}

/// The text of a message's text and refusal parts, one a line.
fn joined_text(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part {
            Part::Text(part) => Some(part.text.as_str()),
            Part::Refusal(part) => Some(part.text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn tool(spec: &ToolSpec) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), spec.name.clone().into());
    if !spec.description.is_empty() {
        function.insert("description".into(), spec.description.clone().into());
    }
    function.insert("parameters".into(), spec.parameters.clone());
    json!({"type": "function", "function": function})
}

fn to_value(value: &impl Serialize) -> Value {
    // These types hold only strings, maps and JSON values: serializing cannot fail.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests;
