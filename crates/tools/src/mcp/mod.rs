//! Tools from MCP servers, through the official Rust SDK (`rmcp`), client side only.
//!
//! [`McpServer::connect`] starts a server from its [`McpServerConfig`] (a child process spoken to
//! over stdio, or a streamable HTTP endpoint), runs the `initialize` handshake, reads every page
//! of `tools/list`, and offers each tool as an [`McpTool`], a [`Tool`](crate::Tool) like any
//! other.
//!
//! - **Names.** A tool is named `<server>_<tool>`, always, not only when two servers clash: the
//!   names a model sees, and the ones an agent's `approval` list holds, then never change when a
//!   server is added, and no MCP tool can shadow a built-in (`fs_read_file` beside `read_file`).
//!   Server names are 1–32 of `[A-Za-z0-9_-]`; any other character of a tool's name becomes `_`
//!   and the whole is cut at 64, so every name passes the providers' `^[a-zA-Z0-9_-]{1,64}$`.
//!   Two tools of one server that end up with the same name are refused at connect. The MCP
//!   name is still what `tools/call` sends.
//! - **Results.** `structuredContent` when the server gives it; else a lone text item as a JSON
//!   string; else the content list, text items as strings and images, audio and resources as
//!   their MCP JSON objects. `isError: true` is a [`ToolFailure`](crate::ToolFailure) carrying
//!   the tool's text, as is a JSON-RPC error or a server that has gone away: never a panic.
//! - **Identity.** A call's `_meta` names the agentwire run and tool call it is
//!   (`agentwire/run_id`, `agentwire/tool_call_id`): never repeated, so a server with effects
//!   can key its work by them.
//! - **Cancellation.** When the call's token fires (or its future is dropped) the request is
//!   abandoned at once and `notifications/cancelled` tells the server.
//! - **Lifetime.** The connection lives while the `McpServer` or any of its tools does; when the
//!   last is dropped a stdio server is killed, together with every process it started (it runs
//!   in its own process group: `npx …` starts the real server as a child).
//!   [`McpServer::shutdown`] ends it at once, gracefully (stdin closed, then `SIGTERM`, then
//!   kill; an HTTP session is deleted); later calls fail.
//!
//! The tool list is read once, at connect; `notifications/tools/list_changed` is not followed.
//! The client offers no sampling, elicitation or roots, so a call that asks for input fails.

mod config;
mod error;
mod server;
mod tool;

pub use config::{McpServerConfig, McpTransport};
pub use error::McpError;
pub use server::McpServer;
pub use tool::McpTool;
