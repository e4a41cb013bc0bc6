//! Custom agents: a [`Handler`] writes a run's answer itself with the layered builder
//! ([`ResponseBuilder`]) instead of a brain and the
//! orchestrator. An agent built with [`AgentBuilder::handler`](crate::AgentBuilder::handler) is
//! an [`Agent`](crate::Agent) like any other: a server serves it through every dialect, its runs
//! have a [`RunHandle`](crate::RunHandle), are canceled and time out the same way.
//!
//! The handler gets the run's [`HandlerRequest`] and a [`Responder`], the run's response
//! builder (already `created`), whose every call sends its events on at once. When the handler
//! returns, whatever it left open is completed and, unless it gave the run a final status
//! itself, the run ends `completed` (`Ok`) or `failed` with its [`HandlerError`]. When the run
//! is canceled or runs out of time, the handler's future is dropped at its next `.await`, and
//! the run ends `canceled` or `incomplete` with what was complete kept.
//!
//! ```
//! use agentwire_core::{Accumulator, Message, RunStatus};
//! use agentwire_runtime::{Agent, HandlerRequest, Responder, RunStart};
//!
//! async fn echo(request: HandlerRequest, mut response: Responder) -> Result<(), agentwire_runtime::HandlerError> {
//!     let mut message = response.assistant_message()?;
//!     let mut text = message.text()?;
//!     for word in request.question().split_inclusive(' ') {
//!         text.delta(word)?;
//!     }
//!     text.complete()?;
//!     message.complete()?;
//!     Ok(())
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let agent = Agent::builder("echo").handler(echo).build()?;
//! let mut run = agent.start(RunStart::new(vec![Message::user("say it back")]))?;
//! let mut client = Accumulator::default();
//! while let Some(event) = run.events.recv().await {
//!     client.push(&event)?;
//! }
//! assert_eq!(client.status(), Some(RunStatus::Completed));
//! assert_eq!(client.messages()[0].content(), "say it back");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{
    ErrorInfo, Event, EventKind, GenerationSettings, Message, MessageStart, MessageWriter,
    ResponseBuilder, ResponseError, Role, RunId, RunStatus, SessionId, ToolSpec,
};
use futures::future::BoxFuture;
use thiserror::Error;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::events::EventQueue;
use crate::ids::IdKind;
use crate::run::Shared;
use crate::schema;

/// Writes a run's answer. Implemented by every `async fn(HandlerRequest, Responder) ->
/// Result<(), HandlerError>` and closure of that shape; see the module docs.
pub trait Handler: Send + Sync + 'static {
    /// Handles one run: writes its answer through `response`.
    fn handle(
        &self,
        request: HandlerRequest,
        response: Responder,
    ) -> BoxFuture<'static, Result<(), HandlerError>>;
}

impl<F, Fut> Handler for F
where
    F: Fn(HandlerRequest, Responder) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    fn handle(
        &self,
        request: HandlerRequest,
        response: Responder,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        Box::pin(self(request, response))
    }
}

/// What a handler's run was started with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HandlerRequest {
    /// The run.
    pub run_id: RunId,
    /// Its session, if any.
    pub session_id: Option<SessionId>,
    /// The conversation before this turn, oldest first.
    pub history: Vec<Message>,
    /// The client's messages that start the turn (ids and times given).
    pub input: Vec<Message>,
    /// Tools the client declared and runs itself.
    pub client_tools: Vec<ToolSpec>,
    /// The generation settings the client asked for (checked against their ranges, and
    /// `model` only when the agent allows choosing it).
    pub settings: GenerationSettings,
}

impl HandlerRequest {
    /// The text of the last user message of the input: what most handlers answer.
    pub fn question(&self) -> String {
        self.input
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map(Message::content)
            .unwrap_or_default()
    }
}

/// Why a handler gave up: the run ends `failed` with this code and message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{code}: {message}")]
pub struct HandlerError {
    /// A stable snake_case code, e.g. `upstream_unavailable`.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
}

impl HandlerError {
    /// An error with the given code and message.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl From<ResponseError> for HandlerError {
    /// A builder call the response's state refused: the handler's own mistake.
    fn from(error: ResponseError) -> Self {
        Self::new("handler_error", error.to_string())
    }
}

impl From<HandlerError> for ErrorInfo {
    fn from(error: HandlerError) -> Self {
        ErrorInfo::new(error.code, error.message)
    }
}

/// The run's response builder as a handler holds it: every [`ResponseBuilder`] method (through
/// `Deref`), plus fresh message ids and the run's cancellation. Its events reach the run's
/// stream as each call makes them.
pub struct Responder {
    builder: ResponseBuilder,
    /// Where the builder goes back to when the handler is done with it (returned or dropped).
    back: Option<oneshot::Sender<ResponseBuilder>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("builder", &self.builder)
            .finish_non_exhaustive()
    }
}

