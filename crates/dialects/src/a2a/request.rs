//! [`decode_request`]: a `SendMessage` or `SendStreamingMessage` JSON-RPC request → the
//! canonical input message and the ids it continues; [`decode_task_request`]: a `GetTask`,
//! `CancelTask` or `SubscribeToTask` request → the task it names; [`decode_list_request`]: a
//! `ListTasks` request → its filter and page. The client's side: [`encode_request`] and
//! [`encode_task_request`] write the first two.

use agentwire_core::part::FileSource;
use agentwire_core::{Awaiting, Message, Metadata, Part, Role, RunStatus};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::push::PushConfig;
use super::wire;
use crate::error::DecodeError;

/// The JSON-RPC method of a request. The A2A 0.3 names (`message/send`, `message/stream`,
/// `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) are accepted too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum A2aMethod {
    /// `SendMessage`: the answer is one JSON-RPC response (a task or a message).
    #[serde(rename = "SendMessage", alias = "message/send")]
    SendMessage,
    /// `SendStreamingMessage`: the answer is an SSE stream of JSON-RPC responses.
    #[serde(rename = "SendStreamingMessage", alias = "message/stream")]
    SendStreamingMessage,
    /// `GetTask`: the task as it stands.
    #[serde(rename = "GetTask", alias = "tasks/get")]
    GetTask,
    /// `CancelTask`: cancel the task and answer it as it then stands.
    #[serde(rename = "CancelTask", alias = "tasks/cancel")]
    CancelTask,
    /// `SubscribeToTask`: the task's stream again, from its first item (the `task`).
    #[serde(rename = "SubscribeToTask", alias = "tasks/resubscribe")]
    SubscribeToTask,
    /// `ListTasks` (new in 1.0): the caller's tasks, a page at a time ([`decode_list_request`]).
    #[serde(rename = "ListTasks")]
    ListTasks,
}

impl A2aMethod {
    /// The method's A2A 1.0 name, as a request names it (`SendStreamingMessage`).
    pub fn name(self) -> &'static str {
        match self {
            Self::SendMessage => "SendMessage",
            Self::SendStreamingMessage => "SendStreamingMessage",
            Self::GetTask => "GetTask",
            Self::CancelTask => "CancelTask",
            Self::SubscribeToTask => "SubscribeToTask",
            Self::ListTasks => "ListTasks",
        }
    }

    /// Whether the method sends a message ([`decode_request`]) rather than naming a task
    /// ([`decode_task_request`]).
    pub fn sends_message(self) -> bool {
        matches!(self, Self::SendMessage | Self::SendStreamingMessage)
    }
}

/// A decoded `SendMessage` / `SendStreamingMessage` request.
#[derive(Clone, Debug, PartialEq)]
pub struct A2aRequest {
    /// The JSON-RPC request id, which every response item must repeat.
    pub id: Value,
    /// Which method was called.
    pub method: A2aMethod,
    /// The client's message, as canonical input: its id is the A2A `messageId`.
    pub input: Vec<Message>,
    /// The conversation (`contextId`) the message continues, if the client named one.
    pub context_id: Option<String>,
    /// The task (`taskId`) the message answers, e.g. one waiting in `input-required`.
    pub task_id: Option<String>,
    /// `configuration.acceptedOutputModes`: the media types the client accepts.
    pub accepted_output_modes: Vec<String>,
    /// `configuration.historyLength`, if set.
    pub history_length: Option<i32>,
    /// `configuration.returnImmediately`: answer as soon as the task exists (also set by
    /// A2A 0.3's `configuration.blocking: false`).
    pub return_immediately: bool,
    /// `configuration.taskPushNotificationConfig`: where to notify the task's status changes
    /// (its `taskId` is empty or the task's).
    pub push_config: Option<PushConfig>,
    /// The request's own `metadata`.
    pub metadata: Map<String, Value>,
}

