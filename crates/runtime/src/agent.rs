//! [`Agent`]: a named configuration of brain, system prompt, tools, approvals, communication
//! schema and limits, built with [`AgentBuilder`]; [`Agent::start`] begins a run.
//!
//! An agent is immutable once built and cheap to clone (one `Arc`), so a server holds one per
//! configured agent and every run shares it.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentwire_brain::Brain;
use agentwire_core::communication::{CommunicationSchema, MessageKind, Party};
use agentwire_core::{GenerationSettings, InputMode, InvalidField, ToolKind, ToolSpec};
use agentwire_tools::remote::RemoteAgent;
use agentwire_tools::{AskUser, StateError, StateSchema, Tool, ToolLimits, Toolbox, ToolboxError};
use serde_json::Value;
use thiserror::Error;

use crate::clock::{Clock, SystemClock};
use crate::handler::Handler;
use crate::handoff::HandoffTool;
use crate::ids::{IdSource, UniqueIds};
use crate::schema::{allows_anywhere, default_schema};
use crate::subagent::SubagentTool;

/// An agent: what runs it and the rules its runs follow. Clones share one configuration.
///
/// ```
/// use agentwire_brain::ScriptedBrain;
/// use agentwire_runtime::Agent;
///
/// let brain = ScriptedBrain::from_json(r#"{"turns": [[{"type": "finish", "reason": "stop"}]]}"#)?;
/// let agent = Agent::builder("assistant")
///     .description("Answers questions")
///     .brain(brain)
///     .system("You are a helpful assistant.")
///     .max_steps(4)
///     .build()?;
/// assert_eq!(agent.name(), "assistant");
/// assert_eq!(agent.max_steps(), 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentParts>,
}

/// An agent's configuration, shared by its runs.
pub(crate) struct AgentParts {
    pub(crate) name: String,
    pub(crate) description: String,
    /// `None` for an agent a [`Handler`] serves.
    pub(crate) brain: Option<Arc<dyn Brain>>,
    /// Writes the runs' answers instead of the brain and the orchestrator.
    pub(crate) handler: Option<Arc<dyn Handler>>,
    /// Runs the runs elsewhere instead of the brain and the orchestrator.
    pub(crate) remote: Option<Arc<dyn RemoteAgent>>,
    pub(crate) system: Option<String>,
    pub(crate) toolbox: Toolbox,
    /// The agent's tools as the model is offered them, in the order they were added.
    /// Shared with every model call's request.
    pub(crate) tool_specs: Arc<[ToolSpec]>,
    /// The kind of each tool that is not a plain function (its own, or as declared).
    pub(crate) tool_kinds: HashMap<String, ToolKind>,
    pub(crate) approval: HashSet<String>,
    pub(crate) schema: Arc<CommunicationSchema>,
    pub(crate) max_steps: u32,
    pub(crate) max_duration: Option<Duration>,
    pub(crate) allow_model_override: bool,
    /// What a message to a busy session does when its client names no mode.
    pub(crate) input_mode: InputMode,
    /// The agents the model may call like tools, by name (their tools are in the toolbox as
    /// specs only).
    pub(crate) subagents: HashMap<String, Agent>,
    /// How deep below a client's run sub-agents' runs may go.
    pub(crate) max_depth: u32,
    /// The agents the model may hand the conversation to, by name.
    pub(crate) handoffs: Vec<String>,
    /// What its sessions' shared state must match, if anything.
    pub(crate) state_schema: Option<Arc<StateSchema>>,
    pub(crate) ids: Arc<dyn IdSource>,
    pub(crate) clock: Arc<dyn Clock>,
}

/// Builds an [`Agent`]. Only the brain is required; see each method for its default.
#[must_use]
pub struct AgentBuilder {
    name: String,
    description: String,
    brain: Option<Arc<dyn Brain>>,
    handler: Option<Arc<dyn Handler>>,
    remote: Option<Arc<dyn RemoteAgent>>,
    system: Option<String>,
    toolbox: Toolbox,
    tool_error: Option<ToolboxError>,
    tool_kinds: Vec<(String, ToolKind)>,
    approval: Vec<String>,
    input_mode: InputMode,
    schema: Option<Arc<CommunicationSchema>>,
    max_steps: u32,
    max_duration: Option<Duration>,
    allow_model_override: bool,
    subagents: Vec<Agent>,
    max_depth: u32,
    handoffs: Vec<String>,
    state_schema: Option<Arc<StateSchema>>,
    ids: Arc<dyn IdSource>,
    clock: Arc<dyn Clock>,
}

