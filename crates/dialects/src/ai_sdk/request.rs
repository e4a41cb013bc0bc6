//! [`decode_request`]: the body `useChat`'s `DefaultChatTransport` posts → canonical messages.

use agentwire_core::ids::ApprovalId;
use agentwire_core::part::{
    ApprovalRequest, ApprovalResponse, FilePart, ReasoningPart, RefusalPart, Source, StepStart,
    TextPart, ToolArgs, ToolCall,
};
use agentwire_core::{
    GenerationSettings, InputMode, InvalidField, Message, MessageId, Part, Role, RunId, ToolCallId,
    ToolError, ToolErrorKind, ToolResult, ToolSpec,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{data_part, file_source, metadata_from_json, present, provider_fact, step_id};
use crate::error::DecodeError;

/// A chat request: `{id, messages, trigger, messageId?, …body}` as `DefaultChatTransport` sends
/// it, or `{id, message}` when an app sends only the last message.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The chat's id (`id`).
    pub chat_id: Option<String>,
    /// The whole history in order (`messages`), or the one message sent (`message`).
    pub messages: Vec<Message>,
    /// Why the client sent it; `submit-message` when the body does not say.
    pub trigger: Trigger,
    /// The assistant message to continue (with `submit-message`) or to regenerate.
    pub message_id: Option<MessageId>,
    /// The other top-level keys: what the app added with useChat's `body` option.
    pub body: Map<String, Value>,
    /// The generation settings among `body`'s keys (`model`, `temperature`, `maxOutputTokens`,
    /// `topP`, … in the AI SDK's own names, or the snake_case ones), checked.
    pub settings: GenerationSettings,
    /// `body.tools`: tools the client executes itself (its `onToolCall`/`addToolOutput`), as
    /// OpenAI functions or bare `{name, description, parameters}`, checked.
    pub tools: Vec<ToolSpec>,
    /// `body.mode`: what to do with the message if the chat's run is still going (`queue`,
    /// `steer`, `interrupt`, `rollback`, `reject`); `None` leaves it to the agent's default.
    pub mode: Option<InputMode>,
    /// `body.clientMessageId`: the client's name for the message, which makes a retry
    /// harmless; the last message's own `id` when absent.
    pub client_message_id: Option<String>,
    /// The major version of `ai` the client says it is (`body.aiSdkVersion`, `7` or
    /// `"7.0.173"`); 5 when it does not say, so that only chunks every version knows are sent.
    pub sdk_major: u32,
    /// The sub-agents' calls the messages show as tool parts (a waiting sub-agent's request
    /// the stream surfaced): their answers are in `messages` under the calls' own ids, and a
    /// continuation sends their outcomes to these parts
    /// ([`AiSdkEncoder::knowing_subagent_calls`](super::AiSdkEncoder::knowing_subagent_calls)).
    pub subagent_calls: Vec<SubagentCall>,
}

/// A sub-agent's call shown as a tool part of the assistant message: the part carries
/// `callProviderMetadata: {"agentwire": {"runId"}}`, and its ids are the call's and the
/// approval's prefixed with the run's (`<run>:<id>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentCall {
    /// The sub-agent's run that made the call.
    pub run_id: RunId,
    /// The call's own id, in that run.
    pub tool_call_id: ToolCallId,
    /// The approval the part asks, when it asks one.
    pub approval_id: Option<ApprovalId>,
}

/// Why a chat request was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// A new message, or a continuation (an approval answer, a client tool output).
    SubmitMessage,
    /// The client regenerates the assistant message `messageId`.
    RegenerateMessage,
}

impl ChatRequest {
    /// The assistant message this request continues: the `messageId` of a submit (approval
    /// answers and client tool outputs). The response's `start` must carry this id.
    pub fn continues(&self) -> Option<&MessageId> {
        match self.trigger {
            Trigger::SubmitMessage => self.message_id.as_ref(),
            Trigger::RegenerateMessage => None,
        }
    }
}