/// Reads the body of a `SendMessage` or `SendStreamingMessage` JSON-RPC 2.0 request.
///
/// Parts map as the stream's do (see the [module docs](super)); a reply to `input-required`
/// answers with a DataPart holding a canonical `tool_result` or `approval_response`. Another
/// method, a missing `params.message`, a message without parts, or a part without content is
/// an error.
pub fn decode_request(body: &[u8]) -> Result<A2aRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let request: RpcRequest<Params> = serde_json::from_slice(body).map_err(invalid)?;
    if !request.method.sends_message() {
        return Err(invalid(serde::de::Error::custom(
            "a task method is read by `decode_task_request`",
        )));
    }
    let message = request.params.message;
    if message.parts.is_empty() {
        return Err(invalid(serde::de::Error::custom(
            "a message needs at least one part",
        )));
    }
    let mut parts = Vec::with_capacity(message.parts.len());
    for part in message.parts {
        let Some(chunk) = part.into_chunk() else {
            return Err(invalid(serde::de::Error::custom(
                "a part needs `text`, `raw`, `url` or `data`",
            )));
        };
        parts.push(chunk.into_part());
    }
    let metadata = match message.metadata {
        Some(metadata) => Metadata::deserialize(Value::Object(metadata)).map_err(invalid)?,
        None => Metadata::default(),
    };
    let input = Message {
        metadata,
        ..Message::new(message.role.canonical(), parts).with_id(message.message_id)
    };
    let configuration = request.params.configuration.unwrap_or_default();
    Ok(A2aRequest {
        id: request.id,
        method: request.method,
        input: vec![input],
        context_id: message.context_id.filter(|id| !id.is_empty()),
        task_id: message.task_id.filter(|id| !id.is_empty()),
        accepted_output_modes: configuration.accepted_output_modes,
        history_length: configuration.history_length,
        return_immediately: configuration.return_immediately
            || configuration.blocking == Some(false),
        push_config: configuration.task_push_notification_config,
        metadata: request.params.metadata.unwrap_or_default(),
    })
}

/// The body of a `SendMessage` or `SendStreamingMessage` JSON-RPC 2.0 request (`method`)
/// sending `message`, what [`decode_request`] reads: its id is the `messageId` (`message` when
/// it has none), `ROLE_USER` unless it is an assistant's, its parts mapped as the stream's are
/// (text as TextParts, files as `url`/`raw` with their `mediaType`, any other part as a
/// DataPart holding its native JSON), in the conversation `context_id` when given.
///
/// ```
/// use agentwire_core::Message;
/// use agentwire_dialects::a2a::{A2aMethod, decode_request, encode_request};
///
/// let message = Message::user("Summarize the report.").with_id("msg_1");
/// let body = encode_request(&1.into(), A2aMethod::SendStreamingMessage, &message, None);
/// let request = decode_request(&body)?;
/// assert_eq!(request.method, A2aMethod::SendStreamingMessage);
/// assert_eq!(request.input, vec![message]);
/// # Ok::<(), agentwire_dialects::DecodeError>(())
/// ```
pub fn encode_request(
    id: &Value,
    method: A2aMethod,
    message: &Message,
    context_id: Option<&str>,
) -> Vec<u8> {
    let parts: Vec<Value> = message.parts.iter().map(a2a_part).collect();
    let mut wire = json!({
        "messageId": message.id.as_ref().map_or("message", |id| id.as_str()),
        "role": match message.role {
            Role::Assistant => "ROLE_AGENT",
            _ => "ROLE_USER",
        },
        "parts": parts,
    });
    if let Some(context_id) = context_id {
        wire["contextId"] = json!(context_id);
    }
    if !message.metadata.is_empty() {
        wire["metadata"] = json!(message.metadata);
    }
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": method.name(),
        "params": {"message": wire},
    });
    body.to_string().into_bytes()
}

