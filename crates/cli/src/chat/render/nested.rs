//! Sub-agents' runs in the terminal chat. A run whose agent calls other agents streams their runs
//! inside its own (each event tagged with its namespace); the chat shows each under the call
//! that started it, indented two spaces per level: a header line with the agent's name when the
//! run starts, then its output, every line saying whose it is (`  west │ …`), since parallel
//! runs' lines interleave. A run's text is written a line at a time (whole lines, so that two
//! runs' words never mix on one line), its calls once their arguments are complete, its end as
//! one line; its steps get no rules. What a run waits for is asked at the prompt like the top run's (see
//! `approvals_of`).

use std::collections::HashMap;

use agentwire_core::{Awaiting, Event, EventKind, Part, RunId, RunStatus, StreamedPart};

use super::{Paint, Renderer, describe};

/// What the chat keeps of a sub-agent's run while it streams.
#[derive(Debug)]
pub(super) struct NestedRun {
    agent: String,
    depth: usize,
    /// Streamed parts by (message id, index): their kind and the text of the line under way.
    streamed: HashMap<(String, u32), (StreamedPart, String)>,
    /// The run's calls' tool names by call id (ids are the run's own).
    names: HashMap<String, String>,
}

impl Renderer {
    /// The output for an event of a sub-agent's run.
    pub(super) fn nested_event(&mut self, event: &Event) -> String {
        let Some(run_id) = event.namespace.run() else {
            return String::new();
        };
        let run = self
            .nested
            .entry(run_id.clone())
            .or_insert_with(|| NestedRun {
                agent: agent_of(&event.kind, run_id),
                depth: event.namespace.depth(),
                streamed: HashMap::new(),
                names: HashMap::new(),
            });
        let header = matches!(event.kind, EventKind::RunCreated { .. });
        let lines = run.lines(&event.kind);
        let (agent, indent) = (run.agent.clone(), "  ".repeat(run.depth));
        if let EventKind::RunStatus { status, .. } = &event.kind
            && status.is_terminal()
        {
            self.nested.remove(run_id);
        }
        if !header && lines.is_empty() {
            return String::new();
        }
        let mut out = self.hide_spinner();
        // Whatever the top run was writing goes on on a line of its own.
        self.end_line(&mut out);
        self.current = None;
        if header {
            out += &indent;
            out += &self.paint(format!("◆ {agent}"), Paint::Tool);
            out.push('\n');
        }
        for (line, paint) in lines {
            out += &indent;
            out += &self.paint(format!("{agent} │ "), Paint::Dim);
            out += &self.paint(line, paint);
            out.push('\n');
        }
        out += &self.show_spinner();
        out
    }
}

impl NestedRun {
    /// The whole lines an event of the run completes, each with its paint.
    fn lines(&mut self, kind: &EventKind) -> Vec<(String, Paint)> {
        let mut lines = Vec::new();
        match kind {
            EventKind::PartStart {
                message_id,
                index,
                part,
            } => {
                let key = (message_id.to_string(), *index);
                self.streamed.insert(key, (part.clone(), String::new()));
            }
            EventKind::PartDelta {
                message_id,
                index,
                delta,
            } => {
                let key = (message_id.to_string(), *index);
                // A call's arguments show once complete.
                if let Some((part, line)) = self.streamed.get_mut(&key)
                    && !matches!(part, StreamedPart::ToolCall { .. })
                {
                    line.push_str(delta);
                    let paint = text_paint(part);
                    while let Some(end) = line.find('\n') {
                        let rest = line.split_off(end + 1);
                        line.pop();
                        lines.push((std::mem::replace(line, rest), paint));
                    }
                }
            }
            EventKind::PartComplete {
                message_id,
                index,
                part,
            } => {
                if let Part::ToolCall(call) = part {
                    self.names
                        .insert(call.tool_call_id.to_string(), call.tool_name.clone());
                }
                match self.streamed.remove(&(message_id.to_string(), *index)) {
                    // Text: what is left of its last line.
                    Some((part, line)) if !matches!(part, StreamedPart::ToolCall { .. }) => {
                        if !line.is_empty() {
                            lines.push((line, text_paint(&part)));
                        }
                    }
                    // Steps are the top run's rules; a sub-agent's output stays compact.
                    None if matches!(part, Part::StepStart(_)) => {}
                    _ => {
                        let (text, paint) = describe(part, &self.names);
                        lines.extend(text.lines().map(|line| (line.to_owned(), paint)));
                    }
                }
            }
            EventKind::RunStatus { status, error, .. } => {
                let why = error
                    .as_ref()
                    .map(|error| format!(": {} ({})", error.message, error.code))
                    .unwrap_or_default();
                let line = match status {
                    RunStatus::Completed => Some(("✓ done".to_owned(), Paint::Done)),
                    RunStatus::Failed | RunStatus::Rejected => {
                        Some((format!("✗ {}{why}", status.name()), Paint::Error))
                    }
                    RunStatus::Canceled => Some(("■ canceled".to_owned(), Paint::Warn)),
                    RunStatus::Incomplete => {
                        Some((format!("■ stopped before it finished{why}"), Paint::Warn))
                    }
                    RunStatus::Awaiting(Awaiting::Input) => Some((
                        "? asks you (ask_user): your next message answers it".to_owned(),
                        Paint::Warn,
                    )),
                    // An approval's request is a line of its own already.
                    _ => None,
                };
                lines.extend(line);
            }
            EventKind::Error(error) => lines.push((
                format!("✗ {} ({})", error.message, error.code),
                Paint::Error,
            )),
            _ => {}
        }
        lines
    }
}

/// The agent of a run from its `run_created`; for a run whose start was not seen, its id.
fn agent_of(kind: &EventKind, run_id: &RunId) -> String {
    match kind {
        EventKind::RunCreated {
            agent: Some(agent), ..
        } => agent.clone(),
        _ => run_id.to_string(),
    }
}

/// How a streamed part's text is painted.
fn text_paint(part: &StreamedPart) -> Paint {
    match part {
        StreamedPart::Reasoning => Paint::Dim,
        StreamedPart::Refusal => Paint::Error,
        _ => Paint::Plain,
    }
}
