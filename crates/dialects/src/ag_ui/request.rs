//! The request body: `RunAgentInput` → canonical messages, the client's tools and its answers.

use std::collections::HashMap;

use agentwire_core::part::{ApprovalResponse, FilePart, FileSource, ReasoningPart, TextPart};
use agentwire_core::{
    GenerationSettings, Message, Part, Role, RunId, SessionId, ToolArgs, ToolCall, ToolError,
    ToolErrorKind, ToolResult,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{NAMESPACE, result_of};
use crate::error::DecodeError;

/// A decoded `RunAgentInput`: what an AG-UI client (`HttpAgent`) posts to start a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunAgentInput {
    /// The conversation (`threadId`); the session.
    pub thread_id: SessionId,
    /// The run the client named (`runId`); the server echoes it in `RUN_STARTED`.
    pub run_id: RunId,
    /// The run this one continues (`parentRunId`), if any.
    pub parent_run_id: Option<RunId>,
    /// The whole history, as canonical messages: one per user or system message, and one
    /// assistant message per turn (the AG-UI assistant, reasoning and tool messages between two
    /// user messages, with the id of the first), whose tool messages become `tool_result` or
    /// `tool_error` parts. When `resume` answers interrupts, a last user message carries one
    /// `approval_response` per entry.
    pub messages: Vec<Message>,
    /// The tools the client executes itself (frontend tools): a call to one is answered by the
    /// client, in a later run, with a tool message.
    pub tools: Vec<Tool>,
    /// Context the client supplies for the model.
    pub context: Vec<Context>,
    /// The client's shared state, if any.
    pub state: Option<Value>,
    /// Application-specific properties, passed through untouched.
    pub forwarded_props: Option<Value>,
    /// The generation settings among `forwardedProps`' keys (when it is an object), checked:
    /// AG-UI has no fields of its own for them, and `forwardedProps` is where a client's
    /// run options go.
    pub settings: GenerationSettings,
    /// The answers to the previous run's interrupts, as sent.
    pub resume: Vec<ResumeEntry>,
}

/// A tool the client executes: `{name, description, parameters?}` (a JSON Schema).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name, as tool calls name it.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

/// A piece of context: `{description, value}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// What the value is.
    pub description: String,
    /// The value.
    pub value: String,
}

/// An answer to an interrupt: `{interruptId, status, payload?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered; for ours, the approval id.
    pub interrupt_id: String,
    /// Whether it was resolved or cancelled.
    pub status: ResumeStatus,
    /// The answer; for an approval, `{approved, reason?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// How an interrupt was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// Answered; the payload says how.
    Resolved,
    /// Dismissed: for an approval, a denial.
    Cancelled,
}

