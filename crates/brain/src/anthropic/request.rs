//! A [`BrainRequest`] as the body of `POST /v1/messages`, without IO.
//!
//! The history is read as provider-neutral entries first (`history.rs`: steps, each followed
//! by its calls' outcomes, found wherever they sit; a call without one answered as unfinished;
//! an outcome without its call left out). The Messages API wants messages that alternate user
//! and assistant, each assistant message that calls tools followed by a user message holding a
//! `tool_result` for each call. So:
//!
//! - A step becomes an assistant message of `thinking`, `text` and `tool_use {id, name, input}`
//!   blocks, its outcomes the user message after it, in call order. A result is
//!   `{"tool_use_id", "content"}`: a string result as is, any other as JSON text, with
//!   `"is_error": true` when the result says it failed. A tool error is a result with
//!   `"is_error": true` and content `{"error": {"type": "VALIDATION" | "EXECUTION", "message":
//!   "…"}}` (the text the OpenAI adapter writes too), which the model reads and corrects itself
//!   from.
//! - Reasoning goes back as a `thinking` block only with the signature that followed it (a
//!   [`THINKING_SIGNATURE`] data part); Anthropic refuses thinking it did not sign, so reasoning
//!   without one (e.g. from another provider) is left out. A [`REDACTED_THINKING`] data part
//!   goes back as a `redacted_thinking` block.
//! - A refusal goes back as text: the API has no refusal block, and the model should know it
//!   declined (Anthropic's own refusals are a stop reason, not a part; after one, Anthropic
//!   asks that the refused turn be changed or left out, which is the application's choice).
//! - Tool-call arguments that are not a JSON object (text the model wrote that did not parse)
//!   are sent as `{}`: the API takes only objects, and the tool error that followed tells the
//!   model what was wrong.
//! - User (and tool-role) parts: text as `text` blocks; an image file as an `image` block and a
//!   PDF as a `document` block (a `data:` URL or inline data as `base64`, another URL as
//!   `url`); any other file as a text line naming it (the API reads no other kind); `data`
//!   parts as their native JSON text.
//! - The system prompt and the text of `system` messages join in `system`, in that order.
//! - Consecutive messages of one role merge into one; empty text is left out (the API refuses
//!   empty blocks).
//! - Dropped, because they mean nothing to the model: `step_start`, approval requests and
//!   responses (the runtime turns a denial into a tool outcome), other `data` parts in assistant
//!   messages (also the blocks [`events`](super::events) kept as data: a server tool's call and
//!   result go back only to a request that offers that server tool, which agentwire does not,
//!   and stop details are not input), artifacts, plan updates, sources, files in assistant
//!   messages, and `data`-role messages.

use std::borrow::Cow;

use agentwire_core::part::{FilePart, FileSource};
use agentwire_core::{Message, Part};
use serde::Serialize;
use serde_json::Value;

use super::events::{REDACTED_THINKING, THINKING_SIGNATURE};
use crate::BrainRequest;
use crate::history::{self, Answer, Entry, Outcome, Step, data_text};

/// What a request is made with besides the conversation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings<'a> {
    /// The model, e.g. `claude-sonnet-4-5`.
    pub(crate) model: &'a str,
    /// The most tokens the answer may take (the API requires it).
    pub(crate) max_tokens: u32,
    /// The thinking budget in tokens; `None` leaves extended thinking off.
    pub(crate) thinking_budget: Option<u32>,
    /// The run's `temperature`, if it sets one.
    pub(crate) temperature: Option<f64>,
    /// The run's `top_p`, if it sets one.
    pub(crate) top_p: Option<f64>,
    /// The run's `stop` sequences (none when empty).
    pub(crate) stop_sequences: &'a [String],
}

/// The JSON body for this request.
pub(crate) fn body(settings: Settings<'_>, request: &BrainRequest) -> Vec<u8> {
    let mut system: Option<Cow<'_, str>> = request.system.as_deref().map(Cow::Borrowed);
    let mut conversation = Conversation::default();
    for entry in history::entries(&request.messages) {
        match entry {
            Entry::System(message) => join_system(&mut system, message),
            Entry::User(message) => conversation.user_message(message),
            Entry::Step(step) => conversation.step(&step),
            Entry::Outcomes(outcomes) => {
                let results = outcomes.iter().map(|outcome| result_block(*outcome));
                conversation.push(WireRole::User, results.collect());
            }
        }
    }
    let body = Body {
        model: settings.model,
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        top_p: settings.top_p,
        stop_sequences: settings.stop_sequences,
        stream: true,
        system,
        thinking: settings.thinking_budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect(),
        messages: conversation.messages,
    };
    // These types hold only strings, numbers and JSON values: writing them cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    stop_sequences: &'a [String],
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    messages: Vec<WireMessage<'a>>,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: WireRole,
    content: Vec<Block<'a>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum WireRole {
    User,
    Assistant,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Cow<'a, str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// The messages so far, alternating.
#[derive(Default)]
struct Conversation<'a> {
    messages: Vec<WireMessage<'a>>,
}

