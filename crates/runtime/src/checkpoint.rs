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
use crate::handoff::Agents;
use crate::orchestrator::Orchestrator;
use crate::run::{Placement, Run, RunHandle, RunLimits, RunState, Shared};
use crate::steer::Inbox;
use crate::subagent::{self, Child, ChildCheckpoint, ChildHandle, Parent};
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
    /// The sub-agents' runs the run waits on, each written down in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    children: Vec<ChildCheckpoint>,
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
    /// The most bytes of JSON the session's shared state may take (`None` in a checkpoint
    /// written before it was kept: the default).
    #[serde(default)]
    pub(crate) max_state_bytes: Option<usize>,
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
            max_state_bytes: None,
        }
    }

    /// Keeps the bound of the session's shared state.
    pub(crate) fn with_max_state_bytes(mut self, max_state_bytes: usize) -> Self {
        self.max_state_bytes = Some(max_state_bytes);
        self
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
    /// The agents the run may hand the conversation to
    /// ([`RunStart::agents`](crate::RunStart::agents)).
    pub agents: Option<Agents>,
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
    /// The agent's runs are run by a remote agent, which cannot be checkpointed.
    #[error("the agent's runs are run by a remote agent and cannot be resumed")]
    Remote,
    /// The run waited on a sub-agent its agent no longer has.
    #[error("the run waited on the sub-agent '{0}', which the agent no longer has")]
    UnknownSubagent(String),
    /// `resume` was called outside a Tokio runtime.
    #[error("a run must be resumed inside a tokio runtime")]
    NoRuntime,
}

impl Checkpoint {
    /// How many messages at the end of the run's conversation are its input.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// How many of the calls it waits on have their answer, its children's included: a
    /// checkpoint with more is one with more answers to keep.
    pub fn answered(&self) -> usize {
        self.wait.answered()
            + self
                .children
                .iter()
                .map(|child| child.checkpoint.answered())
                .sum::<usize>()
    }
}

impl RunHandle {
    /// The run written down, while it waits for the client (its status is `awaiting`) and was
    /// written by the orchestrator; `None` otherwise. It includes the answers given so far.
    ///
    /// A run that waits on sub-agents' runs is written down with them, once each of them waits
    /// too; while one of them works, there is no checkpoint.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let state = self.shared.lock();
        let (wait, parked) = (state.wait.as_ref()?, state.parked.as_ref()?);
        let mut children = Vec::new();
        for call in wait.waiting_children() {
            let child = state
                .children
                .iter()
                .find(|child| child.tool_call_id == call.tool_call_id)?;
            children.push(ChildCheckpoint {
                tool_call_id: call.tool_call_id.clone(),
                agent: child.handle.agent().name().to_owned(),
                run_id: child.handle.id().clone(),
                input: subagent::input_of(call),
                checkpoint: Box::new(child.handle.checkpoint()?),
                handoff_at: child.handoff_at,
            });
        }
        Some(Checkpoint {
            state: state.machine.state().to_string(),
            start_state: Some(state.start_state.to_string()),
            input_len: state.output_from - state.history_len,
            output: state.messages[state.output_from..].to_vec(),
            wait: wait.clone(),
            parked: parked.clone(),
            children,
        })
    }
}

impl Agent {
    /// Takes up a checkpointed run where it waited: the run is `awaiting` again, with the same
    /// calls, answers and budget, and goes on when [`RunHandle::input`] answers the rest. Its
    /// events are numbered from `next_seq`; it emits none until it is answered or canceled. The
    /// host stores its events as the first did ([`RunStart::stored`](crate::RunStart::stored)).
    ///
    /// A run that waited on sub-agents' runs takes them up too, from their checkpoints in its
    /// own.
    pub fn resume(&self, resume: RunResume) -> Result<Run, ResumeError> {
        self.resume_under(resume, Placement::top())
    }

