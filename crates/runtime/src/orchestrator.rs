//! The orchestrator: one run's loop, brain → tools → brain, until a final answer.
//!
//! A run writes one assistant message per turn, and a new one each time it resumes after
//! waiting for the client. Inside a message, each model call is a step that opens with a
//! `step_start` part; the model's output streams through the [`MessageBuilder`] as it arrives
//! (tool calls appear before they run; a source the model cites becomes a `source` part once
//! per URL in a message, an image it returns a `file` part). At the end of a step its tool
//! calls are sorted: the agent's own tools run concurrently through the toolbox, each result or
//! error streaming as it finishes, followed by the part a built-in made (`save_artifact`'s
//! `artifact`; `update_plan`'s `plan_update`, which continues the conversation's plan if it has
//! one); a call that needs approval gets an `approval_request` part; a call of a client
//! tool is left to the client; an `ask_user` call waits for the user's answer (`awaiting
//! input`). Given a host's [`RunSlots`], the run works only while it holds one (`queued`
//! before it has one, `rejected` when their line is full). If anything waits for the client, the message completes and the
//! run pauses (see [`Wait`]); otherwise the next step begins with the history and the message
//! so far. A step without tool calls is the answer (a refusal included); a step the provider
//! stopped for its policies (a `content_filter` finish) ends the run `incomplete`, its calls
//! not run.
//!
//! Every way out completes the open message: open parts are closed with what they received,
//! and every tool call that has no result gets a `tool_error` saying why it did not run, so the
//! conversation stays one a model can be shown again.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agentwire_brain::{BrainEvent, BrainRequest, FinishReason};
use agentwire_core::ids::ApprovalId;
use agentwire_core::part::{ApprovalRequest, DataPart, PlanAction, Source, StepStart};
use agentwire_core::{
    Awaiting, Emitter, ErrorInfo, Event, EventKind, GenerationSettings, InputOutcome, Message,
    MessageBuilder, MessageStart, Outcome, Part, Role, RunStatus, ToolCall, ToolSpec, TraceContext,
    Usage,
};
use agentwire_tools::{AskUser, ToolLimits, UpdateState};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::checkpoint::Parked;
use crate::events::EventQueue;
use crate::handoff;
use crate::ids::IdKind;
use crate::run::{Placement, RunLimits, RunStart, Shared};
use crate::schema;
use crate::slots::{RunSlots, Slot};
use crate::state_calls::{self, StateCalls};
use crate::subagent::{self, Child, ChildHandle, Children, Forwarded, Parent};
use crate::telemetry::{ChatEnd, RunTrace, Telemetry, ToolTrace};
use crate::timeline::{self, TimelineEntry};
use crate::wait::{Resolution, Wait, not_run};

/// Drives one run from its first event to its last.
pub(crate) struct Orchestrator {
    shared: Arc<Shared>,
    queue: Arc<EventQueue>,
    out: Emitter,
    /// The agent's tools, then the client's: every model call's request shares them.
    tools: Arc<[ToolSpec]>,
    /// How many of `tools`, at the end, the client runs.
    client_tools: usize,
    /// The run's generation settings, sent with every model call.
    settings: GenerationSettings,
    /// Model calls made so far.
    steps: u32,
    usage: Option<Usage>,
    /// Usage of the message being written.
    message_usage: Option<Usage>,
    /// The model and tool calls of the message being written (`timeline.rs`).
    timeline: Vec<TimelineEntry>,
    /// Working time left while the run waits; `None` without a limit.
    budget: Option<Duration>,
    /// When the working time runs out, while the run works.
    deadline: Option<Instant>,
    /// The working time the run had: the agent's `max_duration` or a tighter ceiling.
    max_duration: Option<Duration>,
    /// The limits its tool calls run under: the toolbox's, or tighter ceilings.
    tool_limits: ToolLimits,
    /// The host's slots for working runs, if it limits them.
    slots: Option<RunSlots>,
    /// The slot held while the run works.
    slot: Option<Slot>,
    /// Where the run's spans and metrics go, if anywhere.
    telemetry: Option<Telemetry>,
    /// The run's `invoke_agent` span, open while the orchestrator drives it.
    trace: Option<RunTrace>,
    /// The client's name for the message the run answers, reported delivered at its start.
    answers_message: Option<String>,
    /// Sub-agents' runs under way, whose events stream into this run's.
    children: Children,
    /// How far the host has stored this run's events, when it stores them: children hear it
    /// (see `subagent`).
    stored: Option<watch::Receiver<u64>>,
    /// How the run of the agent the conversation was handed to ended: this run ends so.
    handed_off: Option<(RunStatus, Option<ErrorInfo>)>,
    /// `update_state` calls applied to the shared state as they stream.
    state_calls: StateCalls,
}

/// Why a run ends without its answer.
#[derive(Debug)]
enum Halt {
    /// The client canceled it.
    Canceled,
    /// The agent the conversation was handed to ended its run so (not completed).
    HandedOff(RunStatus, Option<ErrorInfo>),
    /// It used up `max_duration`.
    OutOfTime,
    /// It made `max_steps` model calls.
    MaxSteps,
    /// The model's answer was cut off at its token limit.
    Truncated,
    /// The provider stopped the model's output for its policies (a content filter, a refusal).
    Filtered,
    /// The host turned it away before it ran (its line for slots was full).
    Rejected(ErrorInfo),
    /// The model failed, or the agent broke its schema.
    Failed(ErrorInfo),
}

/// How the steps of one message end.
enum MessageEnd {
    /// A step without tool calls: the answer.
    Answer,
    /// A step whose tools ran, with text the schema takes as a message that leaves the agent
    /// the word (a long-running agent's report of its progress): the message ends there, and
    /// the next step begins the next one.
    Report,
    /// A step whose tools ran, with steers waiting: the message ends there so that they
    /// follow it (see `steer`).
    Steer,
    /// Some calls wait for the client.
    Wait(Wait),
    /// The run stops.
    Halt(Halt),
}

impl Orchestrator {
    pub(crate) fn new(
        shared: Arc<Shared>,
        queue: Arc<EventQueue>,
        client_tools: Vec<ToolSpec>,
        limits: RunLimits,
        settings: GenerationSettings,
        telemetry: Option<Telemetry>,
    ) -> Self {
        let agent = &shared.agent.inner;
        let max_duration = limits.working_time(agent.max_duration);
        let tools = match client_tools.is_empty() {
            true => Arc::clone(&agent.tool_specs),
            false => agent
                .tool_specs
                .iter()
                .chain(&client_tools)
                .cloned()
                .collect(),
        };
        let stored = shared.stored.as_ref().map(watch::Sender::subscribe);
        let mut tool_limits = agent.toolbox.limits();
        if let Some(ceiling) = limits.max_tool_output_bytes {
            tool_limits.max_output_bytes = tool_limits.max_output_bytes.min(ceiling);
        }
        Self {
            shared,
            queue,
            out: Emitter::default(),
            tools,
            client_tools: client_tools.len(),
            settings,
            steps: 0,
            usage: None,
            message_usage: None,
            timeline: Vec::new(),
            budget: max_duration,
            deadline: None,
            max_duration,
            tool_limits,
            slots: None,
            slot: None,
            telemetry,
            trace: None,
            answers_message: None,
            children: Children::default(),
            stored,
            handed_off: None,
            state_calls: StateCalls::default(),
        }
    }

