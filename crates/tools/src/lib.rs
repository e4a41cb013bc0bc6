//! Tools for agentwire agents: what a model may call, and how a call is run.
//!
//! A [`Tool`] has a [`ToolSpec`] (name, description, the JSON Schema of its arguments) and an
//! async [`Tool::call`] that gets the arguments as JSON and a [`ToolContext`] whose
//! cancellation token fires when the run is canceled.
//!
//! [`mcp`] offers the tools of MCP servers (stdio or streamable HTTP) as [`Tool`]s.

pub mod mcp;
mod tool;

pub use agentwire_core::ToolSpec;
pub use tool::{Tool, ToolContext, ToolFailure, ToolFuture};