    /// [`Agent::resume`] for a run placed in a tree (see [`Agent::start_under`]).
    fn resume_under(&self, resume: RunResume, placement: Placement) -> Result<Run, ResumeError> {
        let Placement {
            parent,
            depth,
            depth_limit,
            handoff: _,
        } = placement;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ResumeError::NoRuntime)?;
        if self.inner.handler.is_some() {
            return Err(ResumeError::Handler);
        }
        if self.inner.remote.is_some() {
            return Err(ResumeError::Remote);
        }
        let RunResume {
            run_id,
            session_id,
            mut conversation,
            checkpoint,
            next_seq,
            slots,
            telemetry,
            agents,
            shared_state,
        } = resume;
        let Checkpoint {
            state,
            start_state,
            input_len,
            output,
            wait,
            parked,
            children,
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
        let (status, _) = watch::channel(RunStatus::InProgress);
        let limits = RunLimits {
            max_duration: parked.max_duration_ms.map(Duration::from_millis),
            max_tool_output_bytes: Some(parked.max_tool_output_bytes),
            max_state_bytes: parked.max_state_bytes,
        };
        let client_tools = parked.client_tools.clone();
        let calls: Vec<_> = wait.waiting_children().cloned().collect();
        // A run of a tree shares its top run's state.
        let tree_state = match &parent {
            Some(parent) => parent.state.clone(),
            None => SharedState::with_bounds(
                shared_state,
                self.inner.state_schema.clone(),
                limits.state_bounds(),
            ),
        };
        let shared = Arc::new(Shared {
            run_id,
            session_id,
            agent: self.clone(),
            parent,
            depth,
            depth_limit: depth_limit.min(depth.saturating_add(self.inner.max_depth)),
            agents,
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
                handoff: None,
            }),
            answered: Notify::new(),
            stored: Some(watch::Sender::new(next_seq - 1)),
            cancel: CancellationToken::new(),
            noted: AtomicBool::new(false),
            shared_state: tree_state,
        });
        let mut live = Vec::with_capacity(children.len());
        for child in children {
            let call = calls
                .iter()
                .find(|call| call.tool_call_id == child.tool_call_id)
                .cloned()
                .ok_or_else(|| ResumeError::UnknownSubagent(child.agent.clone()))?;
            let agent = match child.handoff_at {
                Some(_) => shared
                    .agents
                    .as_ref()
                    .and_then(|agents| agents.get(&child.agent)),
                None => self.subagent(&child.agent),
            }
            .ok_or_else(|| ResumeError::UnknownSubagent(child.agent.clone()))?
            .clone();
            let conversation = match child.handoff_at {
                // A handoff was given the conversation as it stood: this run's messages to
                // there (its session's, then its own).
                Some(at) => shared.lock().messages.iter().take(at).cloned().collect(),
                None => vec![Message::user(child.input)],
            };
            let run = agent.resume_under(
                RunResume {
                    run_id: child.run_id,
                    session_id: shared.session_id.clone(),
                    conversation,
                    checkpoint: *child.checkpoint,
                    // The child's numbering is its own; its parent renumbers what it streams.
                    next_seq: 1,
                    slots: None,
                    telemetry: None,
                    agents: shared.agents.clone(),
                    shared_state: serde_json::Value::Null,
                },
                Placement {
                    parent: Some(Parent {
                        run_id: shared.run_id.clone(),
                        tool_call_id: call.tool_call_id.clone(),
                        state: shared.shared_state.clone(),
                    }),
                    depth: depth + u32::from(child.handoff_at.is_none()),
                    depth_limit: shared.depth_limit,
                    handoff: child.handoff_at.is_some(),
                },
            )?;
            let mut state = shared.lock();
            state.children.push(ChildHandle {
                tool_call_id: call.tool_call_id.clone(),
                handle: run.handle.clone(),
                reported: run.handle.status(),
                handoff_at: child.handoff_at,
            });
            if child.handoff_at.is_some() {
                state.handoff = Some(run.handle.clone());
            }
            drop(state);
            let resumed = Child::new(call, run.handle, run.events, None);
            live.push(match child.handoff_at {
                Some(at) => resumed.handing_off(at),
                None => resumed,
            });
        }
        let awaiting = shared.lock().awaiting();
        shared
            .status
            .send_replace(awaiting.map_or(RunStatus::InProgress, RunStatus::Awaiting));
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
        .with_slots(slots)
        .with_children(live);
        runtime.spawn(orchestrator.resume(awaiting).in_current_span());
        Ok(Run {
            handle: RunHandle { shared },
            events: RunEvents::new(queue),
        })
    }
}