    /// Has the run report the client's message `id` delivered at its start (its input came
    /// from the session's inbox).
    pub(crate) fn answering(mut self, id: Option<String>) -> Self {
        self.answers_message = id;
        self
    }

    /// The sub-agents' runs a resumed run waits on, taken up with it.
    pub(crate) fn with_children(mut self, children: Vec<Child>) -> Self {
        self.children.live = children;
        self
    }

    /// Makes the run wait for one of `slots` whenever it starts working.
    pub(crate) fn with_slots(mut self, slots: Option<RunSlots>) -> Self {
        self.slots = slots;
        self
    }

    /// Runs the run to its end.
    pub(crate) async fn run(mut self) {
        let shared = Arc::clone(&self.shared);
        self.out.emit(EventKind::RunCreated {
            run_id: shared.run_id.clone(),
            session_id: shared.session_id.clone(),
            agent: Some(shared.agent.inner.name.clone()),
            parent_run_id: shared.parent.as_ref().map(|parent| parent.run_id.clone()),
            parent_tool_call_id: shared
                .parent
                .as_ref()
                .map(|parent| parent.tool_call_id.clone()),
        });
        if let Some(id) = self.answers_message.take() {
            self.out.emit(EventKind::Input(InputOutcome::new(
                id,
                Outcome::Delivered { step: 0 },
            )));
        }
        // Every reader of the stream starts from the session's shared state.
        let state = &shared.shared_state;
        if shared.parent.is_none() && !state.read(serde_json::Value::is_null) {
            state.announce();
        }
        self.open_trace();
        if let Err(halt) = self.admit(false).await {
            self.end(Some(halt));
            return;
        }
        self.resume_clock();
        self.set_status(RunStatus::InProgress, None);
        let halt = self.turns(Resolution::default()).await;
        self.end(halt);
    }

    /// Takes a slot to work in, if the host limits working runs: at once when one is free,
    /// else after `queued` in line, first come first served. A new run (`answered` false) that
    /// finds the line full is rejected; a run answered after a wait always lines up. Canceled
    /// meanwhile, it stops without working.
    async fn admit(&mut self, answered: bool) -> Result<(), Halt> {
        let Some(slots) = self.slots.clone() else {
            return Ok(());
        };
        if let Some(slot) = slots.try_take() {
            self.slot = Some(slot);
            return Ok(());
        }
        let Some(in_line) = slots.line_up(answered) else {
            return Err(Halt::Rejected(slots.full()));
        };
        self.set_status(RunStatus::Queued, None);
        tokio::select! {
            () = self.shared.cancel.cancelled() => Err(Halt::Canceled),
            slot = in_line.take() => {
                self.slot = Some(slot);
                Ok(())
            }
        }
    }

    /// The orchestrator of a checkpointed run: how far it had gone, its events numbered from
    /// `next_seq`.
    pub(crate) fn resuming(mut self, parked: &Parked, next_seq: u64) -> Self {
        self.out = Emitter::starting_at(next_seq);
        self.steps = parked.steps;
        self.usage = parked.usage;
        self.budget = parked.budget_ms.map(Duration::from_millis);
        self
    }

    /// Runs a checkpointed run to its end, from its wait (`reported`: the status it was
    /// last seen in, which is not reported again).
    pub(crate) async fn resume(mut self, reported: Option<Awaiting>) {
        self.open_trace();
        let halt = match self.answers(reported.map(RunStatus::Awaiting)).await {
            Ok(_) if self.handed_off.is_some() => self.handoff_ended(),
            Ok(opening) => self.turns(opening).await,
            Err(halt) => Some(halt),
        };
        self.end(halt);
    }

    /// Messages until the answer, or until the run stops; waits for the client between them.
    async fn turns(&mut self, mut opening: Resolution) -> Option<Halt> {
        loop {
            if self.shared.cancel.is_cancelled() {
                // Canceled before it began, or as it resumed: no message to write.
                if !opening.parts.is_empty() || !opening.approved.is_empty() {
                    self.close_resolution(opening, Halt::Canceled.why());
                }
                return Some(Halt::Canceled);
            }
            // Boxed: writing a message (a model streaming, tools running) takes far more room
            // than waiting does, and a run spends most of its life waiting; in place, every
            // waiting run would hold that room.
            match Box::pin(self.message(opening)).await {
                // Steers that came during the answer are answered too.
                MessageEnd::Answer => match self.take_steers(true) {
                    true => opening = Resolution::default(),
                    false => return None,
                },
                MessageEnd::Report | MessageEnd::Steer => {
                    self.take_steers(false);
                    opening = Resolution::default();
                }
                MessageEnd::Halt(halt) => return Some(halt),
                MessageEnd::Wait(wait) => match self.wait(wait).await {
                    Ok(_) if self.handed_off.is_some() => return self.handoff_ended(),
                    Ok(resolution) => opening = resolution,
                    Err(halt) => return Some(halt),
                },
            }
        }
    }

    /// How the run ends now that the agent the conversation was handed to has answered for
    /// it: as that agent's run ended.
    fn handoff_ended(&mut self) -> Option<Halt> {
        match self.handed_off.take() {
            Some((RunStatus::Completed, _)) | None => None,
            Some((RunStatus::Canceled, _)) => Some(Halt::Canceled),
            Some((status, error)) => Some(Halt::HandedOff(status, error)),
        }
    }

    /// Reports the run's end.
    fn end(mut self, halt: Option<Halt>) {
        let (status, error) = match halt {
            None => (RunStatus::Completed, None),
            Some(halt) => self.ending(halt),
        };
        // Steers not taken yet will not be: the client hears so before the end.
        self.shared.lock().inbox.close(status.name());
        self.shared.noted.store(true, Ordering::Release);
        if let Some(trace) = self.trace.take() {
            trace.end(self.usage, error.as_ref(), status == RunStatus::Canceled);
        }
        self.set_status(status, error);
        self.queue.close();
    }

    /// Opens the run's `invoke_agent` span, when the run has telemetry.
    fn open_trace(&mut self) {
        let Some(telemetry) = &self.telemetry else {
            return;
        };
        let shared = &self.shared;
        let config = &shared.agent.inner;
        let model = config.brain.as_ref().map(|brain| {
            let model = self.settings.model.as_deref().or(brain.model());
            (brain.provider_name(), model)
        });
        self.trace = Some(telemetry.start_run(
            &config.name,
            &shared.run_id,
            shared.session_id.as_ref(),
            model,
        ));
    }

