//! agentwire-client: a typed Rust client of agentwire's native HTTP API.
//!
//! [`Client`] lists agents, starts runs, answers waiting runs, cancels them and reads sessions;
//! [`RunStream`] streams one run's events into the core [`Accumulator`](agentwire_core::Accumulator)
//! (the client's view of the run), resumes a broken connection after the last event it
//! applied (no gap, no duplicate: both are checked), and follows the run on after the client
//! answers an approval or a client tool call. Errors are typed ([`ClientError`]); the server's
//! `{"error": {"code", "message"}}` arrives as [`ClientError::Api`].
//!
//! The wire is read with the dialects' native SSE decoder, not a second parser; the types are
//! core's, not copies.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentwire_client::ClientError> {
//! use agentwire_client::{Client, StartRun};
//! use agentwire_core::{Awaiting, Message, RunStatus};
//!
//! let client = Client::new("http://127.0.0.1:8080")?;
//! let mut run = client.start(&StartRun::new(Message::user("Write a haiku")).agent("assistant")).await?;
//! loop {
//!     run.finish().await?;
//!     if run.status() != Some(RunStatus::Awaiting(Awaiting::Approval)) {
//!         break;
//!     }
//!     let ids: Vec<String> = run.pending_approvals().iter().map(|(request, _)| request.approval_id.to_string()).collect();
//!     for id in ids {
//!         run.approve(&id, true, None).await?;
//!     }
//! }
//! let next = StartRun::new(Message::user("Another")).session(run.session_id().cloned().unwrap_or_else(|| "new".into()));
//! # let _ = next;
//! # Ok(()) }
//! ```
//!
//! [`ai_sdk::AiSdkChat`] talks to any AI SDK `/api/chat` endpoint the same way, through the
//! dialects' UI message stream decoder.

pub mod ai_sdk;
mod client;
mod error;
mod pending;
mod stream;

pub use client::{
    AgentCard, AgentSummary, Client, InboxEntry, Reconnect, RunInfo, RunOutput, RunPage, RunQuery,
    Session, SessionMessage, StartRun,
};
pub use error::ClientError;
pub use pending::{pending_approvals, pending_tool_calls};
pub use stream::RunStream;
