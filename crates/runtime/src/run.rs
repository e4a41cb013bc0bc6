//! Runs: [`Agent::start`] checks a [`RunStart`] against the agent's schema and starts the
//! orchestrator; the [`Run`] it returns holds the event stream and a [`RunHandle`] to watch,
//! answer and cancel the run.
//!
//! A run is one turn of a conversation: the client's input, the agent's work on it (any number
//! of model calls and tools, paused for approvals and client tools as needed) and the agent's
//! answer. The next user message starts a new run with the session's history; a finished run
//! takes no more input. That keeps a run's life short and its state small, and leaves the
//! conversation to the session, which outlives runs.
//!
//! The communication schema governs the conversation, not one turn (a schema's "run" is the
//! whole conversation): a run starts where its session's last run left the schema
//! ([`RunStart::schema_state`]), and says where it leaves it ([`RunHandle::session_state`]), so
//! a one-shot agent's session is over after its answer, and a client's `cancel` is an utterance
//! the schema must allow ([`RunHandle::cancel`]).
//!
//! The session's shared state (a JSON document its clients show and set, see
//! [`SharedState`]) goes the same way: a run starts from the session's
//! ([`RunStart::shared_state`]), shows it at its start, changes it as its tools do, and says
//! what it leaves ([`RunHandle::shared_state`]).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentwire_core::communication::{MessageKind, Party, Refusal, SchemaMachine, StateName};
use agentwire_core::json_bounds::JsonBounds;
use agentwire_core::part::{ToolError, ToolResult};
use agentwire_core::{
    Awaiting, ErrorInfo, GenerationSettings, InvalidField, Message, Part, Role, RunId, RunStatus,
    SessionId, ToolSpec, Usage,
};
use agentwire_tools::SharedState;
use serde_json::Value;
use thiserror::Error;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::Agent;
use crate::checkpoint::Parked;
use crate::events::{EventQueue, RunEvents};
use crate::handler;
use crate::handoff::Agents;
use crate::ids::IdKind;
use crate::orchestrator::Orchestrator;
use crate::remote;
use crate::schema;
use crate::slots::RunSlots;
use crate::steer::Inbox;
use crate::subagent::{self, ChildHandle, Parent};
use crate::telemetry::Telemetry;
use crate::wait::{Mismatch, Wait};

/// What a run starts from.
///
/// ```
/// use agentwire_core::Message;
/// use agentwire_runtime::RunStart;
///
/// let start = RunStart::new(vec![Message::user("Hi")]).with_session("ses_1");
/// assert_eq!(start.input.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RunStart {
    /// The run's id; `None` mints one from the agent's id source.
    pub run_id: Option<RunId>,
    /// The session the run belongs to, if any.
    pub session_id: Option<SessionId>,
    /// The conversation before this turn, oldest first. The model sees it; the schema does not
    /// check it again.
    pub history: Vec<Message>,
    /// The client's messages that start the turn (usually one user message). Each passes the
    /// agent's schema; input without an id gets one.
    pub input: Vec<Message>,
    /// Tools the client declares and runs itself, offered to the model after the agent's. A
    /// call to one pauses the run until the client sends its output.
    pub client_tools: Vec<ToolSpec>,
    /// Ceilings over the agent's own limits for this run (a server's limits).
    pub limits: RunLimits,
    /// The host stores the run's events and says how far ([`RunHandle::stored_through`]).
    /// After a wait the run then runs the calls it was allowed only once its going on is
    /// stored, so that a copy of it taken up from its checkpoint ([`Agent::resume`]) after a
    /// crash cannot run them a second time.
    pub stored: bool,
    /// The run's generation settings, overriding the agent's configured defaults for every
    /// model call of the run. Checked before the run starts ([`Agent::check_settings`]).
    pub settings: GenerationSettings,
    /// Where the conversation stands in the agent's communication schema: the state its
    /// session's last run left ([`RunHandle::session_state`]). `None`, or a state the agent's
    /// schema does not have (the session changed agents), starts from `idle`.
    pub schema_state: Option<StateName>,
    /// The host's slots for working runs: the run reports `queued` while it waits for one,
    /// and ends `rejected` (`queue_full`) when their line is full ([`RunSlots`]). `None`: the
    /// run works at once. Runs written by a handler, and remote agents' runs, do not take
    /// slots.
    pub slots: Option<RunSlots>,
    /// Where the run's OpenTelemetry spans and metrics go (an `invoke_agent` span, a `chat`
    /// span per model call, an `execute_tool` span per tool call); `None`, the default, makes
    /// none.
    pub telemetry: Option<Telemetry>,
    /// The client's name for the message this run answers, when the host took it from the
    /// session's inbox: the run reports it `delivered` (step 0) at its start.
    pub client_message_id: Option<String>,
    /// The agents the run may hand the conversation to ([`crate::handoff`]), by name: the
    /// host's. `None`: a handoff's call is answered with an error.
    pub agents: Option<Agents>,
    /// The session's shared state as the session's last run (or a client) left it; `null`,
    /// the default, for none. It is not checked against the agent's state schema (it is what
    /// the session holds; a host checks what a client sets, [`Agent::check_state`]). A run
    /// whose state is not `null` emits a `state_snapshot` of it right after `run_created`, so
    /// every reader of its stream starts from it.
    pub shared_state: Value,
}