    /// Writes one assistant message: the answers it opens with, the approved calls' results,
    /// then steps until an answer, a wait or a halt. The message is complete when this returns.
    async fn message(&mut self, opening: Resolution) -> MessageEnd {
        let mut builder = self.start_message();
        for part in opening.parts {
            builder.part(&mut self.out, part);
        }
        self.flush();
        let end = match self.run_tools(&mut builder, &opening.approved).await {
            Ok(()) => self.steps(&mut builder).await,
            Err(halt) => MessageEnd::Halt(halt),
        };
        if let MessageEnd::Halt(halt) = &end {
            // What calls that streamed into the shared state did stays: they are answered so.
            self.state_calls.answer_all(&mut builder, &mut self.out);
            answer_unanswered(&mut builder, &mut self.out, halt.why());
        }
        let message = self.complete_message(builder);
        match end {
            MessageEnd::Answer | MessageEnd::Report => {
                let refused = self
                    .shared
                    .lock()
                    .machine
                    .accept(&schema::agent_message(&message))
                    .err();
                match refused {
                    Some(refusal) => MessageEnd::Halt(Halt::Failed(schema_violation(&refusal))),
                    None => end,
                }
            }
            end => end,
        }
    }

    /// Model calls, each followed by its tool calls, until one of them ends the message.
    async fn steps(&mut self, builder: &mut MessageBuilder) -> MessageEnd {
        let config = Arc::clone(&self.shared.agent.inner);
        loop {
            if self.steps >= config.max_steps {
                return MessageEnd::Halt(Halt::MaxSteps);
            }
            if self.shared.cancel.is_cancelled() {
                return MessageEnd::Halt(Halt::Canceled);
            }
            builder.part(
                &mut self.out,
                Part::StepStart(StepStart {
                    step_id: config.ids.next_id(IdKind::Step).into(),
                    step_name: None,
                }),
            );
            let step_from = builder.message().parts.len();
            let reason = match self.stream_step(builder).await {
                Ok(reason) => reason,
                Err(halt) => return MessageEnd::Halt(halt),
            };
            // What a policy stopped is not acted on: calls it cut short do not run.
            if reason == FinishReason::ContentFilter {
                return MessageEnd::Halt(Halt::Filtered);
            }
            let mut calls: Vec<ToolCall> = builder.message().parts[step_from..]
                .iter()
                .filter_map(|part| match part {
                    Part::ToolCall(call) => Some(call.clone()),
                    _ => None,
                })
                .collect();
            // The `update_state` calls that streamed are answered already.
            let made_calls = !calls.is_empty();
            self.state_calls.answer(&mut calls, builder, &mut self.out);
            if calls.is_empty() && !made_calls {
                return match reason {
                    FinishReason::Length => MessageEnd::Halt(Halt::Truncated),
                    _ => MessageEnd::Answer,
                };
            }

            let mut wait = Wait::default();
            let mut server_calls = Vec::with_capacity(calls.len());
            let mut subagent_calls = Vec::new();
            let mut handoff_call = None;
            for call in calls {
                // A call that cannot run is not put to a person: it runs now and comes back to
                // the model as a validation error.
                if call.tool_name == AskUser::NAME
                    && config.toolbox.contains(AskUser::NAME)
                    && config.toolbox.check(&call).is_ok()
                {
                    wait.question(call);
                } else if config.approval.contains(&call.tool_name)
                    && config.toolbox.check(&call).is_ok()
                {
                    let approval_id: ApprovalId = config.ids.next_id(IdKind::Approval).into();
                    builder.part(
                        &mut self.out,
                        Part::ApprovalRequest(ApprovalRequest {
                            approval_id: approval_id.clone(),
                            tool_call_id: call.tool_call_id.clone(),
                            reason: Some(format!(
                                "'{}' needs a person's approval before it runs",
                                call.tool_name
                            )),
                        }),
                    );
                    wait.approval(call, approval_id);
                } else if self.is_client_tool(&call.tool_name) {
                    wait.client_call(call);
                } else if let Some(agent) = self.shared.agent.subagent(&call.tool_name)
                    && config.toolbox.check(&call).is_ok()
                {
                    subagent_calls.push((call, agent.clone()));
                } else if handoff::target(&call.tool_name)
                    .is_some_and(|target| config.handoffs.iter().any(|name| name == target))
                    && config.toolbox.check(&call).is_ok()
                {
                    match handoff_call {
                        None => handoff_call = Some(call),
                        Some(_) => builder.part(
                            &mut self.out,
                            subagent::refused(
                                &call,
                                "the conversation goes to one agent: only the first handoff of \
                                 a step is made"
                                    .to_owned(),
                            ),
                        ),
                    }
                } else {
                    server_calls.push(call);
                }
            }
            self.flush();
            for (call, agent) in subagent_calls {
                self.start_child(builder, call, &agent);
            }
            if let Err(halt) = self.run_tools(builder, &server_calls).await {
                return MessageEnd::Halt(halt);
            }
            // Children still under way wait for the client (`run_tools` returns only then).
            for child in &self.children.live {
                wait.child(child.call.clone());
            }
            if let Some(call) = handoff_call {
                match wait.is_empty() {
                    true => {
                        if self.hand_off(builder, &call) {
                            wait.child(call);
                            return MessageEnd::Wait(wait);
                        }
                    }
                    false => builder.part(
                        &mut self.out,
                        subagent::refused(
                            &call,
                            "the conversation cannot be handed off while this step waits for \
                             the user; answer first"
                                .to_owned(),
                        ),
                    ),
                }
            }
            if !wait.is_empty() {
                return MessageEnd::Wait(wait);
            }
            if self.reports(builder.message()) {
                return MessageEnd::Report;
            }
            if !self.shared.lock().inbox.steers.is_empty() {
                return MessageEnd::Steer;
            }
        }
    }

    /// Takes the steers the run holds, at a step boundary with no message open: each the
    /// schema accepts now joins the conversation as a user message, reported `delivered` at
    /// this step; one it refuses is reported `not_delivered` (`refused`). `closing`: the run
    /// has answered, and ends unless one is delivered; then it takes no more (decided under
    /// the lock steers take, so none is lost between). Whether one was delivered.
    fn take_steers(&mut self, closing: bool) -> bool {
        let mut state = self.shared.lock();
        if state.inbox.steers.is_empty() {
            if closing {
                state.inbox.open = false;
            }
            return false;
        }
        let steers = std::mem::take(&mut state.inbox.steers);
        let mut delivered = false;
        for steer in steers {
            let accepted = schema::incoming(&steer.message)
                .question
                .map(|question| state.machine.accept(&question));
            let outcome = match accepted {
                Some(Ok(_)) => Outcome::Delivered { step: self.steps },
                _ => Outcome::NotDelivered {
                    reason: "refused".to_owned(),
                },
            };
            let take = matches!(outcome, Outcome::Delivered { .. });
            self.out.emit(EventKind::Input(InputOutcome::new(
                steer.client_message_id,
                outcome,
            )));
            if take {
                let message = self.shared.agent.stamp(steer.message);
                state.messages.push(message.clone());
                self.out.emit(EventKind::MessageComplete { message });
                delivered = true;
            }
        }
        drop(state);
        self.flush();
        delivered
    }