/// How deep below a client's run sub-agents' runs may go unless set
/// ([`AgentBuilder::max_depth`]).
pub const DEFAULT_MAX_DEPTH: u32 = 4;

/// Why an agent could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AgentError {
    /// Neither a brain, a handler nor a remote agent was given.
    #[error("agent '{agent}' has no brain (and no handler or remote agent)")]
    NoBrain {
        /// The agent.
        agent: String,
    },
    /// A tool could not join the agent's toolbox (a name taken twice, an invalid name or
    /// argument schema).
    #[error("agent '{agent}': {source}")]
    Tool {
        /// The agent.
        agent: String,
        /// Why the toolbox refused the tool.
        #[source]
        source: ToolboxError,
    },
    /// `approval` names a tool the agent does not have.
    #[error("agent '{agent}' asks approval for tool '{tool}', which it does not have")]
    UnknownApprovalTool {
        /// The agent.
        agent: String,
        /// The name in `approval`.
        tool: String,
    },
    /// A tool kind is declared for a tool the agent does not have.
    #[error("agent '{agent}' declares the kind of tool '{tool}', which it does not have")]
    UnknownKindTool {
        /// The agent.
        agent: String,
        /// The name declared.
        tool: String,
    },
    /// Tools need approval, but no state of the schema lets the agent ask for one.
    #[error(
        "agent '{agent}' has tools that need approval, but its communication schema never lets the server send approval_request"
    )]
    SchemaLacksApproval {
        /// The agent.
        agent: String,
    },
    /// The agent has `ask_user`, but no state of the schema lets it ask the user a question.
    #[error(
        "agent '{agent}' has the tool ask_user, but its communication schema never lets the server send input_request"
    )]
    SchemaLacksInput {
        /// The agent.
        agent: String,
    },
    /// `max_steps` is 0: the agent could never call its model.
    #[error("agent '{agent}' needs max_steps of at least 1")]
    ZeroMaxSteps {
        /// The agent.
        agent: String,
    },
}

impl Agent {
    /// Starts building an agent called `name`.
    pub fn builder(name: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            name: name.into(),
            description: String::new(),
            brain: None,
            handler: None,
            remote: None,
            system: None,
            toolbox: Toolbox::new(ToolLimits::default()),
            tool_error: None,
            tool_kinds: Vec::new(),
            input_mode: InputMode::default(),
            approval: Vec::new(),
            schema: None,
            max_steps: 8,
            max_duration: None,
            allow_model_override: true,
            subagents: Vec::new(),
            max_depth: DEFAULT_MAX_DEPTH,
            handoffs: Vec::new(),
            state_schema: None,
            ids: Arc::new(UniqueIds),
            clock: Arc::new(SystemClock),
        }
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the agent does, for people and agent cards; empty unless set.
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// What a message to a session busy with this agent's run does when its client names no
    /// mode ([`InputMode`]); `queue` unless set.
    pub fn input_mode(&self) -> InputMode {
        self.inner.input_mode
    }

    /// The brain; `None` for an agent a [`Handler`] serves.
    pub fn brain(&self) -> Option<&Arc<dyn Brain>> {
        self.inner.brain.as_ref()
    }

    /// What runs the agent, for people: the brain's [`Brain::describe`], `handler`, or the
    /// remote agent's [`RemoteAgent::describe`] (`remote a2a http://…`).
    pub fn describe(&self) -> String {
        if let Some(remote) = &self.inner.remote {
            return format!("remote {}", remote.describe());
        }
        match &self.inner.brain {
            Some(brain) if self.inner.handler.is_none() => brain.describe(),
            _ => "handler".into(),
        }
    }

    /// Whether the agent's runs are run elsewhere ([`AgentBuilder::remote`]).
    pub fn is_remote(&self) -> bool {
        self.inner.remote.is_some()
    }

    /// The system prompt.
    pub fn system(&self) -> Option<&str> {
        self.inner.system.as_deref()
    }

    /// The agent's tools as the model is offered them (client tools of a run come after them).
    pub fn tools(&self) -> &[ToolSpec] {
        &self.inner.tool_specs
    }

    /// The kind of the agent's tool `name` ([`AgentBuilder::tool_kind`]);
    /// [`ToolKind::Function`] for a plain function and for a name the agent has no tool by (a
    /// client's tool).
    pub fn tool_kind(&self, name: &str) -> &ToolKind {
        const FUNCTION: &ToolKind = &ToolKind::Function;
        self.inner.tool_kinds.get(name).unwrap_or(FUNCTION)
    }