/// Ceilings over an agent's limits for one run: a server caps every agent it serves with them.
/// Each applies only where it is tighter than the agent's own; `None` leaves the agent's.
///
/// A run over `max_duration` ends as one over the agent's own `max_duration` does:
/// `incomplete` with error code `max_duration`, everything complete kept. A tool result over
/// `max_tool_output_bytes` is cut or refused as the toolbox does with its own limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// The most working time (time waiting for the client does not count).
    pub max_duration: Option<Duration>,
    /// The most bytes of JSON one tool result may take.
    pub max_tool_output_bytes: Option<usize>,
    /// The most bytes of JSON the session's shared state may take (a change past it is
    /// refused); `None`: [`DEFAULT_MAX_BYTES`](agentwire_core::json_bounds::DEFAULT_MAX_BYTES).
    pub max_state_bytes: Option<usize>,
}

impl RunLimits {
    /// The bounds of the session's shared state.
    pub(crate) fn state_bounds(&self) -> JsonBounds {
        self.max_state_bytes
            .map_or_else(JsonBounds::default, JsonBounds::with_max_bytes)
    }

    /// The working time a run has: the agent's own `max_duration`, or this ceiling if tighter.
    pub(crate) fn working_time(&self, own: Option<Duration>) -> Option<Duration> {
        match (own, self.max_duration) {
            (Some(own), Some(ceiling)) => Some(own.min(ceiling)),
            (own, ceiling) => own.or(ceiling),
        }
    }
}

/// Why a run that used up its working time ended `incomplete`.
pub(crate) fn out_of_time(limit: Duration) -> ErrorInfo {
    ErrorInfo::new(
        "max_duration",
        format!(
            "the run stopped after working {} ms (max_duration) without a final answer",
            limit.as_millis()
        ),
    )
}

impl RunStart {
    /// A start from the client's input, with no history and no client tools.
    pub fn new(input: Vec<Message>) -> Self {
        Self {
            input,
            ..Self::default()
        }
    }

