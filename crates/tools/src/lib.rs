//! Tools for agentwire agents: what a model may call, and how a call is run.
//!
//! This crate defines tools and runs single calls. It does not decide when to call them (the
//! runtime's orchestrator does), ask for approvals, or run tools the client declared.
//!
//! The three types to learn first:
//! - [`Tool`]: something a model may call. It has a [`ToolSpec`] (name, description, the JSON
//!   Schema of its arguments, as the model is shown them) and an async [`Tool::call`] that gets
//!   the arguments as JSON and a [`ToolContext`] whose cancellation token fires when the call
//!   is stopped. It answers with a JSON value or a [`ToolFailure`].
//! - [`Toolbox`]: an agent's tools by name. It offers their specs to the model and runs each
//!   call: arguments are checked against the tool's schema (compiled once, when the tool is
//!   added) before the tool runs, the tool runs as its own task under [`ToolLimits`] (a
//!   timeout and a cap on the output's size), and the answer is always a part: a
//!   `tool_result`, or a `tool_error` the model can read and act on, `VALIDATION` ("Validation
//!   failed for tool 'write_file': missing required argument 'path'.") or `EXECUTION` (a
//!   failure, a panic, a timeout, output over the cap, a canceled call).
//! - [`FnTool`]: a tool in a few lines, from an async function whose argument type derives
//!   `Deserialize` and [`JsonSchema`]; the schema comes from the type ([`parameters_for`]).
//!
//! [`Workspace`] gives the built-in file tools `write_file`, `read_file` and `list_files`,
//! confined to one directory. Two more built-ins let a model produce parts a reader sees beside
//! its text ([`Tool::result_part`]): [`UpdatePlan`] (`update_plan`, a `plan_update` part) and
//! [`SaveArtifact`] (`save_artifact`, an `artifact` part, its content saved in the workspace).
//! [`UpdateState`] (`update_state`) changes the session's [`SharedState`] by JSON Patch, held
//! to the agent's [`StateSchema`] if it has one; any tool may read and change that state
//! through [`ToolContext::state`]. [`AskUser`] (`ask_user`) is only its spec: a runtime answers its calls with the user's next
//! message. [`mcp`] offers the tools of MCP servers (stdio or streamable HTTP)
//! as [`Tool`]s, and [`remote`] reaches agents of other servers (A2A, or another agentwire) that
//! a runtime offers its model like sub-agents.
//!
//! ```
//! use agentwire_core::{Part, ToolCall};
//! use agentwire_tools::{FnTool, JsonSchema, Toolbox};
//! use serde::Deserialize;
//! use tokio_util::sync::CancellationToken;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { a: f64, b: f64 }
//!
//! let mut toolbox = Toolbox::default();
//! toolbox.add(FnTool::new("add", "Adds two numbers", |args: Add, _| async move { Ok(args.a + args.b) }))?;
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let call: ToolCall = serde_json::from_str(r#"{"tool_call_id": "tc_1", "tool_name": "add", "args": {"a": 1, "b": 2}}"#)?;
//! let Part::ToolResult(result) = toolbox.run(&call, CancellationToken::new()).await else { panic!() };
//! assert_eq!(result.result, 3.0);
//!
//! let call: ToolCall = serde_json::from_str(r#"{"tool_call_id": "tc_2", "tool_name": "add", "args": {"a": "1"}}"#)?;
//! let Part::ToolError(error) = toolbox.run(&call, CancellationToken::new()).await else { panic!() };
//! assert_eq!(error.message, "Validation failed for tool 'add': missing required argument 'b'; 'a' must be a number, got \"1\".");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `#[derive(JsonSchema)]` expands to paths in the `schemars` crate, so a crate that defines
//! tools depends on `schemars` 1.x itself (or names this crate's re-export with
//! `#[schemars(crate = "agentwire_tools::schemars")]`).

pub mod address;
mod artifact;
mod ask;
mod file_tools;
mod fn_tool;
pub mod mcp;
mod output;
mod plan;
pub mod remote;
mod schema;
mod shared_state;
mod state_schema;
mod tool;
mod toolbox;
mod update_state;
mod validation;
mod workspace;

pub use agentwire_core::ToolSpec;
pub use artifact::SaveArtifact;
pub use ask::AskUser;
pub use fn_tool::FnTool;
pub use plan::UpdatePlan;
pub use schema::parameters_for;
pub use schemars::{self, JsonSchema};
pub use shared_state::{SharedState, StateError};
pub use state_schema::{InvalidStateSchema, StateSchema};
pub use tool::{Tool, ToolContext, ToolFailure, ToolFuture};
pub use toolbox::{ToolLimits, Toolbox, ToolboxError};
pub use update_state::UpdateState;
pub use workspace::Workspace;
