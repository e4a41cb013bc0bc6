//! Remote agents' runs: an agent built with
//! [`AgentBuilder::remote`](crate::AgentBuilder::remote) is served elsewhere (an A2A agent,
//! another agentwire server; the clients are `agentwire_tools::remote`), and a run of it is
//! driven by the remote run's stream instead of a brain. Such an agent is an
//! [`Agent`](crate::Agent) like any other, so it is a sub-agent like any other
//! ([`AgentBuilder::subagent`](crate::AgentBuilder::subagent)): the model calls it with
//! `input`, its run streams nested in the caller's, and its answer is the call's result.
//!
//! The run emits its own `run_created` and `in_progress`, starts the remote run with its input
//! (the last user message), and passes the remote run's events on as they come, numbered in its
//! own sequence: the remote run's messages as this run's own messages (so its answer is this
//! run's answer; they carry the remote run's id in `metadata.remote_run_id`), the remote run's
//! sub-agents' runs under their namespaces (a remote agentwire's sub-agents stay nested, with
//! their run ids; the first level names this run as its parent). Every event passed on is first
//! checked by a strict [`Accumulator`], so a remote that breaks the event protocol fails the
//! run rather than the caller's readers. The remote run's end is this run's: completed,
//! incomplete, or failed (a remote `failed`, `rejected` or `canceled`) with the remote's error.
//!
//! Decided:
//! - **What a remote run waits for ends the call.** A remote run that stops for its client (an
//!   A2A `INPUT_REQUIRED` or `AUTH_REQUIRED` task, a remote agentwire's approval, client tool or
//!   question) is canceled, and this run fails (`remote_awaiting`) with an error that quotes the
//!   remote's last message, so the calling model can call again with what was missing. Passing
//!   such waits up to this run's client, as a local sub-agent's are, is not done.
//! - **Failures are the call's errors.** A remote that cannot be reached, refuses, answers
//!   something that is not its protocol, or whose stream ends before its run did, fails this
//!   run with the error's code (`remote_unreachable`, `remote_refused`, `remote_protocol`,
//!   `remote_stream_broken`, `remote_stream_ended`); the caller's model reads it as the call's
//!   `tool_error`. Nothing panics.
//! - **Stopping stops the remote run, best effort.** When this run is canceled (its caller was
//!   canceled), interrupted or out of time, the remote stream is dropped at once and the run
//!   ends; then the remote run is canceled (`CancelTask`, `POST /v1/runs/{id}/cancel`) within
//!   10 s, by this run's task, and a failure of that is only logged. Remote sub-agents' runs
//!   still open when the stream stops are ended in this run's stream (`canceled` when this run
//!   was stopped, `failed` otherwise), their open messages completed as they stood.
//! - **Tokens are the remote's.** A remote run's usage is not added to this run's (nor to its
//!   caller's): the remote server counts what it spent; its messages keep their own usage.
//! - **Not kept:** the session's shared state (a remote's `state_snapshot`/`state_delta` are
//!   its own session's, and are dropped), the remote's `input` outcomes, the run's history (a
//!   remote run starts a conversation of its own, as a sub-agent's does), the client's tools,
//!   settings, and trace context. A remote run is not checkpointed (it cannot be taken up again
//!   elsewhere), takes no slot and no steers, as a handler's run.

use std::sync::Arc;
use std::time::Duration;

use agentwire_core::{
    Accumulator, Awaiting, Emitter, ErrorInfo, Event, EventKind, Message, Namespace, Role, RunId,
    RunStatus,
};
use agentwire_tools::remote::{RemoteAgent, RemoteError, RemoteRequest};
use futures::StreamExt;
use serde_json::Value;

use crate::events::EventQueue;
use crate::handler;
use crate::run::{Shared, out_of_time};

/// How long canceling the remote run may take, after this run has ended.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of the remote's last message an error quotes.
const QUOTE_CHARS: usize = 500;

