//! Agents from configuration: the `[[agents]]` entries of `agentwire.toml`, and the
//! default agent that `agentwire serve` runs with no file.
//!
//! ```toml
//! [[agents]]
//! name = "assistant"
//! description = "General assistant"
//! provider = "openai"               # openai (any OpenAI-compatible server) | openai-responses | anthropic | scripted | demo
//! model = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1"
//! api_key_env = "OPENAI_API_KEY"    # the key is read from this env var, never stored in the file
//! system = "You are a helpful assistant."
//! tools = ["write_file", "read_file", "list_files", "update_plan", "save_artifact"]
//! workspace = ".agentwire/workspace"
//! approval = []
//! tool_kinds = { write_file = "plugin" }  # how AgentScope shows calls: plugin | component | function
//! schema = "chat"                   # a built-in name or the path of a JSON schema file
//! state_schema = "state.json"       # the JSON Schema the session's shared state must match
//! input_types = ["text/plain", "image/*", "application/pdf"]   # what a user message may carry
//! max_steps = 8
//! allow_model_override = true       # may a request choose another model for its run
//! input_mode = "queue"              # a message to a busy session: queue | steer | interrupt | rollback | reject
//!
//! [[agents.mcp]]
//! name = "fs"
//! command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
//!
//! [[agents.remote]]                 # an agent served elsewhere, called like a sub-agent
//! name = "researcher"               # the tool's name
//! url = "https://agents.example.com/.well-known/agent-card.json"   # A2A: its agent card
//! api_key_env = "RESEARCHER_KEY"    # optional bearer key, sent only to the card's origin
//!
//! [[agents.remote]]
//! name = "reviewer"
//! url = "http://10.0.0.7:8080"      # another agentwire server
//! agent = "reviewer"                # its agent: the protocol is then `agentwire`
//! allow_private = true              # it is at a private address (refused by default)
//! ```
//!
//! Reading a file ([`AgentsFile::from_toml`]) only parses and checks what can be checked without
//! the outside world, so a typo is reported with its line. Building ([`AgentConfig::build`]) reads
//! the key from the environment, loads the script and schema files, opens the workspace,
//! connects to the MCP servers and reads the remote agents' cards. Relative paths (`script`, `schema`, `state_schema`, `workspace`) are resolved
//! against the directory of the configuration file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentwire_brain::{
    AnthropicBrain, AnthropicConfig, Brain, BrainError, DemoBrain, OpenAiBrain, OpenAiConfig,
    OpenAiResponsesBrain, OpenAiResponsesConfig, ScriptedBrain,
};
use agentwire_core::communication::{CommunicationSchema, MessageKind, Party};
use agentwire_core::{InputMode, ToolKind};
use agentwire_tools::mcp::{McpError, McpServer, McpServerConfig};
use agentwire_tools::remote::{RemoteAgentConfig, RemoteError};
use agentwire_tools::{
    AskUser, SaveArtifact, StateSchema, Tool, UpdatePlan, UpdateState, Workspace,
};
use serde::Deserialize;
use thiserror::Error;

use crate::agent::{Agent, AgentError};

/// The agents of a configuration file. Other tables (`[server]`) belong to other readers and
/// are left alone.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AgentsFile {
    /// The `[[agents]]` entries, in the file's order.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