impl Responder {
    /// Starts an assistant message with a fresh id, the agent's name and the current time.
    pub fn assistant_message(&mut self) -> Result<MessageWriter<'_>, ResponseError> {
        let config = &self.shared.agent.inner;
        let mut start = MessageStart::new(config.ids.next_id(IdKind::Message), Role::Assistant);
        start.metadata.agent_name = Some(config.name.clone());
        start.created_at = Some(config.clock.now());
        self.builder.message(start)
    }

    /// Whether the run was canceled. The handler's future is dropped at its next `.await` after a
    /// cancel anyway; this is for handlers that work without awaiting.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// A token that fires when the run is canceled, for work the handler hands to other tasks.
    pub fn cancellation(&self) -> CancellationToken {
        self.shared.cancel.clone()
    }
}

impl Deref for Responder {
    type Target = ResponseBuilder;

    fn deref(&self) -> &ResponseBuilder {
        &self.builder
    }
}

impl DerefMut for Responder {
    fn deref_mut(&mut self) -> &mut ResponseBuilder {
        &mut self.builder
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(back) = self.back.take() {
            let placeholder = ResponseBuilder::new(self.builder.run_id().clone());
            let builder = std::mem::replace(&mut self.builder, placeholder);
            // The driver waits for it; if the driver is gone, so is the run.
            let _ = back.send(builder);
        }
    }
}

/// How a handler's run stopped.
enum Stop {
    Returned(Result<(), HandlerError>),
    Canceled,
    OutOfTime(Duration),
}

/// Runs `handler` for one run, from `run_created` to the final status.
pub(crate) async fn drive(
    shared: Arc<Shared>,
    queue: Arc<EventQueue>,
    handler: Arc<dyn Handler>,
    request: HandlerRequest,
    max_duration: Option<Duration>,
) {
    let outlet = {
        let (shared, queue) = (Arc::clone(&shared), Arc::clone(&queue));
        move |events: std::vec::Drain<'_, Event>| forward(&shared, &queue, events.collect())
    };
    let mut builder = ResponseBuilder::new(shared.run_id.clone()).with_outlet(outlet);
    if let Some(session_id) = &shared.session_id {
        builder = builder.with_session(session_id.clone());
    }
    let mut builder = builder.with_agent(shared.agent.inner.name.clone());
    // A fresh builder is not ended, so `created` cannot fail.
    let _ = builder.created();
    let (back, returned) = oneshot::channel();
    let responder = Responder {
        builder,
        back: Some(back),
        shared: Arc::clone(&shared),
    };
    let work = handler.handle(request, responder);
    let out_of_time = async {
        match max_duration {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let stop = tokio::select! {
        biased;
        () = shared.cancel.cancelled() => Stop::Canceled,
        () = out_of_time => Stop::OutOfTime(max_duration.unwrap_or_default()),
        result = work => Stop::Returned(result),
    };
    // The handler's future is gone now, and its Responder with it: the builder comes back.
    let Ok(mut builder) = returned.await else {
        queue.close();
        return;
    };
    if builder.ended().is_none() {
        let (status, error) = match stop {
            Stop::Returned(Ok(())) => (RunStatus::Completed, None),
            Stop::Returned(Err(error)) => (RunStatus::Failed, Some(error.into())),
            Stop::Canceled => shared.stopped(),
            Stop::OutOfTime(limit) => (RunStatus::Incomplete, Some(crate::run::out_of_time(limit))),
        };
        // Not ended, and the status is final: this cannot fail.
        let _ = builder.end(status, error);
    }
    queue.close();
}

/// Sends a batch of the handler's events on, keeping the run's handle in step: a completed
/// message joins the run's conversation before its event is out, a status is set after its
/// event is (as the orchestrator does). A handler is not held to the schema, but its messages
/// move the schema as an agent's answer would where the schema allows it, so its session
/// goes on from there (`RunHandle::session_state`). Events of runs nested in this one (a
/// remote agent's sub-agents, [`crate::remote`]) are passed on and change nothing here.
pub(crate) fn forward(shared: &Shared, queue: &EventQueue, events: Vec<Event>) {
    let mut status = None;
    {
        let mut state = shared.lock();
        for event in events.iter().filter(|event| event.namespace.is_root()) {
            match &event.kind {
                EventKind::MessageComplete { message } => {
                    if message.role == Role::Assistant {
                        let _ = state.machine.accept(&schema::agent_message(message));
                    }
                    state.messages.push(message.clone());
                }
                EventKind::RunStatus {
                    status: new,
                    error,
                    usage,
                } => {
                    status = Some(*new);
                    if usage.is_some() {
                        state.usage = *usage;
                    }
                    if error.is_some() {
                        state.error.clone_from(error);
                    }
                }
                _ => {}
            }
        }
    }
    queue.push(events.into_iter());
    if let Some(status) = status {
        let _state = shared.lock();
        shared.status.send_replace(status);
    }
}

/// The request a handler gets: the run's history and input as the run holds them (stamped).
pub(crate) fn request(
    shared: &Shared,
    client_tools: Vec<ToolSpec>,
    settings: GenerationSettings,
) -> HandlerRequest {
    let state = shared.lock();
    HandlerRequest {
        run_id: shared.run_id.clone(),
        session_id: shared.session_id.clone(),
        history: state.messages[..state.history_len].to_vec(),
        input: state.messages[state.history_len..state.output_from].to_vec(),
        client_tools,
        settings,
    }
}