/// Reads a chat request body. `UIMessage` parts map to canonical parts as the module docs say;
/// parts of types with no canonical part (`source-document`, `reasoning-file`, `custom`, …) are
/// skipped.
pub fn decode_request(body: &[u8]) -> Result<ChatRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let raw: RawRequest = serde_json::from_slice(body).map_err(invalid)?;
    let ui_messages = match (raw.messages, raw.message) {
        (Some(messages), _) => messages,
        (None, Some(message)) => vec![message],
        (None, None) => {
            return Err(invalid(custom(
                "a chat request needs `messages` or `message`",
            )));
        }
    };
    let ui_last_id = ui_messages.last().and_then(|message| message.id.clone());
    let mut subagent_calls = Vec::new();
    let messages = ui_messages
        .into_iter()
        .enumerate()
        .map(|(n, message)| {
            message
                .into_message(&mut subagent_calls)
                .map_err(|error| invalid(custom(format_args!("message {n}: {error}"))))
        })
        .collect::<Result<_, _>>()?;
    let settings = GenerationSettings::from_object(&raw.body)?;
    let tools = crate::declared_tools(&raw.body)?;
    let mode = match raw.body.get("mode").filter(|mode| !mode.is_null()) {
        None => None,
        Some(mode) => Some(
            mode.as_str()
                .and_then(InputMode::from_name)
                .ok_or_else(|| {
                    InvalidField::new(
                        "mode",
                        "must be one of queue, steer, interrupt, rollback, reject",
                    )
                })?,
        ),
    };
    let client_message_id = match raw.body.get("clientMessageId") {
        None | Some(Value::Null) => ui_last_id,
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        Some(_) => {
            return Err(InvalidField::new("clientMessageId", "must be a non-empty string").into());
        }
    };
    let sdk_major = match raw.body.get("aiSdkVersion") {
        Some(Value::Number(major)) => major.as_u64().map_or(5, |major| major as u32),
        Some(Value::String(version)) => version
            .split('.')
            .next()
            .and_then(|major| major.parse().ok())
            .unwrap_or(5),
        _ => 5,
    };
    Ok(ChatRequest {
        chat_id: raw.id,
        messages,
        trigger: raw.trigger.unwrap_or(Trigger::SubmitMessage),
        message_id: raw.message_id.map(MessageId::from),
        body: raw.body,
        settings,
        tools,
        mode,
        client_message_id,
        sdk_major,
        subagent_calls,
    })
}

fn custom(message: impl std::fmt::Display) -> serde_json::Error {
    serde::de::Error::custom(message)
}

#[derive(Deserialize)]
struct RawRequest {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    messages: Option<Vec<UiMessage>>,
    #[serde(default)]
    message: Option<UiMessage>,
    #[serde(default)]
    trigger: Option<Trigger>,
    #[serde(default, rename = "messageId")]
    message_id: Option<String>,
    #[serde(flatten)]
    body: Map<String, Value>,
}