/// The body of a `GetTask`, `CancelTask` or `SubscribeToTask` JSON-RPC 2.0 request (`method`)
/// naming `task_id`, what [`decode_task_request`] reads.
///
/// ```
/// use agentwire_dialects::a2a::{A2aMethod, decode_task_request, encode_task_request};
///
/// let body = encode_task_request(&"req-1".into(), A2aMethod::CancelTask, "task_1");
/// let request = decode_task_request(&body)?;
/// assert_eq!((request.method, request.task_id.as_str()), (A2aMethod::CancelTask, "task_1"));
/// # Ok::<(), agentwire_dialects::DecodeError>(())
/// ```
pub fn encode_task_request(id: &Value, method: A2aMethod, task_id: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": method.name(),
        "params": {"id": task_id},
    });
    body.to_string().into_bytes()
}

/// One canonical part as an A2A part of a request.
fn a2a_part(part: &Part) -> Value {
    match part {
        Part::Text(text) => json!({"text": text.text}),
        Part::File(file) => {
            let mut wire = match &file.source {
                FileSource::Url(url) => json!({"url": url}),
                FileSource::Data(data) => json!({"raw": data}),
            };
            wire["mediaType"] = json!(file.media_type);
            if let Some(filename) = &file.filename {
                wire["filename"] = json!(filename);
            }
            wire
        }
        other => json!({"data": other}),
    }
}

/// A decoded `GetTask`, `CancelTask` or `SubscribeToTask` request.
#[derive(Clone, Debug, PartialEq)]
pub struct A2aTaskRequest {
    /// The JSON-RPC request id, which the response repeats.
    pub id: Value,
    /// Which method was called.
    pub method: A2aMethod,
    /// The task (`params.id`) it names.
    pub task_id: String,
    /// `params.historyLength` of `GetTask`: at most this many messages of the task's history
    /// (0: none), if set.
    pub history_length: Option<u32>,
    /// The request's own `params.metadata` (`CancelTask`).
    pub metadata: Map<String, Value>,
}

/// Reads the body of a `GetTask`, `CancelTask` or `SubscribeToTask` JSON-RPC 2.0 request
/// (`params`: `{"id", "historyLength"?, "metadata"?, "tenant"?}`). Another method, a missing or
/// empty `params.id`, or a negative `historyLength` is an error.
pub fn decode_task_request(body: &[u8]) -> Result<A2aTaskRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let request: RpcRequest<TaskParams> = serde_json::from_slice(body).map_err(invalid)?;
    if request.method.sends_message() || request.method == A2aMethod::ListTasks {
        return Err(invalid(serde::de::Error::custom(
            "a message method is read by `decode_request`, `ListTasks` by `decode_list_request`",
        )));
    }
    if request.params.id.is_empty() {
        return Err(invalid(serde::de::Error::custom("`params.id` is empty")));
    }
    Ok(A2aTaskRequest {
        id: request.id,
        method: request.method,
        task_id: request.params.id,
        history_length: request.params.history_length,
        metadata: request.params.metadata.unwrap_or_default(),
    })
}

/// A decoded `ListTasks` request (A2A 1.0 `ListTasksRequest`).
#[derive(Clone, Debug, PartialEq)]
pub struct A2aListRequest {
    /// The JSON-RPC request id, which the response repeats.
    pub id: Value,
    /// `contextId`: only the tasks of this conversation.
    pub context_id: Option<String>,
    /// `status`: only tasks in this state, as the run statuses it stands for (SUBMITTED is
    /// `created` or `queued`, FAILED is `failed` or `incomplete`, INPUT_REQUIRED every
    /// `awaiting`); `None`: any state (also for `TASK_STATE_UNSPECIFIED`). AUTH_REQUIRED, which
    /// no run is in, is `Some` of nothing.
    pub statuses: Option<Vec<RunStatus>>,
    /// `pageSize`, if set (the spec allows 1 to 100 and defaults to 50).
    pub page_size: Option<i32>,
    /// `pageToken`: the `nextPageToken` of the page before; `None` (or empty): the first page.
    pub page_token: Option<String>,
    /// `historyLength`: at most this many messages of each task's history, if set.
    pub history_length: Option<u32>,
    /// `includeArtifacts`: whether tasks carry their artifacts (`false` by default).
    pub include_artifacts: bool,
}