    /// Sets the run's id.
    pub fn with_run_id(mut self, run_id: impl Into<RunId>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Sets the session.
    pub fn with_session(mut self, session_id: impl Into<SessionId>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Sets the conversation before this turn.
    pub fn with_history(mut self, history: Vec<Message>) -> Self {
        self.history = history;
        self
    }

    /// Sets the tools the client runs itself.
    pub fn with_client_tools(mut self, client_tools: Vec<ToolSpec>) -> Self {
        self.client_tools = client_tools;
        self
    }

    /// Says the host stores the run's events (see [`RunStart::stored`]).
    pub fn with_stored_events(mut self) -> Self {
        self.stored = true;
        self
    }

    /// Sets ceilings over the agent's limits.
    pub fn with_limits(mut self, limits: RunLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Records the run in OpenTelemetry through `telemetry` ([`RunStart::telemetry`]).
    pub fn with_telemetry(mut self, telemetry: Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Sets the run's generation settings.
    pub fn with_settings(mut self, settings: GenerationSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sets the schema state the conversation is in (see [`RunStart::schema_state`]).
    pub fn with_schema_state(mut self, state: Option<StateName>) -> Self {
        self.schema_state = state;
        self
    }

    /// Makes the run take one of `slots` to work (see [`RunStart::slots`]).
    pub fn with_slots(mut self, slots: RunSlots) -> Self {
        self.slots = Some(slots);
        self
    }

    /// Sets the agents the run may hand the conversation to ([`RunStart::agents`]).
    pub fn with_agents(mut self, agents: Agents) -> Self {
        self.agents = Some(agents);
        self
    }

    /// Sets the shared state the run starts from ([`RunStart::shared_state`]).
    pub fn with_shared_state(mut self, state: Value) -> Self {
        self.shared_state = state;
        self
    }

    /// Names the client's message this run answers ([`RunStart::client_message_id`]).
    pub fn with_client_message_id(mut self, id: impl Into<String>) -> Self {
        self.client_message_id = Some(id.into());
        self
    }
}

/// A started run: its events and its handle.
///
/// Read `events` to follow the run; the run does not wait for the reader (see [`RunEvents`]).
#[derive(Debug)]
pub struct Run {
    /// Watches, answers and cancels the run; clone it freely.
    pub handle: RunHandle,
    /// The run's events, numbered from 1.
    pub events: RunEvents,
}

/// A handle on a run, cheap to clone and safe to use from any task.
#[derive(Clone, Debug)]
pub struct RunHandle {
    pub(crate) shared: Arc<Shared>,
}

/// Why a run was not started. Nothing ran, and no event was produced.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StartError {
    /// The input is not what the agent's schema accepts at the start of a run.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// There is no input, or only system messages.
    #[error("a run needs input: at least one message from the client besides system messages")]
    NoInput,
    /// An input message is not the client's.
    #[error("the client may not send a message with role '{role}'")]
    Role {
        /// Its role.
        role: &'static str,
    },
    /// A client tool has the name of one of the agent's tools.
    #[error("client tool '{name}' has the name of one of the agent's tools")]
    ToolNameTaken {
        /// The name.
        name: String,
    },
    /// The client declared tools, but the agent's schema never lets the server call one.
    #[error(
        "the client declared tools, but the agent's communication schema never lets the server send function_call"
    )]
    ClientToolsNotAllowed,
    /// A generation setting cannot be used: out of range, a model the agent does not let runs
    /// choose, or a setting its provider does not take. The error names it.
    #[error("invalid generation setting: {0}")]
    Setting(#[from] InvalidField),
    /// `start` was called outside a Tokio runtime, where the run cannot be spawned.
    #[error("a run must be started inside a tokio runtime")]
    NoRuntime,
}

/// Why a message sent to a run was not accepted. The run is unchanged.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InputError {
    /// The agent's schema does not allow it in the run's current state; the refusal names the
    /// state and what is allowed.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The run has ended.
    #[error("the run is {status}; it takes no more input", status = .status.name())]
    Finished {
        /// How it ended.
        status: RunStatus,
    },
    /// An approval response names no approval request the run waits for.
    #[error("the run is not waiting for an answer to approval request {approval_id}")]
    UnknownApproval {
        /// The id in the response.
        approval_id: String,
    },
    /// A tool output names no client tool call the run waits for.
    #[error("the run is not waiting for the output of tool call {tool_call_id}")]
    UnknownToolCall {
        /// The id in the output.
        tool_call_id: String,
    },
    /// A new question for a run that is still going: a run answers one turn.
    #[error("a run answers one turn: send the next user message as a new run")]
    NewTurn,
    /// The message is not the client's.
    #[error("the client may not send a message with role '{role}'")]
    Role {
        /// Its role.
        role: &'static str,
    },
    /// A steer for a run that waits for the client's answer: the answer comes first.
    #[error("the run waits for the client's answer; send that, or cancel the run")]
    Waiting,
    /// A steer for a run whose agent writes its answer itself and takes no message meanwhile.
    #[error("the agent writes its answer in one go and takes no message while it works")]
    NotSteerable,
    /// A steer that is not a question (it answers an approval or a tool call: that is input).
    #[error("a steer is a user message; answers to the run's requests are its input")]
    NotAQuestion,
}

/// Where a run sits in a tree of runs.
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    /// The run and call that started it; `None` for a client's run.
    pub(crate) parent: Option<Parent>,
    /// How many runs below the client's it is.
    pub(crate) depth: u32,
    /// The deepest its sub-agents' runs may be, as its ancestors allow.
    pub(crate) depth_limit: u32,
    /// It is the run of the agent a conversation was handed to.
    pub(crate) handoff: bool,
}

impl Placement {
    /// A client's run.
    pub(crate) fn top() -> Self {
        Self {
            parent: None,
            depth: 0,
            depth_limit: u32::MAX,
            handoff: false,
        }
    }
}

/// Where part of a client's message goes: to a sub-agent's run under this one, or (`None`) to
/// this run itself.
type Route = (Option<RunHandle>, Message);

/// What the handle and the orchestrator share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) run_id: RunId,
    pub(crate) session_id: Option<SessionId>,
    pub(crate) agent: Agent,
    /// For a sub-agent's run, the run and call that started it.
    pub(crate) parent: Option<Parent>,
    /// How many runs up the client's run is: 0 for the client's own.
    pub(crate) depth: u32,
    /// The deepest a sub-agent's run under this one may be: the tightest of this agent's
    /// `max_depth` below it and every ancestor's below them.
    pub(crate) depth_limit: u32,
    /// The agents the run may hand the conversation to; its children are given the same.
    pub(crate) agents: Option<Agents>,
    /// Every status change is made while `state` is locked, so both always agree.
    pub(crate) status: watch::Sender<RunStatus>,
    pub(crate) state: Mutex<RunState>,
    /// Fires when an input answered something the run waits for.
    pub(crate) answered: Notify,
    /// How far the host has stored the run's events, if it does ([`RunStart::stored`]).
    pub(crate) stored: Option<watch::Sender<u64>>,
    pub(crate) cancel: CancellationToken,
    /// The inbox holds notes to report: checked on every flush without taking the lock.
    pub(crate) noted: AtomicBool,
    /// The session's shared state: one for the whole tree of runs (a sub-agent's run holds
    /// its parent's), whose events the top run emits.
    pub(crate) shared_state: SharedState,
}