/// Runs one run of a remote agent, from `run_created` to the final status, then cancels the
/// remote run if it was left going.
pub(crate) async fn drive(
    shared: Arc<Shared>,
    queue: Arc<EventQueue>,
    remote: Arc<dyn RemoteAgent>,
    max_duration: Option<Duration>,
) {
    let mut relay = Relay {
        shared: &shared,
        queue: &queue,
        out: Emitter::default(),
        seen: Accumulator::default(),
        remote_run: None,
    };
    relay.open();
    let input = question(&shared);
    let mut events = remote.run(RemoteRequest::new(shared.run_id.clone(), input));
    let out_of_time_at = async {
        match max_duration {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(out_of_time_at);
    let stop = loop {
        tokio::select! {
            biased;
            () = shared.cancel.cancelled() => break Stop::Canceled,
            () = &mut out_of_time_at => break Stop::OutOfTime(max_duration.unwrap_or_default()),
            next = events.next() => match next {
                Some(Ok(event)) => match relay.take(event) {
                    Ok(None) => {}
                    Ok(Some(end)) => break end,
                    Err(error) => break Stop::Failed(error),
                },
                Some(Err(error)) => break Stop::Failed(remote_error(&error)),
                None => break Stop::Failed(ErrorInfo::new(
                    "remote_stream_ended",
                    "the remote agent's stream ended before its run did",
                )),
            },
        }
    };
    // The connection closes now; the remote run goes on until it is canceled below.
    drop(events);
    let left_going = !matches!(stop, Stop::Ended(..));
    let (status, error) = match stop {
        Stop::Ended(status, error) => (status, error),
        Stop::Waits(kind) => (RunStatus::Failed, Some(relay.waits(kind))),
        Stop::Failed(error) => (RunStatus::Failed, Some(error)),
        Stop::Canceled => shared.stopped(),
        Stop::OutOfTime(limit) => (RunStatus::Incomplete, Some(out_of_time(limit))),
    };
    let remote_run = relay.remote_run.clone();
    relay.close(status, error);
    queue.close();
    if let (true, Some(run_id)) = (left_going, remote_run) {
        match tokio::time::timeout(CANCEL_TIMEOUT, remote.cancel(run_id.clone())).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(remote_run = %run_id, %error, "could not cancel a remote run");
            }
            Err(_) => {
                tracing::warn!(remote_run = %run_id, "canceling a remote run took too long");
            }
        }
    }
}

/// Why the relay stopped reading the remote stream.
enum Stop {
    /// The remote run ended: this run's status and error.
    Ended(RunStatus, Option<ErrorInfo>),
    /// The remote run waits for its client.
    Waits(Awaiting),
    /// The stream failed, or broke the protocol.
    Failed(ErrorInfo),
    /// This run was canceled (or interrupted by its host).
    Canceled,
    OutOfTime(Duration),
}

/// The remote run's events on their way into this run's stream.
struct Relay<'a> {
    shared: &'a Shared,
    queue: &'a EventQueue,
    /// Numbers this run's events.
    out: Emitter,
    /// What has been passed on, checked: a remote that breaks the protocol is stopped here.
    seen: Accumulator,
    /// The remote run, once its `run_created` came.
    remote_run: Option<RunId>,
}

impl Relay<'_> {
    /// This run's `run_created` and `in_progress`.
    fn open(&mut self) {
        let shared = self.shared;
        self.out.emit(EventKind::RunCreated {
            run_id: shared.run_id.clone(),
            session_id: shared.session_id.clone(),
            agent: Some(shared.agent.name().to_owned()),
            parent_run_id: shared.parent.as_ref().map(|parent| parent.run_id.clone()),
            parent_tool_call_id: shared
                .parent
                .as_ref()
                .map(|parent| parent.tool_call_id.clone()),
        });
        self.out.emit(EventKind::RunStatus {
            status: RunStatus::InProgress,
            error: None,
            usage: None,
        });
        self.flush();
    }

    /// Takes one event of the remote stream: passes it on, or says the remote run is over.
    fn take(&mut self, event: Event) -> Result<Option<Stop>, ErrorInfo> {
        let Event {
            seq,
            namespace,
            mut kind,
        } = event;
        if namespace.is_root() {
            match &mut kind {
                EventKind::RunCreated { run_id, .. } => {
                    self.remote_run.get_or_insert_with(|| run_id.clone());
                    return Ok(None);
                }
                EventKind::RunStatus { status, error, .. } => {
                    return Ok(ended(*status, error.take()));
                }
                EventKind::MessageStart { metadata, .. } => {
                    self.mark(&mut metadata.extra);
                }
                EventKind::MessageComplete { message } => {
                    self.mark(&mut message.metadata.extra);
                }
                _ => {}
            }
        } else if let EventKind::RunCreated { parent_run_id, .. } = &mut kind
            && namespace.depth() == 1
        {
            // The remote run's sub-agents are this run's.
            *parent_run_id = Some(self.shared.run_id.clone());
        }
        match &kind {
            // Its client's: not this run's.
            EventKind::Heartbeat {}
            | EventKind::Input(_)
            | EventKind::StateSnapshot { .. }
            | EventKind::StateDelta { .. } => return Ok(None),
            _ => {}
        }
        let event = Event {
            seq,
            namespace,
            kind,
        };
        self.seen.push(&event).map_err(|error| {
            ErrorInfo::new(
                "remote_protocol",
                format!("the remote agent's stream broke the event protocol: {error}"),
            )
        })?;
        self.out.emit_in(event.namespace, event.kind);
        self.flush();
        Ok(None)
    }

    /// Notes the remote run's id in a message's metadata.
    fn mark(&self, extra: &mut serde_json::Map<String, Value>) {
        if let Some(run_id) = &self.remote_run {
            extra.insert(
                "remote_run_id".to_owned(),
                Value::String(run_id.to_string()),
            );
        }
    }

    /// The error of a run whose remote run waits for its client.
    fn waits(&self, kind: Awaiting) -> ErrorInfo {
        let what = match kind {
            Awaiting::Approval => "a person's approval",
            Awaiting::FunctionOutput => "the output of a tool its client runs",
            Awaiting::Input => "more input",
        };
        let last = self
            .seen
            .messages()
            .last()
            .map(Message::content)
            .unwrap_or_default();
        let quoted = match last.trim() {
            "" => String::new(),
            text if text.chars().count() > QUOTE_CHARS => {
                let cut: String = text.chars().take(QUOTE_CHARS).collect();
                format!(" It said: \"{cut}…\"")
            }
            text => format!(" It said: \"{text}\""),
        };
        ErrorInfo::new(
            "remote_awaiting",
            format!(
                "the remote agent stopped to wait for {what}, which cannot be given to it \
                 through this call, so its run was canceled.{quoted} Call it again with \
                 everything it needs in `input`."
            ),
        )
    }

    /// Ends the run: completes what is open (the remote sub-agents' runs too), then emits the
    /// final status.
    fn close(mut self, status: RunStatus, error: Option<ErrorInfo>) {
        let nested_status = match status {
            RunStatus::Canceled => (RunStatus::Canceled, None),
            _ => (
                RunStatus::Failed,
                Some(ErrorInfo::new(
                    "remote_stream_ended",
                    "the remote run's stream ended before this run did",
                )),
            ),
        };
        let mut endings = Vec::new();
        for child in self.seen.children() {
            end_open(child, &Namespace::ROOT, &nested_status, &mut endings);
        }
        for (namespace, kind) in endings {
            self.out.emit_in(namespace, kind);
        }
        for kind in self.seen.completions() {
            self.out.emit(kind);
        }
        self.out.emit(EventKind::RunStatus {
            status,
            error,
            usage: None,
        });
        self.flush();
    }

    fn flush(&mut self) {
        let events: Vec<Event> = self.out.drain().collect();
        if !events.is_empty() {
            handler::forward(self.shared, self.queue, events);
        }
    }
}

