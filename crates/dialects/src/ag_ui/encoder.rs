//! [`AgUiEncoder`]: canonical events → AG-UI 1.0 SSE frames.
//!
//! The run's own events and each sub-agent's run nested in the stream keep a [`RunState`] of
//! their own (what message is open, which step, which calls); [`run`](super::run) writes one
//! run's events, this module the AG-UI run around them and the sub-agents' lifecycles.

use agentwire_core::part::ApprovalRequest;
use agentwire_core::{
    Awaiting, ErrorInfo, Event, EventKind, Message, MessageId, Namespace, Part, RunId, RunStatus,
    ToolCallId, Usage,
};
use serde_json::{Map, Value, json};

use super::request::RunAgentInput;
use super::run::{Activity, Ctx, RunState, prefixed, write};
use super::snapshot;
use super::wire::{
    CUSTOM_ERROR, CUSTOM_INPUT, Interrupt, NAMESPACE, Outcome, PROTOCOL_VERSION, SubagentOutcome,
    TokenUsage, WireEvent,
};
use crate::Encoder;

type Out<'a> = WireEvent<&'a str>;

/// Encodes canonical events as AG-UI 1.0 server-sent events: `data: {json}\n\n` per event, LF
/// only (the client splits frames on `\n\n` alone), no field ever `null`.
///
/// [`AgUiEncoder::for_input`] (or [`AgUiEncoder::new`]) echoes the ids of the client's
/// `RunAgentInput`, as the protocol asks; [`Default`] takes them from `run_created` (the session as the thread).
/// The mapping is in the [module docs](super).
#[derive(Debug, Default)]
pub struct AgUiEncoder {
    /// Ids given by the caller, which win over `run_created`'s.
    fixed_ids: bool,
    thread_id: String,
    run_id: String,
    parent_run_id: Option<String>,
    run_open: bool,
    /// The run's own messages, steps and calls.
    own: RunState,
    /// The sub-agents' runs nested in the stream, in the order they appeared.
    subagents: Vec<Subagent>,
    /// Calls whose result the client sent in its history (its frontend tools' outputs): it
    /// holds those tool messages already, so their results are not sent back.
    client_results: Vec<ToolCallId>,
    /// The ids of the messages the client sent: a steer among them is not sent back (the
    /// client holds that user message already; its reducer would add it twice).
    client_messages: Vec<MessageId>,
    /// Plans and artifacts shown as activity messages, with the content the client holds.
    activities: Vec<Activity>,
    /// A `MESSAGES_SNAPSHOT` frame to send right after `RUN_STARTED`.
    snapshot: Option<Vec<u8>>,
}

/// A sub-agent's run nested in the stream: an AG-UI subagent, `SUBAGENT_STARTED` …
/// `SUBAGENT_FINISHED` or `SUBAGENT_ERROR`, whose events carry its run id as `subagentRunId`.
#[derive(Debug)]
struct Subagent {
    run_id: RunId,
    namespace: Namespace,
    agent: Option<String>,
    parent_tool_call_id: Option<ToolCallId>,
    live: Live,
}

/// What a sub-agent's run is in the middle of.
#[derive(Debug, Default)]
struct Live {
    state: RunState,
    /// `SUBAGENT_STARTED` was sent in the current AG-UI run and nothing closed it yet.
    open: bool,
    /// The run ended: its terminal status was written.
    ended: bool,
    /// What it waits for, when it waits for the client.
    awaiting: Option<Awaiting>,
    /// The text of its last complete message: its answer, the call's result.
    answer: String,
    /// The tokens it used so far, as its last status said.
    usage: Option<Usage>,
}