/// The run's mutable state.
#[derive(Debug)]
pub(crate) struct RunState {
    pub(crate) machine: SchemaMachine,
    /// The schema state the run started from, before its input: what a run that does not end
    /// well leaves its session in ([`RunHandle::session_state`]).
    pub(crate) start_state: StateName,
    /// Where the client's accepted `cancel` leads, once the client has canceled the run.
    pub(crate) canceled_to: Option<StateName>,
    /// The history, then this run's input, then the agent's complete messages: what the model
    /// sees.
    pub(crate) messages: Vec<Message>,
    /// Where this run's messages begin in `messages`.
    pub(crate) history_len: usize,
    /// Where the agent's messages begin in `messages`.
    pub(crate) output_from: usize,
    pub(crate) usage: Option<Usage>,
    pub(crate) error: Option<ErrorInfo>,
    pub(crate) wait: Option<Wait>,
    /// Set with `wait` by the orchestrator: the rest of a [`Checkpoint`](crate::Checkpoint).
    pub(crate) parked: Option<Parked>,
    /// Why the run's host stopped it ([`RunHandle::interrupt`]): it ends `incomplete` with
    /// this error rather than `canceled`.
    pub(crate) interrupted: Option<ErrorInfo>,
    /// Messages sent while it works ([`RunHandle::steer`], [`RunHandle::note`]).
    pub(crate) inbox: Inbox,
    /// Its sub-agents' runs under way, which answers are handed down to.
    pub(crate) children: Vec<ChildHandle>,
    /// The run of the agent the conversation was handed to, which speaks for this one.
    pub(crate) handoff: Option<RunHandle>,
}

impl RunState {
    /// What the run waits for of the client now: its own requests first, then, when every
    /// child it waits on waits too, what the first of them waits for. `None` when nothing
    /// does, or a child it waits on works.
    pub(crate) fn awaiting(&self) -> Option<Awaiting> {
        let wait = self.wait.as_ref()?;
        wait.awaiting().or_else(|| {
            wait.waits_on_children()
                .then(|| subagent::all_waiting(&self.children))
                .flatten()
        })
    }
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, RunState> {
        // No code path panics while holding the lock; a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How a run stopped by its cancellation token ends: `canceled` when the client asked,
    /// `incomplete` with the host's reason when it was interrupted.
    pub(crate) fn stopped(&self) -> (RunStatus, Option<ErrorInfo>) {
        match self.lock().interrupted.clone() {
            Some(error) => (RunStatus::Incomplete, Some(error)),
            None => (RunStatus::Canceled, None),
        }
    }
}

impl Agent {
    /// A fresh run id from the agent's id source, for a caller that names the run before it
    /// starts (a server's tracing span; pass it back with [`RunStart::with_run_id`]).
    pub fn new_run_id(&self) -> RunId {
        self.inner.ids.next_id(IdKind::Run).into()
    }

    /// Starts a run: checks the input against the agent's schema (a refusal starts nothing),
    /// then spawns the orchestrator on the current Tokio runtime. The orchestrator and its
    /// tools' tasks run in the caller's current `tracing` span, so a span the caller opens for
    /// the run covers everything it does.
    pub fn start(&self, start: RunStart) -> Result<Run, StartError> {
        self.start_under(start, Placement::top())
    }

    /// Starts a run placed in a tree: a sub-agent's, or the run of an agent a conversation was
    /// handed to (whose input is its history's last question).
    pub(crate) fn start_under(
        &self,
        start: RunStart,
        placement: Placement,
    ) -> Result<Run, StartError> {
        let Placement {
            parent,
            depth,
            depth_limit,
            handoff,
        } = placement;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| StartError::NoRuntime)?;
        let config = &self.inner;
        if !handoff
            && start
                .input
                .iter()
                .all(|message| message.role == Role::System)
        {
            return Err(StartError::NoInput);
        }
        self.check_settings(&start.settings)?;
        if let Some(tool) = start
            .client_tools
            .iter()
            .find(|tool| config.toolbox.contains(&tool.name))
        {
            return Err(StartError::ToolNameTaken {
                name: tool.name.clone(),
            });
        }
        if !start.client_tools.is_empty()
            && !schema::allows_anywhere(&config.schema, Party::Server, MessageKind::FUNCTION_CALL)
        {
            return Err(StartError::ClientToolsNotAllowed);
        }
        let mut machine = start
            .schema_state
            .and_then(|state| SchemaMachine::resume(Arc::clone(&config.schema), state))
            .unwrap_or_else(|| SchemaMachine::new(Arc::clone(&config.schema)));
        let start_state = machine.state().clone();
        if handoff {
            // The agent takes the conversation where the user's last question left it: its
            // schema governs from that question on.
            let question = start
                .history
                .iter()
                .rev()
                .find(|message| message.role == Role::User)
                .and_then(|message| schema::incoming(message).question);
            if let Some(question) = question {
                machine.accept(&question)?;
            }
        }
        for message in &start.input {
            start_role(message.role).map_err(|role| StartError::Role { role })?;
            // A system message instructs the model (it reaches it as one); it is not an
            // utterance of the conversation the schema governs.
            if message.role == Role::System {
                continue;
            }
            let incoming = schema::incoming(message);
            for utterance in [incoming.approvals, incoming.outputs, incoming.question]
                .iter()
                .flatten()
            {
                machine.accept(utterance)?;
            }
        }