    /// The agent's tools that are not plain functions, with their kinds (in no order).
    pub fn tool_kinds(&self) -> impl Iterator<Item = (&str, &ToolKind)> {
        self.inner
            .tool_kinds
            .iter()
            .map(|(name, kind)| (name.as_str(), kind))
    }

    /// Whether a call to this tool waits for a person's approval.
    pub fn needs_approval(&self, tool: &str) -> bool {
        self.inner.approval.contains(tool)
    }

    /// The communication schema every run follows (for agent cards, too).
    pub fn schema(&self) -> &Arc<CommunicationSchema> {
        &self.inner.schema
    }

    /// The most model calls a run may make.
    pub fn max_steps(&self) -> u32 {
        self.inner.max_steps
    }

    /// The most time a run may spend working (time waiting for the client does not count).
    pub fn max_duration(&self) -> Option<Duration> {
        self.inner.max_duration
    }

    /// The agents this agent's model may call like tools ([`AgentBuilder::subagent`]), in no
    /// order.
    pub fn subagents(&self) -> impl Iterator<Item = &Agent> {
        self.inner.subagents.values()
    }

    /// The sub-agent the model calls by the tool name `name`.
    pub(crate) fn subagent(&self, name: &str) -> Option<&Agent> {
        self.inner.subagents.get(name)
    }

    /// How deep below a client's run sub-agents' runs may go ([`AgentBuilder::max_depth`]).
    pub fn max_depth(&self) -> u32 {
        self.inner.max_depth
    }

    /// The agents the model may hand the conversation to ([`AgentBuilder::handoff`]).
    pub fn handoffs(&self) -> &[String] {
        &self.inner.handoffs
    }

    /// The JSON Schema its sessions' shared state must match ([`AgentBuilder::state_schema`]).
    pub fn state_schema(&self) -> Option<&StateSchema> {
        self.inner.state_schema.as_deref()
    }

    /// Whether `state` may be the shared state of a session of this agent: it matches the
    /// agent's state schema, if it has one (`null`, no state, always may).
    ///
    /// # Errors
    /// [`StateError::Schema`] naming each problem and where it is.
    pub fn check_state(&self, state: &Value) -> Result<(), StateError> {
        match &self.inner.state_schema {
            Some(schema) => schema
                .check(state)
                .map_err(|problems| StateError::Schema { problems }),
            None => Ok(()),
        }
    }

    /// Whether a run may name another model (see [`AgentBuilder::allow_model_override`]).
    pub fn allows_model_override(&self) -> bool {
        self.inner.allow_model_override
    }