impl AgentsFile {
    /// Parses the agents of a configuration file, and checks that their names are unique.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] with the line and column of what does not parse, or
    /// [`ConfigError::DuplicateAgent`].
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let file: AgentsFile =
            toml::from_str(text).map_err(|error| ConfigError::Toml(error.to_string()))?;
        let mut names = BTreeSet::new();
        for agent in &file.agents {
            if !names.insert(agent.name.as_str()) {
                return Err(ConfigError::DuplicateAgent(agent.name.clone()));
            }
        }
        file.build_order()?;
        Ok(file)
    }

    /// Builds every agent ([`AgentConfig::build`]), each after the agents it calls as
    /// sub-agents, which it holds; the agents come back in the file's order.
    ///
    /// # Errors
    /// The first agent's [`ConfigError`], or one naming a sub-agent that is not in the file
    /// or a cycle of sub-agents.
    pub async fn build(
        &self,
        base_dir: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<Agent>, ConfigError> {
        let mut built: BTreeMap<&str, Agent> = BTreeMap::new();
        for at in self.build_order()? {
            let entry = &self.agents[at];
            let subagents = entry
                .subagents
                .iter()
                .filter_map(|name| built.get(name.as_str()).cloned())
                .collect();
            let handoffs = entry
                .handoffs
                .iter()
                .filter_map(|name| self.agents.iter().find(|agent| agent.name == *name))
                .map(|agent| (agent.name.clone(), agent.description.clone()))
                .collect();
            let agent = entry
                .build_with(base_dir, &env, subagents, handoffs)
                .await?;
            built.insert(entry.name.as_str(), agent);
        }
        Ok(self
            .agents
            .iter()
            .filter_map(|entry| built.get(entry.name.as_str()).cloned())
            .collect())
    }

    /// The entries' indexes in an order where every agent comes after its sub-agents (an
    /// agent holds the agents it calls, so they are built first).
    fn build_order(&self) -> Result<Vec<usize>, ConfigError> {
        let index: BTreeMap<&str, usize> = self
            .agents
            .iter()
            .enumerate()
            .map(|(at, agent)| (agent.name.as_str(), at))
            .collect();
        for agent in &self.agents {
            for (key, names) in [
                ("subagents", &agent.subagents),
                ("handoffs", &agent.handoffs),
            ] {
                if let Some(unknown) = names.iter().find(|name| !index.contains_key(name.as_str()))
                {
                    return Err(agent.invalid(format!(
                        "`{key}` names '{unknown}', which is not an agent of this file"
                    )));
                }
            }
            if agent.handoffs.contains(&agent.name) {
                return Err(agent.invalid("`handoffs` names the agent itself"));
            }
        }
        // Depth-first, each entry after its sub-agents; a sub-agent met again while its own
        // sub-agents are being placed closes a cycle.
        let mut order = Vec::with_capacity(self.agents.len());
        let mut placed = vec![false; self.agents.len()];
        let mut path: Vec<usize> = Vec::new();
        fn place(
            file: &AgentsFile,
            index: &BTreeMap<&str, usize>,
            at: usize,
            placed: &mut [bool],
            path: &mut Vec<usize>,
            order: &mut Vec<usize>,
        ) -> Result<(), ConfigError> {
            if placed[at] {
                return Ok(());
            }
            if let Some(from) = path.iter().position(|&on| on == at) {
                let cycle: Vec<&str> = path[from..]
                    .iter()
                    .chain([&at])
                    .map(|&on| file.agents[on].name.as_str())
                    .collect();
                return Err(file.agents[at].invalid(format!(
                    "its sub-agents call each other in a cycle ({}): an agent holds the agents \
                     it calls",
                    cycle.join(" → ")
                )));
            }
            path.push(at);
            for name in &file.agents[at].subagents {
                place(file, index, index[name.as_str()], placed, path, order)?;
            }
            path.pop();
            placed[at] = true;
            order.push(at);
            Ok(())
        }
        for at in 0..self.agents.len() {
            place(self, &index, at, &mut placed, &mut path, &mut order)?;
        }
        Ok(order)
    }
}