        let run_id = start
            .run_id
            .unwrap_or_else(|| config.ids.next_id(IdKind::Run).into());
        let history_len = start.history.len();
        let mut messages = start.history;
        messages.extend(start.input.into_iter().map(|message| self.stamp(message)));
        let output_from = messages.len();
        let (status, _) = watch::channel(RunStatus::Created);
        let shared_state = match &parent {
            Some(parent) => parent.state.clone(),
            None => SharedState::with_bounds(
                start.shared_state,
                config.state_schema.clone(),
                start.limits.state_bounds(),
            ),
        };
        let shared = Arc::new(Shared {
            run_id,
            session_id: start.session_id,
            agent: self.clone(),
            parent,
            depth,
            depth_limit: depth_limit.min(depth.saturating_add(config.max_depth)),
            agents: start.agents,
            status,
            state: Mutex::new(RunState {
                machine,
                start_state,
                canceled_to: None,
                messages,
                history_len,
                output_from,
                usage: None,
                error: None,
                wait: None,
                parked: None,
                interrupted: None,
                inbox: Inbox::new(config.handler.is_none() && config.remote.is_none()),
                children: Vec::new(),
                handoff: None,
            }),
            answered: Notify::new(),
            stored: start.stored.then(|| watch::Sender::new(0)),
            cancel: CancellationToken::new(),
            noted: AtomicBool::new(false),
            shared_state,
        });
        let queue = Arc::new(EventQueue::default());
        if let Some(handler) = &config.handler {
            let request = handler::request(&shared, start.client_tools, start.settings);
            let max_duration = start.limits.working_time(config.max_duration);
            let drive = handler::drive(
                shared.clone(),
                queue.clone(),
                handler.clone(),
                request,
                max_duration,
            );
            runtime.spawn(drive.in_current_span());
            return Ok(Run {
                handle: RunHandle { shared },
                events: RunEvents::new(queue),
            });
        }
        if let Some(remote) = &config.remote {
            let max_duration = start.limits.working_time(config.max_duration);
            let drive = remote::drive(shared.clone(), queue.clone(), remote.clone(), max_duration);
            runtime.spawn(drive.in_current_span());
            return Ok(Run {
                handle: RunHandle { shared },
                events: RunEvents::new(queue),
            });
        }
        let orchestrator = Orchestrator::new(
            Arc::clone(&shared),
            Arc::clone(&queue),
            start.client_tools,
            start.limits,
            start.settings,
            start.telemetry,
        )
        .with_slots(start.slots)
        .answering(start.client_message_id);
        runtime.spawn(orchestrator.run().in_current_span());
        Ok(Run {
            handle: RunHandle { shared },
            events: RunEvents::new(queue),
        })
    }

    /// Gives an input message an id and a time if it lacks them.
    pub(crate) fn stamp(&self, mut message: Message) -> Message {
        if message.id.is_none() {
            message.id = Some(self.inner.ids.next_id(IdKind::Message).into());
        }
        if message.created_at.is_none() {
            message.created_at = Some(self.inner.clock.now());
        }
        message
    }
}

impl RunHandle {
    /// The run's id.
    pub fn id(&self) -> &RunId {
        &self.shared.run_id
    }

    /// The session the run belongs to.
    pub fn session_id(&self) -> Option<&SessionId> {
        self.shared.session_id.as_ref()
    }

    /// The agent running it.
    pub fn agent(&self) -> &Agent {
        &self.shared.agent
    }

    /// The agent that speaks for the run now: its own, or the one it handed the conversation
    /// to (and so on, down the handoffs). The session speaks with it next.
    pub fn speaker(&self) -> String {
        let handoff = self.shared.lock().handoff.clone();
        match handoff {
            Some(handoff) => handoff.speaker(),
            None => self.shared.agent.name().to_owned(),
        }
    }

    /// The run's status now.
    pub fn status(&self) -> RunStatus {
        *self.shared.status.borrow()
    }

    /// The run's state in the agent's communication schema, e.g. `running` or
    /// `awaiting_approval`; once the client's `cancel` is accepted, the state it leads to.
    pub fn state(&self) -> StateName {
        let state = self.shared.lock();
        state
            .canceled_to
            .clone()
            .unwrap_or_else(|| state.machine.state().clone())
    }

    /// Tokens used so far, summed over the run's model calls; `None` while no call reported
    /// usage.
    pub fn usage(&self) -> Option<Usage> {
        self.shared.lock().usage
    }

    /// Why the run failed or is incomplete; `None` otherwise.
    pub fn error(&self) -> Option<ErrorInfo> {
        self.shared.lock().error.clone()
    }