    /// Whether a run of this agent may use these generation settings: within their ranges, no
    /// `model` when the agent forbids choosing it, and nothing its brain cannot take
    /// ([`Brain::check_settings`]; a handler agent takes them all, in its
    /// [`HandlerRequest`](crate::handler::HandlerRequest)). [`Agent::start`](crate::RunStart)
    /// checks this first.
    ///
    /// # Errors
    /// [`InvalidField`] naming the setting.
    pub fn check_settings(&self, settings: &GenerationSettings) -> Result<(), InvalidField> {
        settings.check()?;
        if settings.model.is_some() && !self.inner.allow_model_override {
            return Err(InvalidField::new(
                "model",
                format!(
                    "cannot be chosen: agent '{}' always runs its own model",
                    self.inner.name
                ),
            ));
        }
        match &self.inner.brain {
            // A handler agent gets the settings in its request and does what it will with them.
            Some(brain) if self.inner.handler.is_none() => brain.check_settings(settings),
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("runs_on", &self.describe())
            .field("toolbox", &self.inner.toolbox)
            .field("max_steps", &self.inner.max_steps)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// What the agent does. Default: empty.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// What a message to a busy session does when its client names no mode. Default: `queue`.
    pub fn input_mode(mut self, mode: InputMode) -> Self {
        self.input_mode = mode;
        self
    }

    /// The brain that runs the agent. Required.
    pub fn brain(self, brain: impl Brain + 'static) -> Self {
        self.brain_arc(Arc::new(brain))
    }

    /// A shared brain; see [`AgentBuilder::brain`].
    pub fn brain_arc(mut self, brain: Arc<dyn Brain>) -> Self {
        self.brain = Some(brain);
        self
    }

    /// A handler that writes every run's answer itself with the layered response builder,
    /// instead of a brain (see [`crate::handler`]). An agent with a handler needs no brain;
    /// its tools, approvals and `max_steps` are the handler's business, its `max_duration`
    /// still ends a run that works too long.
    pub fn handler(mut self, handler: impl Handler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// A remote agent that runs every run instead of a brain: an A2A agent or an agent of
    /// another agentwire server (`agentwire_tools::remote`). Its runs stream the remote run's
    /// events as their own (see [`crate::remote`]); offered to another agent with
    /// [`AgentBuilder::subagent`], it is a sub-agent whose work happens elsewhere. Its
    /// description, unless set, is the remote agent's. Its tools, approvals, schema-driven
    /// waits and `max_steps` are the remote's business; its `max_duration` still ends a run
    /// that works too long.
    pub fn remote(self, remote: impl RemoteAgent) -> Self {
        self.remote_arc(Arc::new(remote))
    }

    /// A shared remote agent; see [`AgentBuilder::remote`].
    pub fn remote_arc(mut self, remote: Arc<dyn RemoteAgent>) -> Self {
        self.remote = Some(remote);
        self
    }

    /// The system prompt. Default: none.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Adds a tool. A tool the toolbox refuses (a name taken twice, an invalid schema) makes
    /// [`AgentBuilder::build`] fail.
    pub fn tool(self, tool: impl Tool + 'static) -> Self {
        self.tool_arc(Arc::new(tool))
    }

    /// Adds a shared tool; see [`AgentBuilder::tool`].
    pub fn tool_arc(mut self, tool: Arc<dyn Tool>) -> Self {
        if let Err(error) = self.toolbox.add_arc(tool)
            && self.tool_error.is_none()
        {
            self.tool_error = Some(error);
        }
        self
    }

    /// Adds shared tools, e.g. a workspace's file tools
    /// ([`Workspace::tools`](agentwire_tools::Workspace::tools)); see [`AgentBuilder::tool`].
    pub fn tools(self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        tools.into_iter().fold(self, Self::tool_arc)
    }

    /// Replaces the tools with a prepared toolbox (its limits included). Default: an empty
    /// toolbox with [`ToolLimits::default`].
    pub fn toolbox(mut self, toolbox: Toolbox) -> Self {
        self.toolbox = toolbox;
        self
    }

    /// Declares the kind of the agent's tool `name`, overriding what the tool says of itself
    /// ([`Tool::kind`]; an MCP server's tools are [`ToolKind::Mcp`]): how protocols that tell
    /// tool calls apart by origin show its calls (AgentScope's `plugin_call`,
    /// `component_call`). Default: each tool's own kind.
    pub fn tool_kind(mut self, name: impl Into<String>, kind: ToolKind) -> Self {
        self.tool_kinds.push((name.into(), kind));
        self
    }

    /// The tools whose calls wait for a person's approval before they run. Default: none.
    pub fn approval<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        self.approval = tools.into_iter().map(Into::into).collect();
        self
    }

    /// The communication schema runs follow. Default: [`default_schema`], chat with waits for
    /// approvals and client tools.
    pub fn schema(mut self, schema: impl Into<Arc<CommunicationSchema>>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// The most model calls a run may make; a run that has not answered by then ends
    /// `incomplete`. Default: 8.
    pub fn max_steps(mut self, max_steps: u32) -> Self {
        self.max_steps = max_steps;
        self
    }

    /// The most time a run may spend working (model calls and tools; time spent waiting for the
    /// client does not count); a run that has not answered by then ends `incomplete`. Default:
    /// no limit.
    pub fn max_duration(mut self, max_duration: Duration) -> Self {
        self.max_duration = Some(max_duration);
        self
    }

    /// Whether a run may name another model than the agent's (a run's
    /// [`GenerationSettings::model`](agentwire_core::GenerationSettings)); when not, such a run
    /// is refused, naming `model`. Default: allowed.
    pub fn allow_model_override(mut self, allow: bool) -> Self {
        self.allow_model_override = allow;
        self
    }

    /// Lets the model call `agent` like a tool named after it, with one argument, `input`: the
    /// call starts a run of `agent`'s own (a sub-agent's run, see [`crate::subagent`]) whose
    /// events stream nested in this run's, and whose answer is the call's result. The name
    /// must be free among the agent's tools. Default: none.
    pub fn subagent(mut self, agent: Agent) -> Self {
        let tool = SubagentTool::new(&agent);
        self.subagents.push(agent);
        self.tool(tool)
    }

    /// Lets the model hand the conversation to the agent `name` (described to the model by
    /// `description`), through a tool named `transfer_to_<name>`: the rest of the run is that
    /// agent's, and the session speaks with it from then on (see [`crate::handoff`]). The agent
    /// is found by name in the run's [`Agents`](crate::Agents) when the model calls it, so
    /// agents may hand off to each other both ways. Default: none.
    pub fn handoff(mut self, name: impl Into<String>, description: &str) -> Self {
        let name = name.into();
        let tool = HandoffTool::new(&name, description);
        self.handoffs.push(name);
        self.tool(tool)
    }

    /// How deep below a client's run sub-agents' runs may go: a run this many levels down
    /// calls no further sub-agent (the call is answered with an error the model reads).
    /// Default: [`DEFAULT_MAX_DEPTH`].
    pub fn max_depth(mut self, max_depth: u32) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The JSON Schema the shared state of this agent's sessions must match: every change a
    /// run makes (`update_state`, a tool's patch) and every state a client sets is checked,
    /// and refused if it does not match. Default: none, any JSON.
    pub fn state_schema(mut self, schema: StateSchema) -> Self {
        self.state_schema = Some(Arc::new(schema));
        self
    }

    /// Where ids come from. Default: [`UniqueIds`]; tests use
    /// [`SequentialIds`](crate::SequentialIds).
    pub fn ids(mut self, ids: impl IdSource + 'static) -> Self {
        self.ids = Arc::new(ids);
        self
    }

    /// Where times come from. Default: [`SystemClock`]; tests use
    /// [`FixedClock`](crate::FixedClock).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The agent, after checking that its configuration can work.
    pub fn build(self) -> Result<Agent, AgentError> {
        let agent = self.name;
        if let Some(source) = self.tool_error {
            return Err(AgentError::Tool { agent, source });
        }
        if self.brain.is_none() && self.handler.is_none() && self.remote.is_none() {
            return Err(AgentError::NoBrain { agent });
        }
        if self.max_steps == 0 {
            return Err(AgentError::ZeroMaxSteps { agent });
        }
        if let Some(tool) = self
            .approval
            .iter()
            .find(|tool| !self.toolbox.contains(tool))
        {
            let tool = tool.clone();
            return Err(AgentError::UnknownApprovalTool { agent, tool });
        }
        if let Some((tool, _)) = self
            .tool_kinds
            .iter()
            .find(|(tool, _)| !self.toolbox.contains(tool))
        {
            let tool = tool.clone();
            return Err(AgentError::UnknownKindTool { agent, tool });
        }
        let mut tool_kinds: HashMap<String, ToolKind> = self
            .toolbox
            .specs()
            .filter_map(|spec| {
                let kind = self.toolbox.get(&spec.name)?.kind();
                (kind != ToolKind::Function).then(|| (spec.name.clone(), kind))
            })
            .collect();
        for (tool, kind) in self.tool_kinds {
            if kind == ToolKind::Function {
                tool_kinds.remove(&tool);
            } else {
                tool_kinds.insert(tool, kind);
            }
        }
        let schema = self.schema.unwrap_or_else(default_schema);
        if !self.approval.is_empty()
            && !allows_anywhere(&schema, Party::Server, MessageKind::APPROVAL_REQUEST)
        {
            return Err(AgentError::SchemaLacksApproval { agent });
        }
        if self.toolbox.contains(AskUser::NAME)
            && !allows_anywhere(&schema, Party::Server, MessageKind::INPUT_REQUEST)
        {
            return Err(AgentError::SchemaLacksInput { agent });
        }
        let tool_specs: Arc<[ToolSpec]> = self.toolbox.specs().cloned().collect();
        let description = match (&self.remote, self.description.trim()) {
            (Some(remote), "") => remote.description().to_owned(),
            _ => self.description,
        };
        Ok(Agent {
            inner: Arc::new(AgentParts {
                name: agent,
                description,
                brain: self.brain,
                handler: self.handler,
                remote: self.remote,
                system: self.system,
                toolbox: self.toolbox,
                tool_specs,
                tool_kinds,
                approval: self.approval.into_iter().collect(),
                schema,
                max_steps: self.max_steps,
                max_duration: self.max_duration,
                allow_model_override: self.allow_model_override,
                input_mode: self.input_mode,
                subagents: self
                    .subagents
                    .into_iter()
                    .map(|agent| (agent.name().to_owned(), agent))
                    .collect(),
                max_depth: self.max_depth,
                handoffs: self.handoffs,
                state_schema: self.state_schema,
                ids: self.ids,
                clock: self.clock,
            }),
        })
    }
}