/// One `[[agents]]` entry. Only `name` is required; everything else has the default described
/// on its field.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, used in URLs (`/agents/{name}/…`) and in run requests.
    pub name: String,
    /// What the agent is for, shown in its card.
    #[serde(default)]
    pub description: String,
    /// Which brain runs it (default `demo`).
    #[serde(default)]
    pub provider: Provider,
    /// The model; each provider has a default.
    pub model: Option<String>,
    /// The provider's base URL, for any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM
    /// Studio, OpenRouter, DeepSeek) or a proxy.
    pub base_url: Option<String>,
    /// The environment variable that holds the key (default `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY`). The key itself never appears in the file.
    pub api_key_env: Option<String>,
    /// The system prompt.
    pub system: Option<String>,
    /// The built-in tools the agent may use, of [`BUILTIN_TOOLS`] (default: the three
    /// workspace file tools). Every tool of the MCP servers is added besides.
    pub tools: Option<Vec<String>>,
    /// The root of the file tools (default `.agentwire/workspace`).
    pub workspace: Option<PathBuf>,
    /// Tools that need a person's approval before they run.
    #[serde(default)]
    pub approval: Vec<String>,
    /// Tools declared as plugins or components (`{ write_file = "plugin" }`): protocols that
    /// tell tool calls apart by origin show their calls so (AgentScope's `plugin_call`,
    /// `component_call`). Default: every tool is a function, an MCP server's tools MCP tools.
    #[serde(default)]
    pub tool_kinds: BTreeMap<String, DeclaredKind>,
    /// The communication schema: a built-in name (`chat`, `one_shot`, `function_calling`,
    /// `interruptible`, `approval`, `long_running`) or the path of a JSON schema file. By
    /// default the runtime picks one that fits the agent's tools.
    pub schema: Option<String>,
    /// The path of a JSON Schema file that the shared state of the agent's sessions must match
    /// (see [`AgentBuilder::state_schema`](crate::AgentBuilder::state_schema)). Default: none.
    pub state_schema: Option<PathBuf>,
    /// The content types a user message may carry besides what the schema declares, e.g.
    /// `["text/plain", "image/*", "application/pdf"]`: what the agent's model can read. Each
    /// is added to the schema's `user_message` as optional content (a file part of that media
    /// type); text stays required where the schema requires it. By default text and images
    /// (`image/*`) for `openai` and `anthropic`, whose models take images, and text only for
    /// `scripted` and `demo`; a schema from a file is taken as written unless this is set.
    pub input_types: Option<Vec<String>>,
    /// The most model calls in one run (default 8).
    pub max_steps: Option<u32>,
    /// MCP servers whose tools the agent may use.
    #[serde(default)]
    pub mcp: Vec<McpServerConfig>,
    /// Agents served elsewhere (A2A agents, agents of other agentwire servers) the agent's
    /// model may call like sub-agents, each by its `name`: a call's run streams the remote
    /// run's events nested in this one's, and its answer is the call's result (see the
    /// runtime's `remote` module). Their cards are read when the agent is built. Default: none.
    #[serde(default)]
    pub remote: Vec<RemoteAgentConfig>,
    /// For `scripted`: the script file, `{"turns": [[event, …], …]}`.
    pub script: Option<PathBuf>,
    /// For `scripted` and `demo`: the pace of the deltas; 0 is as fast as possible.
    pub tokens_per_second: Option<f64>,
    /// The sampling temperature, where the provider takes one.
    pub temperature: Option<f64>,
    /// The most tokens one model call may produce.
    pub max_tokens: Option<u32>,
    /// For `openai-responses`: the reasoning effort a reasoning model spends (`minimal`,
    /// `low`, `medium`, `high`), sent as `reasoning.effort`; the model's default when unset.
    pub reasoning_effort: Option<String>,
    /// For `openai-responses`: the reasoning summary a reasoning model streams (`auto`,
    /// `concise`, `detailed`), sent as `reasoning.summary`; none when unset (its encrypted
    /// reasoning is kept across turns either way).
    pub reasoning_summary: Option<String>,
    /// Whether a request may choose another model for its run (default `true`); `false` refuses
    /// such a request, naming `model`. The other generation settings of a request always
    /// override `temperature` and `max_tokens` for its run.
    pub allow_model_override: Option<bool>,
    /// What a message to a session busy with this agent's run does when its client names no
    /// mode: `queue` (the default), `steer`, `interrupt`, `rollback` or `reject`.
    pub input_mode: Option<InputMode>,
    /// Other agents of the file this agent's model may call like tools, by name: each call is
    /// a run of that agent's own, nested in this one's stream, and its answer the call's
    /// result (see the runtime's `subagent` module). Default: none.
    #[serde(default)]
    pub subagents: Vec<String>,
    /// How deep below a client's run sub-agents' runs may go (default 4).
    pub max_depth: Option<u32>,
    /// Other agents of the file this agent's model may hand the conversation to, by name
    /// (a tool `transfer_to_<name>` each): that agent answers from then on, and the session
    /// speaks with it (see the runtime's `handoff` module). Agents may hand off to each other
    /// both ways. Default: none.
    #[serde(default)]
    pub handoffs: Vec<String>,
}

