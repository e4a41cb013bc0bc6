//! The `POST /process` body (`AgentRequest`) → canonical input messages.

use agentwire_core::{GenerationSettings, Message, Metadata, Role, SessionId, ToolSpec};
use serde::Deserialize;
use serde::de::Error as _;
use serde_json::{Map, Value};

use super::wire::{self, Class, Obj};
use crate::error::DecodeError;

/// What an `AgentRequest` asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentRequest {
    /// The input messages. A run of assistant-side messages (reasoning, answers, calls and their
    /// outputs) is one assistant message, as agentwire keeps a turn; user and system messages
    /// stand alone. Outputs with no assistant message before them make a `tool` message.
    pub input: Vec<Message>,
    /// `session_id`: the conversation to continue.
    pub session_id: Option<SessionId>,
    /// `user_id`; AgentScope uses the session id when it is missing.
    pub user_id: Option<String>,
    /// `id`: the request's id, which AgentScope makes the response's id.
    pub request_id: Option<String>,
    /// `stream` (default `true`). AgentApp streams either way.
    pub stream: bool,
    /// `model`.
    pub model: Option<String>,
    /// `tools`, as sent (`{"type": "function", "function": {name, description, parameters}}`
    /// or any dict).
    pub tools: Vec<Value>,
    /// Every other key (`temperature`, `top_p`, `max_tokens`, `stop`, `n`, `seed`, … and
    /// extensions: their model allows extra keys).
    pub options: Map<String, Value>,
    /// The generation settings among `model` and the other keys, checked.
    pub settings: GenerationSettings,
    /// `tools` as the client-executed tools of the run (OpenAI's function format, or a
    /// bare function), checked: a call to one waits for the client's
    /// `function_call_output`.
    pub client_tools: Vec<ToolSpec>,
}

#[derive(Deserialize)]
struct RequestWire {
    input: Vec<Obj>,
    #[serde(default = "yes")]
    stream: bool,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(flatten)]
    options: Map<String, Value>,
}

fn yes() -> bool {
    true
}

/// Reads an `AgentRequest` body. A body that is not JSON, has no `input` list, or has a message
/// or content of the wrong shape (a role they do not define, a content without `type`) is an
/// error, as it is for their pydantic model; so is a generation setting out of its range or a
/// tool that declares no usable function ([`DecodeError::InvalidField`], naming it).
pub fn decode_request(body: &[u8]) -> Result<AgentRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let wire: RequestWire = serde_json::from_slice(body).map_err(invalid)?;
    let mut input: Vec<Message> = Vec::new();
    // Whether the last message is an assistant-side group still taking messages.
    let mut group_open = false;
    for message in &wire.input {
        let class = Class::of(message.kind.as_deref().unwrap_or("message"));
        if matches!(class, Class::Error | Class::Skip) {
            continue;
        }
        let msg_id = message.id.clone().unwrap_or_default();
        let mut parts = Vec::new();
        for content in message.content.iter().flatten() {
            if content.kind.is_none() {
                return Err(invalid(serde_json::Error::missing_field("type")));
            }
            parts.extend(wire::whole_part(class, content, &msg_id));
        }
        let role = match (message.role, class) {
            (Some(role), _) => Role::from(role),
            (None, Class::Message | Class::ApprovalResponse) => Role::User,
            (None, Class::Output) => Role::Tool,
            (None, _) => Role::Assistant,
        };
        let stands_alone = matches!(role, Role::User | Role::System)
            && matches!(class, Class::Message | Class::ApprovalResponse);
        if stands_alone {
            group_open = false;
        } else if group_open && let Some(group) = input.last_mut() {
            if class != Class::Output {
                group.role = Role::Assistant;
            }
            group.parts.extend(parts);
            merge_metadata(&mut group.metadata, message);
            continue;
        } else {
            group_open = true;
        }
        let role = match (stands_alone, class) {
            (true, _) => role,
            (false, Class::Output) => Role::Tool,
            (false, _) => Role::Assistant,
        };
        let mut metadata = Metadata::default();
        merge_metadata(&mut metadata, message);
        input.push(Message {
            id: message.id.clone().map(Into::into),
            role,
            parts,
            metadata,
            created_at: None,
        });
    }
    let mut settings_keys = wire.options.clone();
    if let Some(model) = &wire.model {
        settings_keys.insert("model".into(), model.clone().into());
    }
    let settings = GenerationSettings::from_object(&settings_keys)?;
    let tools = wire.tools.unwrap_or_default();
    let client_tools = ToolSpec::from_declarations(&tools, "tools")?;
    Ok(AgentRequest {
        input,
        session_id: wire.session_id.map(Into::into),
        user_id: wire.user_id,
        request_id: wire.id,
        stream: wire.stream,
        model: wire.model,
        tools,
        options: wire.options,
        settings,
        client_tools,
    })
}

fn merge_metadata(into: &mut Metadata, message: &Obj) {
    let more = wire::metadata(message);
    if more.agent_name.is_some() {
        into.agent_name = more.agent_name;
    }
    if more.usage.is_some() {
        into.usage = more.usage;
    }
    into.extra.extend(more.extra);
}