    /// Whether `message`, as it stands after a step whose tools ran, is a report: its agent's
    /// schema takes it as a message after which the agent keeps the word (as a long-running
    /// agent's does), so the client sees each step's text as a message of its own. Under
    /// schemas where a message hands the word to the client it never is: the steps of one
    /// answer stay one message.
    fn reports(&self, message: &Message) -> bool {
        let state = self.shared.lock();
        let machine = &state.machine;
        machine
            .check(&schema::agent_message(message))
            .is_ok_and(|transition| &transition.next_state == machine.state())
    }

    /// One model call, streamed into the message. Returns why the model stopped.
    async fn stream_step(&mut self, builder: &mut MessageBuilder) -> Result<FinishReason, Halt> {
        let mut request = self.request(builder);
        let step = self.steps;
        self.steps += 1;
        let Some(brain) = self.shared.agent.inner.brain.clone() else {
            return Err(Halt::Failed(provider_error("the agent has no brain")));
        };
        let mut chat = self.trace.as_ref().map(|trace| {
            let model = self.settings.model.as_deref().or(brain.model());
            trace.chat(brain.provider_name(), model, &request)
        });
        // The provider continues the `chat` span's trace.
        if let Some(chat) = &chat {
            request.trace_context = chat.trace_context();
        }
        let output_from = builder.message().parts.len();
        let model = self
            .settings
            .model
            .clone()
            .or_else(|| brain.model().map(str::to_owned));
        let clock = Arc::clone(&self.shared.agent.inner.clock);
        let started = clock.now();
        let mut first_token = None;
        let mut stream = brain.stream(request);
        let cancel = self.shared.cancel.clone();
        let stop = stop_signal(cancel.clone(), self.deadline);
        tokio::pin!(stop);
        // Calls started and not yet ended: a model may finish or fail without ending them.
        let mut open_calls: Vec<String> = Vec::new();
        let mut finished_usage = None;
        let outcome = loop {
            // The flag is checked on every event: an unpaced stream may never be pending, so
            // the stop signal below would never be polled.
            if cancel.is_cancelled() {
                break Err(Halt::Canceled);
            }
            let next = tokio::select! {
                biased;
                next = stream.next() => next,
                halt = &mut stop => break Err(halt),
            };
            if first_token.is_none() {
                first_token = Some(clock.now());
                if let Some(chat) = &mut chat {
                    chat.first_chunk();
                }
            }
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(error)) => break Err(Halt::Failed(provider_error(error.to_string()))),
                None => {
                    break Err(Halt::Failed(provider_error(
                        "the model's stream ended without a finish",
                    )));
                }
            };
            // An `update_state` call streams into the shared state as its arguments arrive.
            let ending = self.state_calls.observe(&self.shared, &event);
            let built = match event {
                BrainEvent::ResponseStart { id, model } => {
                    if let Some(chat) = &chat {
                        chat.response(id.as_deref(), model.as_deref());
                    }
                    Ok(())
                }
                BrainEvent::TextDelta { text } => {
                    builder.text_delta(&mut self.out, text);
                    Ok(())
                }
                BrainEvent::ReasoningDelta { text } => {
                    builder.reasoning_delta(&mut self.out, text);
                    Ok(())
                }
                BrainEvent::RefusalDelta { text } => {
                    builder.refusal_delta(&mut self.out, text);
                    Ok(())
                }
                BrainEvent::ToolCallStart { id, name } => builder
                    .tool_call_start(&mut self.out, id.as_str(), name)
                    .map(|()| open_calls.push(id))
                    .map_err(|error| error.to_string()),
                BrainEvent::ToolCallDelta { id, args } => builder
                    .tool_call_delta(&mut self.out, &id, &args)
                    .map_err(|error| error.to_string()),
                BrainEvent::ToolCallEnd { id } => builder
                    .tool_call_end(&mut self.out, &id)
                    .map(|()| open_calls.retain(|open| *open != id))
                    .map_err(|error| error.to_string()),
                // Provider data (a thinking signature the history needs back, a server tool's
                // block, stop details) is kept as a whole part where it came.
                BrainEvent::Data { name, data } => {
                    builder.part(&mut self.out, Part::Data(DataPart { name, data }));
                    Ok(())
                }
                BrainEvent::Source { url, title } => {
                    self.source(builder, url, title);
                    Ok(())
                }
                BrainEvent::File(file) => {
                    builder.part(&mut self.out, Part::File(file));
                    Ok(())
                }
                BrainEvent::Finish { reason, usage } => {
                    finished_usage = usage;
                    if let Some(usage) = usage {
                        *self.usage.get_or_insert_default() += usage;
                        *self.message_usage.get_or_insert_default() += usage;
                    }
                    break Ok(reason);
                }
                BrainEvent::Error { message } => break Err(Halt::Failed(provider_error(message))),
            };
            if let Err(error) = built {
                break Err(Halt::Failed(provider_error(format!(
                    "the model's stream is inconsistent: {error}"
                ))));
            }
            if let Some(id) = ending {
                self.state_calls.end(&self.shared, builder, &id);
            }
            self.flush();
        };
        // Dropping the stream stops the model call at once.
        drop(stream);
        for id in open_calls {
            // Each id is open in the builder, so ending it cannot fail.
            let _ = builder.tool_call_end(&mut self.out, &id);
            if outcome.is_ok() {
                self.state_calls.end(&self.shared, builder, &id);
            }
        }
        self.state_calls.abandon(&self.shared.shared_state);
        self.flush();
        let finish_reason = match &outcome {
            Ok(reason) => crate::telemetry::finish_reason(reason).to_owned(),
            Err(halt) => halt.code().to_owned(),
        };
        self.timeline.push(TimelineEntry::chat(
            model.as_deref(),
            step,
            (started, first_token, clock.now()),
            finished_usage,
            finish_reason,
        ));
        if let Some(chat) = chat {
            let output = &builder.message().parts[output_from..];
            match &outcome {
                Ok(reason) => chat.end(ChatEnd::Finished(reason, finished_usage), output),
                Err(halt) => chat.end(ChatEnd::Failed(halt.code()), output),
            }
        }
        outcome
    }

    /// Runs the agent's tool calls concurrently, beside the sub-agents' runs under way; each
    /// answer joins the message as it comes, and the children's events stream meanwhile.
    /// Returns once every call is answered and every child has ended or waits for the client
    /// (those stay in `children`). If the run stops meanwhile, the calls still running and
    /// the children are stopped and answered as such.
    async fn run_tools(
        &mut self,
        builder: &mut MessageBuilder,
        calls: &[ToolCall],
    ) -> Result<(), Halt> {
        if calls.is_empty() && self.children.is_empty() {
            return Ok(());
        }
        let agent = Arc::clone(&self.shared.agent.inner);
        let cancel = self.shared.cancel.clone();
        let run_id = self.shared.run_id.clone();
        let run_id = &run_id;
        let step = self.steps.saturating_sub(1);
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .enumerate()
            .map(|(idx, call)| {
                let (toolbox, cancel) = (&agent.toolbox, cancel.child_token());
                let limits = self.tool_limits;
                let state = Some(self.shared.shared_state.clone());
                let trace = self.trace.as_ref().map(|trace| {
                    let kind = agent.tool_kinds.get(&call.tool_name);
                    trace.tool(call, kind.unwrap_or(&agentwire_core::ToolKind::Function))
                });
                let trace_context = trace
                    .as_ref()
                    .map(ToolTrace::trace_context)
                    .unwrap_or_default();
                let clock = Arc::clone(&agent.clock);
                async move {
                    let started = clock.now();
                    let part = toolbox
                        .run_within(call, Some(run_id), trace_context, cancel, limits, state)
                        .await;
                    if let Some(trace) = trace {
                        trace.end(&part);
                    }
                    (idx, part, (started, clock.now()))
                }
            })
            .collect();
        let mut answered = vec![false; calls.len()];
        let stop = stop_signal(cancel.clone(), self.deadline);
        tokio::pin!(stop);
        let halt = loop {
            let children_blocked = self.children.is_empty() || self.children_waiting();
            if running.is_empty() && children_blocked {
                return Ok(());
            }
            tokio::select! {
                biased;
                halt = &mut stop => break halt,
                answer = running.next(), if !running.is_empty() => {
                    let Some((idx, part, (start, end))) = answer else { continue };
                    answered[idx] = true;
                    let call = &calls[idx];
                    self.timeline.push(TimelineEntry::ExecuteTool {
                        name: format!("execute_tool {}", call.tool_name),
                        step,
                        tool: call.tool_name.clone(),
                        call_id: call.tool_call_id.as_str().to_owned(),
                        start,
                        end,
                        error: match &part {
                            Part::ToolError(_) => true,
                            Part::ToolResult(result) => result.is_error == Some(true),
                            _ => false,
                        },
                    });
                    let made = agent.toolbox.result_part(&calls[idx], &part);
                    builder.part(&mut self.out, part);
                    if let Some(made) = made {
                        let made = self.continue_plan(builder, made);
                        builder.part(&mut self.out, made);
                    }
                    self.flush();
                }
                (idx, forwarded) = self.children.next() => {
                    if let Some(part) = self.forward(idx, forwarded) {
                        builder.part(&mut self.out, part);
                        self.flush();
                    }
                }
                Some(through) = stored_advanced(&mut self.stored), if self.children_await_storing() => {
                    self.children_stored_through(through);
                }
            }
        };
        // Dropping the futures stops every call still in progress at once.
        drop(running);
        for (call, _) in calls.iter().zip(answered).filter(|(_, answered)| !answered) {
            builder.part(&mut self.out, not_run(call, halt.why()));
        }
        for part in self.stop_children().await {
            builder.part(&mut self.out, part);
        }
        self.flush();
        Err(halt)
    }

    /// Hands the conversation to the agent `call` names: answers the call, and starts that
    /// agent's run on the whole conversation, as a child whose messages are this run's (see
    /// `handoff`). False, with the call answered by an error the model reads, when it cannot.
    fn hand_off(&mut self, builder: &mut MessageBuilder, call: &ToolCall) -> bool {
        let shared = Arc::clone(&self.shared);
        let target = handoff::target(&call.tool_name).unwrap_or_default();
        let Some(agent) = shared
            .agents
            .as_ref()
            .and_then(|agents| agents.get(target))
            .cloned()
        else {
            let message = format!("there is no agent '{target}' to hand the conversation to");
            builder.part(&mut self.out, subagent::refused(call, message));
            self.flush();
            return false;
        };
        builder.part(
            &mut self.out,
            Part::ToolResult(agentwire_core::ToolResult {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: Some(call.tool_name.clone()),
                result: serde_json::json!({ "assistant": agent.name() }),
                is_error: None,
            }),
        );
        self.flush();
        // The agent is given the conversation as it stands, this message included.
        let mut history = shared.lock().messages.clone();
        history.push(builder.message().clone());
        let history_len = history.len();
        let mut start = RunStart::new(Vec::new())
            .with_history(history)
            .with_client_tools(self.child_client_tools(&agent))
            .with_limits(RunLimits {
                max_duration: None,
                max_tool_output_bytes: Some(self.tool_limits.max_output_bytes),
                // A sub-agent's run shares its parent's state, and its bounds.
                max_state_bytes: None,
            });
        start.session_id = shared.session_id.clone();
        start.stored = shared.stored.is_some();
        start.agents = shared.agents.clone();
        let placement = Placement {
            parent: Some(Parent {
                run_id: shared.run_id.clone(),
                tool_call_id: call.tool_call_id.clone(),
                state: shared.shared_state.clone(),
            }),
            depth: shared.depth,
            depth_limit: shared.depth_limit,
            handoff: true,
        };
        match agent.start_under(start, placement) {
            Ok(run) => {
                let mut state = shared.lock();
                state.children.push(ChildHandle {
                    tool_call_id: call.tool_call_id.clone(),
                    handle: run.handle.clone(),
                    reported: RunStatus::Created,
                    handoff_at: Some(history_len),
                });
                state.handoff = Some(run.handle.clone());
                drop(state);
                let child =
                    Child::new(call.clone(), run.handle, run.events, None).handing_off(history_len);
                self.children.live.push(child);
                true
            }
            Err(error) => {
                // The call was answered as made; say what became of it.
                let message = format!(
                    "the agent '{}' could not take the conversation: {error}",
                    agent.name()
                );
                builder.part(
                    &mut self.out,
                    Part::Data(DataPart {
                        name: "agentwire.handoff_failed".to_owned(),
                        data: serde_json::json!({ "agent": agent.name(), "message": message }),
                    }),
                );
                self.flush();
                false
            }
        }
    }

    /// The client's tools a child run is given: those its schema lets it call and its own
    /// tools do not shadow.
    fn child_client_tools(&self, agent: &Agent) -> Vec<ToolSpec> {
        match schema::allows_anywhere(
            agent.schema(),
            agentwire_core::communication::Party::Server,
            agentwire_core::communication::MessageKind::FUNCTION_CALL,
        ) {
            true => self.tools[self.tools.len() - self.client_tools..]
                .iter()
                .filter(|tool| !agent.tools().iter().any(|own| own.name == tool.name))
                .cloned()
                .collect(),
            false => Vec::new(),
        }
    }

    /// Starts the run of the sub-agent `agent` that `call` asks for, as a child of this run;
    /// a call that cannot start one (too deep, or the child refuses its input) is answered
    /// with the error at once.
    fn start_child(&mut self, builder: &mut MessageBuilder, call: ToolCall, agent: &Agent) {
        let shared = &self.shared;
        let depth = shared.depth + 1;
        if depth > shared.depth_limit {
            let message = format!(
                "the agent '{}' cannot be called here: sub-agents' runs may nest only {} deep \
                 (max_depth), and this run is at that depth",
                agent.name(),
                shared.depth_limit
            );
            builder.part(&mut self.out, subagent::refused(&call, message));
            self.flush();
            return;
        }
        // The child runs the client's tools too (where its schema and tools let it), so a
        // client tool it calls is answered by the client of the top run.
        let client_tools = self.child_client_tools(agent);
        let trace = self
            .trace
            .as_ref()
            .map(|trace| trace.tool(&call, &agentwire_core::ToolKind::Function));
        let telemetry = match (&self.telemetry, &trace) {
            (Some(telemetry), Some(trace)) => trace.context().map(|cx| telemetry.child_of(cx)),
            _ => None,
        };
        let mut start = RunStart::new(vec![Message::user(subagent::input_of(&call))])
            .with_client_tools(client_tools)
            .with_limits(RunLimits {
                max_duration: None,
                max_tool_output_bytes: Some(self.tool_limits.max_output_bytes),
                // A sub-agent's run shares its parent's state, and its bounds.
                max_state_bytes: None,
            });
        start.session_id = shared.session_id.clone();
        start.telemetry = telemetry;
        // A child runs what a person allowed once its parent's host has stored that it went on.
        start.stored = shared.stored.is_some();
        start.agents = shared.agents.clone();
        let placement = Placement {
            parent: Some(Parent {
                run_id: shared.run_id.clone(),
                tool_call_id: call.tool_call_id.clone(),
                state: shared.shared_state.clone(),
            }),
            depth,
            depth_limit: shared.depth_limit,
            handoff: false,
        };
        match agent.start_under(start, placement) {
            Ok(run) => {
                shared.lock().children.push(ChildHandle {
                    tool_call_id: call.tool_call_id.clone(),
                    handle: run.handle.clone(),
                    reported: RunStatus::Created,
                    handoff_at: None,
                });
                self.children
                    .live
                    .push(Child::new(call, run.handle, run.events, trace));
            }
            Err(error) => {
                let part = subagent::refused(
                    &call,
                    format!("the agent '{}' could not start: {error}", agent.name()),
                );
                if let Some(trace) = trace {
                    trace.end(&part);
                }
                builder.part(&mut self.out, part);
                self.flush();
            }
        }
    }

    /// Streams a child's event into this run's, or, when its stream is over, takes it out of
    /// the children and returns the part that answers its call (its tokens join this run's).
    fn forward(&mut self, idx: usize, forwarded: Forwarded) -> Option<Part> {
        match forwarded {
            Forwarded::Event(namespace, kind, child_seq) => {
                let status = match (namespace.depth(), &kind) {
                    (1, EventKind::RunStatus { status, .. }) => Some(*status),
                    _ => None,
                };
                // A handoff's messages are this run's: they join its conversation.
                let namespace_is_root = namespace.is_root();
                let kind_for_handoff = match (&kind, namespace_is_root) {
                    (EventKind::MessageComplete { .. }, true) => kind.clone(),
                    _ => EventKind::Heartbeat {},
                };
                let seq = self.out.emit_in(namespace, kind);
                let child = &mut self.children.live[idx];
                if let Some(stored) = &self.stored {
                    child.streamed_at(seq, child_seq);
                    // The host may have stored ahead already (it is told seqs it will reach).
                    let through = *stored.borrow();
                    child.stored_through(through);
                }
                if child.handoff.is_some()
                    && namespace_is_root
                    && let EventKind::MessageComplete { message } = &kind_for_handoff
                {
                    self.shared.lock().messages.push(message.clone());
                }
                if let Some(status) = status {
                    let mut state = self.shared.lock();
                    if let Some(handle) = state
                        .children
                        .iter_mut()
                        .find(|handle| handle.tool_call_id == child.call.tool_call_id)
                    {
                        handle.reported = status;
                    }
                }
                self.flush();
                None
            }
            Forwarded::Ended(part, usage) => {
                let child = self.children.live.remove(idx);
                if let Some(usage) = usage {
                    *self.usage.get_or_insert_default() += usage;
                }
                if child.handoff.is_some() {
                    self.handed_off = Some((child.handle.status(), child.handle.error()));
                }
                self.shared
                    .lock()
                    .children
                    .retain(|other| other.tool_call_id != child.call.tool_call_id);
                Some(part)
            }
        }
    }

    /// Whether a child waits to hear that events of its are stored.
    fn children_await_storing(&self) -> bool {
        self.children.live.iter().any(Child::awaits_storing)
    }

    /// The host has stored this run's events through `seq`: each child hears what of its own
    /// that covers.
    fn children_stored_through(&mut self, seq: u64) {
        for child in &mut self.children.live {
            child.stored_through(seq);
        }
    }

    /// Whether every child under way waits for the client, as this run has streamed them.
    fn children_waiting(&self) -> bool {
        subagent::all_waiting(&self.shared.lock().children).is_some()
    }

    /// Stops the children under way (as this run stops: interrupted with its reason, else
    /// aborted), streams what they emit as they end, and returns the parts that answer their
    /// calls.
    async fn stop_children(&mut self) -> Vec<Part> {
        let interrupted = self.shared.lock().interrupted.clone();
        for child in &self.children.live {
            match &interrupted {
                Some(error) => child.handle.interrupt(error.clone()),
                None => child.handle.abort(),
            }
        }
        let mut parts = Vec::new();
        while !self.children.is_empty() {
            let (idx, forwarded) = self.children.next().await;
            parts.extend(self.forward(idx, forwarded));
        }
        parts
    }

    /// Adds a source the model cited, unless the message has one with its URL already.
    fn source(&mut self, builder: &mut MessageBuilder, url: String, title: Option<String>) {
        let cited = builder
            .message()
            .parts
            .iter()
            .any(|part| matches!(part, Part::Source(source) if source.url == url));
        if !cited {
            let source_id = self.shared.agent.inner.ids.next_id(IdKind::Source);
            builder.part(
                &mut self.out,
                Part::Source(Source {
                    source_id: source_id.into(),
                    url,
                    title,
                }),
            );
        }
    }

    /// One plan per conversation: a plan update made while the conversation has a plan (in
    /// its history, its earlier messages or this one) continues that plan, under its id, as
    /// `updated` rather than `created`. Any other part passes as it is.
    fn continue_plan(&self, builder: &MessageBuilder, part: Part) -> Part {
        let Part::PlanUpdate(mut update) = part else {
            return part;
        };
        let plan_of = |message: &Message| {
            message.parts.iter().rev().find_map(|part| match part {
                Part::PlanUpdate(earlier) => Some(earlier.plan_id.clone()),
                _ => None,
            })
        };
        let earlier = plan_of(builder.message())
            .or_else(|| self.shared.lock().messages.iter().rev().find_map(plan_of));
        if let Some(plan_id) = earlier {
            update.plan_id = plan_id;
            if update.action == PlanAction::Created {
                update.action = PlanAction::Updated;
            }
        }
        Part::PlanUpdate(update)
    }

    /// Pauses the run until the client has answered everything `wait` asks, and returns what
    /// the next message opens with. Time spent here does not count against `max_duration`.
    async fn wait(&mut self, wait: Wait) -> Result<Resolution, Halt> {
        // What the run asks the client itself; a wait on sub-agents alone asks nothing of
        // this run's schema (each child's schema governs what it asks).
        let utterance = if wait.n_approvals() > 0 {
            Some(schema::approval_request(wait.n_approvals()))
        } else if wait.client_calls().next().is_some() {
            Some(schema::function_call(wait.client_calls()))
        } else if wait.n_questions() > 0 {
            Some(schema::input_request(wait.n_questions()))
        } else {
            None
        };
        self.pause_clock();
        // A run waiting for its client does no work: its slot goes to the next in line.
        self.slot = None;
        let parked = Parked::new(
            &self.tools[self.tools.len() - self.client_tools..],
            &self.settings,
            self.steps,
            self.usage,
            self.budget,
            self.max_duration,
            self.tool_limits.max_output_bytes,
        )
        .with_max_state_bytes(self.shared.shared_state.bounds().max_bytes);
        let refused = {
            let mut state = self.shared.lock();
            // The client's answer comes first now: a steer held would be out of place.
            if !state.inbox.steers.is_empty() {
                state.inbox.refuse_held("awaiting_client");
                self.shared.noted.store(true, Ordering::Release);
            }
            let accepted = match &utterance {
                Some(utterance) => state.machine.accept(utterance).map(drop),
                None => Ok(()),
            };
            match accepted {
                Ok(()) => {
                    state.wait = Some(wait);
                    state.parked = Some(parked);
                    None
                }
                Err(refusal) => Some((refusal, wait)),
            }
        };
        if let Some((refusal, wait)) = refused {
            let halt = Halt::Failed(schema_violation(&refusal));
            let parts = self.stop_children().await;
            self.close_calls(wait, halt.why(), parts);
            return Err(halt);
        }
        self.answers(None).await
    }

    /// Waits for the answers to the run's wait, streaming its waiting children's events
    /// meanwhile; reports each change of what it waits for (`reported`: the status last
    /// reported; `in_progress` while an answered child works on).
    async fn answers(&mut self, mut reported: Option<RunStatus>) -> Result<Resolution, Halt> {
        loop {
            let (awaiting, children) = {
                let state = self.shared.lock();
                let children = state.wait.as_ref().is_some_and(Wait::waits_on_children);
                (state.awaiting(), children)
            };
            let now = match (awaiting, children) {
                (Some(awaiting), _) => RunStatus::Awaiting(awaiting),
                (None, true) => RunStatus::InProgress,
                (None, false) => break,
            };
            if reported != Some(now) {
                self.set_status(now, None);
                reported = Some(now);
                if matches!(now, RunStatus::Awaiting(_)) {
                    self.release_memory();
                }
            }
            tokio::select! {
                () = self.shared.cancel.cancelled() => {
                    let parts = self.stop_children().await;
                    let wait = self.shared.lock().wait.take().unwrap_or_default();
                    self.close_calls(wait, Halt::Canceled.why(), parts);
                    return Err(Halt::Canceled);
                }
                // An answer, or a note to report (`RunHandle::note`).
                () = self.shared.answered.notified() => self.flush(),
                (idx, forwarded) = self.children.next() => {
                    if let Some(part) = self.forward(idx, forwarded)
                        && let Some(wait) = self.shared.lock().wait.as_mut()
                    {
                        wait.child_ended(part);
                    }
                }
                Some(through) = stored_advanced(&mut self.stored), if self.children_await_storing() => {
                    self.children_stored_through(through);
                }
            }
        }
        let wait = {
            let mut state = self.shared.lock();
            state.parked = None;
            state.wait.take().unwrap_or_default()
        };
        if self.handed_off.is_some() {
            // The run ends as the agent the conversation went to ended: nothing more to do.
            return Ok(Resolution::default());
        }
        let resolution = wait.resolve("");
        if let Err(halt) = self.admit(true).await {
            self.close_resolution(resolution, halt.why());
            return Err(halt);
        }
        self.resume_clock();
        if reported != Some(RunStatus::InProgress) {
            self.set_status(RunStatus::InProgress, None);
        }
        if let Err(halt) = self.until_stored().await {
            self.close_resolution(resolution, halt.why());
            return Err(halt);
        }
        Ok(resolution)
    }

    /// Waits until the host has stored every event so far, if it stores them: what the run
    /// does next (the calls a person allowed) must not be done again by a copy of it taken up
    /// from its checkpoint, and the stored status says it has gone on.
    async fn until_stored(&mut self) -> Result<(), Halt> {
        let Some(stored) = &self.shared.stored else {
            return Ok(());
        };
        let seq = self.out.last_seq();
        let mut stored = stored.subscribe();
        tokio::select! {
            () = self.shared.cancel.cancelled() => Err(Halt::Canceled),
            // `shared` holds the sender, so waiting cannot fail.
            through = stored.wait_for(|through| *through >= seq) => match through {
                Ok(_) => Ok(()),
                Err(_) => Err(Halt::Canceled),
            },
        }
    }

    /// Answers a stopped wait's calls in a message of their own, so that none is left without
    /// an answer (`children`: the parts that answer the calls of its children, stopped).
    fn close_calls(&mut self, mut wait: Wait, why: &str, children: Vec<Part>) {
        for part in children {
            wait.child_ended(part);
        }
        self.close_resolution(wait.resolve(why), why);
    }

    /// Writes the answers of a resolved wait in a message of their own, approved calls being
    /// answered as not run.
    fn close_resolution(&mut self, resolution: Resolution, why: &str) {
        let Resolution {
            mut parts,
            approved,
        } = resolution;
        parts.extend(approved.iter().map(|call| not_run(call, why)));
        let mut builder = self.start_message();
        for part in parts {
            builder.part(&mut self.out, part);
        }
        self.complete_message(builder);
    }

    fn start_message(&mut self) -> MessageBuilder {
        let config = &self.shared.agent.inner;
        let mut start = MessageStart::new(config.ids.next_id(IdKind::Message), Role::Assistant);
        start.metadata.agent_name = Some(config.name.clone());
        start.created_at = Some(config.clock.now());
        self.message_usage = None;
        self.timeline.clear();
        MessageBuilder::start(&mut self.out, start)
    }

    /// Completes the message, keeps it in the run's conversation and returns it.
    fn complete_message(&mut self, mut builder: MessageBuilder) -> Message {
        builder.metadata_mut().usage = self.message_usage.take();
        if !self.timeline.is_empty() {
            let timeline = timeline::to_value(&std::mem::take(&mut self.timeline));
            builder
                .metadata_mut()
                .extra
                .insert(timeline::TIMELINE_KEY.to_owned(), timeline);
        }
        builder.finish(&mut self.out);
        let message = match self.out.queued().last() {
            Some(Event {
                kind: EventKind::MessageComplete { message },
                ..
            }) => message.clone(),
            // `finish` always ends with `message_complete`.
            _ => builder_message_missing(),
        };
        self.shared.lock().messages.push(message.clone());
        self.flush();
        message
    }

    /// The model call's input: the history, the input, the agent's messages, and the message
    /// being written (once it holds more than step markers).
    fn request(&self, builder: &MessageBuilder) -> BrainRequest {
        let config = &self.shared.agent.inner;
        let current = builder.message();
        let has_content = current
            .parts
            .iter()
            .any(|part| !matches!(part, Part::StepStart(_)));
        let messages = {
            let state = self.shared.lock();
            let mut messages = Vec::with_capacity(state.messages.len() + 1);
            messages.extend_from_slice(&state.messages);
            messages
        };
        let mut messages = messages;
        if has_content {
            messages.push(current.clone());
        }
        let system = match config.toolbox.contains(UpdateState::NAME) {
            true => state_calls::instructions(config.system.as_deref(), &self.shared.shared_state),
            false => config.system.clone(),
        };
        BrainRequest {
            system,
            messages,
            tools: Arc::clone(&self.tools),
            step: self.steps,
            settings: self.settings.clone(),
            trace_context: TraceContext::default(),
        }
    }

    fn is_client_tool(&self, name: &str) -> bool {
        self.tools[self.tools.len() - self.client_tools..]
            .iter()
            .any(|tool| tool.name == name)
    }

    /// Reports a status: the event first, then the status readers of the handle see, so a
    /// reader that saw the status finds its event queued (the one exception: an answer that
    /// moves a waiting run on sets its status at once, in `RunHandle::input`).
    fn set_status(&mut self, status: RunStatus, error: Option<ErrorInfo>) {
        let usage = match status {
            RunStatus::InProgress => None,
            _ => self.usage,
        };
        self.emit_notes();
        self.emit_state();
        self.out.emit(EventKind::RunStatus {
            status,
            error: error.clone(),
            usage,
        });
        self.flush();
        let mut state = self.shared.lock();
        state.usage = self.usage;
        if error.is_some() {
            state.error = error;
        }
        self.shared.status.send_replace(status);
    }

    /// The status and error a halt ends the run with.
    fn ending(&self, halt: Halt) -> (RunStatus, Option<ErrorInfo>) {
        let config = &self.shared.agent.inner;
        match halt {
            Halt::Canceled => self.shared.stopped(),
            Halt::OutOfTime => (
                RunStatus::Incomplete,
                Some(crate::run::out_of_time(
                    self.max_duration.unwrap_or_default(),
                )),
            ),
            Halt::MaxSteps => (
                RunStatus::Incomplete,
                Some(ErrorInfo::new(
                    "max_steps",
                    format!(
                        "the run stopped after {} model calls (max_steps) without a final answer",
                        config.max_steps
                    ),
                )),
            ),
            Halt::Truncated => (
                RunStatus::Incomplete,
                Some(ErrorInfo::new(
                    "max_tokens",
                    "the model's answer was cut off at its output token limit",
                )),
            ),
            Halt::Filtered => (
                RunStatus::Incomplete,
                Some(ErrorInfo::new(
                    "content_filter",
                    "the provider stopped the model's answer for its usage policies (a content \
                     filter or a refusal)",
                )),
            ),
            Halt::Failed(error) => (RunStatus::Failed, Some(error)),
            Halt::Rejected(error) => (RunStatus::Rejected, Some(error)),
            Halt::HandedOff(status, error) => (status, error),
        }
    }

    fn flush(&mut self) {
        self.emit_notes();
        self.emit_state();
        self.queue.push(self.out.drain());
    }

    /// Emits the shared state's changes, in the order they were made, when this is the top run
    /// of its tree: the state is the session's, so its events are the tree's, wherever in it
    /// the change was made (see `SharedState`).
    fn emit_state(&mut self) {
        if self.shared.parent.is_none() {
            for kind in self.shared.shared_state.take_events() {
                self.out.emit(kind);
            }
        }
    }

    /// Emits the outcomes the inbox holds for the client (`RunHandle::note` and steers not
    /// taken); the flag spares every flush the lock.
    fn emit_notes(&mut self) {
        if self.shared.noted.swap(false, Ordering::Acquire) {
            let notes = std::mem::take(&mut self.shared.lock().inbox.notes);
            for note in notes {
                self.out.emit(EventKind::Input(note));
            }
        }
    }

    /// A paused run keeps only what it needs: the event buffers' spare room goes back.
    fn release_memory(&mut self) {
        self.out = Emitter::starting_at(self.out.last_seq() + 1);
        self.queue.idle();
        self.shared.lock().messages.shrink_to_fit();
    }

    fn resume_clock(&mut self) {
        self.deadline = self.budget.map(|budget| Instant::now() + budget);
    }

    fn pause_clock(&mut self) {
        if let Some(deadline) = self.deadline.take() {
            self.budget = Some(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

impl Halt {
    /// The `error.type` of a model call that ended so.
    fn code(&self) -> &str {
        match self {
            Halt::Canceled => "canceled",
            Halt::OutOfTime => "max_duration",
            Halt::MaxSteps => "max_steps",
            Halt::Truncated => "max_tokens",
            Halt::Filtered => "content_filter",
            Halt::Failed(error) | Halt::Rejected(error) => &error.code,
            Halt::HandedOff(_, error) => error.as_ref().map_or("handed_off", |error| &error.code),
        }
    }

    /// How a call that did not run is told why, completing "the run …".
    fn why(&self) -> &str {
        match self {
            Halt::Canceled => "was canceled",
            Halt::OutOfTime => "ran out of time (max_duration)",
            Halt::MaxSteps => "reached max_steps",
            Halt::Truncated => "was cut off at the model's token limit",
            Halt::Filtered => "was stopped by the provider's usage policies",
            Halt::Failed(_) => "failed",
            Halt::Rejected(_) => "was rejected",
            Halt::HandedOff(..) => "was handed to another agent, which did not finish",
        }
    }
}

/// How far the host has stored the run's events, once that moved; never resolves for a run
/// whose host does not store them (`None`), and `None` once the host is gone.
async fn stored_advanced(stored: &mut Option<watch::Receiver<u64>>) -> Option<u64> {
    match stored {
        Some(stored) => match stored.changed().await {
            Ok(()) => Some(*stored.borrow_and_update()),
            Err(_) => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

/// Resolves when the run is canceled or its working time runs out.
async fn stop_signal(cancel: CancellationToken, deadline: Option<Instant>) -> Halt {
    let out_of_time = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = cancel.cancelled() => Halt::Canceled,
        () = out_of_time => Halt::OutOfTime,
    }
}

/// Gives every tool call of the message that has no result or error one saying why it did not
/// run. An answer counts only after its call: some providers reuse call ids from step to step.
fn answer_unanswered(builder: &mut MessageBuilder, out: &mut Emitter, why: &str) {
    let parts = &builder.message().parts;
    let unanswered: Vec<ToolCall> = parts
        .iter()
        .enumerate()
        .filter_map(|(idx, part)| match part {
            Part::ToolCall(call)
                if !parts[idx..].iter().any(|other| match other {
                    Part::ToolResult(result) => result.tool_call_id == call.tool_call_id,
                    Part::ToolError(error) => error.tool_call_id == call.tool_call_id,
                    _ => false,
                }) =>
            {
                Some(call.clone())
            }
            _ => None,
        })
        .collect();
    for call in unanswered {
        builder.part(out, not_run(&call, why));
    }
}

fn provider_error(message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new("provider_error", message)
}

fn schema_violation(refusal: &agentwire_core::communication::Refusal) -> ErrorInfo {
    ErrorInfo::new(
        "schema_violation",
        format!("the agent's message breaks its communication schema: {refusal}"),
    )
}

/// Never reached: the builder's `finish` always emits `message_complete` last.
#[cold]
fn builder_message_missing() -> Message {
    Message::new(Role::Assistant, Vec::new())
}