/// A kind a tool can be declared as in `tool_kinds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeclaredKind {
    /// A plain function (the default of built-in tools).
    Function,
    /// A plugin.
    Plugin,
    /// A component.
    Component,
}

impl From<DeclaredKind> for ToolKind {
    fn from(kind: DeclaredKind) -> Self {
        match kind {
            DeclaredKind::Function => ToolKind::Function,
            DeclaredKind::Plugin => ToolKind::Plugin,
            DeclaredKind::Component => ToolKind::Component,
        }
    }
}

/// Which brain runs an agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI Chat Completions, or any server that speaks it.
    Openai,
    /// OpenAI's Responses API (`openai-responses`), or any server that speaks it (Open
    /// Responses): reasoning items carried across turns.
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// A script of brain events (tests, demos, load).
    Scripted,
    /// The offline demo brain.
    #[default]
    Demo,
}

/// Why an agent could not be read or built. Each message names the agent and the setting.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file does not parse, or a setting has the wrong type or an unknown name.
    #[error("the configuration does not parse: {0}")]
    Toml(String),
    /// Two agents share a name.
    #[error("two agents are named '{0}'")]
    DuplicateAgent(String),
    /// A setting is missing or wrong; the message says which and why.
    #[error("agent '{agent}': {message}")]
    Invalid {
        /// The agent.
        agent: String,
        /// What is wrong.
        message: String,
    },
    /// The brain could not be made (a bad URL or header, a script that does not parse).
    #[error("agent '{agent}': {source}")]
    Brain {
        /// The agent.
        agent: String,
        /// Why.
        #[source]
        source: BrainError,
    },
    /// An MCP server could not be reached, or its tools not listed.
    #[error("agent '{agent}': MCP server '{server}': {source}")]
    Mcp {
        /// The agent.
        agent: String,
        /// The server's name.
        server: String,
        /// Why (boxed: MCP errors carry the server's stderr, and this error travels far).
        #[source]
        source: Box<McpError>,
    },
    /// A remote agent could not be reached, or its card not read.
    #[error("agent '{agent}': remote agent '{remote}': {source}")]
    Remote {
        /// The agent.
        agent: String,
        /// The remote agent's name.
        remote: String,
        /// Why (boxed: this error travels far).
        #[source]
        source: Box<RemoteError>,
    },
    /// The parts did not make an agent (a tool name twice, approval for a missing tool, …).
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// The default models, when the configuration names none.
const OPENAI_MODEL: &str = "gpt-4o-mini";
const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";
const DEFAULT_WORKSPACE: &str = ".agentwire/workspace";

/// Every built-in tool `tools` may name: the workspace file tools, then the tools that make
/// parts for the reader (`update_plan`: a `plan_update`; `save_artifact`: an `artifact`, its
/// content saved in the workspace), and `ask_user`, with which the model asks the user a
/// question and waits for the answer in the same run (`awaiting input`; the agent's schema must
/// allow `input_request`, as the default schema does), and `update_state`, with which the model
/// changes the session's shared state by JSON Patch, shown as its arguments stream.
pub const BUILTIN_TOOLS: [&str; 7] = [
    "write_file",
    "read_file",
    "list_files",
    UpdatePlan::NAME,
    SaveArtifact::NAME,
    AskUser::NAME,
    UpdateState::NAME,
];