impl AgUiEncoder {
    /// An encoder for the run the client asked for: `RUN_STARTED` and `RUN_FINISHED` carry these
    /// ids, whatever `run_created` says.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            fixed_ids: true,
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Self::default()
        }
    }

    /// An encoder answering `input`: its `threadId`, `runId` and `parentRunId` are echoed, and
    /// the results of tool calls its history already holds are not sent back (the client's
    /// reducer would add each as a second tool message), nor are user messages it sent (a steer
    /// the run took).
    pub fn for_input(input: &RunAgentInput) -> Self {
        let client_results = input
            .messages
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match part {
                Part::ToolResult(result) => Some(result.tool_call_id.clone()),
                Part::ToolError(error) => Some(error.tool_call_id.clone()),
                _ => None,
            })
            .collect();
        let client_messages = input
            .messages
            .iter()
            .filter_map(|message| message.id.clone())
            .collect();
        Self {
            parent_run_id: input.parent_run_id.as_ref().map(ToString::to_string),
            client_results,
            client_messages,
            ..Self::new(input.thread_id.as_str(), input.run_id.as_str())
        }
    }

    /// Opens the stream with a `MESSAGES_SNAPSHOT` of `history` after `RUN_STARTED`: the
    /// thread's conversation as the run starts from it, its input included, for a client whose
    /// list of messages holds what the thread no longer does (a run rolled back). The client
    /// keeps what the snapshot holds and drops the rest; the messages are cut and named as this
    /// encoder streams them, so what it keeps is what it had.
    pub fn with_snapshot(mut self, history: &[Message]) -> Self {
        let messages = snapshot::messages(history);
        self.snapshot = Some(snapshot::frame(&messages));
        self.activities = snapshot::activities(messages)
            .into_iter()
            .map(|(id, content)| Activity::held(id, content))
            .collect();
        self
    }

    fn start_run(&mut self, out: &mut Vec<u8>) {
        if self.run_open {
            return;
        }
        self.run_open = true;
        write(
            out,
            &Out::RunStarted {
                thread_id: &self.thread_id,
                run_id: &self.run_id,
                protocol_version: Some(PROTOCOL_VERSION),
                parent_run_id: self.parent_run_id.as_deref(),
            },
            None,
        );
        if let Some(frame) = self.snapshot.take() {
            out.extend_from_slice(&frame);
        }
    }

    /// The context the run's own events are written in.
    fn own<'a>(&'a mut self, out: &'a mut Vec<u8>) -> (&'a mut RunState, Ctx<'a>) {
        let ctx = Ctx {
            tag: None,
            client_results: &self.client_results,
            client_messages: &self.client_messages,
            activities: &mut self.activities,
            out,
        };
        (&mut self.own, ctx)
    }

    /// The context the sub-agent at `at` writes in.
    fn nested<'a>(&'a mut self, at: usize, out: &'a mut Vec<u8>) -> (&'a mut Live, Ctx<'a>) {
        let Subagent { run_id, live, .. } = &mut self.subagents[at];
        let ctx = Ctx {
            tag: Some(run_id.as_str()),
            client_results: &self.client_results,
            client_messages: &self.client_messages,
            activities: &mut self.activities,
            out,
        };
        (live, ctx)
    }

    fn status(
        &mut self,
        status: RunStatus,
        error: Option<&ErrorInfo>,
        usage: Option<&Usage>,
        out: &mut Vec<u8>,
    ) {
        self.start_run(out);
        if matches!(
            status,
            RunStatus::Created | RunStatus::Queued | RunStatus::InProgress
        ) {
            return;
        }
        let outcome = self.outcome(status);
        {
            let (own, mut ctx) = self.own(out);
            own.close_all(&mut ctx);
        }
        // AG-UI refuses to finish a run while a subagent is open: those still going are
        // suspended (they wait, as the run does) or, if they somehow do not, end in an error.
        for at in (0..self.subagents.len()).rev() {
            if self.subagents[at].live.open {
                self.close_subagent(at, None, out);
            }
        }
        let usage = usage.map(|usage| vec![TokenUsage::from(*usage)]);
        match outcome {
            None => {
                let (code, message) = match error {
                    Some(error) => (error.code.as_str(), error.message.as_str()),
                    None => (status.name(), "the run ended without finishing"),
                };
                write(
                    out,
                    &Out::RunError {
                        message,
                        code: Some(code),
                        usage,
                    },
                    None,
                );
            }
            Some(outcome) => {
                let outcome = outcome.borrowed();
                write(
                    out,
                    &Out::RunFinished {
                        thread_id: &self.thread_id,
                        run_id: &self.run_id,
                        outcome: Some(outcome),
                        usage,
                    },
                    None,
                );
            }
        }
        self.end_run();
    }

    /// The outcome a `RUN_FINISHED` for `status` reports; `None` for a `RUN_ERROR`. What the run
    /// waits for may be its sub-agents' (an approval three runs down): every run of the tree
    /// counts, each nested request naming its run.
    fn outcome(&self, status: RunStatus) -> Option<Outcome<String>> {
        let runs = || {
            std::iter::once((None, &self.own, &self.subagents[..])).chain(
                self.subagents
                    .iter()
                    .filter(|subagent| !subagent.live.ended)
                    .map(|subagent| {
                        (
                            Some(&subagent.run_id),
                            &subagent.live.state,
                            &self.subagents[..],
                        )
                    }),
            )
        };
        Some(match status {
            RunStatus::Failed | RunStatus::Rejected | RunStatus::Incomplete => return None,
            RunStatus::Canceled => Outcome::Cancelled,
            RunStatus::Awaiting(Awaiting::FunctionOutput) => {
                let mut pending = Vec::new();
                for (run, state, subagents) in runs() {
                    let started_subagents: Vec<&ToolCallId> = subagents
                        .iter()
                        .filter(|child| child.parent_is(run))
                        .filter_map(|child| child.parent_tool_call_id.as_ref())
                        .collect();
                    pending.extend(
                        state
                            .calls
                            .iter()
                            .filter(|call| !call.answered && !started_subagents.contains(&&call.id))
                            .filter(|call| {
                                !state
                                    .approvals
                                    .iter()
                                    .any(|request| request.tool_call_id == call.id)
                            })
                            .map(|call| prefixed(run.map(RunId::as_str), call.id.as_str())),
                    );
                }
                Outcome::Success {
                    pending_tool_call_ids: (!pending.is_empty()).then_some(pending),
                }
            }
            RunStatus::Awaiting(Awaiting::Approval) => {
                let interrupts: Vec<Interrupt<String>> = runs()
                    .flat_map(|(run, state, _)| {
                        state
                            .approvals
                            .iter()
                            .map(move |request| interrupt(run.map(RunId::as_str), request))
                    })
                    .collect();
                if interrupts.is_empty() {
                    Outcome::Success {
                        pending_tool_call_ids: None,
                    }
                } else {
                    Outcome::Interrupt { interrupts }
                }
            }
            // A question to the user (`ask_user`) is an interrupt of its own: the client's
            // next user message answers it.
            RunStatus::Awaiting(Awaiting::Input) => {
                let interrupts: Vec<Interrupt<String>> = runs()
                    .flat_map(|(run, state, _)| {
                        state
                            .calls
                            .iter()
                            .filter(|call| !call.answered && call.name == ASK_USER)
                            .map(move |call| Interrupt {
                                id: prefixed(run.map(RunId::as_str), call.id.as_str()),
                                reason: "input_required".into(),
                                message: None,
                                tool_call_id: None,
                                response_schema: Some(json!({"type": "string"})),
                                subagent_run_id: run.map(ToString::to_string),
                            })
                    })
                    .collect();
                if interrupts.is_empty() {
                    Outcome::Success {
                        pending_tool_call_ids: None,
                    }
                } else {
                    Outcome::Interrupt { interrupts }
                }
            }
            RunStatus::Completed => Outcome::Success {
                pending_tool_call_ids: None,
            },
            RunStatus::Created | RunStatus::Queued | RunStatus::InProgress => return None,
        })
    }

    fn end_run(&mut self) {
        self.run_open = false;
        self.own.end_run();
        for subagent in &mut self.subagents {
            subagent.live.open = false;
            subagent.live.state.end_run();
        }
    }

    /// The sub-agent whose run `namespace` names, open in the current AG-UI run: found, or made
    /// from what the event says (a `run_created`), or from the path alone when its start came
    /// before this stream (a continuation after an answer). Its parents are opened first, since
    /// AG-UI wants a subagent's parent started before it. `None` once it has ended.
    fn subagent(
        &mut self,
        namespace: &Namespace,
        kind: &EventKind,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        let run_id = namespace.run()?;
        let at = match self.subagents.iter().position(|s| s.run_id == *run_id) {
            Some(at) => at,
            None => {
                let (agent, parent_tool_call_id) = match kind {
                    EventKind::RunCreated {
                        agent,
                        parent_tool_call_id,
                        ..
                    } => (agent.clone(), parent_tool_call_id.clone()),
                    _ => (None, None),
                };
                self.subagents.push(Subagent {
                    run_id: run_id.clone(),
                    namespace: namespace.clone(),
                    agent,
                    parent_tool_call_id,
                    live: Live::default(),
                });
                self.subagents.len() - 1
            }
        };
        if self.subagents[at].live.ended {
            return None;
        }
        if !self.subagents[at].live.open {
            self.start_run(out);
            // Its parent first: the path without its last id.
            let path = namespace.path();
            if path.len() > 1 {
                let parent = Namespace::new(path[..path.len() - 1].iter().cloned());
                let _ = self.subagent(&parent, &EventKind::Heartbeat {}, out);
            }
            self.open_subagent(at, out);
        }
        Some(at)
    }

    /// `SUBAGENT_STARTED` for the sub-agent at `at`.
    fn open_subagent(&mut self, at: usize, out: &mut Vec<u8>) {
        let subagent = &self.subagents[at];
        let path = subagent.namespace.path();
        let parent_run = (path.len() > 1).then(|| &path[path.len() - 2]);
        let parent_state = match parent_run {
            None => Some(&self.own),
            Some(parent) => self
                .subagents
                .iter()
                .find(|s| s.run_id == *parent)
                .map(|s| &s.live.state),
        };
        let parent_call = subagent.parent_tool_call_id.as_ref();
        let parent_message = parent_call.and_then(|call| {
            parent_state?
                .calls
                .iter()
                .find(|known| known.id == *call)
                .map(|known| known.message.as_str())
        });
        let parent_call =
            parent_call.map(|call| prefixed(parent_run.map(RunId::as_str), call.as_str()));
        write(
            out,
            &Out::SubagentStarted {
                subagent_run_id: subagent.run_id.as_str(),
                name: subagent
                    .agent
                    .as_deref()
                    .unwrap_or(subagent.run_id.as_str()),
                parent_subagent_run_id: parent_run.map(RunId::as_str),
                parent_tool_call_id: parent_call.as_deref(),
                parent_message_id: parent_message,
            },
            None,
        );
        self.subagents[at].live.open = true;
    }

    /// Closes the sub-agent at `at` and those under it: ends what it has open, then
    /// `SUBAGENT_FINISHED` (completed, or suspended while it waits) or `SUBAGENT_ERROR`.
    /// `ended` is how its run ended, when it did; `None` closes it at the end of the AG-UI run.
    fn close_subagent(
        &mut self,
        at: usize,
        ended: Option<(RunStatus, Option<&ErrorInfo>, Option<&Usage>)>,
        out: &mut Vec<u8>,
    ) {
        // Its own sub-agents first, innermost last opened first.
        let run_id = self.subagents[at].run_id.clone();
        for inner in (0..self.subagents.len()).rev() {
            let under = {
                let path = self.subagents[inner].namespace.path();
                inner != at && self.subagents[inner].live.open && path.contains(&run_id)
            };
            if under {
                self.close_subagent(inner, None, out);
            }
        }
        let (subagent, mut ctx) = self.nested(at, out);
        subagent.state.close_all(&mut ctx);
        let mut ours = Map::new();
        let subagent_run_id = ctx.tag.unwrap_or_default();
        let event = match ended {
            Some((RunStatus::Completed, _, usage)) => {
                if let Some(usage) = usage {
                    ours.insert("usage".into(), json!(TokenUsage::from(*usage)));
                }
                Out::SubagentFinished {
                    subagent_run_id,
                    result: Some(Value::String(subagent.answer.clone())),
                    outcome: Some(SubagentOutcome::Success),
                    metadata: (!ours.is_empty()).then(|| json!({ NAMESPACE: ours })),
                }
            }
            Some((status, error, usage)) => {
                ours.insert("status".into(), json!(status.name()));
                if let Some(usage) = usage {
                    ours.insert("usage".into(), json!(TokenUsage::from(*usage)));
                }
                let (code, message) = match error {
                    Some(error) => (error.code.as_str(), error.message.as_str()),
                    None => (status.name(), "the sub-agent's run ended without an answer"),
                };
                // The strings borrow from `error`, which outlives the write below.
                write(
                    ctx.out,
                    &Out::SubagentError {
                        subagent_run_id,
                        message,
                        code: Some(code),
                        metadata: Some(json!({ NAMESPACE: ours })),
                    },
                    None,
                );
                subagent.open = false;
                subagent.ended = true;
                return;
            }
            None => match subagent.awaiting {
                Some(awaiting) => {
                    ours.insert("awaiting".into(), json!(awaiting));
                    if let Some(usage) = &subagent.usage {
                        ours.insert("usage".into(), json!(TokenUsage::from(*usage)));
                    }
                    let interrupt_ids: Vec<&str> = subagent
                        .state
                        .approvals
                        .iter()
                        .map(|request| request.approval_id.as_str())
                        .collect();
                    Out::SubagentFinished {
                        subagent_run_id,
                        result: None,
                        outcome: Some(SubagentOutcome::Suspended {
                            interrupt_ids: (!interrupt_ids.is_empty()).then_some(interrupt_ids),
                        }),
                        metadata: Some(json!({ NAMESPACE: ours })),
                    }
                }
                None => {
                    ours.insert("status".into(), json!(RunStatus::Incomplete.name()));
                    Out::SubagentError {
                        subagent_run_id,
                        message: "the run ended before the sub-agent did",
                        code: Some("incomplete"),
                        metadata: Some(json!({ NAMESPACE: ours })),
                    }
                }
            },
        };
        write(ctx.out, &event, None);
        subagent.open = false;
        subagent.ended |= ended.is_some();
    }

    /// An event of a sub-agent's run nested in the stream.
    fn encode_nested(&mut self, event: &Event, out: &mut Vec<u8>) {
        let Some(at) = self.subagent(&event.namespace, &event.kind, out) else {
            return;
        };
        match &event.kind {
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => match status {
                RunStatus::Awaiting(awaiting) => {
                    let live = &mut self.subagents[at].live;
                    live.awaiting = Some(*awaiting);
                    live.usage = usage.or(live.usage);
                }
                status if status.is_terminal() => {
                    self.close_subagent(at, Some((*status, error.as_ref(), usage.as_ref())), out);
                }
                _ => self.subagents[at].live.awaiting = None,
            },
            EventKind::MessageComplete { message } => {
                let (subagent, mut ctx) = self.nested(at, out);
                subagent.state.message_complete(message, &mut ctx);
                if message.role != agentwire_core::Role::User {
                    subagent.answer = message.content();
                }
            }
            kind => {
                let (subagent, mut ctx) = self.nested(at, out);
                subagent.state.encode(kind, &mut ctx);
            }
        }
    }
}