    /// The run's conversation so far: its input, then the agent's complete messages. This is
    /// what a session appends to its history. (Answers to approvals and client tools are not
    /// messages of their own here: the agent's next message repeats each of them.) The message
    /// being streamed is not included until it completes; the events show it as it grows.
    pub fn messages(&self) -> Vec<Message> {
        let state = self.shared.lock();
        state.messages[state.history_len..].to_vec()
    }

    /// The agent's complete messages so far.
    pub fn output(&self) -> Vec<Message> {
        let state = self.shared.lock();
        state.messages[state.output_from..].to_vec()
    }

    /// Waits until the run needs the client (`awaiting`) or has ended, and returns that status.
    pub async fn settled(&self) -> RunStatus {
        let mut status = self.shared.status.subscribe();
        let settled = status
            .wait_for(|status| status.is_terminal() || matches!(status, RunStatus::Awaiting(_)))
            .await
            .map(|status| *status);
        // The sender lives as long as `self`, so waiting cannot fail.
        settled.unwrap_or_else(|_| self.status())
    }

    /// Sends the run a client message: answers to approval requests (`approval_response`
    /// parts) and outputs of client tools (`tool_result` or `tool_error` parts). It must be
    /// what the agent's schema allows in the run's current state; a refusal names the state
    /// and what is allowed, and changes nothing. A user message answers the question the run
    /// waits on (`awaiting input`, the model's `ask_user`); while none waits it is a new turn
    /// ([`InputError::NewTurn`]). Answers are taken once the run awaits them
    /// (its status says so: a request is not sent until its message is complete). When
    /// everything the run waits for is answered, the run goes on.
    ///
    /// Answers to requests of the run's sub-agents (an approval, a client tool's output, the
    /// answer to a question, in a run that waits on its children) go down to the run that
    /// asked, however deep; a message may answer several runs at once.
    pub fn input(&self, message: Message) -> Result<(), InputError> {
        client_role(message.role).map_err(|role| InputError::Role { role })?;
        let Some(routes) = self.routes(&message)? else {
            return self.own_input(message);
        };
        let mut working = false;
        for (child, message) in routes {
            match child {
                Some(child) => {
                    child.input(message)?;
                    working |= !matches!(child.status(), RunStatus::Awaiting(_));
                }
                None => self.own_input(message)?,
            }
        }
        self.children_answered(working);
        Ok(())
    }

    /// Where the parts of `message` go when some are for the run's sub-agents: each answer to
    /// the run that waits for it (this run's own first), the rest to this run. `None` when
    /// everything is this run's.
    fn routes(&self, message: &Message) -> Result<Option<Vec<Route>>, InputError> {
        let state = self.shared.lock();
        if state.children.is_empty() {
            return Ok(None);
        }
        let own = state.wait.clone().unwrap_or_default();
        if schema::incoming(message).question.is_some() {
            // The user's message answers a question: this run's, else a child's.
            if own.awaiting() == Some(Awaiting::Input) {
                return Ok(None);
            }
            let child = state
                .children
                .iter()
                .find(|child| child.handle.awaits_question());
            return Ok(child.map(|child| vec![(Some(child.handle.clone()), message.clone())]));
        }
        let mut routes: Vec<(Option<RunHandle>, Vec<Part>)> = Vec::new();

        for part in &message.parts {
            let owner = match own.expects(part) {
                true => None,
                false => state
                    .children
                    .iter()
                    .find(|child| child.handle.expects(part))
                    .map(|child| child.handle.clone()),
            };
            if owner.is_none() && !own.expects(part) && own.awaiting().is_none() {
                // An answer nobody under this run waits for, while the run itself asks
                // nothing: name the answer, not this run's schema state.
                return Err(match part {
                    Part::ApprovalResponse(response) => InputError::UnknownApproval {
                        approval_id: response.approval_id.to_string(),
                    },
                    Part::ToolResult(ToolResult { tool_call_id, .. })
                    | Part::ToolError(ToolError { tool_call_id, .. }) => {
                        InputError::UnknownToolCall {
                            tool_call_id: tool_call_id.to_string(),
                        }
                    }
                    _ => continue,
                });
            }
            let same = |route: &&mut (Option<RunHandle>, Vec<Part>)| match (&route.0, &owner) {
                (None, None) => true,
                (Some(a), Some(b)) => a.id() == b.id(),
                _ => false,
            };
            match routes.iter_mut().find(same) {
                Some(route) => route.1.push(part.clone()),
                None => routes.push((owner, vec![part.clone()])),
            }
        }
        if routes.iter().all(|(owner, _)| owner.is_none()) {
            return Ok(None);
        }
        Ok(Some(
            routes
                .into_iter()
                .map(|(owner, parts)| {
                    let mut routed = message.clone();
                    routed.parts = parts;
                    (owner, routed)
                })
                .collect(),
        ))
    }