impl ResumeEntry {
    /// The approval response this entry gives: `resolved` approves unless the payload says
    /// `"approved": false`; `cancelled` denies. `payload.reason` is the reason.
    pub fn approval_response(&self) -> ApprovalResponse {
        let payload = self.payload.as_ref();
        let approved = self.status == ResumeStatus::Resolved
            && payload
                .and_then(|p| p.get("approved"))
                .and_then(Value::as_bool)
                != Some(false);
        ApprovalResponse {
            approval_id: self.interrupt_id.as_str().into(),
            approved,
            reason: payload
                .and_then(|p| p.get("reason"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }
}

/// Reads a `RunAgentInput` body.
pub fn decode_request(body: &[u8]) -> Result<RunAgentInput, DecodeError> {
    let input: WireInput =
        serde_json::from_slice(body).map_err(|source| DecodeError::InvalidRequest { source })?;
    let mut messages = history(input.messages);
    let resume = input.resume.unwrap_or_default();
    if !resume.is_empty() {
        let answers = resume
            .iter()
            .map(|entry| Part::ApprovalResponse(entry.approval_response()))
            .collect();
        messages.push(Message::new(Role::User, answers));
    }
    let settings = match &input.forwarded_props {
        Some(Value::Object(props)) => GenerationSettings::from_object(props)?,
        _ => GenerationSettings::default(),
    };
    Ok(RunAgentInput {
        thread_id: input.thread_id.into(),
        run_id: input.run_id.into(),
        parent_run_id: input.parent_run_id.map(RunId::from),
        messages,
        tools: input.tools.unwrap_or_default(),
        context: input.context.unwrap_or_default(),
        state: input.state,
        forwarded_props: input.forwarded_props,
        settings,
        resume,
    })
}

/// The history as canonical messages, one assistant message per turn. A sub-agent's messages
/// (those with a `subagentRunId`) are its run's, which the server keeps, not the conversation's:
/// they are left out, but the client's answer to a sub-agent's call (a tool message for a
/// frontend tool it called) is kept, under the call's own id.
fn history(wire: Vec<WireMessage>) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    let mut in_turn = false;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    // A sub-agent's calls, by their AG-UI id: (the call's own id, its tool).
    let mut nested_calls: HashMap<String, (String, String)> = HashMap::new();
    for message in wire {
        if let WireMessage::Assistant {
            subagent_run_id: Some(run),
            tool_calls,
            ..
        } = &message
        {
            for call in tool_calls.iter().flatten() {
                let own = call
                    .id
                    .strip_prefix(run.as_str())
                    .and_then(|rest| rest.strip_prefix(':'))
                    .unwrap_or(&call.id);
                nested_calls.insert(
                    call.id.clone(),
                    (own.to_owned(), call.function.name.clone()),
                );
            }
        }
        if message.subagent_run_id().is_some() {
            continue;
        }
        let (id, parts) = match message {
            WireMessage::Developer { id, content, .. }
            | WireMessage::System { id, content, .. } => {
                messages.push(Message::system(content).with_id(id));
                in_turn = false;
                continue;
            }
            WireMessage::User { id, content, .. } => {
                messages.push(Message::new(Role::User, user_parts(content)).with_id(id));
                in_turn = false;
                continue;
            }
            WireMessage::Assistant {
                id,
                content,
                tool_calls,
                ..
            } => {
                let mut parts = Vec::new();
                if let Some(text) = content.filter(|text| !text.is_empty()) {
                    parts.push(Part::Text(TextPart { text }));
                }
                for call in tool_calls.unwrap_or_default() {
                    tool_names.insert(call.id.clone(), call.function.name.clone());
                    parts.push(Part::ToolCall(ToolCall {
                        tool_call_id: call.id.into(),
                        tool_name: call.function.name,
                        args: ToolArgs::from_json_text(&call.function.arguments),
                    }));
                }
                (id, parts)
            }
            WireMessage::Reasoning { id, content, .. } => {
                (id, vec![Part::Reasoning(ReasoningPart { text: content })])
            }
            WireMessage::Tool {
                id,
                tool_call_id,
                content,
                error,
                metadata,
                ..
            } => {
                let (tool_call_id, names) = match nested_calls.get(&tool_call_id) {
                    Some((own, name)) => {
                        let names = HashMap::from([(own.clone(), name.clone())]);
                        (own.clone(), names)
                    }
                    None => (tool_call_id, tool_names.clone()),
                };
                let part = tool_part(&names, tool_call_id, content, error, metadata);
                (id, vec![part])
            }
            WireMessage::Other => continue,
        };
        match messages.last_mut() {
            Some(turn) if in_turn => turn.parts.extend(parts),
            _ => {
                messages.push(Message::new(Role::Assistant, parts).with_id(id));
                in_turn = true;
            }
        }
    }
    messages
}

/// A tool message as a part: a `tool_error` when it carries `error` (or our `errorType`), else a
/// `tool_result` whose result is the content's JSON (or the text when it is not JSON).
fn tool_part(
    tool_names: &HashMap<String, String>,
    tool_call_id: String,
    content: Value,
    error: Option<String>,
    metadata: Option<Value>,
) -> Part {
    let ours = metadata.as_ref().and_then(|m| m.get(NAMESPACE));
    let field = |key: &str| ours.and_then(|ours| ours.get(key));
    let tool_name = field("toolName")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| tool_names.get(&tool_call_id).cloned());
    let error_type = field("errorType").and_then(|t| ToolErrorKind::deserialize(t).ok());
    if error.is_some() || error_type.is_some() {
        let message = error.unwrap_or_else(|| match content {
            Value::String(text) => text,
            other => other.to_string(),
        });
        return Part::ToolError(ToolError {
            tool_call_id: tool_call_id.into(),
            tool_name,
            error_type: error_type.unwrap_or(ToolErrorKind::Execution),
            message,
        });
    }
    Part::ToolResult(ToolResult {
        tool_call_id: tool_call_id.into(),
        tool_name,
        result: result_of(content),
        is_error: field("isError").and_then(Value::as_bool),
    })
}

fn user_parts(content: UserContent) -> Vec<Part> {
    match content {
        UserContent::Text(text) => vec![Part::Text(TextPart { text })],
        UserContent::Parts(parts) => parts
            .into_iter()
            .filter_map(ContentPart::into_part)
            .collect(),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    parent_run_id: Option<String>,
    #[serde(default)]
    state: Option<Value>,
    messages: Vec<WireMessage>,
    #[serde(default)]
    tools: Option<Vec<Tool>>,
    #[serde(default)]
    context: Option<Vec<Context>>,
    #[serde(default)]
    forwarded_props: Option<Value>,
    #[serde(default)]
    resume: Option<Vec<ResumeEntry>>,
}

#[derive(Deserialize)]
#[serde(
    tag = "role",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
enum WireMessage {
    Developer {
        id: String,
        content: String,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    System {
        id: String,
        content: String,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    User {
        id: String,
        content: UserContent,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    Assistant {
        id: String,
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<WireToolCall>>,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    Tool {
        id: String,
        tool_call_id: String,
        content: Value,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        metadata: Option<Value>,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    Reasoning {
        id: String,
        content: String,
        #[serde(default)]
        subagent_run_id: Option<String>,
    },
    /// `activity` messages (the client's own display state) and roles of newer versions.
    #[serde(other)]
    Other,
}

impl WireMessage {
    /// The sub-agent's run the message is of, if it is not the conversation's own.
    fn subagent_run_id(&self) -> Option<&str> {
        match self {
            WireMessage::Developer {
                subagent_run_id, ..
            }
            | WireMessage::System {
                subagent_run_id, ..
            }
            | WireMessage::User {
                subagent_run_id, ..
            }
            | WireMessage::Assistant {
                subagent_run_id, ..
            }
            | WireMessage::Tool {
                subagent_run_id, ..
            }
            | WireMessage::Reasoning {
                subagent_run_id, ..
            } => subagent_run_id.as_deref(),
            WireMessage::Other => None,
        }
    }
}

#[derive(Deserialize)]
struct WireToolCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum UserContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ContentPart {
    Text {
        text: String,
    },
    Image {
        source: PartSource,
    },
    Audio {
        source: PartSource,
    },
    Video {
        source: PartSource,
    },
    Document {
        source: PartSource,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
enum PartSource {
    Data {
        value: String,
        mime_type: String,
    },
    Url {
        value: String,
        #[serde(default)]
        mime_type: Option<String>,
    },
    File {
        value: String,
        #[serde(default)]
        mime_type: Option<String>,
    },
}

impl ContentPart {
    fn into_part(self) -> Option<Part> {
        let (source, fallback) = match self {
            ContentPart::Text { text } => return Some(Part::Text(TextPart { text })),
            ContentPart::Image { source } => (source, "image/*"),
            ContentPart::Audio { source } => (source, "audio/*"),
            ContentPart::Video { source } => (source, "video/*"),
            ContentPart::Document { source } => (source, "application/octet-stream"),
            ContentPart::Other => return None,
        };
        let (media_type, source) = match source {
            PartSource::Data { value, mime_type } => (mime_type, FileSource::Data(value)),
            PartSource::Url { value, mime_type } | PartSource::File { value, mime_type } => (
                mime_type.unwrap_or_else(|| fallback.into()),
                FileSource::Url(value),
            ),
        };
        Some(Part::File(FilePart {
            media_type,
            source,
            filename: None,
        }))
    }
}