impl Subagent {
    /// Whether this run's parent is `run` (`None`: the run's own).
    fn parent_is(&self, run: Option<&RunId>) -> bool {
        let path = self.namespace.path();
        match run {
            None => path.len() == 1,
            Some(run) => path.len() > 1 && path[path.len() - 2] == *run,
        }
    }
}

impl Encoder for AgUiEncoder {
    fn encode(&mut self, event: &Event, out: &mut Vec<u8>) {
        if !event.is_own() {
            if !matches!(event.kind, EventKind::Heartbeat {}) {
                self.encode_nested(event, out);
            }
            return;
        }
        match &event.kind {
            EventKind::RunCreated {
                run_id, session_id, ..
            } => {
                if !self.fixed_ids && !self.run_open {
                    self.run_id = run_id.to_string();
                    self.thread_id = match session_id {
                        Some(session_id) => session_id.to_string(),
                        None => run_id.to_string(),
                    };
                }
                self.start_run(out);
            }
            EventKind::RunStatus {
                status,
                error,
                usage,
            } => self.status(*status, error.as_ref(), usage.as_ref(), out),
            EventKind::Heartbeat {} => crate::sse::write_comment(out, "keepalive"),
            // The session's shared state is the thread's state (`agent.state` in the client).
            EventKind::StateSnapshot { state } => {
                self.start_run(out);
                write(
                    out,
                    &Out::StateSnapshot {
                        snapshot: state.clone(),
                    },
                    None,
                );
            }
            EventKind::StateDelta { patch } => {
                self.start_run(out);
                write(
                    out,
                    &Out::StateDelta {
                        delta: json!(patch),
                    },
                    None,
                );
            }
            // What became of a message sent while the run worked: AG-UI has no event for it.
            // The steer itself follows as a whole user message (`TEXT_MESSAGE_*`, role user).
            EventKind::Input(outcome) => {
                self.start_run(out);
                write(
                    out,
                    &Out::Custom {
                        name: CUSTOM_INPUT,
                        value: json!(outcome),
                    },
                    None,
                );
            }
            EventKind::Error(error) => {
                self.start_run(out);
                write(
                    out,
                    &Out::Custom {
                        name: CUSTOM_ERROR,
                        value: json!({ "code": error.code, "message": error.message }),
                    },
                    None,
                );
            }
            EventKind::MessageComplete { message } => {
                self.start_run(out);
                let (own, mut ctx) = self.own(out);
                own.message_complete(message, &mut ctx);
            }
            kind => {
                self.start_run(out);
                let (own, mut ctx) = self.own(out);
                own.encode(kind, &mut ctx);
            }
        }
    }
}