    /// Whether the run, or a sub-agent's run under it, waits for this answer (an
    /// `approval_response`, or a client tool's `tool_result` or `tool_error`): what
    /// [`RunHandle::input`] would hand to a run that asked for it. A host picking the answers
    /// out of a client's whole history asks this, since a sub-agent's requests are not in the
    /// run's own output.
    pub fn expects(&self, part: &Part) -> bool {
        let state = self.shared.lock();
        state.wait.as_ref().is_some_and(|wait| wait.expects(part))
            || state
                .children
                .iter()
                .any(|child| child.handle.expects(part))
    }

    /// Whether the run, or a sub-agent's run under it, waits for the user's answer to a
    /// question.
    fn awaits_question(&self) -> bool {
        let state = self.shared.lock();
        state
            .wait
            .as_ref()
            .is_some_and(|wait| wait.awaiting() == Some(Awaiting::Input))
            || state
                .children
                .iter()
                .any(|child| child.handle.awaits_question())
    }

    /// Children were answered (`working`: one of them works again): the run's status follows
    /// at once, so a reader that comes right after the answer does not take the run for
    /// waiting still, and the orchestrator reports it once the child's own status is in the
    /// stream.
    fn children_answered(&self, working: bool) {
        let state = self.shared.lock();
        if working && matches!(*self.shared.status.borrow(), RunStatus::Awaiting(_)) {
            self.shared.status.send_replace(RunStatus::InProgress);
        }
        drop(state);
        self.shared.answered.notify_one();
    }

    /// [`RunHandle::input`] for the run's own requests.
    fn own_input(&self, message: Message) -> Result<(), InputError> {
        let mut state = self.shared.lock();
        let status = *self.shared.status.borrow();
        if status.is_terminal() {
            return Err(InputError::Finished { status });
        }
        let incoming = schema::incoming(&message);
        if let Some(question) = &incoming.question {
            // A user message answers the question the run waits on (`ask_user`), else it is a
            // new turn.
            let mut wait = state.wait.clone().unwrap_or_default();
            if wait.awaiting() != Some(Awaiting::Input) {
                state.machine.check(question)?;
                return Err(InputError::NewTurn);
            }
            let mut machine = state.machine.clone();
            machine.accept(question)?;
            wait.answer_question(&message);
            state.machine = machine;
            self.answered(state, status, wait);
            return Ok(());
        }

        // The message's type must fit the current state before its answers are looked at, so
        // an answer sent at the wrong time is refused naming the state.
        if let Some(first) = incoming.approvals.as_ref().or(incoming.outputs.as_ref()) {
            state.machine.check(first)?;
        }
        // Apply the answers to copies, and keep them only if the schema accepts everything.
        let mut wait = state.wait.clone().unwrap_or_default();
        wait.answer(&message.parts)
            .map_err(|mismatch| match mismatch {
                Mismatch::Approval(id) => InputError::UnknownApproval {
                    approval_id: id.to_string(),
                },
                Mismatch::ToolCall(id) => InputError::UnknownToolCall {
                    tool_call_id: id.to_string(),
                },
            })?;
        let mut machine = state.machine.clone();
        if let Some(approvals) = &incoming.approvals {
            if wait.awaiting() == Some(Awaiting::Approval) {
                machine.check(approvals)?;
            } else {
                machine.accept(approvals)?;
                if wait.client_calls().next().is_some() {
                    // The server's calls of client tools come due once approvals are answered
                    // (outputs sent earlier are refused, so none is answered before this).
                    machine.accept(&schema::function_call(wait.client_calls()))?;
                } else if wait.awaiting() == Some(Awaiting::Input) {
                    // And its questions (`ask_user`) once everything before them is.
                    machine.accept(&schema::input_request(wait.n_questions()))?;
                }
            }
        }
        if let Some(outputs) = &incoming.outputs {
            if wait.awaiting() == Some(Awaiting::FunctionOutput) {
                machine.check(outputs)?;
            } else {
                machine.accept(outputs)?;
                if wait.awaiting() == Some(Awaiting::Input) {
                    machine.accept(&schema::input_request(wait.n_questions()))?;
                }
            }
        }
        state.machine = machine;
        self.answered(state, status, wait);
        Ok(())
    }

    /// Keeps the answers recorded in `wait` and tells the orchestrator.
    fn answered(&self, mut state: MutexGuard<'_, RunState>, status: RunStatus, wait: Wait) {
        // The run moves on now: its status says so at once (the orchestrator's event follows),
        // so a reader that comes right after this answer does not take the log, still on the
        // old status, for all there is. Under the lock, before the orchestrator can go on.
        state.wait = Some(wait);
        let next = state
            .awaiting()
            .map_or(RunStatus::InProgress, RunStatus::Awaiting);
        if matches!(status, RunStatus::Awaiting(_)) && next != status {
            self.shared.status.send_replace(next);
        }
        drop(state);
        // The orchestrator reports the new status, or goes on when nothing is left to wait for.
        self.shared.answered.notify_one();
    }