impl AgentConfig {
    /// An entry with this name and every default: the demo brain with the file tools.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            provider: Provider::Demo,
            model: None,
            base_url: None,
            api_key_env: None,
            system: None,
            tools: None,
            workspace: None,
            approval: Vec::new(),
            tool_kinds: BTreeMap::new(),
            schema: None,
            state_schema: None,
            input_types: None,
            max_steps: None,
            mcp: Vec::new(),
            remote: Vec::new(),
            script: None,
            tokens_per_second: None,
            temperature: None,
            max_tokens: None,
            reasoning_effort: None,
            reasoning_summary: None,
            allow_model_override: None,
            input_mode: None,
            subagents: Vec::new(),
            max_depth: None,
            handoffs: Vec::new(),
        }
    }

    /// The agent `agentwire serve` runs without a configuration file: `assistant`,
    /// on OpenAI when `OPENAI_API_KEY` is set, else on Anthropic when `ANTHROPIC_API_KEY` is,
    /// else on the offline demo brain; with every built-in tool (the workspace file tools,
    /// `update_plan` and `save_artifact`), so its first runs can show every kind of part.
    pub fn default_assistant(env: impl Fn(&str) -> Option<String>) -> Self {
        let provider = if env(OPENAI_KEY_ENV).is_some() {
            Provider::Openai
        } else if env(ANTHROPIC_KEY_ENV).is_some() {
            Provider::Anthropic
        } else {
            Provider::Demo
        };
        Self {
            description: "General assistant".into(),
            provider,
            system: Some(
                "You are a helpful assistant. You can read and write files in your workspace."
                    .into(),
            ),
            tools: Some(
                BUILTIN_TOOLS
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect(),
            ),
            ..Self::named("assistant")
        }
    }

    /// Builds the agent: makes its brain (reading the key from `env`), opens its workspace,
    /// connects to its MCP servers, and loads its schema. `base_dir` is the directory relative
    /// paths are resolved against (the configuration file's). An agent with `subagents` is
    /// built with the others ([`AgentsFile::build`]).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the agent and what is wrong.
    pub async fn build(
        &self,
        base_dir: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Agent, ConfigError> {
        if !self.subagents.is_empty() {
            return Err(self.invalid(
                "an agent with `subagents` is built with the agents it calls (AgentsFile::build)",
            ));
        }
        let handoffs = self
            .handoffs
            .iter()
            .map(|name| (name.clone(), String::new()))
            .collect();
        self.build_with(base_dir, &env, Vec::new(), handoffs).await
    }

    /// [`AgentConfig::build`], holding the built `subagents`, and handing off to `handoffs`
    /// (each agent's name and description).
    async fn build_with(
        &self,
        base_dir: &Path,
        env: &impl Fn(&str) -> Option<String>,
        subagents: Vec<Agent>,
        handoffs: Vec<(String, String)>,
    ) -> Result<Agent, ConfigError> {
        let brain = self.brain(base_dir, env)?;
        let mut builder = Agent::builder(&self.name)
            .description(&self.description)
            .brain_arc(brain)
            .approval(self.approval.iter().cloned())
            .allow_model_override(self.allow_model_override.unwrap_or(true))
            .input_mode(self.input_mode.unwrap_or_default());
        if let Some(system) = &self.system {
            builder = builder.system(system);
        }
        if let Some(max_steps) = self.max_steps {
            builder = builder.max_steps(max_steps);
        }
        if let Some(schema) = self.schema(base_dir)? {
            builder = builder.schema(schema);
        }
        if let Some(path) = &self.state_schema {
            builder = builder.state_schema(self.load_state_schema(&base_dir.join(path))?);
        }
        for tool in self.builtin_tools(base_dir)? {
            builder = builder.tool_arc(tool);
        }
        for server in &self.mcp {
            let connected =
                McpServer::connect(server.clone())
                    .await
                    .map_err(|source| ConfigError::Mcp {
                        agent: self.name.clone(),
                        server: server.name.clone(),
                        source: Box::new(source),
                    })?;
            for tool in connected.tools() {
                builder = builder.tool_arc(tool);
            }
        }
        for remote in &self.remote {
            builder = builder.subagent(self.remote_agent(remote, env).await?);
        }
        for (tool, kind) in &self.tool_kinds {
            builder = builder.tool_kind(tool, ToolKind::from(*kind));
        }
        for subagent in subagents {
            builder = builder.subagent(subagent);
        }
        for (name, description) in handoffs {
            builder = builder.handoff(name, &description);
        }
        if let Some(max_depth) = self.max_depth {
            builder = builder.max_depth(max_depth);
        }
        Ok(builder.build()?)
    }

    /// The agent that runs the calls of a `[[agents.remote]]` entry: connected (its card read)
    /// now, so a wrong URL fails the build.
    async fn remote_agent(
        &self,
        remote: &RemoteAgentConfig,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Agent, ConfigError> {
        let connected = remote
            .connect(env)
            .await
            .map_err(|source| ConfigError::Remote {
                agent: self.name.clone(),
                remote: remote.name.clone(),
                source: Box::new(source),
            })?;
        Ok(Agent::builder(&remote.name).remote_arc(connected).build()?)
    }

    fn invalid(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            agent: self.name.clone(),
            message: message.into(),
        }
    }

    fn brain(
        &self,
        base_dir: &Path,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn Brain>, ConfigError> {
        let brain_error = |source| ConfigError::Brain {
            agent: self.name.clone(),
            source,
        };
        self.check_settings_fit_provider()?;
        Ok(match self.provider {
            Provider::Openai => {
                let mut config = OpenAiConfig::new(self.model.as_deref().unwrap_or(OPENAI_MODEL));
                let custom_server = self.base_url.is_some();
                if let Some(base_url) = &self.base_url {
                    config.connection.base_url.clone_from(base_url);
                }
                // A local OpenAI-compatible server (Ollama, llama.cpp, vLLM) needs no key; the
                // real API does, so its absence is said here rather than as a 401 later.
                config.connection.api_key = self.api_key(OPENAI_KEY_ENV, !custom_server, env)?;
                config.temperature = self.temperature;
                config.max_tokens = self.max_tokens;
                Arc::new(OpenAiBrain::new(config).map_err(brain_error)?)
            }
            Provider::OpenaiResponses => {
                let mut config =
                    OpenAiResponsesConfig::new(self.model.as_deref().unwrap_or(OPENAI_MODEL));
                let custom_server = self.base_url.is_some();
                if let Some(base_url) = &self.base_url {
                    config.connection.base_url.clone_from(base_url);
                }
                config.connection.api_key = self.api_key(OPENAI_KEY_ENV, !custom_server, env)?;
                config.temperature = self.temperature;
                config.max_output_tokens = self.max_tokens;
                config.reasoning_effort.clone_from(&self.reasoning_effort);
                config.reasoning_summary.clone_from(&self.reasoning_summary);
                Arc::new(OpenAiResponsesBrain::new(config).map_err(brain_error)?)
            }
            Provider::Anthropic => {
                let mut config =
                    AnthropicConfig::new(self.model.as_deref().unwrap_or(ANTHROPIC_MODEL));
                if let Some(base_url) = &self.base_url {
                    config.connection.base_url.clone_from(base_url);
                }
                config.connection.api_key =
                    self.api_key(ANTHROPIC_KEY_ENV, self.base_url.is_none(), env)?;
                if let Some(max_tokens) = self.max_tokens {
                    config.max_tokens = max_tokens;
                }
                Arc::new(AnthropicBrain::new(config).map_err(brain_error)?)
            }
            Provider::Scripted => {
                let Some(script) = &self.script else {
                    return Err(
                        self.invalid("provider 'scripted' needs `script`, a JSON file of turns")
                    );
                };
                let path = base_dir.join(script);
                let text = std::fs::read_to_string(&path).map_err(|error| {
                    self.invalid(format!(
                        "cannot read the script {}: {error}",
                        path.display()
                    ))
                })?;
                let brain = ScriptedBrain::from_json(&text).map_err(brain_error)?;
                Arc::new(brain.with_tokens_per_second(self.tokens_per_second.unwrap_or(0.0)))
            }
            Provider::Demo => {
                let brain = DemoBrain::new();
                Arc::new(match self.tokens_per_second {
                    Some(rate) => brain.with_tokens_per_second(rate),
                    None => brain,
                })
            }
        })
    }

    /// Settings that one provider reads and this agent's provider would silently ignore are
    /// refused, so a misplaced line does not go unnoticed.
    fn check_settings_fit_provider(&self) -> Result<(), ConfigError> {
        let remote = matches!(
            self.provider,
            Provider::Openai | Provider::OpenaiResponses | Provider::Anthropic
        );
        let responses = self.provider == Provider::OpenaiResponses;
        let misplaced = [
            ("model", self.model.is_some() && !remote),
            ("base_url", self.base_url.is_some() && !remote),
            ("api_key_env", self.api_key_env.is_some() && !remote),
            ("temperature", self.temperature.is_some() && !remote),
            ("max_tokens", self.max_tokens.is_some() && !remote),
            (
                "reasoning_effort",
                self.reasoning_effort.is_some() && !responses,
            ),
            (
                "reasoning_summary",
                self.reasoning_summary.is_some() && !responses,
            ),
            (
                "allow_model_override",
                self.allow_model_override.is_some() && !remote,
            ),
            (
                "script",
                self.script.is_some() && self.provider != Provider::Scripted,
            ),
            (
                "tokens_per_second",
                self.tokens_per_second.is_some() && remote,
            ),
        ];
        match misplaced.iter().find(|(_, misplaced)| *misplaced) {
            Some((setting, _)) => Err(self.invalid(format!(
                "`{setting}` has no meaning for provider '{}'",
                self.provider.name()
            ))),
            None => Ok(()),
        }
    }

    /// The key from the environment. When `api_key_env` is set, the variable must be; when it
    /// is not, the provider's usual variable is read, and required only for the provider's own
    /// API (`required`).
    fn api_key(
        &self,
        default_env: &str,
        required: bool,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, ConfigError> {
        let name = self.api_key_env.as_deref().unwrap_or(default_env);
        match env(name).filter(|key| !key.is_empty()) {
            Some(key) => Ok(Some(key)),
            None if required || self.api_key_env.is_some() => Err(self.invalid(format!(
                "the API key is read from the environment variable {name}, which is not set"
            ))),
            None => Ok(None),
        }
    }

    fn builtin_tools(&self, base_dir: &Path) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
        let wanted: Vec<&str> = match &self.tools {
            Some(tools) => tools.iter().map(String::as_str).collect(),
            None => Workspace::TOOL_NAMES.to_vec(),
        };
        if let Some(unknown) = wanted.iter().find(|name| !BUILTIN_TOOLS.contains(name)) {
            return Err(self.invalid(format!(
                "no built-in tool is called '{unknown}'; the built-ins are {} (MCP tools come \
                 from `[[agents.mcp]]`)",
                BUILTIN_TOOLS.join(", ")
            )));
        }
        let needs_workspace = wanted
            .iter()
            .any(|name| *name == SaveArtifact::NAME || Workspace::TOOL_NAMES.contains(name));
        let workspace = if needs_workspace {
            let root = base_dir.join(
                self.workspace
                    .as_deref()
                    .unwrap_or(Path::new(DEFAULT_WORKSPACE)),
            );
            Some(Workspace::open(&root).map_err(|error| {
                self.invalid(format!(
                    "cannot open the workspace {}: {error}",
                    root.display()
                ))
            })?)
        } else {
            None
        };
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if let Some(workspace) = &workspace {
            tools.extend(workspace.tools());
            tools.push(Arc::new(SaveArtifact::new(workspace.clone())));
        }
        tools.push(Arc::new(UpdatePlan::new()));
        tools.push(Arc::new(AskUser::new()));
        tools.push(Arc::new(UpdateState::new()));
        // In the order the file lists them, so the model is offered them in that order.
        Ok(wanted
            .iter()
            .filter_map(|name| {
                tools
                    .iter()
                    .find(|tool| tool.spec().name == *name)
                    .map(Arc::clone)
            })
            .collect())
    }

    /// The agent's schema (`None`: the runtime's default) widened by its input types.
    fn schema(&self, base_dir: &Path) -> Result<Option<CommunicationSchema>, ConfigError> {
        let from_file = self
            .schema
            .as_deref()
            .is_some_and(|name| CommunicationSchema::builtin(name).is_none());
        let input_types = match &self.input_types {
            Some(types) => types.clone(),
            None if from_file => Vec::new(),
            None => self.provider.input_types(),
        };
        let schema = match &self.schema {
            Some(schema) => Some(self.load_schema(schema, base_dir)?),
            None if input_types.is_empty() => None,
            None => Some(crate::schema::default_schema().as_ref().clone()),
        };
        let Some(schema) = schema else {
            return Ok(None);
        };
        schema
            .accepting(Party::Client, MessageKind::USER_MESSAGE, &input_types)
            .map(Some)
            .map_err(|error| self.invalid(format!("input_types: {error}")))
    }

    fn load_state_schema(&self, path: &Path) -> Result<StateSchema, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            self.invalid(format!(
                "cannot read the state schema {}: {error}",
                path.display()
            ))
        })?;
        let schema: serde_json::Value = serde_json::from_str(&text).map_err(|error| {
            self.invalid(format!(
                "the state schema {} is not JSON: {error}",
                path.display()
            ))
        })?;
        StateSchema::compile(&schema)
            .map_err(|error| self.invalid(format!("{} ({})", error, path.display())))
    }

    fn load_schema(
        &self,
        schema: &str,
        base_dir: &Path,
    ) -> Result<CommunicationSchema, ConfigError> {
        if let Some(builtin) = CommunicationSchema::builtin(schema) {
            return Ok(builtin);
        }
        let path = base_dir.join(schema);
        let text = std::fs::read_to_string(&path).map_err(|error| {
            self.invalid(format!(
                "schema '{schema}' is neither a built-in ({}) nor a readable file: {error}",
                CommunicationSchema::BUILTIN_NAMES.join(", ")
            ))
        })?;
        CommunicationSchema::from_json(&text).map_err(|error| {
            self.invalid(format!("the schema {} is invalid: {error}", path.display()))
        })
    }
}

impl Provider {
    /// The content types a user message may carry by default (see
    /// [`AgentConfig::input_types`]): text and images for the providers whose models read
    /// images; none beyond the schema's for the others.
    pub fn input_types(self) -> Vec<String> {
        match self {
            Provider::Openai | Provider::Anthropic => {
                vec!["text/plain".to_owned(), "image/*".to_owned()]
            }
            // The Responses API also reads PDFs (`input_file`).
            Provider::OpenaiResponses => vec![
                "text/plain".to_owned(),
                "image/*".to_owned(),
                "application/pdf".to_owned(),
            ],
            Provider::Scripted | Provider::Demo => Vec::new(),
        }
    }

    /// The provider as the file spells it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::OpenaiResponses => "openai-responses",
            Provider::Anthropic => "anthropic",
            Provider::Scripted => "scripted",
            Provider::Demo => "demo",
        }
    }
}