/// agentwire's built-in question to the user, whose unanswered call is awaiting input.
const ASK_USER: &str = "ask_user";

/// An approval request of the run `run` (`None`: the run's own) as an interrupt the client
/// answers with a resume entry `{interruptId, status, payload: {approved, reason?}}`. The id is
/// the approval's own, whichever run asked: the runtime hands the answer down by it.
fn interrupt(run: Option<&str>, request: &ApprovalRequest) -> Interrupt<String> {
    Interrupt {
        id: request.approval_id.to_string(),
        reason: "tool_call".into(),
        message: request.reason.clone(),
        tool_call_id: Some(prefixed(run, request.tool_call_id.as_str())),
        response_schema: Some(json!({
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        })),
        subagent_run_id: run.map(str::to_owned),
    }
}

impl Outcome<String> {
    /// The same outcome borrowing its strings, as the wire event takes it.
    fn borrowed(&self) -> Outcome<&str> {
        match self {
            Outcome::Success {
                pending_tool_call_ids,
            } => Outcome::Success {
                pending_tool_call_ids: pending_tool_call_ids
                    .as_ref()
                    .map(|ids| ids.iter().map(String::as_str).collect()),
            },
            Outcome::Interrupt { interrupts } => Outcome::Interrupt {
                interrupts: interrupts
                    .iter()
                    .map(|interrupt| Interrupt {
                        id: interrupt.id.as_str(),
                        reason: interrupt.reason.as_str(),
                        message: interrupt.message.as_deref(),
                        tool_call_id: interrupt.tool_call_id.as_deref(),
                        response_schema: interrupt.response_schema.clone(),
                        subagent_run_id: interrupt.subagent_run_id.as_deref(),
                    })
                    .collect(),
            },
            Outcome::Cancelled => Outcome::Cancelled,
        }
    }
}
