//! [`Message`]: one entry in a conversation, made of [`Part`]s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::MessageId;
use crate::part::{Part, TextPart};
use crate::usage::Usage;

/// One entry in a conversation: who said it and the parts it is made of.
///
/// ```json
/// {"id": "msg_abc", "role": "assistant", "parts": [{"type": "text", "text": "Hello there!"}]}
/// ```
///
/// On input, a message without `parts` but with a string `content` (as many clients send) is
/// read as one text part; a `content` next to `parts` is ignored, since it is derived from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "MessageInput")]
pub struct Message {
    /// The message's id. `None` only for input not yet stored (clients may leave it out); every
    /// message the runtime emits has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<MessageId>,
    /// Who wrote it.
    pub role: Role,
    /// What it says, in order.
    pub parts: Vec<Part>,
    /// Facts about the message; empty unless set.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
    /// When it was created, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person (or program) talking to the agent.
    User,
    /// The agent.
    Assistant,
    /// Tool output, in histories that keep it apart from the assistant's messages.
    Tool,
    /// Data for the client, not part of the conversation the model sees.
    Data,
}

/// Milliseconds since the Unix epoch. The core never reads the clock: callers pass times in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

/// Facts about a message: the agent that wrote it, its token usage, and free keys.
///
/// ```json
/// {"agent_name": "assistant", "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}, "model": "gpt-4o-mini"}
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// The agent that wrote the message.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "agentName")]
    pub agent_name: Option<String>,
    /// Tokens used to produce the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Any other keys, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Metadata {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.agent_name.is_none() && self.usage.is_none() && self.extra.is_empty()
    }
}

impl Message {
    /// A message with the given role and parts, no id, metadata or time.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            id: None,
            role,
            parts,
            metadata: Metadata::default(),
            created_at: None,
        }
    }

    /// A user message of one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// An assistant message of one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![Part::text(text)])
    }

    /// A system message of one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![Part::text(text)])
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<MessageId>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The plain-text content, for clients that want only text: the text and refusal parts,
    /// one per line.
    pub fn content(&self) -> String {
        let mut content = String::new();
        for part in &self.parts {
            let text = match part {
                Part::Text(TextPart { text }) => text,
                Part::Refusal(refusal) => &refusal.text,
                _ => continue,
            };
            if !content.is_empty() {
                content.push('\n');
            }
            content.push_str(text);
        }
        content
    }

    /// The message as JSON in the given spelling, with or without the derived `content`.
    pub fn to_json(&self, options: JsonOptions) -> Value {
        let mut value = match serde_json::to_value(self) {
            Ok(value) => value,
            // Serializing the model cannot fail: all keys are strings and all numbers finite.
            Err(_) => Value::Null,
        };
        if options.with_content
            && let Value::Object(map) = &mut value
        {
            map.insert("content".into(), Value::String(self.content()));
        }
        match options.spelling {
            Spelling::Native => value,
            Spelling::Camel => crate::camel::message_to_camel(value),
        }
    }
}

/// How [`Message::to_json`] writes a message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// Which spelling of the model to write.
    pub spelling: Spelling,
    /// Whether to add the derived plain-text `content`.
    pub with_content: bool,
}

/// The two spellings of the message model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Spelling {
    /// AgentX's and agentwire's own: `"type": "tool_call"`, `tool_call_id`. The default.
    #[default]
    Native,
    /// Viber's: `"type": "tool-call"`, `toolCallId`.
    Camel,
}

/// What a message looks like on input: everything of [`Message`], plus the derived `content`
/// that some clients send instead of parts.
#[derive(Deserialize)]
struct MessageInput {
    #[serde(default)]
    id: Option<MessageId>,
    role: Role,
    #[serde(default)]
    parts: Option<Vec<Part>>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default, alias = "createdAt")]
    created_at: Option<Timestamp>,
}

impl From<MessageInput> for Message {
    fn from(input: MessageInput) -> Self {
        let parts = match (input.parts, input.content) {
            (Some(parts), _) => parts,
            (None, Some(content)) if !content.is_empty() => vec![Part::text(content)],
            (None, _) => Vec::new(),
        };
        Message {
            id: input.id,
            role: input.role,
            parts,
            metadata: input.metadata,
            created_at: input.created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn content_is_the_text_one_part_a_line() {
        let mut message = Message::assistant("Let me check.");
        message
            .parts
            .push(Part::tool_call("c1", "weather", json!({})));
        message.parts.push(Part::text("It is sunny."));
        assert_eq!(message.content(), "Let me check.\nIt is sunny.");
    }

    #[test]
    fn content_alone_reads_as_a_text_part() {
        let message: Message =
            serde_json::from_value(json!({"role": "user", "content": "hi"})).expect("parses");
        assert_eq!(message, Message::user("hi"));
        let message: Message = serde_json::from_value(
            json!({"role": "user", "content": "ignored", "parts": [{"type": "text", "text": "kept"}]}),
        )
        .expect("parses");
        assert_eq!(message, Message::user("kept"));
    }

    #[test]
    fn metadata_keeps_free_keys() {
        let json = json!({"role": "assistant", "parts": [], "metadata": {"agent_name": "a", "timestamp": 5}});
        let message: Message = serde_json::from_value(json.clone()).expect("parses");
        assert_eq!(message.metadata.agent_name.as_deref(), Some("a"));
        assert_eq!(message.metadata.extra.get("timestamp"), Some(&json!(5)));
        assert_eq!(serde_json::to_value(&message).expect("serializes"), json);
    }

    #[test]
    fn content_on_request() {
        let value = Message::user("hi").to_json(JsonOptions {
            with_content: true,
            ..JsonOptions::default()
        });
        assert_eq!(value["content"], "hi");
    }
}
