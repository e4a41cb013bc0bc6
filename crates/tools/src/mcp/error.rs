//! Why an MCP server could not be used.

use std::time::Duration;

/// Why [`McpServer::connect`](super::McpServer::connect) failed. Each names the server; the
/// messages are meant for the person who wrote the config.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The config cannot work (bad name, empty command, not an HTTP URL, bad header).
    #[error("MCP server `{server}`: {reason}")]
    InvalidConfig {
        /// The server's name.
        server: String,
        /// What is wrong.
        reason: String,
    },
    /// The stdio server's program could not be started.
    #[error("could not start MCP server `{server}` (`{program}`): {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that was to run.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The server started (or the URL was tried) but the MCP handshake failed.
    #[error("could not connect to MCP server `{server}` at {target}: {reason}{}", stderr_note(.stderr))]
    Connect {
        /// The server's name.
        server: String,
        /// The command line or URL.
        target: String,
        /// What went wrong, with its causes.
        reason: String,
        /// The end of what a stdio server wrote to stderr before it failed (empty if nothing).
        stderr: String,
    },
    /// Starting, the handshake and listing the tools took longer than the startup timeout.
    #[error("MCP server `{server}` did not start within {timeout:?}{}", stderr_note(.stderr))]
    Timeout {
        /// The server's name.
        server: String,
        /// The timeout that passed.
        timeout: Duration,
        /// The end of what a stdio server wrote to stderr meanwhile.
        stderr: String,
    },
    /// `tools/list` failed or returned something unusable.
    #[error("MCP server `{server}` did not list its tools: {reason}")]
    ListTools {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// Two of the server's tools get the same name once made safe for the providers.
    #[error(
        "MCP server `{server}`: tools `{first}` and `{second}` would both be called `{name}` \
         (names keep only A-Z, a-z, 0-9, `_`, `-` and at most 64 characters)"
    )]
    DuplicateToolName {
        /// The server's name.
        server: String,
        /// The name both would get.
        name: String,
        /// One tool's MCP name.
        first: String,
        /// The other's.
        second: String,
    },
}

fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {stderr}")
    }
}
