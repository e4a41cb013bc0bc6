//! The server's settings, and the configuration file that holds them with the agents.
//!
//! ```toml
//! [server]
//! addr = "127.0.0.1:8080"
//! database_url = "sqlite://.agentwire/agentwire.db"   # or postgres://…; env AGENTWIRE_DATABASE_URL
//! node_id = "node-a"                                  # PostgreSQL: this node's stable name
//! api_keys = ["key-1", "key-2"]                       # none: no authentication
//!
//! [[agents]]
//! name = "assistant"
//! ```
//!
//! The `[[agents]]` entries are read by the runtime's [`AgentsFile`]; this module reads
//! `[server]` from the same text and leaves the agents to it.

use std::net::SocketAddr;
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