#[derive(Deserialize)]
struct UiMessage {
    #[serde(default)]
    id: Option<String>,
    role: UiRole,
    #[serde(default)]
    metadata: Option<Value>,
    parts: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum UiRole {
    System,
    User,
    Assistant,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UiText {
    text: String,
    #[serde(default)]
    provider_metadata: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UiFile {
    media_type: String,
    url: String,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    provider_metadata: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UiSource {
    source_id: String,
    url: String,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Deserialize)]
struct UiData {
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UiTool {
    tool_call_id: String,
    state: String,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    output: Option<Value>,
    #[serde(default)]
    error_text: Option<String>,
    #[serde(default)]
    approval: Option<UiApproval>,
    #[serde(default)]
    preliminary: Option<bool>,
    #[serde(default)]
    call_provider_metadata: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UiApproval {
    id: String,
    #[serde(default)]
    approved: Option<bool>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    request_reason: Option<String>,
}

impl UiMessage {
    fn into_message(
        self,
        subagent_calls: &mut Vec<SubagentCall>,
    ) -> Result<Message, serde_json::Error> {
        let role = match self.role {
            UiRole::System => Role::System,
            UiRole::User => Role::User,
            UiRole::Assistant => Role::Assistant,
        };
        let metadata = match self.metadata {
            Some(Value::Object(metadata)) => metadata,
            _ => Map::new(),
        };
        let (metadata, created_at) = metadata_from_json(metadata);
        let mut parts = Vec::with_capacity(self.parts.len());
        let mut n_steps = 0;
        // The step that shows sub-agents' requests (a `step-start` right before a sub-agent's
        // tool part) is not the message's.
        let shown: Vec<bool> = self.parts.iter().map(is_subagent_part).collect();
        let mut ui_parts = self.parts;
        let mut at = 0;
        ui_parts.retain(|part| {
            at += 1;
            !(part.get("type") == Some(&Value::from("step-start"))
                && shown.get(at).copied().unwrap_or(false))
        });
        for (n, part) in ui_parts.into_iter().enumerate() {
            push_parts(part, &mut n_steps, &mut parts, subagent_calls)
                .map_err(|error| custom(format_args!("part {n}: {error}")))?;
        }
        Ok(Message {
            id: self.id.map(MessageId::from),
            role,
            parts,
            metadata,
            created_at,
        })
    }
}

/// Whether a `UIMessage` part is a sub-agent's call shown in the message.
fn is_subagent_part(part: &Value) -> bool {
    provider_fact(part.get("callProviderMetadata"), "runId").is_some()
}

/// Appends the canonical parts one `UIMessage` part stands for (a tool part holds a call and
/// its outcome, so it may be several).
fn push_parts(
    part: Value,
    n_steps: &mut u32,
    parts: &mut Vec<Part>,
    subagent_calls: &mut Vec<SubagentCall>,
) -> serde_json::Result<()> {
    let kind = match part.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Err(custom("a part needs a string `type`")),
    };
    match kind.as_str() {
        "text" => {
            let text: UiText = serde_json::from_value(part)?;
            let refusal = provider_fact(text.provider_metadata.as_ref(), "refusal");
            parts.push(if refusal == Some(&Value::Bool(true)) {
                Part::Refusal(RefusalPart { text: text.text })
            } else {
                Part::Text(TextPart { text: text.text })
            });
        }
        "reasoning" => {
            let text: UiText = serde_json::from_value(part)?;
            parts.push(Part::Reasoning(ReasoningPart { text: text.text }));
        }
        "file" => {
            let file: UiFile = serde_json::from_value(part)?;
            let filename = file.filename.or_else(|| {
                provider_fact(file.provider_metadata.as_ref(), "filename")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            parts.push(Part::File(FilePart {
                source: file_source(&file.media_type, &file.url),
                media_type: file.media_type,
                filename,
            }));
        }
        "step-start" => {
            *n_steps += 1;
            parts.push(Part::StepStart(StepStart {
                step_id: step_id(*n_steps).into(),
                step_name: None,
            }));
        }
        "source-url" => {
            let source: UiSource = serde_json::from_value(part)?;
            parts.push(Part::Source(Source {
                source_id: source.source_id.into(),
                url: source.url,
                title: source.title,
            }));
        }
        "dynamic-tool" => {
            let tool: UiTool = serde_json::from_value(part)?;
            let Some(name) = tool.tool_name.clone() else {
                return Err(custom("a `dynamic-tool` part needs `toolName`"));
            };
            push_tool(tool, name, parts, subagent_calls);
        }
        kind if kind.starts_with("tool-") => {
            let tool: UiTool = serde_json::from_value(part)?;
            push_tool(
                tool,
                kind["tool-".len()..].to_owned(),
                parts,
                subagent_calls,
            );
        }
        kind if kind.starts_with("data-") => {
            let data: UiData = serde_json::from_value(part)?;
            parts.push(data_part(
                &kind["data-".len()..],
                data.data.unwrap_or(Value::Null),
            ));
        }
        _ => {}
    }
    Ok(())
}

/// A tool part: the call, then its approval request and answer, then its result or error. A
/// preliminary output (a sub-agent's progress) is no result. A sub-agent's call (marked in its
/// `callProviderMetadata`) is not the message's: only the client's answers to it are kept, under
/// the call's and the approval's own ids, and the call is listed in `subagent_calls`.
fn push_tool(
    mut tool: UiTool,
    tool_name: String,
    parts: &mut Vec<Part>,
    subagent_calls: &mut Vec<SubagentCall>,
) {
    let subagent = provider_fact(tool.call_provider_metadata.as_ref(), "runId")
        .and_then(Value::as_str)
        .map(RunId::from);
    if let Some(run_id) = &subagent {
        let own = |id: &str| {
            id.strip_prefix(run_id.as_str())
                .and_then(|rest| rest.strip_prefix(':'))
                .unwrap_or(id)
                .to_owned()
        };
        tool.tool_call_id = own(&tool.tool_call_id);
        if let Some(approval) = &mut tool.approval {
            approval.id = own(&approval.id);
        }
        if !matches!(
            tool.state.as_str(),
            "output-available" | "output-error" | "output-denied"
        ) {
            subagent_calls.push(SubagentCall {
                run_id: run_id.clone(),
                tool_call_id: tool.tool_call_id.as_str().into(),
                approval_id: tool
                    .approval
                    .as_ref()
                    .map(|approval| approval.id.as_str().into()),
            });
        }
    }
    if tool.preliminary == Some(true) {
        tool.state = "input-available".into();
    }
    let tool_call_id = agentwire_core::ToolCallId::from(tool.tool_call_id);
    if subagent.is_none() {
        parts.push(Part::ToolCall(ToolCall {
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            args: tool.input.map(ToolArgs).unwrap_or_default(),
        }));
    }
    if let Some(approval) = tool.approval {
        if subagent.is_none() {
            parts.push(Part::ApprovalRequest(ApprovalRequest {
                approval_id: approval.id.as_str().into(),
                tool_call_id: tool_call_id.clone(),
                reason: approval.request_reason,
            }));
        }
        let approved = match (approval.approved, tool.state.as_str()) {
            (Some(approved), _) => Some(approved),
            (None, "output-denied") => Some(false),
            (None, _) => None,
        };
        if let Some(approved) = approved {
            parts.push(Part::ApprovalResponse(ApprovalResponse {
                approval_id: approval.id.into(),
                approved,
                reason: approval.reason,
            }));
        }
    }
    match tool.state.as_str() {
        "output-available" => parts.push(Part::ToolResult(ToolResult {
            tool_call_id,
            tool_name: Some(tool_name),
            result: tool.output.unwrap_or(Value::Null),
            is_error: None,
        })),
        "output-error" => parts.push(Part::ToolError(ToolError {
            tool_call_id,
            tool_name: Some(tool_name),
            error_type: ToolErrorKind::Execution,
            message: tool.error_text.unwrap_or_default(),
        })),
        _ => {}
    }
}
