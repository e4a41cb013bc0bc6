//! The canonical scenario set: small, realistic runs that every dialect encodes into golden
//! transcripts, and that the real clients of each ecosystem must read back into the same
//! messages.
//!
//! Each scenario is built through the real [`MessageBuilder`] and [`Emitter`], so its events are
//! exactly what the runtime would stream: `run_created`, `run_status` in progress, one assistant
//! message per turn (steps marked by `step_start` parts), and the final `run_status`. Ids are
//! fixed so transcripts are stable.

use agentwire_core::part::{ApprovalRequest, DataPart, FilePart, FileSource, Source, StepStart};
use agentwire_core::{
    Accumulator, Awaiting, Emitter, ErrorInfo, Event, EventKind, Message, MessageBuilder,
    MessageStart, Part, RunStatus, ToolError, ToolErrorKind, ToolResult, Usage,
};
use serde_json::{Value, json};

mod nested;

pub use nested::{subagent_approval, subagent_approval_resumed, subagents};

/// One run: the user's input, the events the agent streamed, and the messages they make.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// A short name, used for file names: `text`, `tool_call`, …
    pub name: &'static str,
    /// What the scenario shows.
    pub about: &'static str,
    /// The messages the client sent to start the run.
    pub input: Vec<Message>,
    /// The run's events, numbered from 1.
    pub events: Vec<Event>,
    /// The messages the events make (the assistant's output).
    pub messages: Vec<Message>,
    /// The run's final status.
    pub status: RunStatus,
}

impl Scenario {
    /// The scenario as JSON, for peers in other languages: `{name, about, input, messages,
    /// status}` with the status spelled as on the wire (`{"status": "awaiting", "awaiting":
    /// "approval"}`), and the error of a failed run. A scenario with sub-agents also has
    /// `subagents`: every nested run in the order it was created (depth first), as `{run_id,
    /// agent, parent_run_id, parent_tool_call_id, namespace, messages, status}`.
    pub fn to_json(&self) -> Value {
        let mut status = serde_json::to_value(self.status).unwrap_or(Value::Null);
        if let Some(error) = self.error() {
            status["error"] = json!(error);
        }
        let mut json = json!({
            "name": self.name,
            "about": self.about,
            "input": self.input,
            "messages": self.messages,
            "status": status,
        });
        let subagents = self.subagents();
        if !subagents.is_empty() {
            json["subagents"] = Value::Array(subagents);
        }
        json
    }

    /// The sub-agents' runs nested in the scenario, as [`Scenario::to_json`] lists them.
    pub fn subagents(&self) -> Vec<Value> {
        let mut accumulator = Accumulator::default();
        for event in &self.events {
            // Scenarios are well formed; `every_scenario_accumulates` checks it.
            let _ = accumulator.push(event);
        }
        let mut runs = Vec::new();
        let mut path = Vec::new();
        list_children(&accumulator, "run_1", &mut path, &mut runs);
        runs
    }

    /// The error the run ended with, if it failed.
    pub fn error(&self) -> Option<&ErrorInfo> {
        self.events
            .iter()
            .rev()
            .find_map(|event| match &event.kind {
                EventKind::RunStatus { error, .. } => error.as_ref(),
                _ => None,
            })
    }
}

/// Every scenario, in a fixed order.
pub fn all() -> Vec<Scenario> {
    vec![
        text(),
        reasoning(),
        tool_call(),
        tool_error(),
        parallel_tools(),
        approval(),
        client_tool(),
        rich_parts(),
        failed(),
        subagents(),
        subagent_approval(),
    ]
}

/// Appends the runs under `run` (whose id is `run_id`, at `path`) to `runs`, depth first.
fn list_children(run: &Accumulator, run_id: &str, path: &mut Vec<String>, runs: &mut Vec<Value>) {
    for child in run.children() {
        let Some(id) = child.run_id() else { continue };
        path.push(id.to_string());
        let mut status = serde_json::to_value(child.status()).unwrap_or(Value::Null);
        if let Some(error) = child.errors().last() {
            status["error"] = json!(error);
        }
        runs.push(json!({
            "run_id": id,
            "agent": child.agent(),
            "parent_run_id": run_id,
            "parent_tool_call_id": child.parent_tool_call_id(),
            "namespace": path,
            "messages": child.messages(),
            "status": status,
        }));
        list_children(child, id.as_str(), path, runs);
        path.pop();
    }
}

/// The scenario called `name`.
pub fn by_name(name: &str) -> Option<Scenario> {
    all().into_iter().find(|scenario| scenario.name == name)
}

/// Builds a scenario's run around the assistant turn that `turn` streams.
struct Run {
    out: Emitter,
}

impl Run {
    fn start() -> Self {
        let mut out = Emitter::default();
        out.emit(EventKind::RunCreated {
            run_id: "run_1".into(),
            session_id: Some("ses_1".into()),
            agent: Some("assistant".into()),
            parent_run_id: None,
            parent_tool_call_id: None,
        });
        out.emit(status(RunStatus::InProgress, None, None));
        Self { out }
    }

