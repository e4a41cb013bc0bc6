//! [`agent_card`]: the A2A 1.0 `AgentCard` an agent publishes at
//! `/.well-known/agent-card.json`.

use serde::Serialize;
use serde_json::Value;

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
}

/// One skill of an agent (`AgentSkill`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AgentSkill {
    /// A stable id.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// What the skill does.
    pub description: String,
    /// Keywords.
    pub tags: Vec<String>,
    /// Example requests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

/// The media types agentwire reads and writes: text parts, and DataParts of JSON.
const MODES: [&str; 2] = ["text/plain", "application/json"];

/// The agent card: one JSON-RPC interface of protocol version 1.0 at `agent.url`, streaming
/// on, push notifications off, text and JSON in and out, and the agent's skills.
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
        capabilities: Capabilities,
        default_input_modes: [&'a str; 2],
        default_output_modes: [&'a str; 2],
        skills: &'a [AgentSkill],
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
    struct Capabilities {
        streaming: bool,
        push_notifications: bool,
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
            push_notifications: false,
        },
        default_input_modes: MODES,
        default_output_modes: MODES,
        skills: &agent.skills,
    };
    // Serializing strings and booleans cannot fail.
    serde_json::to_value(card).unwrap_or(Value::Null)
}
