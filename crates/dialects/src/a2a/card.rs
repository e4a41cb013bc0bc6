//! [`agent_card`]: the A2A 1.0 `AgentCard` an agent publishes at
//! `/.well-known/agent-card.json`, with the agent's communication schema as an extension of
//! agentwire's own ([`AgentExtension::communication_schema`]); and [`decode_card`], another
//! agent's card as a client reads it ([`RemoteCard`]).

use agentwire_core::communication::CommunicationSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::DecodeError;

/// What the card says about an agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentDescription {
    /// The agent's name, for people.
    pub name: String,
    /// What the agent does, for people and for other agents choosing one.
    pub description: String,
    /// The absolute URL of the agent's JSON-RPC endpoint (`SendMessage` and the rest are posted
    /// there).
    pub url: String,
    /// The agent's version, e.g. `1.0.0`.
    pub version: String,
    /// What the agent can do.
    pub skills: Vec<AgentSkill>,
    /// The protocol extensions the agent supports (`capabilities.extensions`); none are written
    /// when empty.
    pub extensions: Vec<AgentExtension>,
    /// Whether calls need a bearer key: the card then declares a `bearer` HTTP security
    /// scheme (`securitySchemes`) and requires it (`securityRequirements`).
    pub bearer_auth: bool,
}

/// A protocol extension the agent supports (A2A's `AgentExtension`), in the card's
/// `capabilities.extensions`.
///
/// ```json
/// {"uri": "https://agentwire.dev/extensions/communication-schema/v1",
///  "description": "…", "required": false, "params": {"schema": {"idle": […], …}}}
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentExtension {
    /// The URI naming the extension.
    pub uri: String,
    /// How the agent uses it, for people.
    pub description: String,
    /// Whether a client must follow the extension to talk to the agent.
    pub required: bool,
    /// The extension's settings for this agent; not written when null.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

/// The URI of agentwire's communication-schema extension: its `params.schema` is the agent's
/// communication schema (as JSON), which every message of a conversation is checked against.
pub const COMMUNICATION_SCHEMA_EXTENSION: &str =
    "https://agentwire.dev/extensions/communication-schema/v1";

impl AgentExtension {
    /// The extension publishing `schema`: which messages the client and the agent may send in
    /// each state of a conversation (a task's context), and what they may carry. Not required:
    /// a client that ignores it is refused what the schema does not allow, as any other is.
    pub fn communication_schema(schema: &CommunicationSchema) -> Self {
        Self {
            uri: COMMUNICATION_SCHEMA_EXTENSION.to_owned(),
            description: "The agent's communication schema: for each state of a \
                          conversation, the messages the client and the agent may send, their \
                          content types and the state each leads to. A conversation starts in \
                          `idle`; a message the schema does not allow is refused."
                .to_owned(),
            required: false,
            params: serde_json::json!({ "schema": schema }),
        }
    }
}

/// One skill of an agent (`AgentSkill`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSkill {
    /// A stable id.
    #[serde(default)]
    pub id: String,
    /// A name for people.
    #[serde(default)]
    pub name: String,
    /// What the skill does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// The media types agentwire reads and writes: text parts, and DataParts of JSON.
const MODES: [&str; 2] = ["text/plain", "application/json"];

/// The agent card: one JSON-RPC interface of protocol version 1.0 at `agent.url`, streaming
/// on, push notifications on, text and JSON in and out, and the agent's skills.
///
/// ```
/// use agentwire_dialects::a2a::{AgentDescription, agent_card};
///
/// let card = agent_card(&AgentDescription {
///     name: "assistant".into(),
///     description: "Answers questions.".into(),
///     url: "https://agents.example.com/a2a".into(),
///     version: "1.0.0".into(),
///     skills: Vec::new(),
///     extensions: Vec::new(),
///     bearer_auth: true,
/// });
/// assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
/// assert_eq!(card["capabilities"]["streaming"], true);
/// ```
pub fn agent_card(agent: &AgentDescription) -> Value {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Card<'a> {
        name: &'a str,
        description: &'a str,
        supported_interfaces: [Interface<'a>; 1],
        version: &'a str,
        capabilities: Capabilities<'a>,
        default_input_modes: [&'a str; 2],
        default_output_modes: [&'a str; 2],
        skills: &'a [AgentSkill],
        #[serde(skip_serializing_if = "Option::is_none")]
        security_schemes: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        security_requirements: Option<Value>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Interface<'a> {
        url: &'a str,
        protocol_binding: &'a str,
        protocol_version: &'a str,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Capabilities<'a> {
        streaming: bool,
        push_notifications: bool,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        extensions: &'a [AgentExtension],
    }
    let card = Card {
        name: &agent.name,
        description: &agent.description,
        supported_interfaces: [Interface {
            url: &agent.url,
            protocol_binding: "JSONRPC",
            protocol_version: "1.0",
        }],
        version: &agent.version,
        capabilities: Capabilities {
            streaming: true,
            push_notifications: true,
            extensions: &agent.extensions,
        },
        default_input_modes: MODES,
        default_output_modes: MODES,
        skills: &agent.skills,
        security_schemes: agent.bearer_auth.then(|| {
            serde_json::json!({"bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "An API key of the server's `[server] api_keys`.",
            }}})
        }),
        security_requirements: agent
            .bearer_auth
            .then(|| serde_json::json!([{"schemes": {"bearer": {"list": []}}}])),
    };
    // Serializing strings, booleans and JSON values cannot fail.
    serde_json::to_value(card).unwrap_or(Value::Null)
}

/// Another agent's card as a client reads it ([`decode_card`]): what it is, and where and how
/// it is spoken to. Fields of the card not listed here are not read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteCard {
    /// The agent's name.
    pub name: String,
    /// What it does; empty when the card says nothing.
    pub description: String,
    /// Its skills, in the card's order.
    pub skills: Vec<AgentSkill>,
    /// `supportedInterfaces`, in the card's order (its preference), then an A2A 0.3 card's
    /// `url` with its `preferredTransport` and its `additionalInterfaces`, as version `0.3`.
    pub interfaces: Vec<AgentInterface>,
    /// `capabilities.streaming`: whether it answers `SendStreamingMessage`.
    pub streaming: bool,
}

/// Where an agent is spoken to in one binding (`AgentInterface`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentInterface {
    /// The endpoint's absolute URL.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub protocol_binding: String,
    /// The A2A version spoken there, e.g. `1.0`; empty when the card does not say.
    pub protocol_version: String,
}

