//! The server's settings, and the configuration file that holds them with the agents.
//!
//! ```toml
//! [server]
//! addr = "127.0.0.1:8080"                             # env AGENTWIRE_ADDR, flag --addr
//! database_url = "sqlite://.agentwire/agentwire.db"   # or postgres://…; env AGENTWIRE_DATABASE_URL
//! node_id = "node-a"                                  # PostgreSQL: this node's stable name
//! api_keys = ["key-1", "key-2"]                       # none: no authentication
//! cors_origins = ["https://app.example"]              # or ["*"]; none: same-origin only
//! max_body_bytes = 4194304                            # the largest request body
//! max_input_messages = 256                            # the most messages one request carries
//! max_tool_output_bytes = 1048576                     # ceiling over every agent's tool output
//! max_run_seconds = 900                               # ceiling over every run's working time
//! heartbeat_seconds = 15                              # keep-alive after this long quiet
//!
//! [[agents]]
//! name = "assistant"
//! ```
//!
//! `max_tool_output_bytes` and `max_run_seconds` cap what each agent allows itself (its
//! toolbox's output limit, its `max_duration`): the tighter one wins. A run over its working
//! time ends `incomplete` with error code `max_duration`; a tool result over the limit is cut
//! (text) or answered with an `EXECUTION` error the model reads.
//!
//! The `[[agents]]` entries are read by the runtime's [`AgentsFile`]; this module reads
//! `[server]` from the same text and leaves the agents to it.

use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::time::Duration;

use agentwire_runtime::{AgentsFile, ConfigError};
use serde::Deserialize;

/// The address `agentwire serve` listens on by default (DESIGN §11).
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How the server runs: where it listens, who may call it, and its limits.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The store's database (`sqlite://…` or `postgres://…`); `None` keeps everything in an
    /// in-memory SQLite database that lives as long as the server.
    pub database_url: Option<String>,
    /// This process's name in the store. Its runs carry it; on start it marks the runs it left
    /// unfinished `incomplete`. `None`: `local` on SQLite (one process per file), a fresh name
    /// per process on PostgreSQL.
    pub node_id: Option<String>,
    /// Bearer tokens; empty means no authentication.
    pub api_keys: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// The most input messages one request may carry.
    pub max_input_messages: usize,
    /// How long an event stream may stay silent before a heartbeat is sent.
    pub heartbeat: Duration,
    /// On shutdown, how long running runs get to settle before they are canceled.
    pub shutdown_grace: Duration,
    /// Browser origins allowed to call the API across origins (`https://app.example`), or
    /// `*` for any; empty: none (same-origin only).
    pub cors_origins: Vec<String>,
    /// The most bytes of JSON one tool result may take, over every agent's own limit.
    pub max_tool_output_bytes: usize,
    /// The most working time of a run, over every agent's own `max_duration`.
    pub max_run_duration: Duration,
    /// How long a run that ended stays in memory (readers that come right after its end, e.g.
    /// A2A's `GetTask` with the task's history, read it there); then only the store has it.
    pub keep_finished_runs: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            database_url: None,
            node_id: None,
            api_keys: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            max_input_messages: 256,
            heartbeat: Duration::from_secs(15),
            shutdown_grace: Duration::from_secs(10),
            cors_origins: Vec::new(),
            // Above the toolboxes' own default (128 KiB): a ceiling for agents that raise theirs.
            max_tool_output_bytes: 1024 * 1024,
            // Working time: model calls and tools, not time waiting for the client.
            max_run_duration: Duration::from_secs(15 * 60),
            keep_finished_runs: Duration::from_secs(60),
        }
    }
}

/// The `[server]` table of `agentwire.toml`. Every key is optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Where to listen, e.g. `0.0.0.0:8080`.
    pub addr: Option<SocketAddr>,
    /// The store's database URL.
    pub database_url: Option<String>,
    /// This node's stable name in a shared store (see [`Settings::node_id`]).
    pub node_id: Option<String>,
    /// Bearer tokens that may call the API.
    #[serde(default)]
    pub api_keys: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: Option<usize>,
    /// The most input messages one request may carry.
    pub max_input_messages: Option<usize>,
    /// Origins allowed to call across origins, or `["*"]`.
    #[serde(default, deserialize_with = "origins")]
    pub cors_origins: Vec<String>,
    /// The most bytes of JSON one tool result may take, over every agent's limit.
    pub max_tool_output_bytes: Option<usize>,
    /// The most working time of a run, in seconds, over every agent's `max_duration`.
    pub max_run_seconds: Option<NonZeroU64>,
    /// How long, in seconds, a stream may stay quiet (a long tool call, a slow model) before it
    /// gets a keep-alive in its dialect's form, so proxies and clients do not time it out.
    pub heartbeat_seconds: Option<NonZeroU64>,
}

/// Reads `cors_origins`: `["*"]` alone, or origins as browsers send them (`scheme://host`,
/// with a port if not the scheme's default, no path or trailing slash; a slip there would
/// silently match nothing).
fn origins<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let origins = Vec::<String>::deserialize(deserializer)?;
    if origins.iter().any(|origin| origin == "*") && origins.len() > 1 {
        return Err(serde::de::Error::custom(
            "cors_origins: \"*\" allows every origin and must stand alone",
        ));
    }
    for origin in origins.iter().filter(|origin| *origin != "*") {
        let host = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        let valid = host.is_some_and(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
        });
        if !valid {
            return Err(serde::de::Error::custom(format!(
                "cors_origins: '{origin}' is not an origin like \"https://app.example\" \
                 (scheme and host, a port if needed, no path)"
            )));
        }
    }
    Ok(origins)
}

impl ServerSection {
    /// These settings over the defaults.
    pub fn settings(&self) -> Settings {
        let defaults = Settings::default();
        Settings {
            addr: self.addr.unwrap_or(defaults.addr),
            database_url: self.database_url.clone(),
            node_id: self.node_id.clone(),
            api_keys: self.api_keys.clone(),
            max_body_bytes: self.max_body_bytes.unwrap_or(defaults.max_body_bytes),
            max_input_messages: self
                .max_input_messages
                .unwrap_or(defaults.max_input_messages),
            cors_origins: self.cors_origins.clone(),
            max_tool_output_bytes: self
                .max_tool_output_bytes
                .unwrap_or(defaults.max_tool_output_bytes),
            max_run_duration: self
                .max_run_seconds
                .map_or(defaults.max_run_duration, |seconds| {
                    Duration::from_secs(seconds.get())
                }),
            heartbeat: self
                .heartbeat_seconds
                .map_or(defaults.heartbeat, |seconds| {
                    Duration::from_secs(seconds.get())
                }),
            ..defaults
        }
    }
}

/// A whole configuration file: `[server]` and the agents.
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    /// The `[server]` table.
    pub server: ServerSection,
    /// The `[[agents]]` entries.
    pub agents: AgentsFile,
}

/// Only the `[server]` table; the rest is the runtime's.
#[derive(Deserialize)]
struct ServerOnly {
    #[serde(default)]
    server: ServerSection,
}

impl ConfigFile {
    /// Parses a configuration file.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] with the line and column of what does not parse, or what the
    /// runtime finds wrong with the agents.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let ServerOnly { server } =
            toml::from_str(text).map_err(|error| ConfigError::Toml(error.to_string()))?;
        Ok(Self {
            server,
            agents: AgentsFile::from_toml(text)?,
        })
    }
}
