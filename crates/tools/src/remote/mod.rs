//! Remote agents: agents served elsewhere that an agent's model calls like its own sub-agents
//! (`[[agents.remote]]` of `agentwire.toml`). This module is the client side: reaching the agent,
//! starting its run and reading its stream as canonical events; the runtime drives a run of
//! its own from that stream (the runtime's `remote` module), nested in the caller's stream as
//! any sub-agent's run is.
//!
//! A [`RemoteAgent`] is object-safe: [`RemoteAgent::run`] starts a run of the remote agent on
//! one input message and returns its events as they arrive ([`RemoteEvents`]), and
//! [`RemoteAgent::cancel`] cancels such a run. Two protocols are spoken:
//!
//! - **A2A 1.0** ([`A2aAgent`]): the agent card is fetched from its URL
//!   (`/.well-known/agent-card.json`) when the agent is connected, and its first JSON-RPC
//!   interface of A2A 1.x chosen; the card's description and skills describe the tool. A call
//!   is a `SendStreamingMessage` (`SendMessage` when the card says the agent does not stream)
//!   with the input as a user message, in no context (each call is a conversation of its own),
//!   read by the dialects' [`A2aDecoder`](agentwire_dialects::a2a::A2aDecoder): the task is the
//!   run (`run_created` names the task), artifacts are messages, status messages are messages
//!   or the failure's reason. A message-only answer (no task) is a run that completed. Another
//!   agentwire server's A2A endpoint carries its native statuses and its sub-agents' runs in
//!   `metadata.agentwire`, which the decoder reads back. Cancel is `CancelTask`.
//! - **agentwire's native API** ([`AgentwireAgent`]): `POST {url}/v1/runs` with the agent's
//!   name and the input, as SSE, through the client SDK (`agentwire-client`: its stream is
//!   resumed from the last event if the connection breaks, and checked gapless). Full
//!   fidelity: the remote run's own events and its sub-agents' runs under their namespaces,
//!   with the remote's run ids. The tool is described by `GET {url}/v1/agents/{agent}`.
//!   Cancel is `POST /v1/runs/{id}/cancel`.
//!
//! Both send `Authorization: Bearer <key>` when given a key ([`RemoteAgentConfig::api_key_env`]
//! names the environment variable it is read from).
//!
//! Decided:
//! - **The card is read when the agent is connected**, as MCP servers are connected when an
//!   agent is built, so a wrong URL stops `agentwire serve` at start with the reason, rather
//!   than failing the first call.
//! - **Failures are values, never panics.** Whatever cannot reach the agent, or what it sends
//!   that is not its protocol, is a [`RemoteError`] (a terminal `Err` of the stream) with a
//!   stable [`RemoteError::code`]; a run that the remote agent itself fails is a `run_status
//!   failed` event of the stream, as the remote reported it. The runtime turns both into the
//!   call's `tool_error` that the model reads.
//! - **Dropping the stream closes the connection, no more.** A remote run outlives its reader
//!   (agentwire's runs and A2A tasks both do), so a caller that stops reading cancels the run
//!   with [`RemoteAgent::cancel`], which the runtime does, best effort, when the caller's run
//!   is canceled or out of time.

mod a2a;
mod agentwire;
mod config;
mod error;

use std::pin::Pin;

use agentwire_core::{Event, Message, RunId};
use futures::Stream;
use futures::future::BoxFuture;

pub use a2a::A2aAgent;
pub use agentwire::AgentwireAgent;
pub use config::{RemoteAgentConfig, RemoteProtocol};
pub use error::RemoteError;

/// A remote agent's run as it streams: canonical events, then the end.
///
/// The remote run's own events are at the root (`run_created` first, naming the remote run,
/// which [`RemoteAgent::cancel`] takes), its sub-agents' under their namespaces; sequence
/// numbers grow (gaps allowed: they are the remote's or the decoder's). The run's end is a
/// terminal `run_status`, or `awaiting` when the remote run waits for its client, after which
/// the stream ends. Failure is terminal: an `Err` item, then nothing. A stream that ends
/// without either did not say how its run ended.
pub type RemoteEvents = Pin<Box<dyn Stream<Item = Result<Event, RemoteError>> + Send + 'static>>;

/// An agent served elsewhere, which runs are started on. Object-safe: agents hold it as an
/// `Arc<dyn RemoteAgent>`.
pub trait RemoteAgent: Send + Sync + 'static {
    /// What the agent does, for the model choosing whether to call it: the card's (or the
    /// configured) description.
    fn description(&self) -> &str;

    /// The agent for people: its protocol and where it is, e.g. `a2a http://…/a2a`.
    fn describe(&self) -> String;

    /// Starts a run of the agent on `request` and streams its events. Nothing is sent until
    /// the stream is first polled.
    fn run(&self, request: RemoteRequest) -> RemoteEvents;

    /// Asks the agent to cancel its run `run_id` (what the stream's root `run_created`
    /// named). `Ok` once the agent took the request, or said the run had already ended.
    fn cancel(&self, run_id: RunId) -> BoxFuture<'static, Result<(), RemoteError>>;
}

/// What a remote run is started with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RemoteRequest {
    /// The caller's run that stands for the remote run (used as the request's id where a
    /// protocol has one, so the remote's logs can be matched with the caller's).
    pub run_id: RunId,
    /// The message the remote agent is sent: the user's (a sub-agent call's `input`), with its
    /// id.
    pub input: Message,
}

impl RemoteRequest {
    /// A request sending `input` for the caller's run `run_id`.
    pub fn new(run_id: RunId, input: Message) -> Self {
        Self { run_id, input }
    }
}
