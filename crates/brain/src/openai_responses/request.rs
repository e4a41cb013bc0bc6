//! The Responses API request for a [`BrainRequest`]: our conversation mapped to the `input`
//! items of `POST /v1/responses`, pure and exact.
//!
//! The history is read as provider-neutral entries first (`history.rs`: steps, each followed
//! by its calls' outcomes, found wherever they sit; a call without one answered as unfinished;
//! an outcome without its call left out). The Responses API wants the conversation as a list
//! of items, the model's own output as the items it streamed. So:
//!
//! - A step becomes its items, in order: a [`REASONING_ITEM`] data part is the `reasoning` item
//!   it holds, sent back as it came (`id`, `summary`, `encrypted_content`), which is how a
//!   reasoning model keeps its reasoning across turns with `store: false`; consecutive text and
//!   refusal parts are one `message` item of role `assistant` (`output_text` contents with no
//!   annotations, `refusal` contents); a call is a `function_call` item (`call_id`, `name`,
//!   `arguments` as JSON text). Its outcomes follow, one `function_call_output` item each, in
//!   call order: a string result as is, any other as JSON text, a result marked `is_error` as
//!   `{"error": <result>}`, a tool error as `{"error": {"type": "VALIDATION" | "EXECUTION",
//!   "message": "…"}}` (the text the other adapters write), which the model reads and corrects
//!   itself from.
//! - A reasoning item without `encrypted_content` is left out: with `store: false` the API
//!   cannot look it up by id. So is one that ends its step (a turn cut short right after the
//!   reasoning), since the API refuses a reasoning item without the item that followed it.
//!   Reasoning text without its item (another provider's) is not sent: the API takes no
//!   reasoning it did not write.
//! - User (and tool-role) parts become one `message` item of role `user`: text as `input_text`,
//!   an image as `input_image` (its URL, or a `data:` URL of inline data), any other file as
//!   `input_file` (inline data as a `data:` URL in `file_data`, a URL as `file_url`), `data`
//!   parts as their native JSON text.
//! - The request's system prompt is `instructions`; `system` messages in the history are
//!   `message` items of role `system`, in their place.
//! - Dropped, because they mean nothing to the model: `step_start`, approval requests and
//!   responses (the runtime turns a denial into a tool outcome), other data parts in assistant
//!   messages (annotations, built-in tools' items), artifacts, plan updates, sources, files in
//!   assistant messages, and `data`-role messages.

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{Message, Part, ToolSpec};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::events::REASONING_ITEM;
use crate::BrainRequest;
use crate::history::{self, Answer, Entry, Outcome, Step, data_text};

/// What a request needs besides the conversation: the configuration's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings<'a> {
    pub(crate) model: &'a str,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) reasoning_effort: Option<&'a str>,
    pub(crate) reasoning_summary: Option<&'a str>,
    /// Keys merged into the body last; a `null` removes the key.
    pub(crate) extra_body: &'a Map<String, Value>,
}

/// The request body: `model`, `instructions`, `input`, `tools` (when any), `stream: true`,
/// `store: false` with `include: ["reasoning.encrypted_content"]`, the configured settings
/// (`temperature`, `max_output_tokens`, `reasoning`), then `extra_body`, then the run's own
/// settings, which win over both: `model`, `temperature`, `top_p`, and `max_tokens` as
/// `max_output_tokens`.
pub(crate) fn request_body(settings: Settings<'_>, request: &BrainRequest) -> Value {
    let run = &request.settings;
    let mut body = Map::new();
    body.insert("model".into(), settings.model.into());
    if let Some(system) = request
        .system
        .as_deref()
        .filter(|system| !system.is_empty())
    {
        body.insert("instructions".into(), system.into());
    }
    body.insert("input".into(), to_value(&input(&request.messages)));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(tool).collect();
        body.insert("tools".into(), tools.into());
    }
    body.insert("stream".into(), true.into());
    body.insert("store".into(), false.into());
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), temperature.into());
    }
    if let Some(max_output_tokens) = settings.max_output_tokens {
        body.insert("max_output_tokens".into(), max_output_tokens.into());
    }
    let mut reasoning = Map::new();
    if let Some(effort) = settings.reasoning_effort {
        reasoning.insert("effort".into(), effort.into());
    }
    if let Some(summary) = settings.reasoning_summary {
        reasoning.insert("summary".into(), summary.into());
    }
    if !reasoning.is_empty() {
        body.insert("reasoning".into(), reasoning.into());
    }
    for (key, value) in settings.extra_body {
        if value.is_null() {
            body.remove(key);
        } else {
            body.insert(key.clone(), value.clone());
        }
    }
    let overrides = [
        ("model", run.model.clone().map(Value::from)),
        ("temperature", run.temperature.map(Value::from)),
        ("top_p", run.top_p.map(Value::from)),
        ("max_output_tokens", run.max_tokens.map(Value::from)),
    ];
    for (key, value) in overrides {
        if let Some(value) = value {
            body.insert(key.into(), value);
        }
    }
    Value::Object(body)
}

/// One item of `input`.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Content<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: String,
    },
    /// A reasoning item as the API sent it.
    #[serde(untagged)]
    Kept(&'a Value),
}

