//! [`Checkpoint`]: a run that waits for the client, written down, so that it can go on in
//! another process ([`Agent::resume`]) — after a restart, a deploy or a crash, or on another
//! node — when its answer comes, hours later if need be.
//!
//! Decided: a run is checkpointed only where it waits. There its work is done and its state is
//! small and plain: the messages it wrote, the calls it waits on with the answers so far, its
//! schema state, and what it has left of its budget. A working run (a model streaming, tools
//! running) holds connections and tasks nothing can write down; if its process stops, it ends
//! `incomplete`. What the run was given (the history and its input) is not in the checkpoint:
//! its session keeps that, and the caller hands it back.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentwire_core::communication::{SchemaMachine, StateName};
use agentwire_core::{GenerationSettings, Message, RunId, RunStatus, SessionId, ToolSpec, Usage};
use agentwire_tools::SharedState;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::Agent;
use crate::events::{EventQueue, RunEvents};
use crate::orchestrator::Orchestrator;
use crate::run::{Run, RunHandle, RunLimits, RunState, Shared};
use crate::steer::Inbox;
use crate::telemetry::Telemetry;
use crate::wait::Wait;

/// A waiting run as a store keeps it (serde, in JSON): see the module docs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The run's state in its agent's communication schema.
    state: String,
    /// The state the run started from, which it leaves its session in if it does not end well
    /// ([`RunHandle::session_state`]); absent from checkpoints written before sessions kept a
    /// state, which then start from `idle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_state: Option<String>,
    /// How many messages of the conversation the run was given are its input.
    input_len: usize,
    /// The agent's complete messages so far.
    output: Vec<Message>,
    wait: Wait,
    #[serde(flatten)]
    parked: Parked,
}

/// What the orchestrator adds to a checkpoint when it starts to wait: how far the run has gone
/// and what it runs with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Parked {
    /// The tools the client declared (and runs).
    pub(crate) client_tools: Vec<ToolSpec>,
    /// The run's generation settings, as the object [`GenerationSettings::from_object`] reads.
    pub(crate) settings: Map<String, Value>,
    /// Model calls made so far.
    pub(crate) steps: u32,
    pub(crate) usage: Option<Usage>,
    /// Working time left, in milliseconds; `None` without a limit.
    pub(crate) budget_ms: Option<u64>,
    /// The working time the run had, in milliseconds.
    pub(crate) max_duration_ms: Option<u64>,
    /// The most bytes of JSON one of its tool results may take.
    pub(crate) max_tool_output_bytes: usize,
}

impl Parked {
    pub(crate) fn new(
        client_tools: &[ToolSpec],
        settings: &GenerationSettings,
        steps: u32,
        usage: Option<Usage>,
        budget: Option<Duration>,
        max_duration: Option<Duration>,
        max_tool_output_bytes: usize,
    ) -> Self {
        let millis = |duration: Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let settings = match serde_json::to_value(settings) {
            Ok(Value::Object(object)) => object,
            _ => Map::new(),
        };
        Self {
            client_tools: client_tools.to_vec(),
            settings,
            steps,
            usage,
            budget_ms: budget.map(millis),
            max_duration_ms: max_duration.map(millis),
            max_tool_output_bytes,
        }
    }
}

/// What a checkpointed run goes on from ([`Agent::resume`]).
#[derive(Clone, Debug)]
pub struct RunResume {
    /// The run's id, as it had.
    pub run_id: RunId,
    /// Its session, as it had.
    pub session_id: Option<SessionId>,
    /// The conversation before the run, then the run's input: what its session holds.
    pub conversation: Vec<Message>,
    /// The run, as [`RunHandle::checkpoint`] wrote it down.
    pub checkpoint: Checkpoint,
    /// The seq of the run's next event: one past the last its readers may have seen.
    pub next_seq: u64,
    /// The host's slots for working runs: once answered, the run takes one to go on
    /// ([`RunStart::slots`](crate::RunStart::slots)).
    pub slots: Option<crate::RunSlots>,
    /// Where the resumed run's OpenTelemetry spans and metrics go (a new `invoke_agent` span
    /// for the rest of the run); `None` makes none.
    pub telemetry: Option<Telemetry>,
    /// The session's shared state as its host holds it (the run's changes until its wait are
    /// in it: a host stores them with the events that made them). `null` for none.
    pub shared_state: Value,
}