impl RemoteCard {
    /// The URL of the first JSON-RPC interface of A2A 1.x (one that names no version counts as
    /// 1.0): where `SendStreamingMessage` goes. `None` when the card offers none (only gRPC,
    /// HTTP+JSON, or A2A 0.3).
    pub fn json_rpc_url(&self) -> Option<&str> {
        self.interfaces
            .iter()
            .find(|interface| {
                interface.protocol_binding.eq_ignore_ascii_case("JSONRPC")
                    && (interface.protocol_version.is_empty()
                        || interface.protocol_version == "1"
                        || interface.protocol_version.starts_with("1."))
            })
            .map(|interface| interface.url.as_str())
    }
}

/// Reads an agent card (`GET /.well-known/agent-card.json`) as a client needs it: name,
/// description, skills, interfaces and whether it streams. A card of A2A 0.3 (a `url` and a
/// `preferredTransport` instead of `supportedInterfaces`) reads too, its interfaces marked
/// `0.3`.
///
/// ```
/// use agentwire_dialects::a2a::decode_card;
///
/// let card = decode_card(br#"{"name": "Sample Agent", "description": "Says hi.",
///     "supportedInterfaces": [
///         {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
///         {"url": "http://127.0.0.1:41241/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
///     "capabilities": {"streaming": true},
///     "skills": [{"id": "hi", "name": "Hi", "description": "Say hi.", "tags": ["sample"]}]}"#)?;
/// assert_eq!(card.json_rpc_url(), Some("http://127.0.0.1:41241/a2a/jsonrpc"));
/// assert_eq!(card.skills[0].description, "Say hi.");
/// # Ok::<(), agentwire_dialects::DecodeError>(())
/// ```
///
/// # Errors
/// [`DecodeError::InvalidCard`] for JSON that is not an object with a `name`, or whose known
/// fields have the wrong types.
pub fn decode_card(bytes: &[u8]) -> Result<RemoteCard, DecodeError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Card {
        name: String,
        #[serde(default)]
        description: String,
        #[serde(default, alias = "supported_interfaces")]
        supported_interfaces: Vec<Interface>,
        #[serde(default)]
        capabilities: Capabilities,
        #[serde(default)]
        skills: Vec<AgentSkill>,
        // A2A 0.3.
        #[serde(default)]
        url: Option<String>,
        #[serde(default, alias = "preferred_transport")]
        preferred_transport: Option<String>,
        #[serde(default, alias = "additional_interfaces")]
        additional_interfaces: Vec<LegacyInterface>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Interface {
        url: String,
        #[serde(default, alias = "protocol_binding")]
        protocol_binding: String,
        #[serde(default, alias = "protocol_version")]
        protocol_version: String,
    }
    #[derive(Deserialize)]
    struct LegacyInterface {
        url: String,
        #[serde(default)]
        transport: String,
    }
    #[derive(Default, Deserialize)]
    struct Capabilities {
        #[serde(default)]
        streaming: bool,
    }
    let card: Card =
        serde_json::from_slice(bytes).map_err(|source| DecodeError::InvalidCard { source })?;
    let mut interfaces: Vec<AgentInterface> = card
        .supported_interfaces
        .into_iter()
        .map(|interface| AgentInterface {
            url: interface.url,
            protocol_binding: interface.protocol_binding,
            protocol_version: interface.protocol_version,
        })
        .collect();
    let legacy = card.url.map(|url| LegacyInterface {
        url,
        transport: card
            .preferred_transport
            .unwrap_or_else(|| "JSONRPC".to_owned()),
    });
    for interface in legacy.into_iter().chain(card.additional_interfaces) {
        let known = interfaces.iter().any(|known| {
            known.url == interface.url && known.protocol_binding == interface.transport
        });
        if !known {
            interfaces.push(AgentInterface {
                url: interface.url,
                protocol_binding: interface.transport,
                protocol_version: "0.3".to_owned(),
            });
        }
    }
    Ok(RemoteCard {
        name: card.name,
        description: card.description,
        skills: card.skills,
        interfaces,
        streaming: card.capabilities.streaming,
    })
}
