//! `agentwire inspect`: decode a stream, check it with the strict accumulator, and show its
//! events as they arrive and the messages they make.

use std::fmt::Write as _;
use std::process::ExitCode;

use agentwire_core::{Accumulator, Event, EventKind, RunStatus, StreamedPart};
use agentwire_dialects::{DecodeError, Dialect};
use anyhow::Result;
use serde_json::json;

use crate::SourceArgs;
use crate::out::outln;
use crate::source::open_stream;

/// How to show what was read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Report {
    /// One JSON document at the end instead of the readable report.
    pub(crate) json: bool,
    /// Leave the events out of the readable report.
    pub(crate) no_events: bool,
}

pub(crate) async fn run(
    args: &SourceArgs,
    given: Option<Dialect>,
    report: Report,
) -> Result<ExitCode> {
    let (mut source, dialect, start) = open_stream(args, given).await?;
    let mut decoder = dialect.decoder();
    let mut inspection = Inspection {
        dialect,
        report,
        accumulator: Accumulator::default(),
        seen: Vec::new(),
        problem: None,
    };
    let mut events = Vec::new();
    let mut piece = start;
    if !report.json {
        outln!("dialect: {dialect}")?;
    }
    loop {
        let decoded = decoder.decode(&piece, &mut events);
        inspection.take(decoded, &mut events)?;
        if inspection.problem.is_some() || !source.next(&mut piece).await? {
            break;
        }
    }
    if inspection.problem.is_none() {
        let ended = decoder.finish(&mut events);
        inspection.take(ended, &mut events)?;
    }
    inspection.print()
}

/// What has been read of a stream so far.
struct Inspection {
    dialect: Dialect,
    report: Report,
    accumulator: Accumulator,
    /// The events, kept only for `--json`.
    seen: Vec<Event>,
    /// The first thing wrong with the stream.
    problem: Option<String>,
}

impl Inspection {
    /// Takes what a decoder call produced: its events go to the accumulator, printed as they go;
    /// the first event it refuses, or the decoder's error, is the stream's problem.
    fn take(&mut self, decoded: Result<(), DecodeError>, events: &mut Vec<Event>) -> Result<()> {
        for event in events.drain(..) {
            if self.problem.is_some() {
                break;
            }
            if !self.report.json && !self.report.no_events {
                outln!("{:>5} {:<16} {}", event.seq, event.name(), summary(&event))?;
            }
            if let Err(error) = self.accumulator.push(&event) {
                self.problem = Some(format!(
                    "event {} ({}) is out of place: {error}",
                    event.seq,
                    event.name()
                ));
            }
            if self.report.json {
                self.seen.push(event);
            }
        }
        if let Err(error) = decoded {
            let dialect = self.dialect;
            self.problem
                .get_or_insert_with(|| format!("the {dialect} stream is malformed: {error}"));
        }
        Ok(())
    }

    /// Prints the report; the exit code says whether the stream was sound.
    fn print(self) -> Result<ExitCode> {
        let accumulator = &self.accumulator;
        let status = accumulator.status();
        if self.report.json {
            let document = json!({
                "dialect": self.dialect.name(),
                "events": self.seen,
                "messages": accumulator.messages(),
                "status": status,
                "usage": accumulator.usage(),
                "errors": accumulator.errors(),
                "problem": self.problem,
            });
            outln!("{}", serde_json::to_string_pretty(&document)?)?;
        } else {
            outln!("messages:")?;
            outln!("{}", serde_json::to_string_pretty(accumulator.messages())?)?;
            outln!("{}", run_line(status, accumulator))?;
            if let Some(problem) = &self.problem {
                eprintln!("agentwire: {problem}");
            }
        }
        Ok(if self.problem.is_some() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// The event in a few words.
fn summary(event: &Event) -> String {
    let mut line = String::new();
    match &event.kind {
        EventKind::RunCreated {
            run_id,
            session_id,
            agent,
            parent_run_id,
            parent_tool_call_id,
        } => {
            line.push_str(run_id.as_str());
            if let Some(session) = session_id {
                let _ = write!(line, " session={session}");
            }
            if let Some(agent) = agent {
                let _ = write!(line, " agent={agent}");
            }
            if let (Some(run), Some(call)) = (parent_run_id, parent_tool_call_id) {
                let _ = write!(line, " parent={run}/{call}");
            }
        }
        EventKind::RunStatus {
            status,
            error,
            usage,
        } => {
            line.push_str(&status_words(*status));
            if let Some(error) = error {
                let _ = write!(line, " error={}: {}", error.code, error.message);
            }
            if let Some(usage) = usage {
                let _ = write!(
                    line,
                    " tokens={}/{}",
                    usage.input_tokens, usage.output_tokens
                );
            }
        }
        EventKind::MessageStart {
            message_id, role, ..
        } => {
            let _ = write!(line, "{message_id} {}", json!(role).as_str().unwrap_or("?"));
        }
        EventKind::PartStart {
            message_id,
            index,
            part,
        } => {
            let _ = write!(line, "{message_id}[{index}] {}", part.type_name());
            if let StreamedPart::ToolCall {
                tool_call_id,
                tool_name,
            } = part
            {
                let _ = write!(line, " {tool_call_id} {tool_name}");
            }
        }
        EventKind::PartDelta {
            message_id,
            index,
            delta,
        } => {
            let _ = write!(line, "{message_id}[{index}] {delta:?}");
        }
        EventKind::PartComplete {
            message_id,
            index,
            part,
        } => {
            let _ = write!(line, "{message_id}[{index}] {}", json!(part));
        }
        EventKind::MessageComplete { message } => {
            let id = message.id.as_ref().map_or("?", |id| id.as_str());
            let _ = write!(line, "{id} ({} parts)", message.parts.len());
        }
        EventKind::Heartbeat {} => {}
        EventKind::Error(error) => {
            let _ = write!(line, "{}: {}", error.code, error.message);
        }
        EventKind::Input(input) => {
            let _ = write!(line, "{} {}", input.client_message_id, json!(input.outcome));
        }
        EventKind::StateSnapshot { state } => line.push_str(&state.to_string()),
        EventKind::StateDelta { patch } => line.push_str(&json!(patch).to_string()),
    }
    line
}

fn status_words(status: RunStatus) -> String {
    match status {
        RunStatus::Awaiting(awaiting) => {
            format!("awaiting {}", json!(awaiting).as_str().unwrap_or("?"))
        }
        other => other.name().to_owned(),
    }
}

/// The run's end in one line: status, tokens, errors.
fn run_line(status: Option<RunStatus>, accumulator: &Accumulator) -> String {
    let mut line = format!(
        "run: {}",
        status.map_or_else(|| "no status".to_owned(), status_words)
    );
    if let Some(usage) = accumulator.usage() {
        let _ = write!(
            line,
            ", {} tokens in / {} out",
            usage.input_tokens, usage.output_tokens
        );
    }
    for error in accumulator.errors() {
        let _ = write!(line, "\nerror: {}: {}", error.code, error.message);
    }
    line
}