/// Why a checkpoint cannot go on. Nothing was started.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The agent's communication schema has no state of that name (it changed meanwhile).
    #[error("the agent's communication schema has no state '{0}' any more")]
    UnknownState(String),
    /// The conversation handed back is shorter than the run's input.
    #[error("the run's conversation holds {given} messages, fewer than its {input} inputs")]
    ShortConversation {
        /// Messages given.
        given: usize,
        /// The run's input.
        input: usize,
    },
    /// A setting of the checkpoint is no longer one the agent takes.
    #[error("invalid generation setting: {0}")]
    Setting(#[from] agentwire_core::InvalidField),
    /// The agent's runs are written by a handler, which cannot be checkpointed.
    #[error("the agent's runs are written by a handler and cannot be resumed")]
    Handler,
    /// `resume` was called outside a Tokio runtime.
    #[error("a run must be resumed inside a tokio runtime")]
    NoRuntime,
}

impl Checkpoint {
    /// How many messages at the end of the run's conversation are its input.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// How many of the calls it waits on have their answer.
    pub fn answered(&self) -> usize {
        self.wait.answered()
    }
}

impl RunHandle {
    /// The run written down, while it waits for the client (its status is `awaiting`) and was
    /// written by the orchestrator; `None` otherwise. It includes the answers given so far.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let state = self.shared.lock();
        let (wait, parked) = (state.wait.as_ref()?, state.parked.as_ref()?);
        Some(Checkpoint {
            state: state.machine.state().to_string(),
            start_state: Some(state.start_state.to_string()),
            input_len: state.output_from - state.history_len,
            output: state.messages[state.output_from..].to_vec(),
            wait: wait.clone(),
            parked: parked.clone(),
        })
    }
}

impl Agent {
    /// Takes up a checkpointed run where it waited: the run is `awaiting` again, with the same
    /// calls, answers and budget, and goes on when [`RunHandle::input`] answers the rest. Its
    /// events are numbered from `next_seq`; it emits none until it is answered or canceled. The
    /// host stores its events as the first did ([`RunStart::stored`](crate::RunStart::stored)).
    pub fn resume(&self, resume: RunResume) -> Result<Run, ResumeError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ResumeError::NoRuntime)?;
        if self.inner.handler.is_some() {
            return Err(ResumeError::Handler);
        }
        let RunResume {
            run_id,
            session_id,
            mut conversation,
            checkpoint,
            next_seq,
            slots,
            telemetry,
            shared_state,
        } = resume;
        let Checkpoint {
            state,
            start_state,
            input_len,
            output,
            wait,
            parked,
        } = checkpoint;
        let machine = SchemaMachine::resume(Arc::clone(&self.inner.schema), state.as_str())
            .ok_or(ResumeError::UnknownState(state))?;
        let history_len =
            conversation
                .len()
                .checked_sub(input_len)
                .ok_or(ResumeError::ShortConversation {
                    given: conversation.len(),
                    input: input_len,
                })?;
        let settings = GenerationSettings::from_object(&parked.settings)?;
        let output_from = conversation.len();
        conversation.extend(output);
        let awaiting = wait.awaiting();
        let (status, _) =
            watch::channel(awaiting.map_or(RunStatus::InProgress, RunStatus::Awaiting));
        let limits = RunLimits {
            max_duration: parked.max_duration_ms.map(Duration::from_millis),
            max_tool_output_bytes: Some(parked.max_tool_output_bytes),
        };
        let client_tools = parked.client_tools.clone();
        let shared = Arc::new(Shared {
            run_id,
            session_id,
            agent: self.clone(),
            parent: None,
            depth: 0,
            depth_limit: self.inner.max_depth,
            status,
            state: Mutex::new(RunState {
                start_state: start_state
                    .filter(|start| machine.schema().contains_state(start))
                    .map_or_else(StateName::idle, StateName::from),
                canceled_to: None,
                machine,
                messages: conversation,
                history_len,
                output_from,
                usage: parked.usage,
                error: None,
                wait: Some(wait),
                parked: Some(parked.clone()),
                interrupted: None,
                inbox: Inbox::new(true),
                children: Vec::new(),
            }),
            answered: Notify::new(),
            stored: Some(watch::Sender::new(next_seq - 1)),
            cancel: CancellationToken::new(),
            noted: AtomicBool::new(false),
            shared_state: SharedState::new(shared_state, self.inner.state_schema.clone()),
        });
        let queue = Arc::new(EventQueue::default());
        let orchestrator = Orchestrator::new(
            Arc::clone(&shared),
            Arc::clone(&queue),
            client_tools,
            limits,
            settings,
            telemetry,
        )
        .resuming(&parked, next_seq)
        .with_slots(slots);
        runtime.spawn(orchestrator.resume(awaiting).in_current_span());
        Ok(Run {
            handle: RunHandle { shared },
            events: RunEvents::new(queue),
        })
    }
}