    /// The host has stored the run's events through `seq` (for a run started
    /// [`with_stored_events`](RunStart::with_stored_events); otherwise this does nothing).
    pub fn stored_through(&self, seq: u64) {
        if let Some(stored) = &self.shared.stored {
            stored.send_if_modified(|through| {
                let later = seq > *through;
                *through = (*through).max(seq);
                later
            });
        }
    }

    /// The schema state the run leaves its session in, for the session's next run
    /// ([`RunStart::schema_state`]): while the run goes on, and when it completes or waits,
    /// the state it has reached; when the client canceled it, where the schema's `cancel`
    /// leads; when it failed, is incomplete or its host stopped it ([`RunHandle::abort`],
    /// [`RunHandle::interrupt`]), the state it started from, so the client can try again.
    ///
    /// A run that handed the conversation to another agent leaves what that agent's run
    /// leaves, in that agent's schema.
    pub fn session_state(&self) -> StateName {
        let handoff = self.shared.lock().handoff.clone();
        if let Some(handoff) = handoff {
            return handoff.session_state();
        }
        let state = self.shared.lock();
        match *self.shared.status.borrow() {
            RunStatus::Failed | RunStatus::Incomplete | RunStatus::Rejected => {
                state.start_state.clone()
            }
            RunStatus::Canceled => state
                .canceled_to
                .clone()
                .unwrap_or_else(|| state.start_state.clone()),
            _ => state.machine.state().clone(),
        }
    }

    /// The session's shared state as the run holds it now: where it leaves its session
    /// ([`RunStart::shared_state`]). Every change a run makes is shown in its stream as it is
    /// made, and kept whatever way the run ends (an `update_state` call that did not complete
    /// changes nothing); a sub-agent's run shares its parent's.
    pub fn shared_state(&self) -> Value {
        self.shared.shared_state.document()
    }

    /// The client cancels the run: `cancel` must be a message the agent's schema allows in the
    /// run's state (the default schema allows it while the agent works and while it waits; the
    /// `chat` built-in never does), else the refusal names the state and what is allowed and
    /// nothing changes. Then the model's stream and running tools stop at once, open parts are
    /// closed, calls that did not run are answered as canceled, and the run ends `canceled`
    /// with everything complete kept; its session goes on from the state `cancel` leads to.
    /// A run still queued for a slot has not been worked on: its cancel withdraws the question,
    /// whatever the schema, and its session keeps the state the run started from. Does
    /// nothing to a run that has ended.
    pub fn cancel(&self) -> Result<(), Refusal> {
        {
            let mut state = self.shared.lock();
            let status = *self.shared.status.borrow();
            if status.is_terminal() {
                return Ok(());
            }
            if status == RunStatus::Queued {
                drop(state);
                self.shared.cancel.cancel();
                return Ok(());
            }
            // Checked, not taken: the run's machine stays where the work is (an answer that
            // completes meanwhile is still the schema's), and the session takes the cancel's
            // next state when the run ends canceled.
            let next = state.machine.check(&schema::cancel())?.next_state.clone();
            state.canceled_to.get_or_insert(next);
        }
        self.shared.cancel.cancel();
        Ok(())
    }

    /// Stops the run as [`RunHandle::cancel`] does, for its host rather than its client (a
    /// write the host could not make, a copy of the run it let go): not a message of the
    /// schema, so never refused. The run ends `canceled`, and its session keeps the state the
    /// run started from. Does nothing to a run that has ended.
    pub fn abort(&self) {
        if self.shared.status.borrow().is_terminal() {
            return;
        }
        self.shared.cancel.cancel();
    }

    /// Stops the run as [`RunHandle::cancel`] does, for a reason of its host's rather than its
    /// client's (the server shutting down): it ends `incomplete` with `error`, and its schema
    /// state is left as it was. Does nothing to a run that has ended.
    pub fn interrupt(&self, error: ErrorInfo) {
        {
            let mut state = self.shared.lock();
            if self.shared.status.borrow().is_terminal() {
                return;
            }
            state.interrupted.get_or_insert(error);
        }
        self.shared.cancel.cancel();
    }
}

/// A client may start a run with its messages and system messages (instructions for the model,
/// as AgentScope's `AgentRequest` allows); the name of any other role.
fn start_role(role: Role) -> Result<(), &'static str> {
    match role {
        Role::System => Ok(()),
        other => client_role(other),
    }
}

/// The role's name on the wire.
pub(crate) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Tool => "tool",
        Role::Data => "data",
    }
}

/// A client may send user messages and tool outputs (role `tool`); the name of any other role.
/// (A run under way takes no new instructions.)
fn client_role(role: Role) -> Result<(), &'static str> {
    match role {
        Role::User | Role::Tool => Ok(()),
        Role::System => Err("system"),
        Role::Assistant => Err("assistant"),
        Role::Data => Err("data"),
    }
}
