//! Where an MCP server is and how to reach it: the `[[agents.mcp]]` entries of `agentwire.toml`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::McpError;

/// The longest server name: the name prefixes each of its tools, and a provider allows 64
/// characters in all.
const MAX_SERVER_NAME: usize = 32;

/// How long a server may take to start, shake hands and list its tools unless told otherwise:
/// generous, because `npx -y …` may download the server first.
const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// One MCP server an agent takes tools from.
///
/// Deserializes from the TOML of `[[agents.mcp]]` (and any serde format of the same shape):
///
/// ```toml
/// [[agents.mcp]]
/// name = "fs"
/// command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
/// env = { LOG_LEVEL = "warn" }   # optional, added to the inherited environment
/// cwd = "/srv"                   # optional
///
/// [[agents.mcp]]
/// name = "search"
/// url = "http://127.0.0.1:9000/mcp"
/// headers = { Authorization = "Bearer …" }   # optional
/// startup_timeout_secs = 10                  # optional, default 60
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawConfig")]
pub struct McpServerConfig {
    /// The server's name: the prefix of its tools' names (`<name>_<tool>`). 1–32 characters of
    /// `[A-Za-z0-9_-]`.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// How long starting, the handshake and listing the tools may take together.
    pub startup_timeout: Duration,
}

/// How an MCP server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on its stdin and stdout (`command = [...]`).
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables added to the environment the child inherits.
        env: BTreeMap<String, String>,
        /// The child's working directory; the agentwire process's when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint (`url = "http://…/mcp"`).
    Http {
        /// The endpoint's URL, `http://` or `https://`.
        url: String,
        /// Headers sent with every request (authorization, for instance).
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// A server started as `command` (program first), spoken to over stdio.
    pub fn stdio<S: Into<String>>(
        name: impl Into<String>,
        command: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Stdio {
                command: command.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }

    /// A server at a streamable HTTP endpoint.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        }
    }

    /// This config with another startup timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Checks what can be checked without starting anything: the name, a non-empty command,
    /// the URL's scheme. [`McpServer::connect`](super::McpServer::connect) runs it first, and
    /// deserializing runs it too, so a bad config file is refused when it is read.
    pub fn validate(&self) -> Result<(), McpError> {
        let invalid = |reason: String| McpError::InvalidConfig {
            server: self.name.clone(),
            reason,
        };
        let name_ok = !self.name.is_empty()
            && self.name.len() <= MAX_SERVER_NAME
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok {
            return Err(invalid(format!(
                "the name must be 1 to {MAX_SERVER_NAME} characters of A-Z, a-z, 0-9, `_` and `-` \
                 (it prefixes the tools' names)"
            )));
        }
        match &self.transport {
            McpTransport::Stdio { command, .. } => {
                if command.first().is_none_or(String::is_empty) {
                    return Err(invalid("`command` must name a program".to_owned()));
                }
            }
            McpTransport::Http { url, .. } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(invalid(format!(
                        "`url` must start with http:// or https://, not `{url}`"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The config as written: `command` and `url` side by side, so that an entry with both, or
/// neither, gets an error that says so (an untagged enum could only say "no variant matched").
#[derive(Deserialize)]
struct RawConfig {
    name: String,
    command: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    startup_timeout_secs: Option<u64>,
}

impl TryFrom<RawConfig> for McpServerConfig {
    type Error = String;

    fn try_from(raw: RawConfig) -> Result<Self, String> {
        let name = raw.name;
        let transport = match (raw.command, raw.url) {
            (Some(command), None) => {
                if raw.headers.is_some() {
                    return Err(format!(
                        "MCP server `{name}`: `headers` go with `url`, not `command`"
                    ));
                }
                McpTransport::Stdio {
                    command,
                    env: raw.env.unwrap_or_default(),
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if raw.env.is_some() || raw.cwd.is_some() {
                    return Err(format!(
                        "MCP server `{name}`: `env` and `cwd` go with `command`, not `url`"
                    ));
                }
                McpTransport::Http {
                    url,
                    headers: raw.headers.unwrap_or_default(),
                }
            }
            (Some(_), Some(_)) => {
                return Err(format!(
                    "MCP server `{name}`: give `command` or `url`, not both"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "MCP server `{name}`: give `command = [...]` (stdio) or `url = \"...\"` \
                     (streamable HTTP)"
                ));
            }
        };
        let config = Self {
            name,
            transport,
            startup_timeout: raw
                .startup_timeout_secs
                .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_secs),
        };
        config.validate().map_err(|error| error.to_string())?;
        Ok(config)
    }
}
