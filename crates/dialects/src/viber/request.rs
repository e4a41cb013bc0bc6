//! [`decode_request`]: the body a Viber client posts to the chat endpoint.

use agentwire_core::{GenerationSettings, Message, Role, SessionId, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::WireMessage;
use crate::error::DecodeError;

/// A Viber chat request: the space to talk in and the messages sent.
///
/// Accepted forms (Viber says only that the client posts its user message;
/// `useXChat({spaceId})` names the space):
/// - `{"spaceId"?: "…", "messages": [XMessage, …]}`, the history or only what is new;
/// - `{"spaceId"?: "…", "message": XMessage}`;
/// - a bare `XMessage`, or an array of them (no space: a new one).
///
/// A message is read in Viber's spelling, with `parts` or the plain-text `content` alone. The
/// object forms also take the run's generation settings as top-level keys (`model`,
/// `temperature`, `topP`, `maxTokens`, …) and the tools the client runs itself as `tools`
/// (OpenAI's function format, or `{name, description, parameters}`); Viber names neither.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The space (agentwire's session) to talk in; `None` starts a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub space_id: Option<SessionId>,
    /// The messages sent, in order.
    pub messages: Vec<Message>,
    /// The run's generation settings, overriding the agent's defaults.
    #[serde(flatten)]
    pub settings: GenerationSettings,
    /// Tools the client executes itself, for this run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
}

impl ChatRequest {
    /// The messages the space does not hold yet: those after the last assistant message (a
    /// client may send the whole history; the space keeps it already). Empty when the request
    /// ends with an assistant message.
    pub fn new_messages(&self) -> &[Message] {
        let from = self
            .messages
            .iter()
            .rposition(|message| message.role == Role::Assistant)
            .map_or(0, |last| last + 1);
        &self.messages[from..]
    }
}

/// Reads a Viber chat body. A body of another shape is [`DecodeError::InvalidRequest`]; a setting
/// or tool that cannot be used is [`DecodeError::InvalidField`] naming it.
pub fn decode_request(body: &[u8]) -> Result<ChatRequest, DecodeError> {
    let invalid = |source| DecodeError::InvalidRequest { source };
    let value: Value = serde_json::from_slice(body).map_err(invalid)?;
    let only = |messages: Vec<WireMessage>| ChatRequest {
        space_id: None,
        messages: messages
            .into_iter()
            .map(WireMessage::into_message)
            .collect(),
        settings: GenerationSettings::default(),
        tools: Vec::new(),
    };
    match value {
        Value::Array(_) => Ok(only(Vec::deserialize(value).map_err(invalid)?)),
        Value::Object(mut object)
            if object.contains_key("messages") || object.contains_key("message") =>
        {
            let space_id = match object.remove("spaceId") {
                None | Some(Value::Null) => None,
                Some(id) => Some(SessionId::deserialize(id).map_err(invalid)?),
            };
            let mut messages: Vec<WireMessage> = match object.remove("messages") {
                None | Some(Value::Null) => Vec::new(),
                Some(messages) => Vec::deserialize(messages).map_err(invalid)?,
            };
            if let Some(message) = object.remove("message") {
                messages.push(WireMessage::deserialize(message).map_err(invalid)?);
            }
            Ok(ChatRequest {
                space_id,
                messages: messages
                    .into_iter()
                    .map(WireMessage::into_message)
                    .collect(),
                settings: GenerationSettings::from_object(&object)?,
                tools: crate::declared_tools(&object)?,
            })
        }
        // Anything else must be one message; its errors say why it is not.
        other => Ok(only(vec![
            WireMessage::deserialize(other).map_err(invalid)?,
        ])),
    }
}
