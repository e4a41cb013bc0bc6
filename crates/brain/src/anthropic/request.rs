//! A [`BrainRequest`] as the body of `POST /v1/messages`, without IO.
//!
//! Our model keeps ONE assistant message per turn, its steps marked by `step_start` parts, with
//! tool results and errors as parts of that same message. The Messages API wants messages that
//! alternate user and assistant, each assistant message that calls tools followed by a user
//! message holding a `tool_result` for each call. So:
//!
//! - An assistant message is cut into steps where output (thinking, text, a refusal, a tool call)
//!   follows a tool result or error. A step becomes an assistant message of `thinking`, `text`
//!   and `tool_use {id, name, input}` blocks.
//! - Every call's outcome goes in the user message right after the assistant message that made
//!   the call, in call order, wherever the history had it: in the assistant message (tools the
//!   runtime ran) or in a later user or tool message (tools the client ran). A result is
//!   `{"tool_use_id", "content"}`: a string result as is, any other as JSON text, with
//!   `"is_error": true` when the result says it failed. A `tool_error` is a result with
//!   `"is_error": true` and content `{"error": {"type": "VALIDATION" | "EXECUTION", "message":
//!   "…"}}` (as the OpenAI adapter writes it), which the model reads and corrects itself from
//!   (seed 000 §3.3).
//! - A call without an outcome (a turn cut short by a cancel) gets a result saying it did not
//!   finish, so the model knows; an outcome whose call is nowhere is left out. The API refuses
//!   both otherwise.
//! - Reasoning goes back as a `thinking` block only with the signature that followed it (a
//!   [`THINKING_SIGNATURE`] data part); Anthropic refuses thinking it did not sign, so reasoning
//!   without one (e.g. from another provider) is left out. A [`REDACTED_THINKING`] data part
//!   goes back as a `redacted_thinking` block.
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
//!   messages, artifacts, plan updates, sources, files in assistant messages, and `data`-role
//!   messages.

use std::borrow::Cow;
use std::collections::HashMap;

use agentwire_core::part::{DataPart, FilePart, FileSource};
use agentwire_core::{Message, Part, Role};
use serde::Serialize;
use serde_json::{Value, json};

use super::events::{REDACTED_THINKING, THINKING_SIGNATURE};
use crate::BrainRequest;

/// What a request is made with besides the conversation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings<'a> {
    /// The model, e.g. `claude-sonnet-4-5`.
    pub(crate) model: &'a str,
    /// The most tokens the answer may take (the API requires it).
    pub(crate) max_tokens: u32,
    /// The thinking budget in tokens; `None` leaves extended thinking off.
    pub(crate) thinking_budget: Option<u32>,
}

/// The JSON body for this request.
pub(crate) fn body(settings: Settings<'_>, request: &BrainRequest) -> Vec<u8> {
    let mut system: Option<Cow<'_, str>> = request.system.as_deref().map(Cow::Borrowed);
    let mut conversation = Conversation::default();
    for message in &request.messages {
        match message.role {
            Role::System => join_system(&mut system, message),
            Role::User | Role::Tool => conversation.user_message(message),
            Role::Assistant => conversation.assistant_message(message),
            Role::Data => {}
        }
    }
    let body = Body {
        model: settings.model,
        max_tokens: settings.max_tokens,
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
        messages: conversation.place_outcomes(),
    };
    // These types hold only strings, numbers and JSON values: writing them cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
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
                Part::ToolResult(_) | Part::ToolError(_) => content.extend(result_block(part)),
                _ => {}
            }
        }
        self.push(WireRole::User, content);
    }

    /// One assistant turn: an assistant message per step, each followed by a user message of
    /// the results its calls led to.
    fn assistant_message(&mut self, message: &'a Message) {
        let mut output = Vec::new();
        let mut results = Vec::new();
        // Reasoning waits for the signature that follows it.
        let mut unsigned: Option<&'a str> = None;
        for part in &message.parts {
            let is_output = matches!(
                part,
                Part::Reasoning(_) | Part::Text(_) | Part::Refusal(_) | Part::ToolCall(_)
            ) || data_named(part, REDACTED_THINKING).is_some();
            if is_output && !results.is_empty() {
                // Output after results starts the next step.
                self.push(WireRole::Assistant, std::mem::take(&mut output));
                self.push(WireRole::User, std::mem::take(&mut results));
            }
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
                Part::ToolResult(_) | Part::ToolError(_) => results.extend(result_block(part)),
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
        self.push(WireRole::User, results);
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

    /// Puts every call's outcome in the user message right after the assistant message that
    /// made the call, in call order, wherever the history had it (the step's own results, or a
    /// later user message for a tool the client ran). A call without an outcome gets one saying
    /// so; an outcome whose call is nowhere is left out. The API refuses both otherwise.
    fn place_outcomes(self) -> Vec<WireMessage<'a>> {
        let mut outcomes: HashMap<&'a str, Block<'a>> = HashMap::new();
        let mut messages = Vec::with_capacity(self.messages.len());
        for mut message in self.messages {
            for block in std::mem::take(&mut message.content) {
                if let Block::ToolResult { tool_use_id, .. } = block {
                    // The first outcome of a call counts.
                    outcomes.entry(tool_use_id).or_insert(block);
                } else {
                    message.content.push(block);
                }
            }
            messages.push(message);
        }
        let mut placed = Conversation::default();
        for message in messages {
            let answers: Vec<Block<'a>> = match message.role {
                WireRole::Assistant => message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        Block::ToolUse { id, .. } => {
                            Some(outcomes.remove(id).unwrap_or(Block::ToolResult {
                                tool_use_id: id,
                                content: Cow::Borrowed(NO_RESULT),
                                is_error: true,
                            }))
                        }
                        _ => None,
                    })
                    .collect(),
                WireRole::User => Vec::new(),
            };
            placed.push(message.role, message.content);
            placed.push(WireRole::User, answers);
        }
        placed.messages
    }
}

/// What the model reads for a call whose result is not in the history.
const NO_RESULT: &str = "the tool call has no result: it did not finish";

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

fn result_block(part: &Part) -> Option<Block<'_>> {
    match part {
        Part::ToolResult(result) => Some(Block::ToolResult {
            tool_use_id: result.tool_call_id.as_str(),
            content: match &result.result {
                Value::String(text) => Cow::Borrowed(text),
                other => Cow::Owned(other.to_string()),
            },
            is_error: result.is_error(),
        }),
        Part::ToolError(error) => Some(Block::ToolResult {
            tool_use_id: error.tool_call_id.as_str(),
            content: Cow::Owned(
                json!({"error": {"type": error.error_type, "message": error.message}}).to_string(),
            ),
            is_error: true,
        }),
        _ => None,
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

/// A data part as the model reads it: its native JSON.
fn data_text(data: &DataPart) -> String {
    json!({"type": "data", "name": data.name, "data": data.data}).to_string()
}

/// `data:<media type>;base64,<data>` → the media type and the data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    Some((media_type, data))
}

#[cfg(test)]
mod tests;