/// Reads the body of a `ListTasks` JSON-RPC 2.0 request (`params`: `{"contextId"?, "status"?,
/// "pageSize"?, "pageToken"?, "historyLength"?, "includeArtifacts"?, "tenant"?}`). Another
/// method, an unknown state, a negative `historyLength` or a `statusTimestampAfter` (not
/// supported: runs are listed by creation) is an error.
pub fn decode_list_request(body: &[u8]) -> Result<A2aListRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let request: RpcRequest<ListParams> = serde_json::from_slice(body).map_err(invalid)?;
    if request.method != A2aMethod::ListTasks {
        return Err(invalid(serde::de::Error::custom(
            "only `ListTasks` is read by `decode_list_request`",
        )));
    }
    let params = request.params;
    if params.status_timestamp_after.is_some() {
        return Err(invalid(serde::de::Error::custom(
            "`statusTimestampAfter` is not supported: tasks are listed newest first by creation",
        )));
    }
    let statuses = params.status.and_then(|state| match state {
        wire::TaskState::Unspecified => None,
        wire::TaskState::Submitted => Some(vec![RunStatus::Created, RunStatus::Queued]),
        wire::TaskState::Working => Some(vec![RunStatus::InProgress]),
        wire::TaskState::Completed => Some(vec![RunStatus::Completed]),
        wire::TaskState::Failed => Some(vec![RunStatus::Failed, RunStatus::Incomplete]),
        wire::TaskState::Canceled => Some(vec![RunStatus::Canceled]),
        wire::TaskState::Rejected => Some(vec![RunStatus::Rejected]),
        wire::TaskState::InputRequired => Some(vec![RunStatus::Awaiting(Awaiting::Input)]),
        wire::TaskState::AuthRequired => Some(Vec::new()),
    });
    Ok(A2aListRequest {
        id: request.id,
        context_id: params.context_id.filter(|id| !id.is_empty()),
        statuses,
        page_size: params.page_size,
        page_token: params.page_token.filter(|token| !token.is_empty()),
        history_length: params.history_length,
        include_artifacts: params.include_artifacts,
    })
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    #[serde(default, alias = "context_id")]
    context_id: Option<String>,
    #[serde(default)]
    status: Option<wire::TaskState>,
    #[serde(default, alias = "page_size")]
    page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    page_token: Option<String>,
    #[serde(default, alias = "history_length")]
    history_length: Option<u32>,
    #[serde(default, alias = "include_artifacts")]
    include_artifacts: bool,
    #[serde(default, alias = "status_timestamp_after")]
    status_timestamp_after: Option<Value>,
}

#[derive(Deserialize)]
struct RpcRequest<P> {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion,
    #[serde(default)]
    id: Value,
    method: A2aMethod,
    params: P,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    id: String,
    #[serde(default, alias = "history_length")]
    history_length: Option<u32>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
enum JsonRpcVersion {
    #[serde(rename = "2.0")]
    V2,
}

#[derive(Deserialize)]
struct Params {
    message: wire::Message,
    #[serde(default)]
    configuration: Option<Configuration>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Configuration {
    #[serde(default, alias = "accepted_output_modes")]
    accepted_output_modes: Vec<String>,
    #[serde(default, alias = "history_length")]
    history_length: Option<i32>,
    #[serde(default, alias = "return_immediately")]
    return_immediately: bool,
    /// A2A 0.3's name for the opposite of `returnImmediately`.
    #[serde(default)]
    blocking: Option<bool>,
    /// A2A 0.3 called it `pushNotificationConfig`.
    #[serde(
        default,
        alias = "task_push_notification_config",
        alias = "pushNotificationConfig"
    )]
    task_push_notification_config: Option<PushConfig>,
}