impl<'a> Conversation<'a> {
    fn user_message(&mut self, message: &'a Message) {
        let mut content = Vec::new();
        for part in &message.parts {
            match part {
                Part::Text(text) => push_text(&mut content, &text.text),
                Part::File(file) => content.push(file_block(file)),
                Part::Data(data) => content.push(Block::Text {
                    text: Cow::Owned(data_text(data)),
                }),
                _ => {}
            }
        }
        self.push(WireRole::User, content);
    }

    /// One step: an assistant message of thinking, text and tool use.
    fn step(&mut self, step: &Step<'a>) {
        let mut output = Vec::new();
        // Reasoning waits for the signature that follows it.
        let mut unsigned: Option<&'a str> = None;
        for part in step.parts.iter().copied() {
            if !matches!(part, Part::Reasoning(_) | Part::Data(_)) {
                unsigned = None;
            }
            match part {
                Part::Reasoning(reasoning) => unsigned = Some(&reasoning.text),
                Part::Text(text) => push_text(&mut output, &text.text),
                Part::Refusal(refusal) => push_text(&mut output, &refusal.text),
                Part::ToolCall(call) => output.push(Block::ToolUse {
                    id: call.tool_call_id.as_str(),
                    name: &call.tool_name,
                    input: match call.args.as_value() {
                        object @ Value::Object(_) => Cow::Borrowed(object),
                        _ => Cow::Owned(Value::Object(serde_json::Map::new())),
                    },
                }),
                Part::Data(_) => {
                    if let Some(signature) = data_named(part, THINKING_SIGNATURE)
                        .and_then(|data| data.get("signature"))
                        .and_then(Value::as_str)
                    {
                        output.push(Block::Thinking {
                            thinking: unsigned.take().unwrap_or_default(),
                            signature,
                        });
                    } else if let Some(data) = data_named(part, REDACTED_THINKING)
                        .and_then(|data| data.get("data"))
                        .and_then(Value::as_str)
                    {
                        output.push(Block::RedactedThinking { data });
                    }
                }
                _ => {}
            }
        }
        self.push(WireRole::Assistant, output);
    }

    /// Appends content, merging with the last message when it has the same role.
    fn push(&mut self, role: WireRole, content: Vec<Block<'a>>) {
        if content.is_empty() {
            return;
        }
        if self.messages.last().is_none_or(|last| last.role != role) {
            self.messages.push(WireMessage {
                role,
                content: Vec::with_capacity(content.len()),
            });
        }
        let Some(last) = self.messages.last_mut() else {
            return;
        };
        last.content.extend(content);
    }
}

fn join_system<'a>(system: &mut Option<Cow<'a, str>>, message: &'a Message) {
    let text = message.content();
    if text.is_empty() {
        return;
    }
    match system {
        Some(system) => {
            let system = system.to_mut();
            system.push_str("\n\n");
            system.push_str(&text);
        }
        None => *system = Some(Cow::Owned(text)),
    }
}

fn push_text<'a>(content: &mut Vec<Block<'a>>, text: &'a str) {
    // The API refuses empty text blocks.
    if !text.is_empty() {
        content.push(Block::Text {
            text: Cow::Borrowed(text),
        });
    }
}

/// A call's outcome: a result with its content as the model reads it, `is_error` when the
/// tool said it failed; a tool error with `is_error` always.
fn result_block(outcome: Outcome<'_>) -> Block<'_> {
    let is_error = match outcome.answer {
        Answer::Result(result) => result.is_error(),
        Answer::Error { .. } => true,
    };
    Block::ToolResult {
        tool_use_id: outcome.call.tool_call_id.as_str(),
        content: outcome.answer.text(),
        is_error,
    }
}

fn data_named<'p>(part: &'p Part, name: &str) -> Option<&'p Value> {
    match part {
        Part::Data(data) if data.name == name => Some(&data.data),
        _ => None,
    }
}

fn file_block(file: &FilePart) -> Block<'_> {
    let media_type = file.media_type.as_str();
    let source = match &file.source {
        FileSource::Data(data) => Source::Base64 { media_type, data },
        FileSource::Url(url) => match data_url(url) {
            Some((url_type, data)) => Source::Base64 {
                media_type: if media_type.is_empty() {
                    url_type
                } else {
                    media_type
                },
                data,
            },
            None => Source::Url { url },
        },
    };
    if media_type.starts_with("image/") {
        Block::Image { source }
    } else if media_type == "application/pdf" {
        Block::Document { source }
    } else {
        // The Messages API reads images and PDFs only: name the file for the model.
        let filename = file.filename.as_deref().unwrap_or("file");
        let text = match &file.source {
            FileSource::Url(url) if !url.starts_with("data:") => {
                format!("[file {filename} ({media_type}): {url}]")
            }
            _ => format!("[file {filename} ({media_type}): not shown]"),
        };
        Block::Text {
            text: Cow::Owned(text),
        }
    }
}

/// `data:<media type>;base64,<data>` → the media type and the data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    Some((media_type, data))
}

#[cfg(test)]
mod tests;
