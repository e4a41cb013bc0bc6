//! Handoffs: the model passes the conversation to another agent
//! ([`AgentBuilder::handoff`](crate::AgentBuilder::handoff)), which answers from there on.
//!
//! A handoff is a tool, `transfer_to_<agent>`. Its call is answered at once (the conversation
//! stays one a model can be shown), the message completes, and the run goes on as a run of the
//! other agent, given the whole conversation so far and its own brain, tools and schema: the
//! schema of the agent that now speaks governs the conversation, from the user's question on.
//! That run streams in the run's own stream, not nested (the conversation is one, and the
//! client sees one answer go on), its messages are the run's output, each naming its agent in
//! `metadata.agent_name`, and how it ends is how the run ends. The session then speaks with the
//! new agent ([`RunHandle::speaker`](crate::RunHandle::speaker)).
//!
//! Decided: agents hand off by name, found at run time in the [`Agents`] the run is given
//! ([`RunStart::agents`](crate::RunStart::agents)): agents that hand the conversation back and
//! forth (a triage and its specialists) cannot hold each other, and a host knows its agents
//! anyway. The rest — waiting for the client, checkpoints, the store gate, cancel — is a
//! sub-agent's ([`crate::subagent`]): a handoff is a child run whose events are not nested.

use std::collections::HashMap;
use std::sync::Arc;

use agentwire_core::ToolSpec;
use agentwire_tools::{Tool, ToolContext, ToolFailure, ToolFuture};
use serde_json::{Value, json};

use crate::agent::Agent;

/// What the tool of a handoff is called: this, then the agent's name.
pub const PREFIX: &str = "transfer_to_";

/// The agents a run may hand the conversation to, by name: a host's agents. Cloning it is a
/// reference-count increment.
#[derive(Clone, Debug, Default)]
pub struct Agents(Arc<HashMap<String, Agent>>);

impl Agents {
    /// The agents, by their names.
    pub fn new(agents: impl IntoIterator<Item = Agent>) -> Self {
        Self(Arc::new(
            agents
                .into_iter()
                .map(|agent| (agent.name().to_owned(), agent))
                .collect(),
        ))
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.0.get(name)
    }
}

/// A handoff as the model is offered it: a tool named `transfer_to_<agent>`, with an optional
/// `reason`. Only a spec: the orchestrator acts on the call.
pub(crate) struct HandoffTool {
    spec: ToolSpec,
}

impl HandoffTool {
    pub(crate) fn new(agent: &str, description: &str) -> Self {
        let about = match description.trim() {
            "" => String::new(),
            description => format!(" ({description})"),
        };
        Self {
            spec: ToolSpec::new(
                format!("{PREFIX}{agent}"),
                format!(
                    "Hand the conversation over to the agent '{agent}'{about}, which answers the \
                     user from here on. Call it when the request is that agent's to answer; say \
                     nothing more yourself."
                ),
                json!({
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string", "description": "Why, in a few words."}
                    },
                    "additionalProperties": false
                }),
            ),
        }
    }
}

impl Tool for HandoffTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _args: Value, _context: ToolContext) -> ToolFuture<'_> {
        Box::pin(async {
            Err(ToolFailure::new(
                "a handoff passes the conversation on; it is not run as a tool",
            ))
        })
    }
}

/// The agent a call hands off to, if it is a handoff's call.
pub(crate) fn target(tool_name: &str) -> Option<&str> {
    tool_name.strip_prefix(PREFIX)
}