    fn message(&mut self, id: &str, turn: impl FnOnce(&mut MessageBuilder, &mut Emitter)) {
        let mut builder = MessageBuilder::start(
            &mut self.out,
            MessageStart::new(id, agentwire_core::Role::Assistant),
        );
        turn(&mut builder, &mut self.out);
        builder.finish(&mut self.out);
    }

    fn end(
        mut self,
        name: &'static str,
        about: &'static str,
        input: &str,
        end: RunStatus,
        error: Option<ErrorInfo>,
        usage: Option<Usage>,
    ) -> Scenario {
        self.out.emit(status(end, error, usage));
        let events: Vec<Event> = self.out.drain().collect();
        let messages = events
            .iter()
            .filter_map(|event| match &event.kind {
                EventKind::MessageComplete { message } => Some(message.clone()),
                _ => None,
            })
            .collect();
        Scenario {
            name,
            about,
            input: vec![Message::user(input).with_id("msg_user")],
            events,
            messages,
            status: end,
        }
    }
}

fn status(status: RunStatus, error: Option<ErrorInfo>, usage: Option<Usage>) -> EventKind {
    EventKind::RunStatus {
        status,
        error,
        usage,
    }
}

fn usage(input: u64, output: u64) -> Option<Usage> {
    Some(Usage::new(input, output))
}

fn step(builder: &mut MessageBuilder, out: &mut Emitter, n: u32) {
    builder.part(
        out,
        Part::StepStart(StepStart {
            step_id: format!("step_{n}").into(),
            step_name: None,
        }),
    );
}

/// Streams a tool call whose argument text arrives in `pieces`.
fn call(builder: &mut MessageBuilder, out: &mut Emitter, id: &str, tool: &str, pieces: &[&str]) {
    let streamed = (|| {
        builder.tool_call_start(out, id, tool)?;
        for piece in pieces {
            builder.tool_call_delta(out, id, piece)?;
        }
        builder.tool_call_end(out, id)
    })();
    streamed.expect("scenario tool calls are well formed");
}

fn result(id: &str, tool: &str, result: Value) -> Part {
    Part::ToolResult(ToolResult {
        tool_call_id: id.into(),
        tool_name: Some(tool.into()),
        result,
        is_error: None,
    })
}

/// Plain text in three deltas.
pub fn text() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        for piece in ["Hello! ", "How can I ", "help you today?"] {
            b.text_delta(out, piece);
        }
    });
    run.end(
        "text",
        "plain text in three deltas",
        "Hi",
        RunStatus::Completed,
        None,
        usage(5, 9),
    )
}

/// Reasoning, then the answer.
pub fn reasoning() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        b.reasoning_delta(out, "The user asks for 2 + 2. ");
        b.reasoning_delta(out, "That is 4.");
        b.text_delta(out, "2 + 2 = ");
        b.text_delta(out, "4.");
    });
    run.end(
        "reasoning",
        "reasoning, then text",
        "What is 2 + 2?",
        RunStatus::Completed,
        None,
        usage(12, 20),
    )
}

/// A tool call with streamed arguments, its result, a second step and the final answer.
pub fn tool_call() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        step(b, out, 1);
        b.text_delta(out, "Let me check the weather.");
        call(
            b,
            out,
            "call_1",
            "get_weather",
            &["{\"ci", "ty\": \"Pa", "ris\"}"],
        );
        b.part(
            out,
            result(
                "call_1",
                "get_weather",
                json!({"city": "Paris", "temperature": 18, "condition": "sunny"}),
            ),
        );
        step(b, out, 2);
        b.text_delta(out, "It is 18 °C and sunny in Paris.");
    });
    run.end(
        "tool_call",
        "a tool call with streamed arguments, its result, a second step and the answer",
        "What is the weather in Paris?",
        RunStatus::Completed,
        None,
        usage(80, 31),
    )
}

/// A call with a missing field, the validation error, the corrected call and the answer.
pub fn tool_error() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        step(b, out, 1);
        call(
            b,
            out,
            "call_1",
            "write_file",
            &["{\"path\": ", "\"notes.txt\"}"],
        );
        b.part(
            out,
            Part::ToolError(ToolError {
                tool_call_id: "call_1".into(),
                tool_name: Some("write_file".into()),
                error_type: ToolErrorKind::Validation,
                message: "Invalid arguments for write_file: content: required field missing".into(),
            }),
        );
        step(b, out, 2);
        call(
            b,
            out,
            "call_2",
            "write_file",
            &["{\"path\": \"notes.txt\", ", "\"content\": \"buy milk\"}"],
        );
        b.part(
            out,
            result(
                "call_2",
                "write_file",
                json!({"path": "notes.txt", "bytes_written": 8}),
            ),
        );
        step(b, out, 3);
        b.text_delta(out, "Saved your note to notes.txt.");
    });
    run.end(
        "tool_error",
        "a validation error sent back to the model, the corrected call, and the answer",
        "Write 'buy milk' to notes.txt",
        RunStatus::Completed,
        None,
        usage(150, 60),
    )
}

