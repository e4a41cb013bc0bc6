//! The Chat Completions request for a [`BrainRequest`]: our conversation mapped to the
//! provider's `messages`, pure and exact.
//!
//! The history is read as provider-neutral entries first (`history.rs`: steps, each followed
//! by its calls' outcomes, found wherever they sit; a call without one answered as unfinished;
//! an outcome without its call left out). Chat Completions wants one `assistant` message per
//! model call, each followed by one `tool` message per call it made. So:
//!
//! - A step becomes one `assistant` message (`content`: its text, or `null`; `refusal`: its
//!   refusals, when it has any, as OpenAI's own answer carries them, so the model knows it
//!   declined and not that it said so; `tool_calls` with the arguments as JSON text), its
//!   outcomes one `tool` message each, in
//!   call order. `content` is a string result as is, any other result as JSON text, a result
//!   marked `is_error` as `{"error": <result>}`, and a tool error as `{"error": {"type":
//!   "VALIDATION" | "EXECUTION", "message": "…"}}`, which the model reads and corrects itself
//!   from.
//! - User (and other tool-role) parts: text as a `content` string (parts joined by `\n`); with a
//!   file, `content` parts: images as `image_url` (the URL, or a `data:` URL of inline data),
//!   WAV and MP3 data as `input_audio`, other inline data as `file` (`file_data`), a file only
//!   known by a non-image URL as a text line naming it; `data` parts as their JSON text.
//! - `system` messages and the request's system prompt are `system` messages.
//! - Dropped, because they mean nothing to the model or cannot be sent back: reasoning
//!   (providers refuse it or ignore it in input), `step_start`, approval requests and responses
//!   (the runtime turns a denial into a tool outcome), artifacts, plan updates, sources, and
//!   files and data in assistant messages (Anthropic's signatures, server tool blocks and
//!   stop details, kept in the message for the client, mean nothing to this API);
//!   `data`-role messages entirely.

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{Message, Part, ToolSpec};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::BrainRequest;
use crate::history::{self, Answer, Entry, Step, data_text};

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
/// configured generation settings, then `extra_body`, then the run's own settings, which win
/// over both (a run's `top_p` replaces one the configuration sends in `extra_body`). Each of
/// the run's settings goes by its Chat Completions name as given: `stop` as a list, `n` as
/// asked even when 1.
pub(crate) fn request_body(settings: Settings<'_>, request: &BrainRequest) -> Value {
    let run = &request.settings;
    let mut body = Map::new();
    body.insert(
        "model".into(),
        run.model.as_deref().unwrap_or(settings.model).into(),
    );
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
    // The run's settings, serialized with their Chat Completions names (`None`s skipped).
    if let Value::Object(overrides) = to_value(run) {
        body.extend(overrides);
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
        /// `null` when the step wrote no text.
        content: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refusal: Option<String>,
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

/// The conversation as Chat Completions messages.
fn messages<'a>(system: Option<&str>, history: &'a [Message]) -> Vec<ChatMessage<'a>> {
    let mut out = Vec::new();
    if let Some(system) = system.filter(|system| !system.is_empty()) {
        out.push(ChatMessage::System {
            content: system.to_owned(),
        });
    }
    for entry in history::entries(history) {
        match entry {
            Entry::System(message) => {
                let content = message.content();
                if !content.is_empty() {
                    out.push(ChatMessage::System { content });
                }
            }
            Entry::User(message) => {
                if let Some(content) = user_content(&message.parts) {
                    out.push(ChatMessage::User { content });
                }
            }
            Entry::Step(step) => out.extend(assistant(&step)),
            Entry::Outcomes(outcomes) => {
                out.extend(outcomes.iter().map(|outcome| ChatMessage::Tool {
                    tool_call_id: outcome.call.tool_call_id.as_str(),
                    content: outcome_text(outcome.answer),
                }));
            }
        }
    }
    out
}

/// A step's `assistant` message: its text, refusals and calls; `None` when it has none of them
/// (reasoning and data are not sent).
fn assistant<'a>(step: &Step<'a>) -> Option<ChatMessage<'a>> {
    let mut content = String::new();
    let mut refusal = String::new();
    for part in &step.parts {
        match part {
            Part::Text(part) => content.push_str(&part.text),
            Part::Refusal(part) => refusal.push_str(&part.text),
            _ => {}
        }
    }
    let tool_calls: Vec<ChatToolCall<'a>> = step
        .calls()
        .map(|call| ChatToolCall {
            id: call.tool_call_id.as_str(),
            kind: "function",
            function: FunctionCall {
                name: &call.tool_name,
                arguments: call.args.to_json_text(),
            },
        })
        .collect();
    if content.is_empty() && refusal.is_empty() && tool_calls.is_empty() {
        return None;
    }
    Some(ChatMessage::Assistant {
        content: (!content.is_empty()).then_some(content),
        refusal: (!refusal.is_empty()).then_some(refusal),
        tool_calls,
    })
}

/// What the model reads as a tool's answer; a result the tool marked `is_error` is wrapped as
/// `{"error": <result>}`, since a `tool` message has no error flag.
fn outcome_text(answer: Answer<'_>) -> String {
    match answer {
        Answer::Result(result) if result.is_error() => json!({"error": result.result}).to_string(),
        answer => answer.text().into_owned(),
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