/// The events that end `run` (a nested run under `parent`) and its own nested runs, innermost
/// first, when it has not ended: its open messages completed, then `status`.
fn end_open(
    run: &Accumulator,
    parent: &Namespace,
    status: &(RunStatus, Option<ErrorInfo>),
    endings: &mut Vec<(Namespace, EventKind)>,
) {
    let Some(run_id) = run.run_id() else {
        return;
    };
    if run.status().is_some_and(RunStatus::is_terminal) {
        return;
    }
    let mut path = parent.path().to_vec();
    path.push(run_id.clone());
    let namespace = Namespace::new(path);
    for child in run.children() {
        end_open(child, &namespace, status, endings);
    }
    for kind in run.completions() {
        endings.push((namespace.clone(), kind));
    }
    endings.push((
        namespace,
        EventKind::RunStatus {
            status: status.0,
            error: status.1.clone(),
            usage: None,
        },
    ));
}

/// What a remote run's status means for this run: nothing yet while it works; its end.
fn ended(status: RunStatus, error: Option<ErrorInfo>) -> Option<Stop> {
    let failed = |error: Option<ErrorInfo>| {
        let status_name = status.name();
        error.unwrap_or_else(|| {
            ErrorInfo::new(
                format!("remote_{status_name}"),
                format!("the remote run is {status_name}"),
            )
        })
    };
    match status {
        RunStatus::Created | RunStatus::Queued | RunStatus::InProgress => None,
        RunStatus::Awaiting(kind) => Some(Stop::Waits(kind)),
        RunStatus::Completed => Some(Stop::Ended(RunStatus::Completed, None)),
        RunStatus::Incomplete => Some(Stop::Ended(RunStatus::Incomplete, Some(failed(error)))),
        RunStatus::Failed | RunStatus::Rejected | RunStatus::Canceled => {
            Some(Stop::Ended(RunStatus::Failed, Some(failed(error))))
        }
    }
}

/// A client's failure as this run's error.
fn remote_error(error: &RemoteError) -> ErrorInfo {
    ErrorInfo::new(error.code(), error.to_string())
}

/// The message the remote agent is sent: the last user message of the run's input.
fn question(shared: &Shared) -> Message {
    let state = shared.lock();
    state.messages[state.history_len..state.output_from]
        .iter()
        .rev()
        .find(|message| message.role == Role::User)
        .cloned()
        .unwrap_or_else(|| Message::user(""))
}