/// Two tool calls whose arguments interleave, both results, and the answer.
pub fn parallel_tools() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        step(b, out, 1);
        let ok = (|| {
            b.tool_call_start(out, "call_1", "get_weather")?;
            b.tool_call_start(out, "call_2", "get_weather")?;
            b.tool_call_delta(out, "call_1", "{\"city\": ")?;
            b.tool_call_delta(out, "call_2", "{\"city\": ")?;
            b.tool_call_delta(out, "call_2", "\"Tokyo\"}")?;
            b.tool_call_delta(out, "call_1", "\"Paris\"}")?;
            b.tool_call_end(out, "call_2")?;
            b.tool_call_end(out, "call_1")
        })();
        ok.expect("scenario tool calls are well formed");
        b.part(
            out,
            result(
                "call_2",
                "get_weather",
                json!({"city": "Tokyo", "temperature": 24}),
            ),
        );
        b.part(
            out,
            result(
                "call_1",
                "get_weather",
                json!({"city": "Paris", "temperature": 18}),
            ),
        );
        step(b, out, 2);
        b.text_delta(out, "Paris: 18 °C. Tokyo: 24 °C.");
    });
    run.end(
        "parallel_tools",
        "two tool calls with interleaved arguments, both results, and the answer",
        "Weather in Paris and Tokyo?",
        RunStatus::Completed,
        None,
        usage(90, 40),
    )
}

/// A call to a tool that needs approval: the run waits for the user.
pub fn approval() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        step(b, out, 1);
        b.text_delta(out, "I will delete old.log.");
        call(
            b,
            out,
            "call_1",
            "delete_file",
            &["{\"path\": \"old.log\"}"],
        );
        b.part(
            out,
            Part::ApprovalRequest(ApprovalRequest {
                approval_id: "apr_1".into(),
                tool_call_id: "call_1".into(),
                reason: Some("delete_file changes the workspace".into()),
            }),
        );
    });
    run.end(
        "approval",
        "a tool call that needs approval; the run waits",
        "Delete old.log",
        RunStatus::Awaiting(Awaiting::Approval),
        None,
        usage(40, 12),
    )
}

/// A call to a tool the client executes: the run waits for its output.
pub fn client_tool() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        step(b, out, 1);
        call(
            b,
            out,
            "call_1",
            "get_location",
            &["{\"precision\": ", "\"city\"}"],
        );
    });
    run.end(
        "client_tool",
        "a call to a tool the client executes; the run waits for its output",
        "Where am I?",
        RunStatus::Awaiting(Awaiting::FunctionOutput),
        None,
        usage(25, 10),
    )
}

/// The parts that are whole when produced: a source, a file and named data, around text.
pub fn rich_parts() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        b.text_delta(out, "Here is the chart you asked for.");
        b.part(
            out,
            Part::Source(Source {
                source_id: "src_1".into(),
                url: "https://example.com/sales".into(),
                title: Some("Sales report".into()),
            }),
        );
        b.part(
            out,
            Part::File(FilePart {
                media_type: "image/png".into(),
                source: FileSource::Url("https://example.com/chart.png".into()),
                filename: Some("chart.png".into()),
            }),
        );
        b.part(
            out,
            Part::Data(DataPart {
                name: "chart".into(),
                data: json!({"series": [3, 5, 8], "unit": "k€"}),
            }),
        );
        b.text_delta(out, "Sales grew each quarter.");
    });
    run.end(
        "rich_parts",
        "text with a source, a file and named data",
        "Chart the sales",
        RunStatus::Completed,
        None,
        usage(30, 25),
    )
}

/// The provider fails mid-answer: the text so far is kept and the run fails.
pub fn failed() -> Scenario {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        b.text_delta(out, "Let me look that ");
        b.text_delta(out, "up");
    });
    run.end(
        "failed",
        "the provider fails mid-answer; the text so far is kept",
        "Look it up",
        RunStatus::Failed,
        Some(ErrorInfo::new(
            "provider_error",
            "the model provider answered HTTP 500",
        )),
        None,
    )
}

/// A long, realistic run for benchmarks: `steps` steps, each with 100 reasoning deltas, 500 text
/// deltas of a word each, and a tool call whose arguments stream in 50 deltas, and its result.
pub fn long_run(steps: u32) -> Vec<Event> {
    let mut run = Run::start();
    run.message("msg_1", |b, out| {
        for n in 1..=steps {
            step(b, out, n);
            for _ in 0..100 {
                b.reasoning_delta(out, "think ");
            }
            for word in (0..500).map(|i| ["The ", "quick ", "brown ", "fox "][i % 4]) {
                b.text_delta(out, word);
            }
            let id = format!("call_{n}");
            let mut pieces = vec!["{\"rows\": ["];
            pieces.extend(std::iter::repeat_n("{\"a\": 1, \"b\": \"xy\"}, ", 48));
            pieces.push("{\"a\": 2, \"b\": \"z\"}]}");
            call(b, out, &id, "query", &pieces);
            b.part(out, result(&id, "query", json!({"rows": 49, "ok": true})));
        }
    });
    run.end(
        "long_run",
        "a long run for benchmarks",
        "Go",
        RunStatus::Completed,
        None,
        usage(1000, 4000),
    )
    .events
}
