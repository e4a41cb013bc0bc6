//! Helpers shared by the runtime's end-to-end tests: a brain that records what it was asked, a
//! tool made of a closure, and a client that reads a run's events into the strict accumulator.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentwire_brain::{Brain, BrainRequest, BrainStream, ScriptedBrain};
use agentwire_core::{Accumulator, Event, EventKind, Message, Part, RunStatus, Timestamp};
use agentwire_runtime::{Agent, AgentBuilder, FixedClock, RunEvents, RunHandle, SequentialIds};
use agentwire_tools::{Tool, ToolContext, ToolFuture, ToolSpec};
use serde_json::{Value, json};

/// A scripted brain that keeps every request it is sent.
#[derive(Clone)]
pub struct Recording {
    brain: ScriptedBrain,
    requests: Arc<Mutex<Vec<BrainRequest>>>,
}

impl Recording {
    /// Replays the script (the scripted provider's JSON).
    pub fn new(script: Value) -> Self {
        Self::paced(script, 0.0)
    }

    /// Replays the script at `tokens_per_second`.
    pub fn paced(script: Value, tokens_per_second: f64) -> Self {
        let brain = ScriptedBrain::from_json(&script.to_string())
            .unwrap()
            .with_tokens_per_second(tokens_per_second);
        Self {
            brain,
            requests: Arc::default(),
        }
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<BrainRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Brain for Recording {
    fn stream(&self, request: BrainRequest) -> BrainStream {
        self.requests.lock().unwrap().push(request.clone());
        self.brain.stream(request)
    }

    fn describe(&self) -> String {
        "recording".into()
    }

    fn provider_name(&self) -> &'static str {
        self.brain.provider_name()
    }
}

/// A tool whose body is a closure.
pub struct FnTool {
    spec: ToolSpec,
    body: Box<dyn Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync>,
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, context: ToolContext) -> ToolFuture<'_> {
        (self.body)(args, context)
    }
}

/// A tool called `name` with these parameters, running `body`.
pub fn tool(
    name: &str,
    parameters: Value,
    body: impl Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync + 'static,
) -> FnTool {
    FnTool {
        spec: ToolSpec::new(name, format!("the {name} tool"), parameters),
        body: Box::new(body),
    }
}

/// An agent named `assistant` with deterministic ids and time.
pub fn agent(brain: &Recording) -> AgentBuilder {
    Agent::builder("assistant")
        .brain(brain.clone())
        .system("You are a test.")
        .ids(SequentialIds::default())
        .clock(FixedClock(Timestamp(1_700_000_000_000)))
}

/// A client: reads a run's events into the strict accumulator, keeping every event.
pub struct Client {
    pub events: RunEvents,
    pub seen: Vec<Event>,
    pub accumulator: Accumulator,
}

impl Client {
    pub fn new(events: RunEvents) -> Self {
        Self {
            events,
            seen: Vec::new(),
            accumulator: Accumulator::default(),
        }
    }

    /// Reads events until the run settles (awaits the client or ends) and returns that status.
    /// Fails the test after 10 s (of the test's clock) without it.
    pub async fn until_settled(&mut self) -> RunStatus {
        let read = async {
            loop {
                let Some(event) = self.events.recv().await else {
                    panic!("the stream ended before the run settled");
                };
                self.accumulator
                    .push(&event)
                    .unwrap_or_else(|error| panic!("event {event:?} does not accumulate: {error}"));
                let settled = match &event.kind {
                    EventKind::RunStatus { status, .. }
                        if event.is_own()
                            && (status.is_terminal()
                                || matches!(status, RunStatus::Awaiting(_))) =>
                    {
                        Some(*status)
                    }
                    _ => None,
                };
                self.seen.push(event);
                if let Some(status) = settled {
                    return status;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("the run settles")
    }

    /// Reads until the stream ends, and checks that it ended.
    pub async fn until_end(&mut self) -> RunStatus {
        let status = self.until_settled().await;
        assert!(status.is_terminal(), "the run ended, not {status:?}");
        let end = tokio::time::timeout(Duration::from_secs(10), self.events.recv()).await;
        assert!(
            matches!(end, Ok(None)),
            "nothing follows the terminal status: {end:?}"
        );
        status
    }

    /// The messages the client rebuilt.
    pub fn messages(&self) -> &[Message] {
        self.accumulator.messages()
    }

    /// Checks that the events rebuild exactly the run's messages, and that every message the
    /// client sees is complete.
    #[track_caller]
    pub fn check_agrees_with(&self, handle: &RunHandle) {
        assert_eq!(self.messages(), handle.output().as_slice());
        let completed = self
            .seen
            .iter()
            .filter(|event| {
                event.is_own() && matches!(event.kind, EventKind::MessageComplete { .. })
            })
            .count();
        assert_eq!(completed, self.messages().len(), "every message completed");
        let seqs: Vec<u64> = self.seen.iter().map(|event| event.seq).collect();
        let expected: Vec<u64> = (1..=self.seen.len() as u64).collect();
        assert_eq!(seqs, expected, "events are numbered from 1 without gaps");
    }
}

/// A message's parts by type, e.g. `["step_start", "tool_call", "tool_result"]`.
pub fn part_types(message: &Message) -> Vec<&'static str> {
    message.parts.iter().map(Part::type_name).collect()
}

/// The events as short lines: `run_status completed`, `part_start 1 text`, `part_delta 1`, …
pub fn shape(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| match &event.kind {
            EventKind::RunStatus { status, .. } => format!("run_status {}", status.name()),
            EventKind::PartStart { index, part, .. } => {
                format!("part_start {index} {}", part.type_name())
            }
            EventKind::PartDelta { index, .. } => format!("part_delta {index}"),
            EventKind::PartComplete { index, part, .. } => {
                format!("part_complete {index} {}", part.type_name())
            }
            _ => event.name().to_owned(),
        })
        .collect()
}

/// A user message with an approval response.
pub fn approval(approval_id: &str, approved: bool, reason: Option<&str>) -> Message {
    Message::new(
        agentwire_core::Role::User,
        vec![Part::ApprovalResponse(
            agentwire_core::part::ApprovalResponse {
                approval_id: approval_id.into(),
                approved,
                reason: reason.map(str::to_owned),
            },
        )],
    )
}

/// A user message with a client tool's output.
pub fn output(tool_call_id: &str, result: Value) -> Message {
    Message::new(
        agentwire_core::Role::Tool,
        vec![Part::ToolResult(agentwire_core::ToolResult {
            tool_call_id: tool_call_id.into(),
            tool_name: None,
            result,
            is_error: None,
        })],
    )
}

/// A scripted tool call: start, its arguments in one delta, end.
pub fn call(id: &str, name: &str, args: Value) -> Vec<Value> {
    vec![
        json!({"type": "tool_call_start", "id": id, "name": name}),
        json!({"type": "tool_call_delta", "id": id, "args": args.to_string()}),
        json!({"type": "tool_call_end", "id": id}),
    ]
}

/// A scripted turn: these events, then a finish for `reason` using 10 tokens in and 5 out.
pub fn finish(mut events: Vec<Value>, reason: &str) -> Value {
    events.push(json!({"type": "finish", "reason": reason, "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}));
    Value::Array(events)
}

/// A scripted final answer: this text, then a `stop` finish.
pub fn answer(text: &str) -> Value {
    finish(vec![json!({"type": "text_delta", "text": text})], "stop")
}
