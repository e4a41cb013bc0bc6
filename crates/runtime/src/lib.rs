//! The agentwire runtime: agents, runs, and the orchestrator loop that drives them.
//!
//! An [`Agent`] is a brain, a system prompt, tools, the tools that need approval, a
//! communication schema and limits, built once with [`Agent::builder`]. [`Agent::start`] begins
//! a [`Run`]: one turn of a conversation. The run streams [`Event`](agentwire_core::Event)s as the
//! model and the tools produce them, and its [`RunHandle`] answers approvals and client tools,
//! cancels, and tells the status, the schema state and the messages so far.
//!
//! This crate does no HTTP and no storage: the server puts runs behind its endpoints and the
//! store persists their events. Models are reached through [`agentwire_brain::Brain`]; tools
//! run through [`agentwire_tools::Toolbox`].
//!
//! An agent can instead be served by a [`Handler`]: Rust code that writes each run's answer
//! with a layered response builder (see [`handler`]); or by a remote agent, an A2A agent or
//! another agentwire server's, whose runs stream the remote run's events (see [`remote`]);
//! either is a sub-agent like any other.
//!
//! The three types to learn first:
//! - [`Agent`] and its [`AgentBuilder`];
//! - [`Run`]: a [`RunHandle`] and the [`RunEvents`] stream;
//! - [`RunStart`]: the history, the client's input and the client's tools.
//!
//! ```
//! use agentwire_brain::ScriptedBrain;
//! use agentwire_core::{Accumulator, Message, Part, RunStatus};
//! use agentwire_runtime::{Agent, RunStart};
//! use agentwire_tools::{FnTool, JsonSchema};
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! /// The arguments of `add`; the model is shown their JSON Schema.
//! #[derive(Deserialize, JsonSchema)]
//! #[schemars(crate = "agentwire_tools::schemars")]
//! struct Add {
//!     a: i64,
//!     b: i64,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let add = FnTool::new("add", "Adds two integers", |args: Add, _| async move { Ok(args.a + args.b) });
//! // The model asks for the tool, then answers with its result.
//! let brain = ScriptedBrain::from_json(r#"{"turns": [
//!     [{"type": "tool_call_start", "id": "c1", "name": "add"},
//!      {"type": "tool_call_delta", "id": "c1", "args": "{\"a\": 2, \"b\": 3}"},
//!      {"type": "tool_call_end", "id": "c1"},
//!      {"type": "finish", "reason": "tool_calls"}],
//!     [{"type": "text_delta", "text": "2 + 3 = 5"}, {"type": "finish", "reason": "stop"}]
//! ]}"#)?;
//! let agent = Agent::builder("calculator").brain(brain).tool(add).build()?;
//!
//! let mut run = agent.start(RunStart::new(vec![Message::user("What is 2 + 3?")]))?;
//! let mut client = Accumulator::default();
//! while let Some(event) = run.events.recv().await {
//!     client.push(&event)?;
//! }
//! assert_eq!(client.status(), Some(RunStatus::Completed));
//! let answer = &client.messages()[0];
//! assert!(answer.parts.iter().any(|part| matches!(part, Part::ToolResult(result) if result.result == json!(5))));
//! assert_eq!(answer.content(), "2 + 3 = 5");
//! assert_eq!(run.handle.output(), client.messages());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod agent;
mod checkpoint;
mod clock;
pub mod config;
mod events;
pub mod handler;
pub mod handoff;
mod ids;
mod orchestrator;
pub mod remote;
mod run;
pub mod schema;
mod slots;
mod state_calls;
mod steer;
pub mod subagent;
mod telemetry;
mod timeline;
mod wait;

pub use agent::{Agent, AgentBuilder, AgentError, DEFAULT_MAX_DEPTH};
/// The built-in whose calls wait for the user's answer (`awaiting input`), for hosts that route
/// a user's message to the question it answers.
pub use agentwire_tools::AskUser;
pub use checkpoint::{Checkpoint, ResumeError, RunResume};
pub use clock::{Clock, FixedClock, SystemClock};
pub use config::{AgentConfig, AgentsFile, BUILTIN_TOOLS, ConfigError, DeclaredKind, Provider};
pub use events::RunEvents;
pub use handler::{Handler, HandlerError, HandlerRequest, Responder};
pub use handoff::Agents;
pub use ids::{IdKind, IdSource, SequentialIds, UniqueIds};
pub use run::{InputError, Run, RunHandle, RunLimits, RunStart, StartError};
pub use slots::RunSlots;
pub use telemetry::Telemetry;