/// One content of a `message` item.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText {
        text: String,
    },
    InputImage {
        image_url: String,
        detail: &'static str,
    },
    InputFile {
        filename: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
    OutputText {
        text: &'a str,
        annotations: [(); 0],
    },
    Refusal {
        refusal: &'a str,
    },
}

/// The conversation as `input` items.
fn input(history: &[Message]) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    for entry in history::entries(history) {
        match entry {
            Entry::System(message) => {
                let text = message.content();
                if !text.is_empty() {
                    items.push(Item::Message {
                        role: "system",
                        content: vec![Content::InputText { text }],
                    });
                }
            }
            Entry::User(message) => {
                let content = user_content(&message.parts);
                if !content.is_empty() {
                    items.push(Item::Message {
                        role: "user",
                        content,
                    });
                }
            }
            Entry::Step(step) => step_items(&step, &mut items),
            Entry::Outcomes(outcomes) => {
                items.extend(outcomes.iter().map(|outcome| output_item(*outcome)));
            }
        }
    }
    items
}

/// A step's items, in the order the model output them.
fn step_items<'a>(step: &Step<'a>, items: &mut Vec<Item<'a>>) {
    let start = items.len();
    // The assistant message being written: text and refusals in a row.
    let mut said: Vec<Content<'a>> = Vec::new();
    for part in step.parts.iter().copied() {
        let item = match part {
            Part::Text(text) if !text.text.is_empty() => {
                said.push(Content::OutputText {
                    text: &text.text,
                    annotations: [],
                });
                continue;
            }
            Part::Refusal(refusal) if !refusal.text.is_empty() => {
                said.push(Content::Refusal {
                    refusal: &refusal.text,
                });
                continue;
            }
            Part::ToolCall(call) => Item::FunctionCall {
                call_id: call.tool_call_id.as_str(),
                name: &call.tool_name,
                arguments: call.args.to_json_text(),
            },
            Part::Data(data)
                if data.name == REASONING_ITEM && data.data.get("encrypted_content").is_some() =>
            {
                Item::Kept(&data.data)
            }
            _ => continue,
        };
        close_message(&mut said, items);
        items.push(item);
    }
    close_message(&mut said, items);
    // A reasoning item must be followed by what the model did next.
    if items.len() > start && matches!(items.last(), Some(Item::Kept(_))) {
        items.pop();
    }
}

fn close_message<'a>(said: &mut Vec<Content<'a>>, items: &mut Vec<Item<'a>>) {
    if !said.is_empty() {
        items.push(Item::Message {
            role: "assistant",
            content: std::mem::take(said),
        });
    }
}

/// A call's `function_call_output`: a result the tool marked `is_error` is wrapped as
/// `{"error": <result>}`, since the item has no error flag.
fn output_item(outcome: Outcome<'_>) -> Item<'_> {
    let output = match outcome.answer {
        Answer::Result(result) if result.is_error() => json!({"error": result.result}).to_string(),
        answer => answer.text().into_owned(),
    };
    Item::FunctionCallOutput {
        call_id: outcome.call.tool_call_id.as_str(),
        output,
    }
}

/// A user message's contents; empty when nothing in it is for the model.
fn user_content(parts: &[Part]) -> Vec<Content<'_>> {
    let mut content = Vec::new();
    for part in parts {
        match part {
            Part::Text(text) if !text.text.is_empty() => content.push(Content::InputText {
                text: text.text.clone(),
            }),
            Part::File(file) => content.push(file_content(file)),
            Part::Data(data) => content.push(Content::InputText {
                text: data_text(data),
            }),
            _ => {}
        }
    }
    content
}

fn file_content(file: &FilePart) -> Content<'_> {
    let media_type = file.media_type.as_str();
    let (url, inline) = match &file.source {
        FileSource::Url(url) => (url.clone(), url.starts_with("data:")),
        FileSource::Data(data) => (format!("data:{media_type};base64,{data}"), true),
    };
    if media_type.starts_with("image/") {
        return Content::InputImage {
            image_url: url,
            detail: "auto",
        };
    }
    let filename = file.filename.as_deref().unwrap_or("file");
    match &file.source {
        FileSource::Url(link) if !inline => Content::InputFile {
            filename,
            file_data: None,
            file_url: Some(link),
        },
        _ => Content::InputFile {
            filename,
            file_data: Some(url),
            file_url: None,
        },
    }
}

/// A function tool: Responses puts the function's fields at the top level.
fn tool(spec: &ToolSpec) -> Value {
    let mut tool = Map::new();
    tool.insert("type".into(), "function".into());
    tool.insert("name".into(), spec.name.clone().into());
    if !spec.description.is_empty() {
        tool.insert("description".into(), spec.description.clone().into());
    }
    tool.insert("parameters".into(), spec.parameters.clone());
    // Not strict: strict mode wants every property required and no others allowed, which
    // agentwire's tool schemas do not promise; the toolbox validates the arguments anyway.
    tool.insert("strict".into(), false.into());
    Value::Object(tool)
}

fn to_value(value: &impl Serialize) -> Value {
    // These types hold only strings and JSON values: serializing cannot fail.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests;
