//! Tools for agentwire agents: what a model may call, and how a call is run.
//!
//! A [`Tool`] has a [`ToolSpec`] (name, description, the JSON Schema of its arguments) and an
//! async [`Tool::call`] that gets the arguments as JSON and a [`ToolContext`] whose
//! cancellation token fires when the run is canceled.

mod file_tools;
mod fn_tool;
mod output;
mod schema;
mod tool;
mod toolbox;
mod validation;
mod workspace;

pub use agentwire_core::ToolSpec;
pub use fn_tool::FnTool;
pub use schema::parameters_for;
pub use schemars::{self, JsonSchema};
pub use tool::{Tool, ToolContext, ToolFailure, ToolFuture};
pub use toolbox::{ToolLimits, Toolbox, ToolboxError};
pub use workspace::Workspace;
